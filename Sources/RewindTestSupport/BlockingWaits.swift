import Dispatch
import Foundation
import Rewind

// Blocking waits for tests (threads of their own: a held write or sync in a file layer, work run
// with `onOwnThread`). Each gives up after `testWaitBound`, as the waits of Rewind's
// `TestWaits.swift` do: a test that fails between holding something and letting it go then ends
// with a message, instead of leaving a thread blocked and the whole run hanging.

/// When a blocking wait that starts now gives up (`testWaitBound` from now).
func testWaitDeadline() -> Date {
  Date(timeIntervalSinceNow: Double(testWaitBound.components.seconds))
}

/// `testWaitBound` from now, for `DispatchSemaphore` and `DispatchGroup`.
private func dispatchDeadline() -> DispatchTime {
  .now() + .seconds(Int(testWaitBound.components.seconds))
}

extension DispatchSemaphore {
  /// Waits for a signal, as `wait()` does, but for at most `testWaitBound`.
  /// - Throws: `WaitGaveUp` naming `what` if no signal came in time.
  package func wait(for what: String) throws {
    if wait(timeout: dispatchDeadline()) == .timedOut { throw WaitGaveUp(waitingFor: what) }
  }
}

extension DispatchGroup {
  /// Waits until every entered block has left, as `wait()` does, but for at most `testWaitBound`.
  /// - Throws: `WaitGaveUp` naming `what` if some had not left in time.
  package func wait(for what: String) throws {
    if wait(timeout: dispatchDeadline()) == .timedOut { throw WaitGaveUp(waitingFor: what) }
  }
}

/// The error a held system call of a test's file layer fails with when the test never lets it go:
/// the writer that made it goes on (and fails) instead of waiting for ever.
func heldCallGaveUp(_ call: String) -> WaitGaveUp {
  WaitGaveUp(waitingFor: "the test to let the held \(call) go")
}
