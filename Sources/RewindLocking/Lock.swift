#if REWIND_TSAN
  #if canImport(Glibc)
    import Glibc
  #elseif canImport(Darwin)
    import Darwin
  #endif
#else
  public import Synchronization
#endif

/// A value behind a lock: `Synchronization.Mutex`, in a form ThreadSanitizer can follow.
///
/// The package's own shared state lives in a `Lock` rather than a `Mutex`. In every build but
/// `make test-tsan`'s the two are the same: `withLock` is the `Mutex`'s, inlined. A contended
/// `Mutex` waits inside an uninstrumented library (a futex wait in `_lockSlow`), so
/// ThreadSanitizer sees its unlock but not the acquire that follows, and reports the state it
/// guards as racing. `make test-tsan` compiles with `REWIND_TSAN`, where the value sits behind a
/// `pthread_mutex_t`, which ThreadSanitizer intercepts: it then sees every acquire and release
/// (and, with its deadlock detector on, the order locks are taken in), so the types that use one
/// need no suppressions, and a race in their methods, or in the stores and observers they call,
/// is reported.
///
/// Its `init` and `withLock` are `Mutex`'s. Unlike a `Mutex`, its value must be copyable, and
/// nothing refuses a `Lock` declared `var` (declare it with `let`: replaced while held, the lock
/// would no longer guard anything). It is public
/// in a module of its own that no product names: the package's modules import it, and a
/// `package` declaration's `@inlinable` body is not inlined into another module (Swift 6.3), where
/// a call left in unspecialized code looks up `Lock`'s generic metadata each time.
public struct Lock<Value>: ~Copyable, @unchecked Sendable {
  #if REWIND_TSAN
    @usableFromInline let box: PthreadLockBox<Value>
  #else
    @usableFromInline let mutex: Mutex<Value>
  #endif

  /// Makes a lock guarding `initialValue`.
  @inlinable @inline(__always)
  public init(_ initialValue: consuming sending Value) {
    #if REWIND_TSAN
      box = PthreadLockBox(initialValue)
    #else
      mutex = Mutex(initialValue)
    #endif
  }

  /// Runs `body` on the value while holding the lock. Always inlined, as `Mutex.withLock` is: a
  /// call left in an app's unspecialized code of `Manager` looks up `Lock`'s generic metadata
  /// each time (about 11,000 instructions more a command).
  ///
  /// - Parameter body: Reads or changes the value; no other thread holds the lock meanwhile.
  /// - Returns: What `body` returns.
  @inlinable @inline(__always)
  public borrowing func withLock<Result: ~Copyable, E: Error>(
    _ body: (inout sending Value) throws(E) -> sending Result
  ) throws(E) -> sending Result {
    #if REWIND_TSAN
      box.lock()
      defer { box.unlock() }
      return try body(&box.storage.pointee)
    #else
      return try mutex.withLock(body)
    #endif
  }
}

#if REWIND_TSAN
  /// The value and its `pthread_mutex_t` in `REWIND_TSAN` builds, in memory of their own: neither
  /// may move while a thread holds or waits for the lock.
  ///
  /// `@unchecked Sendable`: `storage` is read and written only between `lock()` and `unlock()`.
  @usableFromInline
  final class PthreadLockBox<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline nonisolated(unsafe) let storage: UnsafeMutablePointer<Value>

    @usableFromInline
    init(_ value: consuming Value) {
      mutex = .allocate(capacity: 1)
      // Error-checking, so that taking the lock again on the thread that holds it traps, as a
      // `Mutex` does, where a default mutex would hang.
      var attributes = pthread_mutexattr_t()
      pthread_mutexattr_init(&attributes)
      pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
      precondition(pthread_mutex_init(mutex, &attributes) == 0, "pthread_mutex_init failed")
      pthread_mutexattr_destroy(&attributes)
      storage = .allocate(capacity: 1)
      storage.initialize(to: value)
    }

    deinit {
      storage.deinitialize(count: 1)
      storage.deallocate()
      pthread_mutex_destroy(mutex)
      mutex.deallocate()
    }

    @usableFromInline func lock() {
      precondition(pthread_mutex_lock(mutex) == 0, "the lock is already held by this thread")
    }
    @usableFromInline func unlock() {
      precondition(pthread_mutex_unlock(mutex) == 0, "the lock is not held by this thread")
    }
  }
#endif
