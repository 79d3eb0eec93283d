internal import Synchronization

/// A value behind a lock, in an object of its own: the manager's model and working copy.
///
/// Unspecialized code of `Manager<M>` (every app's, as the manager's generic code is not
/// specialized across modules) reaches the value through this object's own metadata, where a
/// `Mutex<M>` stored inline would have its generic metadata looked up at run time (a hash-table
/// search) each time it is locked.
///
/// `@unchecked Sendable`: `value` is read and written only while holding `lock`.
final class LockedValue<Value: Sendable>: @unchecked Sendable {
  private let lock = Mutex(())
  private var value: Value

  init(_ value: Value) { self.value = value }

  /// Runs `body` on the value while holding the lock.
  func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R {
    lock.withLock { _ in body(&value) }
  }
}
