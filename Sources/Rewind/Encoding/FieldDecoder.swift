#if canImport(Glibc)
  internal import Glibc
#elseif canImport(Darwin)
  internal import Darwin
#endif

/// Decodes `Decodable` values from the field encoding (see `FieldTag`).
///
/// Every read is bounds-checked: malformed bytes throw `DecodingError.dataCorrupted` (wrapping a
/// `FieldFormatError` with the byte offset), never trap. Missing keys throw `keyNotFound`, so a
/// field added to a type needs an upcaster or an optional.
public struct FieldDecoder {
  public init() {}

  public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
    try decode(type, from: bytes, at: 0)
  }

  /// Decodes the one value that starts at `offset`. Bytes after it are not read.
  func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8], at offset: Int) throws -> T {
    try decodeValue(T.self, bytes: bytes, at: offset, depth: 0)
  }
}

/// Decodes the value at `position`: identifiers directly, anything else through its `Decodable` init.
///
/// `depth` is the value's nesting level (below `FieldLimits.maximumDepth`), plus, from bit 8 up,
/// how many values in a row were read at that level through single-value containers (`Optional`
/// and wrappers read through one, each at its own level). Those are bounded as well: a type that
/// reads itself through one without end would otherwise recurse until the stack overflows.
func decodeValue<T: Decodable>(_ type: T.Type, bytes: [UInt8], at position: Int, depth: Int) throws -> T {
  if T.self == Identifier.self {  // a metadata comparison, not a dynamic cast
    var value = FieldValueReader(reader: FieldBytesReader(bytes, position: position))
    return unsafeBitCast(try value.identifier(), to: T.self)
  }
  guard depth & 0xFF < FieldLimits.maximumDepth else {
    throw corrupt(FieldFormatError("nesting too deep", at: position))
  }
  guard depth >> 8 < FieldLimits.maximumDepth else {
    throw corrupt(
      FieldFormatError(
        "more than \(FieldLimits.maximumDepth) values read through single-value containers, one in another",
        at: position
      ))
  }
  return try T(from: FieldValueDecoder(bytes: bytes, position: position, depth: depth))
}

func corrupt(_ error: FieldFormatError) -> DecodingError {
  DecodingError.dataCorrupted(
    DecodingError.Context(codingPath: [], debugDescription: error.description, underlyingError: error))
}

@inline(__always)
func wrap<T>(_ body: () throws -> T) throws -> T {
  do { return try body() } catch let error as FieldFormatError { throw corrupt(error) }
}

/// Reads one value's primitives, checking its tag.
struct FieldValueReader {
  var reader: FieldBytesReader

  /// A value of `type` expected where the tag just read says `tag`: located at that tag's byte
  /// (one before the reader's position; every caller has just read it).
  func mismatch<T>(_ type: T.Type, _ tag: FieldTag) -> DecodingError {
    DecodingError.typeMismatch(
      type,
      DecodingError.Context(
        codingPath: [], debugDescription: "expected \(type), found a \(tag) at byte \(reader.position - 1)"))
  }

  mutating func isNil() throws -> Bool { try wrap { try reader.peekByte() } == FieldTag.null.rawValue }

  mutating func bool() throws -> Bool {
    switch try wrap({ try reader.readTag() }) {
    case .true: return true
    case .false: return false
    case let tag: throw mismatch(Bool.self, tag)
    }
  }

  mutating func string() throws -> String {
    let tag = try wrap { try reader.readTag() }
    guard tag == .string else { throw mismatch(String.self, tag) }
    return try wrap { try reader.readString() }
  }

  mutating func double() throws -> Double {
    let tag = try wrap { try reader.readTag() }
    switch tag {
    case .double: return Double(bitPattern: try wrap { try reader.readFixed64() })
    case .int: return Double(try wrap { try reader.readZigZag() })
    case .uint: return Double(try wrap { try reader.readVarint() })
    default: throw mismatch(Double.self, tag)
    }
  }

  /// A `double` narrowed to `Float`: rounded as any conversion rounds, but a finite number beyond
  /// `Float`'s range is an error, as for an integer too wide for its type, not infinity.
  mutating func float() throws -> Float {
    let start = reader.position
    let value = try double()
    let narrowed = Float(value)
    guard narrowed.isFinite || !value.isFinite else {
      throw DecodingError.dataCorrupted(
        DecodingError.Context(
          codingPath: [], debugDescription: "number \(value) at byte \(start) does not fit in Float"))
    }
    return narrowed
  }

