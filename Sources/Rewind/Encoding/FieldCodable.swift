/// Hand-written field coding for hot event types: the same bytes `FieldEncoder` writes for the
/// type's `Codable` form (an object of named, typed fields), without Codable's dispatch and
/// allocations. A registered event that conforms is encoded and decoded this way, and so are the
/// records of a `Store` that conform (snapshots and state digests, `FieldCodableTreeValues`).
///
/// Write fields in a fixed order and read them back in the same order (the reader then finds each
/// at once; out of order still works, by scanning). Keep `Codable` conformance consistent with it:
/// the field names and types must match, so either form decodes the other's bytes.
public protocol FieldCodable {
  func encodeFields(into writer: inout FieldWriter)
  init(fields reader: inout FieldReader) throws
}

/// Writes the fields of one object. See `FieldCodable`.
public struct FieldWriter {
  var output: FieldBytesWriter
  /// Set for the canonical encoding (`CanonicalEncoding`): each object's entries are sorted by
  /// key as it ends, and `-0.0` is written as `0.0`.
  let sorter: FieldObjectSorter?

  init(output: FieldBytesWriter, sorter: FieldObjectSorter? = nil) {
    self.output = output
    self.sorter = sorter
  }

  /// Writes the fields of `value` as an object: its tag, its entries (sorted, for the canonical
  /// encoding) and its end.
  @inline(__always)
  mutating func writeObject(_ value: some FieldCodable) {
    output.append(.object)
    let first = sorter?.beginObject() ?? 0
    value.encodeFields(into: &self)
    if let sorter { sorter.endObject(of: &output.bytes, first: first) }
    output.append(0)
  }

  /// Writes a field's key (its length plus one, then its bytes) and then, into the same room,
  /// `value`, which takes at most `valueBytes` bytes: one check for the whole field.
  @inline(__always)
  private mutating func field(
    _ name: StaticString, valueBytes: Int, _ value: (inout FieldBytesWriter.Room) -> Void
  ) {
    let key = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
    if let sorter { sorter.noteEntry(at: output.count, keyCount: key.count) }
    output.write(atMost: 10 + key.count + valueBytes) { room in
      room.appendString(key, lengthBias: 1)
      value(&room)
    }
  }

  public mutating func write(_ value: String, for name: StaticString) {
    FieldBytesWriter.withUTF8(of: value) { utf8 in
      field(name, valueBytes: 11 + utf8.count) { room in
        room.append(.string)
        room.appendString(utf8)
      }
    }
  }

  public mutating func write(_ value: Int, for name: StaticString) {
    field(name, valueBytes: 11) { room in
      room.append(.int)
      room.appendVarint(FieldBytesWriter.zigZag(Int64(value)))
    }
  }

  public mutating func write(_ value: UInt64, for name: StaticString) {
    field(name, valueBytes: 11) { room in
      room.append(.uint)
      room.appendVarint(value)
    }
  }

  public mutating func write(_ value: Bool, for name: StaticString) {
    field(name, valueBytes: 1) { room in room.append(value ? .true : .false) }
  }

  public mutating func write(_ value: Double, for name: StaticString) {
    let bits = sorter?.canonicalBits(of: value) ?? value.bitPattern  // the canonical encoding's 0.0 for -0.0
    field(name, valueBytes: 9) { room in
      room.append(.double)
      room.appendFixed64(bits)
    }
  }

  public mutating func write(_ value: Identifier, for name: StaticString) {
    field(name, valueBytes: 17) { room in
      room.append(.identifier)
      room.appendFixed64(value.high)
      room.appendFixed64(value.low)
    }
  }

  public mutating func write(_ values: [String], for name: StaticString) {
    field(name, valueBytes: 1) { room in room.append(.array) }
    for value in values {
      FieldBytesWriter.withUTF8(of: value) { utf8 in
        output.write(atMost: 11 + utf8.count) { room in
          room.append(.string)
          room.appendString(utf8)
        }
      }
    }
    output.append(.end)
  }

