internal import Synchronization

#if canImport(Glibc)
  internal import Glibc
#elseif canImport(Darwin)
  internal import Darwin
#endif

/// The manager's clock: nanoseconds since 1970-01-01T00:00:00Z. Injected so tests control time;
/// what it returns is recorded in events, never read during apply or replay.
public struct TimeSource: Sendable {
  private let read: @Sendable () -> Int64

  public init(_ read: @escaping @Sendable () -> Int64) { self.read = read }

  public func now() -> Int64 { read() }

  /// The system's real-time clock.
  public static let system = TimeSource {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
  }

  /// A clock that starts at `start` and moves `step` nanoseconds on every reading.
  public static func stepping(from start: Int64, by step: Int64 = 1_000_000) -> TimeSource {
    let next = Counter(start)
    return TimeSource { next.advance(by: step) }
  }
}