  mutating func identifier() throws -> Identifier {
    let tag = try wrap { try reader.readTag() }
    switch tag {
    case .identifier: return try wrap { try reader.readIdentifier() }
    case .string:
      let start = reader.position
      guard let parsed = Identifier(try wrap { try reader.readString() }) else {
        throw corrupt(
          FieldFormatError("a string that is not 32 hex digits where an identifier was expected", at: start))
      }
      return parsed
    default: throw mismatch(Identifier.self, tag)
    }
  }

  mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
    let start = reader.position
    let tag = try wrap { try reader.readTag() }
    let value: T?
    switch tag {
    case .int: value = T(exactly: try wrap { try reader.readZigZag() })
    case .uint: value = T(exactly: try wrap { try reader.readVarint() })
    default: throw mismatch(type, tag)
    }
    guard let value else {
      throw DecodingError.dataCorrupted(
        DecodingError.Context(codingPath: [], debugDescription: "integer at byte \(start) does not fit in \(type)"))
    }
    return value
  }
}

struct FieldValueDecoder: Decoder {
  let bytes: [UInt8]
  let position: Int
  /// The level and the reads through single-value containers (see `decodeValue`).
  let depth: Int

  var codingPath: [any CodingKey] { [] }
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
    KeyedDecodingContainer(try FieldKeyedDecoder<Key>(bytes: bytes, position: position, depth: depth & 0xFF))
  }

  func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
    try FieldUnkeyedDecoder(bytes: bytes, position: position, depth: depth & 0xFF)
  }

  func singleValueContainer() throws -> any SingleValueDecodingContainer {
    FieldSingleValueDecoder(bytes: bytes, position: position, depth: depth)
  }
}

struct FieldKeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
  let bytes: [UInt8]
  let depth: Int
  /// Where the object's tag is, for errors.
  let position: Int
  /// The object's entries in stored order: where each key's UTF-8 starts, its length, and where
  /// its value starts.
  private let entries: [(keyStart: Int, keyCount: Int, value: Int)]
  /// For an object of more than `scannedEntries` entries, the first entry of each key by the
  /// key's bytes, which `index(of:)` looks up instead of scanning: a dictionary of n entries
  /// (whose decoding asks for each key) then decodes in O(n), not O(n²). Nil for smaller objects,
  /// a struct's fields, where scanning costs less than hashing.
  private let firstEntries: [[UInt8]: Int]?
  static var scannedEntries: Int { 16 }

  init(bytes: [UInt8], position: Int, depth: Int) throws {
    self.bytes = bytes
    self.depth = depth
    self.position = position
    var reader = FieldBytesReader(bytes, position: position)
    let tag = try wrap { try reader.readTag() }
    guard tag == .object else {
      throw DecodingError.typeMismatch(
        [String: Any].self,
        DecodingError.Context(
          codingPath: [], debugDescription: "expected an object, found a \(tag) at byte \(position)"))
    }
    var entries: [(keyStart: Int, keyCount: Int, value: Int)] = []
    entries.reserveCapacity(8)
    try wrap {
      while try reader.peekByte() != 0 {
        let (start, count) = try reader.readStringBounds(lengthBias: 1)
        entries.append((start, count, reader.position))
        try reader.skipValue(depth: depth + 1)
      }
    }
    self.entries = entries
    if entries.count > Self.scannedEntries {
      var first: [[UInt8]: Int] = [:]
      first.reserveCapacity(entries.count)
      for (index, entry) in entries.enumerated() {
        let key = Array(bytes[entry.keyStart..<entry.keyStart + entry.keyCount])
        if first[key] == nil { first[key] = index }
      }
      self.firstEntries = first
    } else {
      self.firstEntries = nil
    }
  }

  var codingPath: [any CodingKey] { [] }
  /// Each key once, where its first entry stands: a key's first entry is the one every read
  /// finds (FORMAT.md), so a later entry of it names no other field. Keys are told apart by the
  /// bytes `index(of:)` compares.
  var allKeys: [Key] {
    var seen: Set<[UInt8]> = []
    return entries.compactMap {
      let name = String(decoding: bytes[$0.keyStart..<$0.keyStart + $0.keyCount], as: UTF8.self)
      guard seen.insert(Array(name.utf8)).inserted else { return nil }
      return Key(stringValue: name)
    }
  }

  private func index(of key: Key) -> Int? {
    if let firstEntries { return firstEntries[Array(key.stringValue.utf8)] }
    var name = key.stringValue
    return name.withUTF8 { name in
      bytes.withUnsafeBufferPointer { bytes in
        entries.firstIndex { entry in
          entry.keyCount == name.count
            && (name.count == 0
              || memcmp(bytes.baseAddress! + entry.keyStart, name.baseAddress!, name.count) == 0)
        }
      }
    }
  }

  func contains(_ key: Key) -> Bool { index(of: key) != nil }

  private func reader(for key: Key) throws -> FieldValueReader {
    guard let found = index(of: key) else {
      throw DecodingError.keyNotFound(
        key,
        DecodingError.Context(
          codingPath: [], debugDescription: "no field \"\(key.stringValue)\" in the object at byte \(position)"))
    }
    return FieldValueReader(reader: FieldBytesReader(bytes, position: entries[found].value))
  }

  func decodeNil(forKey key: Key) throws -> Bool {
    var value = try reader(for: key)
    return try value.isNil()
  }
  func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
    var v = try reader(for: key)
    return try v.bool()
  }
  func decode(_ type: String.Type, forKey key: Key) throws -> String {
    var v = try reader(for: key)
    return try v.string()
  }
  func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
    var v = try reader(for: key)
    return try v.double()
  }
  func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
    var v = try reader(for: key)
    return try v.float()
  }
  func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
    var v = try reader(for: key)
    return try v.integer(type)
  }
  func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 {
    var v = try reader(for: key)
    return try v.integer(type)
  }
  func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
    var v = try reader(for: key)
    return try v.integer(type)
  }
  func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
    var v = try reader(for: key)
    return try v.integer(type)
  }
  func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
    var v = try reader(for: key)
    return try v.integer(type)
  }
  func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
    var v = try reader(for: key)
    return try v.integer(type)
  }
  func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
    var v = try reader(for: key)
    return try v.integer(type)
  }
  func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
    var v = try reader(for: key)
    return try v.integer(type)
  }
  func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
    var v = try reader(for: key)
    return try v.integer(type)
  }
  func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
    var v = try reader(for: key)
    return try v.integer(type)
  }
  func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
    let value = try reader(for: key)
    return try decodeValue(T.self, bytes: bytes, at: value.reader.position, depth: depth + 1)
  }

  func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
    -> KeyedDecodingContainer<NestedKey>
  {
    let value = try reader(for: key)
    return KeyedDecodingContainer(
      try FieldKeyedDecoder<NestedKey>(bytes: bytes, position: value.reader.position, depth: depth + 1))
  }

  func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
    let value = try reader(for: key)
    return try FieldUnkeyedDecoder(bytes: bytes, position: value.reader.position, depth: depth + 1)
  }

  func superDecoder() throws -> any Decoder { throw unsupportedSuper() }
  func superDecoder(forKey key: Key) throws -> any Decoder { throw unsupportedSuper() }
}

