internal import Synchronization

/// A thread-safe counter. `Mutex` guards `value`.
final class Counter: Sendable {
  private let value: Mutex<Int64>

  init(_ start: Int64) { value = Mutex(start) }

  /// Returns the current value and moves it on by `step`.
  func advance(by step: Int64) -> Int64 {
    value.withLock { value in
      defer { value += step }
      return value
    }
  }
}
