import Foundation
import RewindLocking
import Testing

/// `Lock` (RewindLocking), as `make test-tsan` runs it: every acquire must be one ThreadSanitizer
/// sees. Four threads take one lock thousands of times each, so that it is contended; with a lock
/// the sanitizer cannot follow (a contended `Mutex`, entry 373), the run reports the guarded
/// counter as racing and fails. In every build the count checks that the lock excludes.
@Suite struct LockVisibilityTests {
  @Test func aContendedLockGuardsItsValue() {
    let threads = 4
    let rounds = 20_000
    let counter = Lock(0)
    let group = DispatchGroup()
    for _ in 0..<threads {
      group.enter()
      Thread.detachNewThread {
        for _ in 0..<rounds { counter.withLock { $0 += 1 } }
        group.leave()
      }
    }
    group.wait()
    #expect(counter.withLock { $0 } == threads * rounds)
  }
}