  /// A nested object.
  public mutating func write(_ value: some FieldCodable, for name: StaticString) {
    field(name, valueBytes: 0) { _ in }
    writeObject(value)
  }

  /// An array of nested objects.
  public mutating func write(_ values: [some FieldCodable], for name: StaticString) {
    field(name, valueBytes: 1) { room in room.append(.array) }
    for value in values { writeObject(value) }
    output.append(.end)
  }

  /// Anything else, through its `Encodable` form. If it throws, nothing of the field is written:
  /// the object stays well-formed, without it.
  public mutating func write(encoding value: some Encodable, for name: StaticString) throws {
    let start = output.count
    field(name, valueBytes: 0) { _ in }
    do {
      try FieldEncoder(sorter: sorter).encode(value, appendingTo: &output.bytes)
    } catch {
      output.bytes.removeSubrange(start...)
      sorter?.forgetEntry(at: start)
      throw error
    }
  }
}

/// Reads the fields of one object. See `FieldCodable`. Every read is bounds-checked and throws
/// `DecodingError` for malformed or missing fields. Of two entries with equal keys the first is
/// read, as `FieldDecoder` and `FieldRenderer` read it (FORMAT.md), provided each field is read
/// once, as `init(fields:)` does.
public struct FieldReader {
  let bytes: [UInt8]
  /// The first entry of the object.
  private let first: Int
  /// The first entry not known to be read: every entry before it holds a key read already, so the
  /// first entry of a key not read yet is at or after it. Reads in the order of the entries move
  /// it past each one; a read that skips entries to find its key leaves it at the first skipped.
  private var next: Int
  private let depth: Int

  /// A reader of the object whose tag is at `position`.
  init(bytes: [UInt8], position: Int, depth: Int) throws {
    var reader = FieldBytesReader(bytes, position: position)
    let tag = try wrap { try reader.readTag() }
    guard tag == .object else {
      throw DecodingError.typeMismatch(
        [String: Any].self,
        DecodingError.Context(
          codingPath: [], debugDescription: "expected an object, found a \(tag) at byte \(position)"))
    }
    guard depth < FieldLimits.maximumDepth else { throw corrupt(FieldFormatError("nesting too deep", at: position)) }
    self.bytes = bytes
    self.first = reader.position
    self.next = reader.position
    self.depth = depth
  }

  /// The value of field `name`, where its entry starts and the position after its value: the
  /// first such entry from `next` (see there), else from the object's first entry (a key read
  /// before).
  private func value(for name: StaticString) throws -> (value: FieldValueReader, entry: Int, end: Int) {
    let wanted = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
    if let found = try find(wanted, from: next) ?? find(wanted, from: first) { return found }
    throw DecodingError.keyNotFound(
      AnyFieldKey(name.description),
      DecodingError.Context(
        codingPath: [], debugDescription: "no field \"\(name)\" in the object at byte \(first - 1)"))
  }

  /// The value of field `name` and where its entry starts, for a read that consumes the whole
  /// value and then calls `passed(_:end:)`. In the usual case, fields read in the order they were
  /// written, the entry at `next` is the one: its value is not skipped over first.
  /// The key is compared in place: its length is one varint byte (keys under 127 bytes, the
  /// length stored plus one), then its bytes. Anything else is left to `value(for:)`, which finds
  /// any key or says it is missing.
  private func valueToConsume(for name: StaticString) throws -> (value: FieldValueReader, entry: Int) {
    let count = name.utf8CodeUnitCount
    let entry = next
    let matches = bytes.withUnsafeBufferPointer { buffer -> Bool in
      guard count < 0x7F, entry < buffer.count, buffer[entry] == UInt8(count + 1), count < buffer.count - entry
      else { return false }
      let key = buffer.baseAddress! + entry + 1
      for index in 0..<count where key[index] != name.utf8Start[index] { return false }
      return true
    }
    if matches { return (FieldValueReader(reader: FieldBytesReader(bytes, position: entry + 1 + count)), entry) }
    let found = try value(for: name)
    return (found.value, found.entry)
  }

