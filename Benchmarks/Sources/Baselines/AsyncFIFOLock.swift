internal import Synchronization

/// A lock for tasks: `lock()` suspends a task that finds it held, instead of blocking its thread,
/// and `unlock()` hands it to the longest waiter. With 64 producers on a pool of 2 threads, every
/// producer gets to wait in the queue (its latency clock running, as a journal producer's runs
/// while it waits for its group commit) rather than 2 of them holding the threads and the other
/// 62 not yet started.
final class AsyncFIFOLock: Sendable {
  private struct State {
    var held = false
    var waiters: [CheckedContinuation<Void, Never>] = []
  }

  private let state = Mutex(State())

  /// Takes the lock, suspending until it is handed over if another task holds it.
  func lock() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let takes = state.withLock { state in
        if state.held {
          state.waiters.append(continuation)
          return false
        }
        state.held = true
        return true
      }
      if takes { continuation.resume() }
    }
  }

  /// Hands the lock to the longest waiter, or frees it.
  func unlock() {
    let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
      if state.waiters.isEmpty {
        state.held = false
        return nil
      }
      return state.waiters.removeFirst()
    }
    next?.resume()
  }

  /// How many tasks wait for the lock now.
  var waiting: Int { state.withLock { $0.waiters.count } }

  /// Runs `body` holding the lock.
  func withLock<R>(_ body: () throws -> R) async rethrows -> R {
    await lock()
    defer { unlock() }
    return try body()
  }
}
