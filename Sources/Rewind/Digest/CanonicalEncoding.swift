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
      var entries: [(key: ArraySlice<UInt8>, value: [UInt8])] = []
      while try reader.peekByte() != 0 {
        let (start, count) = try reader.readStringBounds(lengthBias: 1)
        var value = FieldBytesWriter(capacity: 32)
        try copy(&reader, into: &value, depth: depth + 1)
        entries.append((reader.bytes[start..<start + count], value.bytes))
      }
      reader.position += 1
      entries.sort { $0.key.lexicographicallyPrecedes($1.key) }
      for entry in entries {
        writer.appendVarint(UInt64(entry.key.count) + 1)
        writer.bytes.append(contentsOf: entry.key)
        writer.bytes.append(contentsOf: entry.value)
      }
      writer.append(0)
    case .identifier:
      // 16 fixed bytes: already canonical.
      let start = reader.position
      _ = try reader.readIdentifier()
      writer.bytes.append(contentsOf: reader.bytes[start..<reader.position])
    case .end: throw FieldFormatError("array end where a value was expected", at: reader.position - 1)
    }
  }
}
