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

  /// 1, 2, 3, … in the low half, with `prefix` in the high half: for tests.
  ///
  /// Each source starts at 1, and nothing checks the journal: a manager reopened with a new
  /// `.sequential()` on a journal that already holds its ids makes them again, so a new record
  /// takes an existing record's id (an insert then replaces that record). Give each opening of
  /// one journal its own `prefix`, or keep one source for all of them.
  public static func sequential(prefix: UInt64 = 0) -> IdentifierSource {
    let next = Counter(1)
    return IdentifierSource { Identifier(high: prefix, low: UInt64(next.advance(by: 1))) }
  }
}
