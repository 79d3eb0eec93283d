import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// The writer's mutex and condition (`ConditionLock`): deadlines on the monotonic clock, and the
/// conversions that make them.
@Suite struct ConditionLockTests {
  @Test func aTimedWaitNobodySignalsReturnsFalseOnceItsDeadlinePassed() {
    let condition = ConditionLock()
    let deadline = ConditionLock.deadline(after: 20_000_000)
    condition.lock()
    var signalled = true
    // A spurious wake-up returns true; wait again until the deadline answers.
    while signalled && ConditionLock.now() < deadline { signalled = condition.wait(untilNanoseconds: deadline) }
    condition.unlock()
    #expect(!signalled)
    #expect(ConditionLock.now() >= deadline)
  }

  /// What the waiter and the signaller share, read and written only while holding the lock.
  final class Shared: @unchecked Sendable {
    var flag = false
    var woken = false
  }

  @Test func aSignalWakesAWaiterLongBeforeItsDeadline() throws {
    let condition = ConditionLock()
    let shared = Shared()
    let done = DispatchSemaphore(value: 0)
    let waiter = Thread {
      condition.lock()
      let deadline = ConditionLock.deadline(after: 30_000_000_000)
      var signalled = true
      while !shared.flag && signalled { signalled = condition.wait(untilNanoseconds: deadline) }
      shared.woken = signalled && shared.flag
      condition.unlock()
      done.signal()
    }
    waiter.start()
    condition.lock()
    shared.flag = true
    condition.signal()
    condition.unlock()
    try done.wait(for: "the waiter to return")
    condition.lock()
    let woken = shared.woken
    condition.unlock()
    #expect(woken, "the waiter returned without the signal: it timed out")
  }

  @Test func deadlinesSaturateInsteadOfOverflowing() {
    #expect(ConditionLock.deadline(after: .max) == .max)
    let before = ConditionLock.now()
    let deadline = ConditionLock.deadline(after: 5_000_000_000)
    #expect(deadline >= before + 5_000_000_000 && deadline <= ConditionLock.now() + 5_000_000_000)
    #expect(ConditionLock.now() >= before, "the monotonic clock went back")
  }

  @Test(arguments: [
    (Duration.milliseconds(2), UInt64(2_000_000)),
    (.seconds(3), 3_000_000_000),
    (.nanoseconds(1), 1),
    (.zero, 0),
    (.seconds(-1), 0),
    (.seconds(Int64.max), .max),
  ])
  func durationsBecomeWholeNanoseconds(duration: Duration, nanoseconds: UInt64) {
    #expect(ConditionLock.nanoseconds(duration) == nanoseconds)
  }
}
