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

/// The manager's source of new identifiers. Injected so tests get predictable ids; what it returns
/// is recorded in events.
public struct IdentifierSource: Sendable {
  private let make: @Sendable () -> Identifier

  public init(_ make: @escaping @Sendable () -> Identifier) { self.make = make }

  public func next() -> Identifier { make() }

  /// Random 128-bit identifiers from the system generator.
  public static let random = IdentifierSource {
    var generator = SystemRandomNumberGenerator()
    return Identifier(high: generator.next(), low: generator.next())
  }

  /// 1, 2, 3, … in the low half, with `prefix` in the high half.
  public static func sequential(prefix: UInt64 = 0) -> IdentifierSource {
    let next = Counter(1)
    return IdentifierSource { Identifier(high: prefix, low: UInt64(next.advance(by: 1))) }
  }
}

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
