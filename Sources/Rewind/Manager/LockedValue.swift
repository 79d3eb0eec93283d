internal import RewindLocking

/// A value behind a lock, in an object of its own: the manager's model and working copy.
///
/// Unspecialized code of `Manager<M>` (every app's, as the manager's generic code is not
/// specialized across modules) reaches the value through this object's own metadata, where a
/// `Lock<M>` stored inline would have its generic metadata looked up at run time (a hash-table
/// search) each time it is locked.
///
/// The value lives in memory the object allocates, not in a stored property: its accesses need
/// no run-time exclusivity checks (a thread-local lookup each), and `withoutLock` can lend it in
/// place.
///
/// `@unchecked Sendable`: the value is read and written only while holding `lock`, or through
/// `withoutLock` by a caller that knows no other thread writes it meanwhile.
final class LockedValue<Value: Sendable>: @unchecked Sendable {
  private let lock = Lock(())
  private let storage: UnsafeMutablePointer<Value>

  init(_ value: Value) {
    storage = .allocate(capacity: 1)
    storage.initialize(to: value)
  }

  deinit {
    storage.deinitialize(count: 1)
    storage.deallocate()
  }

  /// Runs `body` on the value while holding the lock.
  func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R {
    lock.withLock { _ in body(&storage.pointee) }
  }

  /// Runs `body` on the value's address while holding the lock, for a reader: through the
  /// pointer it reads in place, where an `inout` access, which ThreadSanitizer takes for a write,
  /// would be reported beside `withoutLock`'s read.
  func read<R: Sendable>(_ body: (UnsafePointer<Value>) -> R) -> R {
    lock.withLock { _ in body(storage) }
  }

  /// Runs `body` on the value in place without taking the lock, for a caller that knows that no
  /// other thread writes the value until `body` returns (others may read it under the lock,
  /// through `read`). `body` must only read it: the value is passed `inout` so that it is lent in
  /// place, where a borrowed read of it would be copied first (in unspecialized code, through the
  /// value's witnesses: about 400 instructions a command for the notebook's model).
  func withoutLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
    #if REWIND_TSAN
      // ThreadSanitizer takes an `inout` access for a write, which would race with every
      // reader's read under the lock. The copy reads the value as those readers do: a write
      // under `withLock` meanwhile, which the caller's premise rules out, is still reported.
      var copy = storage.pointee
      return try body(&copy)
    #else
      try body(&storage.pointee)
    #endif
  }
}