func unsupportedSuper() -> DecodingError {
  DecodingError.dataCorrupted(
    DecodingError.Context(codingPath: [], debugDescription: "FieldDecoder does not support superDecoder"))
}

struct FieldUnkeyedDecoder: UnkeyedDecodingContainer {
  let bytes: [UInt8]
  let depth: Int
  /// Where the array's tag is, for errors.
  let position: Int
  private var next: Int
  private(set) var currentIndex = 0

  init(bytes: [UInt8], position: Int, depth: Int) throws {
    self.bytes = bytes
    self.depth = depth
    self.position = position
    var reader = FieldBytesReader(bytes, position: position)
    let tag = try wrap { try reader.readTag() }
    guard tag == .array else {
      throw DecodingError.typeMismatch(
        [Any].self,
        DecodingError.Context(codingPath: [], debugDescription: "expected an array, found a \(tag) at byte \(position)")
      )
    }
    next = reader.position
  }

  var codingPath: [any CodingKey] { [] }
  var count: Int? { nil }
  /// At the array's end tag. Bytes that stop before it are not an end: the next read throws
  /// there, as for any truncated value, instead of the array passing for whole.
  var isAtEnd: Bool { next < bytes.count && bytes[next] == FieldTag.end.rawValue }

  /// A reader at the next element; moves past it.
  private mutating func advance() throws -> FieldValueReader {
    guard !isAtEnd else {
      throw DecodingError.valueNotFound(
        Any.self,
        DecodingError.Context(
          codingPath: [],
          debugDescription: "the array at byte \(position) has no more elements (it has \(currentIndex))"))
    }
    var reader = FieldBytesReader(bytes, position: next)
    try wrap { try reader.skipValue(depth: depth + 1) }
    defer {
      next = reader.position
      currentIndex += 1
    }
    return FieldValueReader(reader: FieldBytesReader(bytes, position: next))
  }

