/// A collection whose own `Encodable` conformance writes its elements in hash order, which
/// changes from one process to the next (Swift seeds its hashing per process): `Set` and
/// `Dictionary`. The field encoder writes them through `encodeInSortedOrder(to:)` instead, in the
/// same shape sorted by element or key, so that equal events encode to equal bytes and equal
/// states to equal digests everywhere. They decode as before: the shape is the one their
/// `Decodable` conformances read, and order means nothing to them.
///
/// The elements or keys must be `Comparable` for that: a set or dictionary of anything else has
/// no order but its hash order, and one of two or more entries is refused (an
/// `EncodingError.invalidValue` that names its type) rather than written in that order. Where
/// `<` leaves two distinct entries untold apart (a `<` that compares part of a value, a job's
/// priority say; `String`'s, which holds neither `"e\u{301}" < "\u{E9}a"` nor the reverse), the
/// entries are sorted by `<` from the order of their own field encodings' bytes, not from the
/// hash order they came in (see `sortedAlike`).
protocol HashOrderedEncodable {
  func encodeInSortedOrder(to encoder: any Encoder) throws
}

/// A sequence that iterates in hash order (`Set`, a dictionary's `keys` and `values`): what an
/// unkeyed container's `encode(contentsOf:)` is handed besides arrays. The field encoder writes
/// its elements in the order `encodeInSortedOrder` writes a set's, or refuses it (`values`).
protocol HashOrderedSequence {
  /// The elements in the order the field encoder writes them.
  /// - Throws: `EncodingError.invalidValue` when they have no order but their hash order.
  func elementsInEncodingOrder(at codingPath: [any CodingKey]) throws -> [any Encodable]
}

extension Set: HashOrderedEncodable where Element: Encodable {
  /// As `Set.encode(to:)`: one unkeyed container of the elements.
  func encodeInSortedOrder(to encoder: any Encoder) throws {
    var container = encoder.unkeyedContainer()
    guard count > 1 else {  // no array made for none or one
      for element in self { try container.encode(element) }
      return
    }
    for element in try sortedForEncoding(at: encoder.codingPath) { try container.encode(element) }
  }

  /// The elements sorted as `HashOrderedEncodable` says.
  func sortedForEncoding(at codingPath: [any CodingKey]) throws -> [Element] {
    guard count > 1 else { return Array(self) }
    let precedes = try encodingOrder(Element.self, of: self, at: codingPath)
    return try sortedAlike(self, by: precedes, bytes: { try FieldEncoder().encode($0) })
  }
}

extension Set: HashOrderedSequence where Element: Encodable {
  func elementsInEncodingOrder(at codingPath: [any CodingKey]) throws -> [any Encodable] {
    try sortedForEncoding(at: codingPath)
  }
}

extension Dictionary.Keys: HashOrderedSequence where Key: Encodable {
  /// The keys sorted as a set of them is.
  func elementsInEncodingOrder(at codingPath: [any CodingKey]) throws -> [any Encodable] {
    guard count > 1 else { return Array(self) }
    let precedes = try encodingOrder(Key.self, of: self, at: codingPath)
    return try sortedAlike(self, by: precedes, bytes: { try FieldEncoder().encode($0) })
  }
}

extension Dictionary.Values: HashOrderedSequence where Value: Encodable {
  /// Refused when there are two or more: the values' order is their keys' hash order, and a
  /// value alone does not say where its key would sort.
  func elementsInEncodingOrder(at codingPath: [any CodingKey]) throws -> [any Encodable] {
    guard count > 1 else { return Array(self) }
    throw EncodingError.invalidValue(
      self,
      EncodingError.Context(
        codingPath: codingPath,
        debugDescription: "a dictionary's values come in its hash order, which changes from one process to the next: "
          + "encode the dictionary, or its values in an order of your own, so that equal values encode alike"))
  }
}

extension Dictionary: HashOrderedEncodable where Key: Encodable, Value: Encodable {
  /// As `Dictionary.encode(to:)`: keyed by the keys for `String` and `Int` keys (and keys that
  /// are `CodingKeyRepresentable`), otherwise one unkeyed container of keys and values in turn.
  func encodeInSortedOrder(to encoder: any Encoder) throws {
    let precedes: (Key, Key) -> Bool =
      count > 1 ? try encodingOrder(Key.self, of: self, at: encoder.codingPath) : { _, _ in false }
    let entries = try sortedAlike(self, by: { precedes($0.key, $1.key) }) {
      try FieldEncoder().encode($0.key) + FieldEncoder().encode($0.value)
    }
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

/// The order sets and dictionaries are written in: `<`, and for floating-point elements or keys
/// IEEE 754's total order, which agrees with `<` but also places NaNs (negative ones before every
/// number, positive ones after, each by payload; `-0.0` before `0.0`, never both in one set). `<`
/// places no NaN: sorted by it, a NaN and what follows it would stay in the order the elements
/// came in, the hash order. Two NaN keys of one dictionary with the same bits (NaN is not equal to
/// itself, so a dictionary can hold several) tie, and go in the order of their values' bytes
/// (`sortedAlike`).
/// - Throws: `EncodingError.invalidValue` naming `collection`'s type when `T` is not
///   `Comparable`: it has no order to be written in but the hash order, which changes from one
///   process to the next.
private func encodingOrder<T>(_: T.Type, of collection: Any, at codingPath: [any CodingKey]) throws -> (T, T) -> Bool {
  // `T` is the opened type in each case, so the casts back cannot fail.
  if let floatingPoint = T.self as? any FloatingPoint.Type { return totalOrder(floatingPoint) as! (T, T) -> Bool }
  if let comparable = T.self as? any Comparable.Type { return lessThan(comparable) as! (T, T) -> Bool }
  throw EncodingError.invalidValue(
    collection,
    EncodingError.Context(
      codingPath: codingPath,
      debugDescription: "a \(type(of: collection)) has no order but its hash order, which changes from one process to "
        + "the next: make \(T.self) Comparable (or encode the collection sorted) so that equal values encode alike"))
}

/// `<` of `C` (as `Any`, for `encodingOrder` to cast to its own type).
private func lessThan<C: Comparable>(_: C.Type) -> Any {
  { (a: C, b: C) -> Bool in a < b }
}

/// `<` in IEEE 754's total order of `F` (as `Any`, for `encodingOrder` to cast to its own type).
private func totalOrder<F: FloatingPoint>(_: F.Type) -> Any {
  { (a: F, b: F) -> Bool in !b.isTotallyOrdered(belowOrEqualTo: a) }
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
