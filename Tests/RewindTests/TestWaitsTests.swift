import Testing

@testable import Rewind

/// The bounded waits for tests (`TestWaits.swift`).
@Suite struct TestWaitsTests {
  /// A wait that ended without its value (here cancelled; after `testWaitBound` alike) is taken
  /// back, so later advances no longer look at it. (It stayed registered, and every advance after
  /// it took the waiters' lock to look at a wait no one was waiting in.)
  @Test func aCounterWaitThatEndedWithoutItsValueIsNoLongerRegistered() async throws {
    let counter = Counter(0)
    let waiting = Task { await counter.wait(untilAtLeast: 5) }
    // Bounded: cancelled before it registers, the wait would not show what is tested.
    for _ in 0..<30_000 where counter.waiterCount == 0 { try await Task.sleep(for: .milliseconds(10)) }
    try #require(counter.waiterCount == 1)
    waiting.cancel()
    #expect(await waiting.value == false)
    #expect(counter.waiterCount == 0)
    _ = counter.advance(by: 5)
    #expect(await counter.wait(untilAtLeast: 5))
    #expect(counter.waiterCount == 0)
  }
}
