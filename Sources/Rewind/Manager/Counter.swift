internal import Synchronization

/// A thread-safe counter. `Mutex` guards `state`: the value, and the tasks waiting for it to
/// reach a value (`wait(untilAtLeast:)`, for tests).
final class Counter: Sendable {
  private struct State {
    var value: Int64
    var waiters: [(atLeast: Int64, continuation: CheckedContinuation<Void, Never>)] = []
  }

  private let state: Mutex<State>

  init(_ start: Int64) { state = Mutex(State(value: start)) }

  /// Returns the current value and moves it on by `step`.
  func advance(by step: Int64) -> Int64 {
    let (value, reached) = state.withLock { state -> (Int64, [CheckedContinuation<Void, Never>]) in
      let value = state.value
      state.value += step
      if state.waiters.isEmpty { return (value, []) }
      let now = state.value
      let reached = state.waiters.filter { $0.atLeast <= now }.map(\.continuation)
      state.waiters.removeAll { $0.atLeast <= now }
      return (value, reached)
    }
    for waiter in reached { waiter.resume() }
    return value
  }

  /// Returns once the value is at least `target`: suspended until an `advance` takes it there,
  /// not polling (for tests that wait for the work it counts).
  func wait(untilAtLeast target: Int64) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let reached = state.withLock { state -> Bool in
        if state.value >= target { return true }
        state.waiters.append((target, continuation))
        return false
      }
      if reached { continuation.resume() }
    }
  }
}
