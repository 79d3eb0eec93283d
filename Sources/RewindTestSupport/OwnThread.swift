import Foundation

/// Runs blocking work (a child process: its run, reading its pipes to the end, `waitUntilExit`) on a
/// thread of its own and awaits the result.
///
/// Swift Testing runs tests on Swift concurrency's cooperative pool, which has one thread per core;
/// a test that blocks one of them while a child runs for seconds starves every other test's
/// awaits (on two cores, two such tests stop everything). Awaiting this holds no pool thread.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
  }
}

/// Runs `body` with every piece of it (up to each suspension, and its child tasks') on a thread
/// of its own, and returns what it returns: for a test's long synchronous work (compressing or
/// checking megabytes in a debug build), which on a thread of the cooperative pool would hold up
/// every other test's awaits.
///
/// Unlike `onOwnThread`, `body` stays in the calling task (a task executor preference, SE-0417):
/// its task-local values go with it, so Swift Testing attributes the issues `#expect` and
/// `#require` record there to the test (on a plain thread they belong to no test). Synchronous
/// test functions are no way out: Swift Testing runs them on the cooperative pool too.
public func offThePool<T>(_ body: () async throws -> T) async rethrows -> T {
  try await withTaskExecutorPreference(ThreadPerJobExecutor.shared) { try await body() }
}

/// A task executor that runs each job on a new thread.
final class ThreadPerJobExecutor: TaskExecutor {
  static let shared = ThreadPerJobExecutor()

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let executor = asUnownedTaskExecutor()
    Thread.detachNewThread { job.runSynchronously(on: executor) }
  }
}
