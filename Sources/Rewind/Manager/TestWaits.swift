internal import RewindLocking

// Waits for tests: `Manager.waitUntil`, `Counter.wait(untilAtLeast:)`, `SerialGate.wait(forWaiters:)`
// and `Signal`. Each suspends until whoever makes its condition true wakes it: one wake-up, where
// a `Task.yield()` spin needs a turn of the thread pool per look (minutes, in a full parallel run
// on a loaded machine). And each ends: a condition never met fails the test after
// `testWaitBound` instead of hanging it (a test's time limit cannot end a wait that ignores
// cancellation, and a hook's wait runs in a task the limit does not cancel). The blocking waits of
// test threads (RewindTestSupport's `BlockingWaits.swift`) give up after the same bound.

/// How long a test's wait lasts before it gives up: a wait is one wake-up, which even a loaded
/// full run (where whole tests took 100-320 s, most of it queued) gives far sooner; and shorter
/// than the 10-minute limits of the tests that have one, so the wait's message is the one seen.
package let testWaitBound: Duration = .seconds(300)

/// Thrown by a test's wait that gave up: what it waited for, and what it saw then.
package struct WaitGaveUp: Error, CustomStringConvertible {
  package let description: String

  package init(waitingFor what: String, saw: String? = nil) {
    description = "gave up after \(testWaitBound) waiting for \(what)" + (saw.map { " (\($0))" } ?? "")
  }
}

/// One task waiting for a condition: resumed once, with true by whoever makes the condition true
/// (`resume(true)`), or with false once `testWaitBound` has passed or when the task is cancelled,
/// whichever comes first. Later calls of `resume` do nothing, so a resume racing the give-up is
/// harmless; a waiter that gave up is taken back from whoever kept it (`unregister`).
final class BoundedWaiter: Sendable {
  private let state = Lock<(continuation: CheckedContinuation<Bool, Never>?, outcome: Bool?)>((nil, nil))

  private init() {}

  /// Ends the wait with `reached`, unless it has ended already.
  func resume(_ reached: Bool) {
    let continuation = state.withLock { state -> CheckedContinuation<Bool, Never>? in
      if state.outcome != nil { return nil }
      state.outcome = reached
      defer { state.continuation = nil }
      return state.continuation
    }
    continuation?.resume(returning: reached)
  }

  /// Returns whether the condition was met: `register` hands the waiter to whoever will resume it,
  /// or returns true if the condition holds already. `unregister` takes it back once the wait
  /// ended without the condition (gave up, or cancelled), so that no one looks at it any more;
  /// it may find the waiter gone already (taken to be resumed), or never handed over.
  static func wait(register: (BoundedWaiter) -> Bool, unregister: (BoundedWaiter) -> Void) async -> Bool {
    let waiter = BoundedWaiter()
    let timer = Task {
      do {
        try await Task.sleep(for: testWaitBound)
        waiter.resume(false)
      } catch {}  // cancelled: the wait ended first
    }
    defer { timer.cancel() }
    let reached = await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        let ended = waiter.state.withLock { state -> Bool? in
          if let outcome = state.outcome { return outcome }  // cancelled already
          state.continuation = continuation
          return nil
        }
        if let ended {
          continuation.resume(returning: ended)
        } else if register(waiter) {
          waiter.resume(true)
        }
      }
    } onCancel: {
      waiter.resume(false)
    }
    if !reached { unregister(waiter) }
    return reached
  }
}

/// A flag that tasks wait for without polling (for tests): `wait()` returns once `set()` was
/// called, at once if it was before.
final class Signal: Sendable {
  private let what: String
  private let state = Lock<(isSet: Bool, waiters: [BoundedWaiter])>((false, []))

  /// `what` says what setting it means, for the message of a wait that gives up.
  init(_ what: String = "a signal") { self.what = what }

  func set() {
    let waiters = state.withLock { state in
      state.isSet = true
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in waiters { waiter.resume(true) }
  }

  /// - Throws: `WaitGaveUp` if it was not set within `testWaitBound` (or the task was cancelled).
  func wait() async throws {
    let isSet = await BoundedWaiter.wait { waiter in
      state.withLock { state in
        if !state.isSet { state.waiters.append(waiter) }
        return state.isSet
      }
    } unregister: { waiter in
      state.withLock { $0.waiters.removeAll { $0 === waiter } }
    }
    if !isSet { throw WaitGaveUp(waitingFor: what) }
  }
}
