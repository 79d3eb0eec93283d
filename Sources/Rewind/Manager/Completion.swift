internal import Synchronization

/// A one-shot outcome that one task resolves and another awaits: how a command staged in a batch
/// learns whether the batch was committed.
final class Completion: Sendable {
  private struct State {
    var outcome: Result<Void, ManagerError>?
    var waiter: CheckedContinuation<Result<Void, ManagerError>, Never>?
  }

  private let state = Mutex(State())

  /// Sets the outcome (the first call wins) and wakes the waiter.
  func resolve(_ outcome: Result<Void, ManagerError>) {
    let waiter = state.withLock { state -> CheckedContinuation<Result<Void, ManagerError>, Never>? in
      guard state.outcome == nil else { return nil }
      state.outcome = outcome
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume(returning: outcome)
  }

  /// Waits for the outcome; throws the batch's error.
  func wait() async throws(ManagerError) {
    let outcome = await withCheckedContinuation {
      (continuation: CheckedContinuation<Result<Void, ManagerError>, Never>) in
      let ready = state.withLock { state -> Result<Void, ManagerError>? in
        if let outcome = state.outcome { return outcome }
        state.waiter = continuation
        return nil
      }
      if let ready { continuation.resume(returning: ready) }
    }
    try outcome.get()
  }
}
