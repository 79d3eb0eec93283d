/// An append-only byte buffer with the primitive writes of the field encoding.
struct FieldBytesWriter {
  var bytes: [UInt8]

  init(capacity: Int = 128) {
    bytes = []
    bytes.reserveCapacity(capacity)
  }

  var count: Int { bytes.count }

  @inline(__always)
  mutating func append(_ byte: UInt8) { bytes.append(byte) }

  @inline(__always)
  mutating func append(_ tag: FieldTag) { bytes.append(tag.rawValue) }

  mutating func appendVarint(_ value: UInt64) {
    var rest = value
    while rest >= 0x80 {
      bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
      rest >>= 7
    }
    bytes.append(UInt8(truncatingIfNeeded: rest))
  }

  mutating func appendZigZag(_ value: Int64) {
    appendVarint(UInt64(bitPattern: (value &<< 1) ^ (value >> 63)))
  }

  mutating func appendFixed64(_ value: UInt64) {
    for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
  }

  /// Varint byte count, then the UTF-8 bytes. With `lengthBias` 1 the count is stored plus one
  /// (object keys, where a stored 0 ends the object).
  mutating func appendString(_ string: String, lengthBias: UInt64 = 0) {
    var string = string
    string.withUTF8 { utf8 in
      appendVarint(UInt64(utf8.count) + lengthBias)
      bytes.append(contentsOf: utf8)
    }
  }
}
