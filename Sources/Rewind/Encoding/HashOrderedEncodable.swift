/// A collection whose own `Encodable` conformance writes its elements in hash order, which
/// changes from one process to the next (Swift seeds its hashing per process): `Set` and
/// `Dictionary`. The field encoder writes them through `encodeInSortedOrder(to:)` instead, in the
/// same shape sorted by element or key, so that equal events encode to equal bytes and equal
/// states to equal digests everywhere. They decode as before: the shape is the one their
/// `Decodable` conformances read, and order means nothing to them.
///
/// Only where the elements or keys are `Comparable`; a set or dictionary of anything else is
/// still written in hash order (see `Event` and `CanonicalEncoding`).
protocol HashOrderedEncodable {
  func encodeInSortedOrder(to encoder: any Encoder) throws
}

extension Set: HashOrderedEncodable where Element: Encodable & Comparable {
  /// As `Set.encode(to:)`: one unkeyed container of the elements.
  func encodeInSortedOrder(to encoder: any Encoder) throws {
    var container = encoder.unkeyedContainer()
    for element in sorted() { try container.encode(element) }
  }
}

extension Dictionary: HashOrderedEncodable where Key: Encodable & Comparable, Value: Encodable {
  /// As `Dictionary.encode(to:)`: keyed by the keys for `String` and `Int` keys (and keys that
  /// are `CodingKeyRepresentable`), otherwise one unkeyed container of keys and values in turn.
  func encodeInSortedOrder(to encoder: any Encoder) throws {
    let entries = sorted { $0.key < $1.key }
    guard let codingKey = Self.codingKey else {
      var container = encoder.unkeyedContainer()
      for entry in entries {
        try container.encode(entry.key)
        try container.encode(entry.value)
      }
      return
    }
    var container = encoder.container(keyedBy: EntryKey.self)
    for entry in entries { try container.encode(entry.value, forKey: codingKey(entry.key)) }
  }

  /// How `Dictionary`'s own encoding names a key, or nil where it writes keys as values.
  private static var codingKey: ((Key) -> EntryKey)? {
    if Key.self == String.self { return { EntryKey(stringValue: $0 as! String) } }
    if Key.self == Int.self { return { EntryKey(intValue: $0 as! Int) } }
    if Key.self is any CodingKeyRepresentable.Type {
      return { EntryKey(($0 as! any CodingKeyRepresentable).codingKey) }
    }
    return nil
  }
}

/// A dictionary's key as a coding key, spelled as `Dictionary`'s own encoding spells it.
private struct EntryKey: CodingKey {
  var stringValue: String
  var intValue: Int?

  init(stringValue: String) {
    self.stringValue = stringValue
    intValue = nil
  }

  init(intValue: Int) {
    stringValue = String(intValue)
    self.intValue = intValue
  }

  init(_ key: any CodingKey) {
    stringValue = key.stringValue
    intValue = key.intValue
  }
}
