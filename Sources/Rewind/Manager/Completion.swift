internal import RewindLocking

/// The task waiting on a `Completion`. Debug builds (the test suite) use a checked continuation, so
/// a path that resumed a waiter twice traps and one that dropped it is reported; release builds use
/// an unsafe one: the checked one's optional is copied, tested and destroyed through run-time
/// metadata (its layout is not known to this module), several times for every command.
#if DEBUG
  typealias CompletionWaiter = CheckedContinuation<ManagerError?, Never>
#else
  typealias CompletionWaiter = UnsafeContinuation<ManagerError?, Never>
#endif

/// A one-shot outcome that one task resolves and another awaits: how a command staged in a batch
/// learns whether the batch was committed.
///
/// The outcome is a flag and an optional error, not an optional `Result`: copies of a
/// `Result<Void, ManagerError>` go through its generic value witnesses (run-time metadata), and
/// an optional of one is also copied and destroyed through `Optional`'s.
final class Completion: Sendable {
  private struct State {
    /// Whether the outcome is set.
    var settled = false
    /// The batch's error, once settled with one.
    var failure: ManagerError?
    /// Resumed exactly once: by `resolve`, which takes it out under the lock, or by `wait` itself
    /// when the outcome is there already.
    var waiter: CompletionWaiter?
    var callback: (@Sendable () -> Void)?
  }

  private let state = Lock(State())

  /// Sets the outcome, a success if `failure` is nil (the first call wins), and wakes the waiter.
  func resolve(failingWith failure: ManagerError?) {
    let (waiter, callback) = state.withLock { state -> (CompletionWaiter?, (@Sendable () -> Void)?) in
      guard !state.settled else { return (nil, nil) }
      state.settled = true
      if let failure { state.failure = failure }
      defer {
        state.waiter = nil
        state.callback = nil
      }
      return (state.waiter, state.callback)
    }
    waiter?.resume(returning: failure)
    callback?()
  }

  /// Calls `callback` once the outcome is set (at once if it is). Callbacks registered before
  /// then run in the order they were registered.
  func whenResolved(_ callback: @escaping @Sendable () -> Void) {
    let ready = state.withLock { state -> Bool in
      if state.settled { return true }
      if let earlier = state.callback {
        // Rare: a command that recorded nothing or threw follows this one (`follower()`).
        state.callback = {
          earlier()
          callback()
        }
      } else {
        state.callback = callback
      }
      return false
    }
    if ready { callback() }
  }

  /// A completion resolved once this one is: a success if this one succeeded, else with
  /// `appendFailed` (naming this one's journal error), `stopped` when the manager stopped by then
  /// (`stopReason`, which `stopped` reads, is set: this one's failure lost durability or left a
  /// journal that accepts no more appends; a retry would be refused), or `closed` when this one
  /// failed because the manager was closed, or was closed by then. The outcome of a command that
  /// recorded nothing, or threw, after reading a state that included this one's command: it read a
  /// state that exists only if this one is journaled.
  ///
  /// The stop is read from the manager (`stopped`), not from this one's error: every failure that
  /// stops the manager sets its stop reason before its completions resolve, and a journal that
  /// stopped for good on an I/O error (a segment that could not be opened after a roll) fails its
  /// append with `appendFailed`, like an append that may be retried.
  func follower(stopped: @escaping @Sendable () -> ManagerError?) -> Completion {
    let follower = Completion()
    whenResolved { [self] in
      let failure = state.withLock { $0.failure }
      follower.resolve(
        failingWith: failure.map { failure in
          let stop = stopped()
          if failure.code == .closed || stop?.code == .closed {
            return ManagerError(
              .closed,
              "the manager was closed before an earlier command this one read the effect of was journaled: nothing "
                + "of this one was written", journalError: failure.journalError)
          }
          if let stop {
            return ManagerError(
              .stopped,
              "an earlier command this one read the effect of met a failure that stopped the manager "
                + "(\(stop.code)): nothing of this one was written, and commands are refused until the journal is "
                + "reopened",
              journalError: failure.journalError)
          }
          return ManagerError(
            .appendFailed,
            "an earlier command this one read the effect of could not be journaled; nothing changed, and it can be "
              + "retried", journalError: failure.journalError)
        })
    }
    return follower
  }

  /// Whether the outcome is set; throws the batch's error if it is a failure.
  func isSettled() throws(ManagerError) -> Bool {
    // The error is copied out only when there is one.
    let (settled, failed) = state.withLock { state -> (Bool, Bool) in
      if case .none = state.failure { return (state.settled, false) }
      return (true, true)
    }
    if failed, let failure = state.withLock({ $0.failure }) { throw failure }
    return settled
  }

  /// Waits for the outcome; throws the batch's error.
  func wait() async throws(ManagerError) {
    // Settled already (a command whose task wrote its own batch): no suspension.
    if try isSettled() { return }
    let failure = await withWaiter { continuation in
      let (settled, failure) = state.withLock { state -> (Bool, ManagerError?) in
        if state.settled { return (true, state.failure) }
        state.waiter = continuation
        return (false, nil)
      }
      if settled { continuation.resume(returning: failure) }
    }
    if let failure { throw failure }
  }
}

/// Suspends the calling task until `body`'s continuation is resumed (see `CompletionWaiter`).
@inline(__always)
private func withWaiter(_ body: (CompletionWaiter) -> Void) async -> ManagerError? {
  #if DEBUG
    await withCheckedContinuation(body)
  #else
    await withUnsafeContinuation(body)
  #endif
}
