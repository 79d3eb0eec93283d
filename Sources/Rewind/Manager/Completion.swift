internal import Synchronization

/// The task waiting on a `Completion`. Debug builds (the test suite) use a checked continuation, so
/// a path that resumed a waiter twice traps and one that dropped it is reported; release builds use
/// an unsafe one: the checked one's optional is copied, tested and destroyed through run-time
/// metadata (its layout is not known to this module), several times for every command.
#if DEBUG
  typealias CompletionWaiter = CheckedContinuation<Result<Void, ManagerError>, Never>
#else
  typealias CompletionWaiter = UnsafeContinuation<Result<Void, ManagerError>, Never>
#endif

/// A one-shot outcome that one task resolves and another awaits: how a command staged in a batch
/// learns whether the batch was committed.
final class Completion: Sendable {
  private struct State {
    var outcome: Result<Void, ManagerError>?
    /// Resumed exactly once: by `resolve`, which takes it out under the lock, or by `wait` itself
    /// when the outcome is there already.
    var waiter: CompletionWaiter?
    var callback: (@Sendable () -> Void)?
  }

  private let state = Mutex(State())

  /// Sets the outcome (the first call wins) and wakes the waiter.
  func resolve(_ outcome: Result<Void, ManagerError>) {
    let (waiter, callback) = state.withLock { state -> (CompletionWaiter?, (@Sendable () -> Void)?) in
      guard state.outcome == nil else { return (nil, nil) }
      state.outcome = outcome
      defer {
        state.waiter = nil
        state.callback = nil
      }
      return (state.waiter, state.callback)
    }
    waiter?.resume(returning: outcome)
    callback?()
  }

  /// Calls `callback` once the outcome is set (at once if it is). At most one per completion.
  func whenResolved(_ callback: @escaping @Sendable () -> Void) {
    let ready = state.withLock { state -> Bool in
      if state.outcome != nil { return true }
      state.callback = callback
      return false
    }
    if ready { callback() }
  }

  /// The outcome, once set.
  var outcome: Result<Void, ManagerError>? { state.withLock { $0.outcome } }

  /// Waits for the outcome; throws the batch's error.
  func wait() async throws(ManagerError) {
    // Settled already (a command whose task wrote its own batch): no suspension.
    if let outcome = state.withLock({ $0.outcome }) { return try outcome.get() }
    let outcome = await withWaiter { continuation in
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

/// Suspends the calling task until `body`'s continuation is resumed (see `CompletionWaiter`).
@inline(__always)
private func withWaiter(_ body: (CompletionWaiter) -> Void) async -> Result<Void, ManagerError> {
  #if DEBUG
    await withCheckedContinuation(body)
  #else
    await withUnsafeContinuation(body)
  #endif
}