  /// Where the value of field `name` starts, past its tag, when the entry at `next` holds that key
  /// and a value tagged `tag`: the common case of fields read in the order they were written, which
  /// `read` then finishes in place behind its own bounds checks, without a value reader. Nil sends
  /// the read the general way (`consume`), which finds any key and throws the precise error.
  @inline(__always)
  private func valueAtNext(of name: StaticString, tagged tag: FieldTag, in buffer: UnsafeBufferPointer<UInt8>) -> Int? {
    let count = name.utf8CodeUnitCount
    let entry = next
    guard count < 0x7F, entry < buffer.count, buffer[entry] == UInt8(count + 1), count + 1 < buffer.count - entry
    else { return nil }
    let key = buffer.baseAddress! + entry + 1
    for index in 0..<count where key[index] != name.utf8Start[index] { return nil }
    guard key[count] == tag.rawValue else { return nil }
    return entry + 2 + count
  }

  /// Notes that the entry at `entry`, ending at `end`, was read: `next` moves past it when it is
  /// the entry at `next`, and stays where it is when entries before it were skipped.
  private mutating func passed(_ entry: Int, end: Int) {
    if entry == next { next = end }
  }

  /// Reads a whole value of field `name` with `read`.
  private mutating func consume<T>(_ name: StaticString, _ read: (inout FieldValueReader) throws -> T) throws -> T {
    let found = try valueToConsume(for: name)
    var value = found.value
    let result = try read(&value)
    passed(found.entry, end: value.reader.position)
    return result
  }

  /// Scans the entries from `start` to the end of the object for the first with the key `wanted`.
  private func find(_ wanted: UnsafeBufferPointer<UInt8>, from start: Int) throws -> (
    value: FieldValueReader, entry: Int, end: Int
  )? {
    var reader = FieldBytesReader(bytes, position: start)
    return try wrap { () -> (value: FieldValueReader, entry: Int, end: Int)? in
      while try reader.peekByte() != 0 {
        let entry = reader.position
        let (keyStart, keyCount) = try reader.readStringBounds(lengthBias: 1)
        let valueStart = reader.position
        try reader.skipValue(depth: depth + 1)
        if reader.bytesEqual(start: keyStart, count: keyCount, wanted) {
          return (FieldValueReader(reader: FieldBytesReader(bytes, position: valueStart)), entry, reader.position)
        }
      }
      return nil
    }
  }

  /// Where the object ends (the position after its terminator), found from `next`: when the
  /// fields were read in order, only the terminator is left to check.
  func endOfObject() throws -> Int {
    var reader = FieldBytesReader(bytes, position: next)
    try wrap {
      while try reader.peekByte() != 0 {
        _ = try reader.readStringBounds(lengthBias: 1)
        try reader.skipValue(depth: depth + 1)
      }
    }
    return reader.position + 1
  }

  public func contains(_ name: StaticString) -> Bool {
    (try? value(for: name)) != nil
  }

  public mutating func read(_ type: String.Type, for name: StaticString) throws -> String {
    let inPlace = bytes.withUnsafeBufferPointer { buffer -> (String, end: Int)? in
      guard var start = valueAtNext(of: name, tagged: .string, in: buffer), start < buffer.count else { return nil }
      // The length: a varint of one or two bytes (strings under 16 KiB).
      var length = Int(buffer[start])
      start += 1
      if length >= 0x80 {
        guard start < buffer.count, buffer[start] < 0x80 else { return nil }
        length = (length & 0x7F) | Int(buffer[start]) << 7
        start += 1
      }
      guard length <= buffer.count - start else { return nil }
      let utf8 = UnsafeBufferPointer(start: buffer.baseAddress! + start, count: length)
      return (String(decoding: utf8, as: UTF8.self), start + length)
    }
    if let (string, end) = inPlace {
      next = end
      return string
    }
    return try consume(name) { value in try value.string() }
  }

