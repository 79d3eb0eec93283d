/// The canonical encoding of a model's state: the field encoding (see `FieldTag`) of the state's
/// `Codable` form, rewritten so that every object's fields are sorted by the bytes of their names
/// and `-0.0` is written as `0.0`.
///
/// Stores encode their records in id order (see `Store+Coding.swift`), so nothing that depends on
/// a hash seed, a dictionary's order or a property's declaration order reaches the bytes. What a
/// model must do in return: no `Dictionary` or `Set` in its `Codable` form unless it encodes them
/// sorted, and no values whose equality is looser than their bytes (two strings that compare
/// equal under Unicode canonical equivalence but are stored differently digest differently).
enum CanonicalEncoding {
  /// The canonical bytes of `value`.
  static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
    try canonicalize(FieldEncoder().encode(value))
  }

  /// Rewrites one field-encoded value canonically.
  /// - Throws: `FieldFormatError` if `bytes` is not one well-formed value.
  static func canonicalize(_ bytes: [UInt8]) throws(FieldFormatError) -> [UInt8] {
    var reader = FieldBytesReader(bytes)
    var writer = FieldBytesWriter(capacity: bytes.count)
    try copy(&reader, into: &writer, depth: 0)
    guard reader.isAtEnd else { throw FieldFormatError("bytes after the value", at: reader.position) }
    return writer.bytes
  }

  private static func copy(_ reader: inout FieldBytesReader, into writer: inout FieldBytesWriter, depth: Int)
    throws(FieldFormatError)
  {
    guard depth < FieldLimits.maximumDepth else {
      throw FieldFormatError("nesting deeper than \(FieldLimits.maximumDepth)", at: reader.position)
    }
    let tag = try reader.readTag()
    writer.append(tag)
    switch tag {
    case .null, .false, .true: return
    case .int, .uint: writer.appendVarint(try reader.readVarint())
    case .double:
      let bits = try reader.readFixed64()
      writer.appendFixed64(bits == (-0.0 as Double).bitPattern ? 0 : bits)
    case .string:
      let (start, count) = try reader.readStringBounds()
      writer.appendVarint(UInt64(count))
      writer.bytes.append(contentsOf: reader.bytes[start..<start + count])
    case .array:
      while try reader.peekByte() != FieldTag.end.rawValue { try copy(&reader, into: &writer, depth: depth + 1) }
      reader.position += 1
      writer.append(.end)
    case .object:
      // Entries are copied as they come; an object whose keys were not in order is sorted
      // afterwards, in place (`sortEntries`). Stores and most records need no sorting.
      let objectStart = writer.count
      var previous: Range<Int>? = nil
      var inOrder = true
      while try reader.peekByte() != 0 {
        let (start, count) = try reader.readStringBounds(lengthBias: 1)
        let key = start..<start + count
        if inOrder, let previous, !precedes(reader.bytes, previous, key) { inOrder = false }
        writer.appendVarint(UInt64(count) + 1)
        writer.bytes.append(contentsOf: reader.bytes[key])
        try copy(&reader, into: &writer, depth: depth + 1)
        previous = key
      }
      reader.position += 1
      if !inOrder { try sortEntries(of: &writer, from: objectStart, depth: depth) }
      writer.append(0)
    case .identifier:
      // 16 fixed bytes: already canonical.
      let start = reader.position
      _ = try reader.readIdentifier()
      writer.bytes.append(contentsOf: reader.bytes[start..<reader.position])
    case .end: throw FieldFormatError("array end where a value was expected", at: reader.position - 1)
    }
  }

  /// Whether the key at `a` sorts strictly before the key at `b` (both ranges of `bytes`).
  private static func precedes(_ bytes: [UInt8], _ a: Range<Int>, _ b: Range<Int>) -> Bool {
    bytes.withUnsafeBufferPointer { buffer in
      for offset in 0..<min(a.count, b.count) {
        let (x, y) = (buffer[a.lowerBound + offset], buffer[b.lowerBound + offset])
        if x != y { return x < y }
      }
      return a.count < b.count
    }
  }

  /// Sorts by key the entries of the object written from `objectStart` to the end of `writer`
  /// (each key and its value, already canonical).
  private static func sortEntries(of writer: inout FieldBytesWriter, from objectStart: Int, depth: Int)
    throws(FieldFormatError)
  {
    let entries = Array(writer.bytes[objectStart...])
    var ranges: [(key: Range<Int>, entry: Range<Int>)] = []
    var reader = FieldBytesReader(entries)
    while !reader.isAtEnd {
      let entryStart = reader.position
      let (start, count) = try reader.readStringBounds(lengthBias: 1)
      try reader.skipValue(depth: depth + 1)
      ranges.append((start..<start + count, entryStart..<reader.position))
    }
    ranges.sort { precedes(entries, $0.key, $1.key) }
    writer.bytes.removeSubrange(objectStart...)
    for range in ranges { writer.bytes.append(contentsOf: entries[range.entry]) }
  }
}
