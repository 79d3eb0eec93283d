import Foundation

/// A value behind an `NSLock`, for test bookkeeping shared between threads.
///
/// Tests use this rather than `Synchronization.Mutex` where ThreadSanitizer runs them (`make
/// test`): on Linux, `Mutex` locks with raw futex calls that ThreadSanitizer does not see, so it
/// reports the values they protect as races; an `NSLock` is a pthread mutex, which it does see.
///
/// `@unchecked Sendable`: `value` is read and written only while holding `lock`.
public final class Locked<Value>: @unchecked Sendable {
  private let lock = NSLock()
  private var value: Value

  public init(_ value: Value) { self.value = value }

  public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
    lock.lock()
    defer { lock.unlock() }
    return try body(&value)
  }
}