  public mutating func read(_ type: Int.Type, for name: StaticString) throws -> Int {
    try consume(name) { value in try value.integer(Int.self) }
  }

  public mutating func read(_ type: UInt64.Type, for name: StaticString) throws -> UInt64 {
    try consume(name) { value in try value.integer(UInt64.self) }
  }

  public mutating func read(_ type: Bool.Type, for name: StaticString) throws -> Bool {
    try consume(name) { value in try value.bool() }
  }

  public mutating func read(_ type: Double.Type, for name: StaticString) throws -> Double {
    try consume(name) { value in try value.double() }
  }

  public mutating func read(_ type: Identifier.Type, for name: StaticString) throws -> Identifier {
    let inPlace = bytes.withUnsafeBufferPointer { buffer -> (Identifier, end: Int)? in
      guard let start = valueAtNext(of: name, tagged: .identifier, in: buffer), buffer.count - start >= 16 else {
        return nil
      }
      return (Identifier(littleEndianWordsAt: buffer.baseAddress! + start), start + 16)
    }
    if let (identifier, end) = inPlace {
      next = end
      return identifier
    }
    return try consume(name) { value in try value.identifier() }
  }

  public mutating func read(_ type: [String].Type, for name: StaticString) throws -> [String] {
    let (value, entry) = try valueToConsume(for: name)
    var reader = value.reader
    let tag = try wrap { try reader.readTag() }
    // Located by the reader past the tag, as `mismatch` expects.
    guard tag == .array else { throw FieldValueReader(reader: reader).mismatch([String].self, tag) }
    var strings: [String] = []
    while try wrap({ try reader.peekByte() }) != FieldTag.end.rawValue {
      if strings.isEmpty { strings.reserveCapacity(4) }  // short lists grow no more than once
      var element = FieldValueReader(reader: reader)
      strings.append(try element.string())
      reader = element.reader
    }
    passed(entry, end: reader.position + 1)  // past the array's end tag
    return strings
  }

  /// A nested object.
  public mutating func read<T: FieldCodable>(_ type: T.Type, for name: StaticString) throws -> T {
    let found = try value(for: name)
    var nested = try FieldReader(bytes: bytes, position: found.value.reader.position, depth: depth + 1)
    let result = try T(fields: &nested)
    passed(found.entry, end: found.end)
    return result
  }

  /// An array of nested objects.
  public mutating func read<T: FieldCodable>(_ type: [T].Type, for name: StaticString) throws -> [T] {
    let found = try value(for: name)
    let result = try readObjects(T.self, bytes: bytes, at: found.value.reader.position, depth: depth)
    passed(found.entry, end: found.end)
    return result
  }

  /// Anything else, through its `Decodable` form.
  public mutating func read<T: Decodable>(decoding type: T.Type, for name: StaticString) throws -> T {
    let found = try value(for: name)
    let result = try decodeValue(T.self, bytes: bytes, at: found.value.reader.position, depth: depth + 1)
    passed(found.entry, end: found.end)
    return result
  }
}

/// The array of objects at `position` (inside a value at `depth`), each read by `T(fields:)`.
func readObjects<T: FieldCodable>(_ type: T.Type, bytes: [UInt8], at position: Int, depth: Int) throws -> [T] {
  var reader = FieldBytesReader(bytes, position: position)
  let tag = try wrap { try reader.readTag() }
  guard tag == .array else {
    throw FieldValueReader(reader: reader).mismatch([T].self, tag)
  }
  var elements: [T] = []
  while try wrap({ try reader.peekByte() }) != FieldTag.end.rawValue {
    var nested = try FieldReader(bytes: bytes, position: reader.position, depth: depth + 1)
    elements.append(try T(fields: &nested))
    reader.position = try nested.endOfObject()
  }
  return elements
}

