/// An append-only byte buffer with the primitive writes of the field encoding.
///
/// Each primitive makes room for its largest size once (`Array.append(addingCapacity:)`: one
/// uniqueness and capacity check, growing geometrically), then stores its bytes through a pointer
/// into the array's spare capacity. Appending a byte at a time checked both for every byte.
struct FieldBytesWriter {
  var bytes: [UInt8]

  init(capacity: Int = 128) {
    bytes = []
    bytes.reserveCapacity(capacity)
  }

  var count: Int { bytes.count }

  /// Gives `body` the address of room for `maximum` more bytes; `body` returns how many it wrote.
  @inline(__always)
  private mutating func write(atMost maximum: Int, _ body: (UnsafeMutableRawPointer) -> Int) {
    bytes.append(addingCapacity: maximum) { span in
      span.withUnsafeMutableBufferPointer { room, written in
        written = body(UnsafeMutableRawPointer(room.baseAddress!))
      }
    }
  }

  @inline(__always)
  mutating func append(_ byte: UInt8) { bytes.append(byte) }

  @inline(__always)
  mutating func append(_ tag: FieldTag) { bytes.append(tag.rawValue) }

  /// LEB128: seven bits a byte, low bits first, the high bit set on every byte but the last.
  mutating func appendVarint(_ value: UInt64) {
    write(atMost: 10) { address in Self.storeVarint(value, at: address) }
  }

  mutating func appendZigZag(_ value: Int64) {
    appendVarint(UInt64(bitPattern: (value &<< 1) ^ (value >> 63)))
  }

  /// Eight bytes, little-endian.
  mutating func appendFixed64(_ value: UInt64) {
    write(atMost: 8) { address in
      address.storeBytes(of: value.littleEndian, as: UInt64.self)
      return 8
    }
  }

  /// Varint byte count, then the UTF-8 bytes. With `lengthBias` 1 the count is stored plus one
  /// (object keys, where a stored 0 ends the object).
  mutating func appendString(_ string: String, lengthBias: UInt64 = 0) {
    var string = string
    string.withUTF8 { utf8 in appendString(UnsafeRawBufferPointer(utf8), lengthBias: lengthBias) }
  }

  /// Varint byte count, then `utf8`; `lengthBias` as in `appendString(_:lengthBias:)`.
  mutating func appendString(_ utf8: UnsafeRawBufferPointer, lengthBias: UInt64 = 0) {
    write(atMost: 10 + utf8.count) { address in
      let prefix = Self.storeVarint(UInt64(utf8.count) + lengthBias, at: address)
      if let source = utf8.baseAddress, !utf8.isEmpty {
        (address + prefix).copyMemory(from: source, byteCount: utf8.count)
      }
      return prefix + utf8.count
    }
  }

  /// Stores `value` as a varint at `address` (room for ten bytes); returns its length.
  @inline(__always)
  private static func storeVarint(_ value: UInt64, at address: UnsafeMutableRawPointer) -> Int {
    var rest = value
    var length = 0
    while rest >= 0x80 {
      address.storeBytes(of: UInt8(truncatingIfNeeded: rest) | 0x80, toByteOffset: length, as: UInt8.self)
      rest >>= 7
      length += 1
    }
    address.storeBytes(of: UInt8(truncatingIfNeeded: rest), toByteOffset: length, as: UInt8.self)
    return length + 1
  }
}
