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
