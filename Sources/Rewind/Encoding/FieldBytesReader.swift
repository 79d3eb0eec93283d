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
  ///
  /// Well-formed bytes are walked in one loop over the buffer, with the open arrays and objects
  /// kept as bits (a container's whole contents, a store's records say, are skipped to find the
  /// entries after it). Anything the loop does not accept at once (malformed or truncated bytes,
  /// nesting at the limit, a varint of ten bytes) is walked again by the checked reads, which
  /// throw the precise error at its position, or accept it.
  mutating func skipValue(depth: Int = 0) throws(FieldFormatError) {
    let start = position
    if let end = bytes.withUnsafeBufferPointer({ Self.endOfValue(in: $0, at: start, depth: depth) }) {
      position = end
    } else {
      try skipValueChecked(depth: depth)
    }
  }

  /// Where the value at `start` ends, or nil if its bytes are not plainly well formed (see
  /// `skipValue`). `depth` is the value's own nesting, as for `skipValue`.
  private static func endOfValue(in buffer: UnsafeBufferPointer<UInt8>, at start: Int, depth: Int) -> Int? {
    let count = buffer.count
    var at = start
    /// A varint of at most nine bytes at `at`, or nil.
    func varint() -> UInt64? {
      var result: UInt64 = 0
      var shift: UInt64 = 0
      while at < count, shift < 63 {
        let byte = buffer[at]
        at += 1
        result |= UInt64(byte & 0x7F) << shift
        if byte < 0x80 { return result }
        shift += 7
      }
      return nil
    }
    // Bit `level` is set while the container open at that level is an object.
    var objects: UInt64 = 0
    var level = 0
    while true {
      if level > 0 {
        guard at < count else { return nil }
        if objects >> UInt64(level - 1) & 1 == 1 {
          if buffer[at] == 0 {  // the object's end
            at += 1
            level -= 1
            if level == 0 { return at }
            continue
          }
          guard let stored = varint(), stored >= 1, stored - 1 <= UInt64(count - at) else { return nil }
          at += Int(stored - 1)  // the key
        } else if buffer[at] == FieldTag.end.rawValue {
          at += 1
          level -= 1
          if level == 0 { return at }
          continue
        }
      }
      guard at < count, depth + level < FieldLimits.maximumDepth else { return nil }
      let tag = buffer[at]
      at += 1
      switch tag {
      case FieldTag.null.rawValue, FieldTag.false.rawValue, FieldTag.true.rawValue: break
      case FieldTag.int.rawValue, FieldTag.uint.rawValue:
        guard varint() != nil else { return nil }
      case FieldTag.double.rawValue:
        guard count - at >= 8 else { return nil }
        at += 8
      case FieldTag.identifier.rawValue:
        guard count - at >= 16 else { return nil }
        at += 16
      case FieldTag.string.rawValue:
        guard let length = varint(), length <= UInt64(count - at) else { return nil }
        at += Int(length)
      case FieldTag.array.rawValue, FieldTag.object.rawValue:
        if tag == FieldTag.object.rawValue { objects |= 1 << UInt64(level) } else { objects &= ~(1 << UInt64(level)) }
        level += 1
        continue
      default: return nil  // an array's end where a value should be, or an unknown tag
      }
      if level == 0 { return at }
    }
  }

  /// `skipValue` by the checked reads, one value at a time (internal for the tests that compare
  /// the two).
  mutating func skipValueChecked(depth: Int = 0) throws(FieldFormatError) {
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
      while try peekByte() != FieldTag.end.rawValue { try skipValueChecked(depth: depth + 1) }
      position += 1
    case .object:
      while try peekByte() != 0 {
        _ = try readStringBounds(lengthBias: 1)
        try skipValueChecked(depth: depth + 1)
      }
      position += 1
    case .end: throw FieldFormatError("array end where a value was expected", at: position - 1)
    }
  }
}