  mutating func decodeNil() throws -> Bool {
    guard next < bytes.count, bytes[next] == FieldTag.null.rawValue else { return false }
    _ = try advance()
    return true
  }
  mutating func decode(_ type: Bool.Type) throws -> Bool {
    var v = try advance()
    return try v.bool()
  }
  mutating func decode(_ type: String.Type) throws -> String {
    var v = try advance()
    return try v.string()
  }
  mutating func decode(_ type: Double.Type) throws -> Double {
    var v = try advance()
    return try v.double()
  }
  mutating func decode(_ type: Float.Type) throws -> Float {
    var v = try advance()
    return try v.float()
  }
  mutating func decode(_ type: Int.Type) throws -> Int {
    var v = try advance()
    return try v.integer(type)
  }
  mutating func decode(_ type: Int8.Type) throws -> Int8 {
    var v = try advance()
    return try v.integer(type)
  }
  mutating func decode(_ type: Int16.Type) throws -> Int16 {
    var v = try advance()
    return try v.integer(type)
  }
  mutating func decode(_ type: Int32.Type) throws -> Int32 {
    var v = try advance()
    return try v.integer(type)
  }
  mutating func decode(_ type: Int64.Type) throws -> Int64 {
    var v = try advance()
    return try v.integer(type)
  }
  mutating func decode(_ type: UInt.Type) throws -> UInt {
    var v = try advance()
    return try v.integer(type)
  }
  mutating func decode(_ type: UInt8.Type) throws -> UInt8 {
    var v = try advance()
    return try v.integer(type)
  }
  mutating func decode(_ type: UInt16.Type) throws -> UInt16 {
    var v = try advance()
    return try v.integer(type)
  }
  mutating func decode(_ type: UInt32.Type) throws -> UInt32 {
    var v = try advance()
    return try v.integer(type)
  }
  mutating func decode(_ type: UInt64.Type) throws -> UInt64 {
    var v = try advance()
    return try v.integer(type)
  }
  mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
    let value = try advance()
    return try decodeValue(T.self, bytes: bytes, at: value.reader.position, depth: depth + 1)
  }

  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
    NestedKey
  > {
    let value = try advance()
    return KeyedDecodingContainer(
      try FieldKeyedDecoder<NestedKey>(bytes: bytes, position: value.reader.position, depth: depth + 1))
  }

  mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
    let value = try advance()
    return try FieldUnkeyedDecoder(bytes: bytes, position: value.reader.position, depth: depth + 1)
  }

  mutating func superDecoder() throws -> any Decoder { throw unsupportedSuper() }
}

struct FieldSingleValueDecoder: SingleValueDecodingContainer {
  let bytes: [UInt8]
  let position: Int
  /// The level and the reads through single-value containers (see `decodeValue`).
  let depth: Int
  var codingPath: [any CodingKey] { [] }

  private var value: FieldValueReader { FieldValueReader(reader: FieldBytesReader(bytes, position: position)) }

  func decodeNil() -> Bool { position < bytes.count && bytes[position] == FieldTag.null.rawValue }
  func decode(_ type: Bool.Type) throws -> Bool {
    var v = value
    return try v.bool()
  }
  func decode(_ type: String.Type) throws -> String {
    var v = value
    return try v.string()
  }
  func decode(_ type: Double.Type) throws -> Double {
    var v = value
    return try v.double()
  }
  func decode(_ type: Float.Type) throws -> Float {
    var v = value
    return try v.float()
  }
  func decode(_ type: Int.Type) throws -> Int {
    var v = value
    return try v.integer(type)
  }
  func decode(_ type: Int8.Type) throws -> Int8 {
    var v = value
    return try v.integer(type)
  }
  func decode(_ type: Int16.Type) throws -> Int16 {
    var v = value
    return try v.integer(type)
  }
  func decode(_ type: Int32.Type) throws -> Int32 {
    var v = value
    return try v.integer(type)
  }
  func decode(_ type: Int64.Type) throws -> Int64 {
    var v = value
    return try v.integer(type)
  }
  func decode(_ type: UInt.Type) throws -> UInt {
    var v = value
    return try v.integer(type)
  }
  func decode(_ type: UInt8.Type) throws -> UInt8 {
    var v = value
    return try v.integer(type)
  }
  func decode(_ type: UInt16.Type) throws -> UInt16 {
    var v = value
    return try v.integer(type)
  }
  func decode(_ type: UInt32.Type) throws -> UInt32 {
    var v = value
    return try v.integer(type)
  }
  func decode(_ type: UInt64.Type) throws -> UInt64 {
    var v = value
    return try v.integer(type)
  }
  /// The value that stands here, at this level, as the encoder writes it (a single-value
  /// container holds no level of its own: `Optional` and wrappers read through one); counted as
  /// one more read through a single-value container (see `decodeValue`).
  func decode<T: Decodable>(_ type: T.Type) throws -> T {
    try decodeValue(T.self, bytes: bytes, at: position, depth: depth + 0x100)
  }
}
