internal import Foundation

/// A task executor with one thread that runs jobs strictly in the order they were enqueued.
///
/// The workload issues every command as a task that prefers this executor. A new task's first job
/// runs up to the manager's gate (the first suspension of `Manager.perform`) before the next task's
/// first job starts, so commands queue at the gate in the order they were issued, however many are
/// in flight, and group commit still forms batches while the journal writer syncs.
///
/// `@unchecked Sendable`: `jobs` and `stopping` are guarded by `condition`; the thread is the only
/// runner of jobs.
final class SerialTaskExecutor: TaskExecutor, @unchecked Sendable {
  private let condition = NSCondition()
  private var jobs: [UnownedJob] = []
  private var stopping = false
  private let stopped = DispatchSemaphore(value: 0)

  init(name: String) {
    let thread = Thread { [self] in run() }
    thread.name = name
    thread.start()
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    condition.lock()
    jobs.append(job)
    condition.signal()
    condition.unlock()
  }

  private func run() {
    var running: [UnownedJob] = []
    while true {
      condition.lock()
      while jobs.isEmpty && !stopping { condition.wait() }
      if jobs.isEmpty {
        condition.unlock()
        stopped.signal()
        return
      }
      swap(&running, &jobs)
      condition.unlock()
      // In enqueue order; jobs enqueued meanwhile run after these.
      for job in running { job.runSynchronously(on: asUnownedTaskExecutor()) }
      running.removeAll(keepingCapacity: true)
    }
  }

  /// Lets the thread finish the jobs queued so far and end. Call once no task prefers it any more.
  func shutdown() {
    condition.lock()
    stopping = true
    condition.signal()
    condition.unlock()
    stopped.wait()
  }
}