/// An array of `FieldCodable` objects in `Codable` form, read: the records of a store, which a
/// snapshot holds by the hundred thousand. Through `FieldDecoder` each element is read by its
/// hand-written fields, without Codable's containers (the same bytes as its `Codable` form, the
/// contract of `FieldCodable`); through any other decoder, element by element through `Codable`.
/// `FieldCodableTreeValues` writes them.
struct FieldCodableArray<Element: FieldCodable & Codable>: Decodable {
  var elements: [Element]

  init(from decoder: any Decoder) throws {
    guard let decoder = decoder as? FieldValueDecoder else {
      var container = try decoder.unkeyedContainer()
      var elements: [Element] = []
      while !container.isAtEnd { elements.append(try container.decode(Element.self)) }
      self.elements = elements
      return
    }
    elements = try readObjects(Element.self, bytes: decoder.bytes, at: decoder.position, depth: decoder.depth)
  }
}

/// The values of a `RecordTree` as an array of `FieldCodable` objects in `Codable` form (a store's
/// records, which a snapshot or a state digest encodes by the hundred thousand), written where
/// they lie in the tree, without an array of them. Through `FieldEncoder` each is written by its
/// hand-written fields, without Codable's containers (the same bytes as its `Codable` form);
/// through any other encoder, element by element through `Codable`. `FieldCodableArray` reads them.
struct FieldCodableTreeValues<Key: Comparable, Element: FieldCodable & Codable>: Encodable {
  var tree: RecordTree<Key, Element>

  func encode(to encoder: any Encoder) throws {
    guard let encoder = encoder as? FieldValueEncoder else {
      var container = encoder.unkeyedContainer()
      try tree.forEachValueInPlace { element in try container.encode(element) }
      return
    }
    encoder.state.writeObjects(tree, depth: encoder.depth)
  }
}

extension FieldEncoderState {
  /// Writes the values of `tree` as an array of objects, each by its hand-written fields.
  func writeObjects<Key, T: FieldCodable>(_ tree: RecordTree<Key, T>, depth: Int) {
    close(downTo: depth)
    var fields = FieldWriter(output: FieldBytesWriter(capacity: 0), sorter: sorter)
    swap(&fields.output, &writer)
    defer { swap(&fields.output, &writer) }
    fields.output.append(.array)
    tree.forEachValueInPlace { value in fields.writeObject(value) }
    fields.output.append(.end)
  }
}

/// A coding key made from a field name, for `keyNotFound` errors.
struct AnyFieldKey: CodingKey {
  var stringValue: String
  var intValue: Int? { nil }
  init(_ name: String) { stringValue = name }
  init?(stringValue: String) { self.stringValue = stringValue }
  init?(intValue: Int) { nil }
}

extension FieldEncoder {
  /// The bytes of a `FieldCodable` value: its fields as one object.
  public func encodeFields(_ value: some FieldCodable) -> [UInt8] {
    var writer = FieldWriter(output: FieldBytesWriter(capacity: 64))
    writer.output.append(.object)
    value.encodeFields(into: &writer)
    writer.output.append(0)
    return writer.output.bytes
  }

  /// Appends the fields of `value` as one object to `bytes`.
  func encodeFields(_ value: some FieldCodable, appendingTo bytes: inout [UInt8]) {
    var writer = FieldWriter(output: FieldBytesWriter(capacity: 0))
    swap(&writer.output.bytes, &bytes)
    writer.output.append(.object)
    value.encodeFields(into: &writer)
    writer.output.append(0)
    swap(&writer.output.bytes, &bytes)
  }
}

extension FieldDecoder {
  /// Decodes a `FieldCodable` value from the object at `offset`, which must end (as `decode`
  /// reads it): the entries after the last one read are checked up to the object's end, which
  /// after reads in the order of the entries is only its terminator.
  public func decodeFields<T: FieldCodable>(_ type: T.Type, from bytes: [UInt8], at offset: Int = 0) throws -> T {
    var reader = try FieldReader(bytes: bytes, position: offset, depth: 0)
    let value = try T(fields: &reader)
    _ = try reader.endOfObject()
    return value
  }
}
