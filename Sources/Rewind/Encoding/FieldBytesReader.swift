#if canImport(Glibc)
  internal import Glibc
#elseif canImport(Darwin)
  internal import Darwin
#endif

/// A bounds-checked cursor over encoded bytes. Every read throws `FieldFormatError` instead of
/// reading past the end, so arbitrary input never traps.
struct FieldBytesReader {
  let bytes: [UInt8]
  var position: Int

  init(_ bytes: [UInt8], position: Int = 0) {
    self.bytes = bytes
    self.position = position
  }

  var isAtEnd: Bool { position >= bytes.count }

  mutating func readByte() throws(FieldFormatError) -> UInt8 {
    guard position < bytes.count else { throw FieldFormatError("unexpected end of data", at: position) }
    defer { position += 1 }
    return bytes[position]
  }

  func peekByte() throws(FieldFormatError) -> UInt8 {
    guard position < bytes.count else { throw FieldFormatError("unexpected end of data", at: position) }
    return bytes[position]
  }

  /// The fast paths of `readTag` and `readVarint` (a known tag; a varint of one byte, as every
  /// string length under 128 is) read the byte in place behind one bounds check; anything else
  /// goes to the general reads, which throw the same errors at the same positions as before.
  @inline(__always)
  mutating func readTag() throws(FieldFormatError) -> FieldTag {
    if position < bytes.count, let tag = FieldTag(rawValue: bytes[position]) {
      position += 1
      return tag
    }
    return try readTagChecked()
  }

  @inline(never)
  private mutating func readTagChecked() throws(FieldFormatError) -> FieldTag {
    let start = position
    let byte = try readByte()
    guard let tag = FieldTag(rawValue: byte) else { throw FieldFormatError("unknown type tag \(byte)", at: start) }
    return tag
  }

  @inline(__always)
  mutating func readVarint() throws(FieldFormatError) -> UInt64 {
    if position < bytes.count {
      let byte = bytes[position]
      if byte < 0x80 {
        position += 1
        return UInt64(byte)
      }
    }
    return try readVarintChecked()
  }

  @inline(never)
  private mutating func readVarintChecked() throws(FieldFormatError) -> UInt64 {
    let start = position
    var result: UInt64 = 0
    var shift: UInt64 = 0
    while true {
      let byte = try readByte()
      if shift == 63 && byte > 1 { throw FieldFormatError("varint overflows 64 bits", at: start) }
      result |= UInt64(byte & 0x7F) << shift
      if byte < 0x80 { return result }
      shift += 7
      if shift > 63 { throw FieldFormatError("varint longer than 10 bytes", at: start) }
    }
  }

  mutating func readZigZag() throws(FieldFormatError) -> Int64 {
    let raw = try readVarint()
    return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
  }

  mutating func readFixed64() throws(FieldFormatError) -> UInt64 {
    guard bytes.count - position >= 8 else { throw FieldFormatError("unexpected end of data", at: position) }
    let value = bytes.withUnsafeBytes {
      UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: position, as: UInt64.self))
    }
    position += 8
    return value
  }

  mutating func readIdentifier() throws(FieldFormatError) -> Identifier {
    let high = try readFixed64()
    return Identifier(high: high, low: try readFixed64())
  }

  /// Reads a length-prefixed UTF-8 string; `lengthBias` as in `FieldBytesWriter.appendString`.
  mutating func readString(lengthBias: UInt64 = 0) throws(FieldFormatError) -> String {
    let (start, count) = try readStringBounds(lengthBias: lengthBias)
    return bytes.withUnsafeBufferPointer {
      String(decoding: UnsafeBufferPointer(rebasing: $0[start..<start + count]), as: UTF8.self)
    }
  }

  /// Whether the `count` bytes at `start` equal `other`. The range must be in bounds.
  func bytesEqual(start: Int, count: Int, _ other: UnsafeBufferPointer<UInt8>) -> Bool {
    guard count == other.count else { return false }
    guard count > 0 else { return true }
    return bytes.withUnsafeBufferPointer { buffer in memcmp(buffer.baseAddress! + start, other.baseAddress!, count) == 0
    }
  }

  mutating func readStringBounds(lengthBias: UInt64 = 0) throws(FieldFormatError) -> (start: Int, count: Int) {
    let lengthAt = position
    let stored = try readVarint()
    guard stored >= lengthBias else { throw FieldFormatError("bad string length", at: lengthAt) }
    let length = stored - lengthBias
    guard length <= UInt64(bytes.count - position) else {
      throw FieldFormatError("string of \(length) bytes runs past the end", at: lengthAt)
    }
    let start = position
    position += Int(length)
    return (start, Int(length))
  }

  /// Moves past one whole value without building it.
  mutating func skipValue(depth: Int = 0) throws(FieldFormatError) {
    guard depth < FieldLimits.maximumDepth else {
      throw FieldFormatError("nesting deeper than \(FieldLimits.maximumDepth)", at: position)
    }
    switch try readTag() {
    case .null, .false, .true: return
    case .int, .uint: _ = try readVarint()
    case .double: _ = try readFixed64()
    case .identifier: _ = try readIdentifier()
    case .string: _ = try readStringBounds()
    case .array:
      while try peekByte() != FieldTag.end.rawValue { try skipValue(depth: depth + 1) }
      position += 1
    case .object:
      while try peekByte() != 0 {
        _ = try readStringBounds(lengthBias: 1)
        try skipValue(depth: depth + 1)
      }
      position += 1
    case .end: throw FieldFormatError("array end where a value was expected", at: position - 1)
    }
  }
}
