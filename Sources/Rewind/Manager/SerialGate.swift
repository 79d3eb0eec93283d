internal import Synchronization

/// A first-come, first-served async lock: at most one holder at a time, across suspension points.
///
/// The manager holds it for a whole command (validate, append, apply, notify), so a command that
/// suspends in its append never lets another command see or change the model half-way. An actor
/// alone would not do: actors are reentrant at every `await`.
final class SerialGate: Sendable {
  private struct State {
    var busy = false
    var waiters: [CheckedContinuation<Void, Never>] = []
  }

  private let state = Mutex(State())

  /// Waits until the gate is free and takes it. Pair with exactly one `leave()`.
  func enter() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let enterNow = state.withLock { state in
        if state.busy {
          state.waiters.append(continuation)
          return false
        }
        state.busy = true
        return true
      }
      if enterNow { continuation.resume() }
    }
  }

  /// Hands the gate to the longest waiter, or frees it.
  func leave() {
    let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
      if state.waiters.isEmpty {
        state.busy = false
        return nil
      }
      return state.waiters.removeFirst()
    }
    next?.resume()
  }
}
