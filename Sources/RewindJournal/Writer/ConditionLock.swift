import Glibc

/// A mutex and a condition variable, glibc's, whose timed waits run on `CLOCK_MONOTONIC`.
///
/// The writer thread lingers for more appends (`batched`, and the gather of a group under
/// `always`) until a deadline a few milliseconds away. `NSCondition` takes that deadline as a
/// `Date`, on the wall clock: setting the clock back by a second while the writer waits held
/// every append it was gathering for that second more (appends below the count it gathers for do
/// not wake it). Deadlines here are nanoseconds of `now()`, which no clock setting moves. It also
/// costs less: about 27 instructions fewer per one-record append (callgrind, `rewind-bench
/// --child append`), which takes the lock twice.
final class ConditionLock: @unchecked Sendable {
  // `@unchecked`: the pointers are set once and used only through glibc's own synchronization.
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

  init() {
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    let codes = (pthread_mutex_init(mutex, nil), pthread_cond_init(condition, &attributes))
    pthread_condattr_destroy(&attributes)
    precondition(codes == (0, 0), "glibc could not make a mutex and a condition: \(codes)")
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deallocate()
    mutex.deallocate()
  }

  /// Nanoseconds on `CLOCK_MONOTONIC`, the clock of `wait(untilNanoseconds:)`'s deadlines.
  static func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.nanoseconds)
  }

  /// `now()` plus `nanoseconds`; the clock's end if that overflows.
  static func deadline(after nanoseconds: UInt64) -> UInt64 {
    let (sum, overflow) = now().addingReportingOverflow(nanoseconds)
    return overflow ? .max : sum
  }

  /// A non-negative `duration` in whole nanoseconds, at most `UInt64.max`.
  static func nanoseconds(_ duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0, attoseconds >= 0 else { return 0 }
    let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
    let (total, overflowAgain) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
    return overflow || overflowAgain ? .max : total
  }

  @inline(__always) func lock() { pthread_mutex_lock(mutex) }

  @inline(__always) func unlock() { pthread_mutex_unlock(mutex) }

  /// Wakes one thread waiting on the condition, if any. Holder of the lock.
  func signal() { pthread_cond_signal(condition) }

  /// Releases the lock, waits to be signalled (or woken spuriously: callers wait in a loop that
  /// checks what they wait for), and takes the lock again. Holder of the lock.
  func wait() { pthread_cond_wait(condition, mutex) }

  /// As `wait()`, at most until `deadline` (see `now()`). Returns false if the deadline passed.
  func wait(untilNanoseconds deadline: UInt64) -> Bool {
    var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    return pthread_cond_timedwait(condition, mutex, &time) != ETIMEDOUT
  }
}
