internal import RewindLocking
internal import Synchronization

/// A thread-safe counter. A `Lock` guards `value`; tests can wait for it to reach a value
/// (`wait(untilAtLeast:)`) without polling, for a bounded time (`BoundedWaiter`).
///
/// Advancing is on every command's path (identifiers, timestamps, the manager's counts), so the
/// waiting costs it one atomic load while no one waits: the waiters have a lock of their own,
/// looked at only when `hasWaiters` says so.
final class Counter: Sendable {
  private let value: Lock<Int64>
  private let waiters = Lock<[(atLeast: Int64, waiter: BoundedWaiter)]>([])
  /// Whether `waiters` may hold any. Set and cleared only while holding `waiters`; set before
  /// the waiter reads `value`, so an advance after that read sees it.
  private let hasWaiters = Atomic<Bool>(false)

  init(_ start: Int64) { value = Lock(start) }

  /// Returns the current value and moves it on by `step`. Inlined where it is called, as the
  /// lock alone was; waking waiters is not.
  @inline(__always)
  func advance(by step: Int64) -> Int64 {
    let old = value.withLock { value in
      defer { value += step }
      return value
    }
    if hasWaiters.load(ordering: .acquiring) { wakeWaiters() }
    return old
  }

  /// Returns true once the value is at least `target`: suspended until an `advance` takes it
  /// there, not polling (for tests that wait for the work it counts). Returns false if that did
  /// not happen within `testWaitBound` (or the task was cancelled).
  func wait(untilAtLeast target: Int64) async -> Bool {
    await BoundedWaiter.wait { waiter in
      waiters.withLock { waiters -> Bool in
        hasWaiters.store(true, ordering: .releasing)
        if value.withLock({ $0 }) >= target {
          if waiters.isEmpty { hasWaiters.store(false, ordering: .releasing) }
          return true
        }
        waiters.append((target, waiter))
        return false
      }
    } unregister: { waiter in
      waiters.withLock { waiters in
        waiters.removeAll { $0.waiter === waiter }
        if waiters.isEmpty { hasWaiters.store(false, ordering: .releasing) }
      }
    }
  }

  /// How many waits are registered, waiting for an `advance` (for tests).
  var waiterCount: Int { waiters.withLock { $0.count } }

  /// Resumes the waiters whose target the value has reached.
  @inline(never)
  private func wakeWaiters() {
    let reached = waiters.withLock { waiters -> [BoundedWaiter] in
      let now = value.withLock { $0 }
      let reached = waiters.filter { $0.atLeast <= now }.map(\.waiter)
      waiters.removeAll { $0.atLeast <= now }
      if waiters.isEmpty { hasWaiters.store(false, ordering: .releasing) }
      return reached
    }
    for waiter in reached { waiter.resume(true) }
  }
}
