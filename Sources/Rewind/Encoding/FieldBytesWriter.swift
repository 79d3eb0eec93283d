/// An append-only byte buffer with the primitive writes of the field encoding.
///
/// Each write makes room for its largest size once (`Array.append(addingCapacity:)`: one
/// uniqueness and capacity check, growing geometrically) and stores its bytes through a pointer
/// into the array's spare capacity. A caller that knows the most a run of primitives can take
/// writes them into one `Room` (a field's key, tag and value, say) behind a single check.
struct FieldBytesWriter {
  var bytes: [UInt8]

  init(capacity: Int = 128) {
    bytes = []
    // Reserving nothing still takes the shared empty array through the slow path that makes a
    // new buffer (it finds no capacity to spare): about 60 instructions for nothing.
    if capacity > 0 { bytes.reserveCapacity(capacity) }
  }

  var count: Int { bytes.count }

  /// Space for at most a fixed number of bytes, written in order without further checks.
  struct Room {
    private let start: UnsafeMutableRawPointer
    /// How many bytes were written.
    private(set) var count = 0

    fileprivate init(_ start: UnsafeMutableRawPointer) { self.start = start }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
      start.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
      count += 1
    }

    @inline(__always)
    mutating func append(_ tag: FieldTag) { append(tag.rawValue) }

    /// LEB128: seven bits a byte, low bits first, the high bit set on every byte but the last
    /// (at most ten bytes).
    @inline(__always)
    mutating func appendVarint(_ value: UInt64) {
      var rest = value
      while rest >= 0x80 {
        append(UInt8(truncatingIfNeeded: rest) | 0x80)
        rest >>= 7
      }
      append(UInt8(truncatingIfNeeded: rest))
    }

    /// Eight bytes, little-endian.
    @inline(__always)
    mutating func appendFixed64(_ value: UInt64) {
      start.storeBytes(of: value.littleEndian, toByteOffset: count, as: UInt64.self)
      count += 8
    }

    /// Varint byte count, then the bytes (at most ten bytes more than `utf8` holds). With
    /// `lengthBias` 1 the count is stored plus one (object keys, where a stored 0 ends the object).
    @inline(__always)
    mutating func appendString(_ utf8: UnsafeRawBufferPointer, lengthBias: UInt64 = 0) {
      appendVarint(UInt64(utf8.count) + lengthBias)
      if let source = utf8.baseAddress, !utf8.isEmpty {
        (start + count).copyMemory(from: source, byteCount: utf8.count)
        count += utf8.count
      }
    }
  }

  /// Makes room for at most `maximum` more bytes and lets `body` write them. `maximum` must bound
  /// what `body` writes (each primitive documents its most); the bound is checked only afterwards,
  /// when a write past it has already gone beyond the array's capacity.
  @inline(__always)
  mutating func write(atMost maximum: Int, _ body: (inout Room) -> Void) {
    bytes.append(addingCapacity: maximum) { span in
      span.withUnsafeMutableBufferPointer { buffer, written in
        var room = Room(UnsafeMutableRawPointer(buffer.baseAddress!))
        body(&room)
        precondition(room.count <= maximum, "wrote past the room made for it")
        written = room.count
      }
    }
  }

  @inline(__always)
  mutating func append(_ byte: UInt8) { bytes.append(byte) }

  @inline(__always)
  mutating func append(_ tag: FieldTag) { bytes.append(tag.rawValue) }

  /// See `Room.appendVarint`.
  mutating func appendVarint(_ value: UInt64) {
    write(atMost: 10) { $0.appendVarint(value) }
  }

  mutating func appendZigZag(_ value: Int64) {
    appendVarint(Self.zigZag(value))
  }

  /// Eight bytes, little-endian.
  mutating func appendFixed64(_ value: UInt64) {
    write(atMost: 8) { $0.appendFixed64(value) }
  }

  /// See `Room.appendString`.
  mutating func appendString(_ string: String, lengthBias: UInt64 = 0) {
    Self.withUTF8(of: string) { utf8 in appendString(utf8, lengthBias: lengthBias) }
  }

  /// See `Room.appendString`.
  mutating func appendString(_ utf8: UnsafeRawBufferPointer, lengthBias: UInt64 = 0) {
    write(atMost: 10 + utf8.count) { $0.appendString(utf8, lengthBias: lengthBias) }
  }

  /// A signed integer as the unsigned one its varint stores: 0, -1, 1, -2, … become 0, 1, 2, 3, ….
  @inline(__always)
  static func zigZag(_ value: Int64) -> UInt64 { UInt64(bitPattern: (value &<< 1) ^ (value >> 63)) }

  /// Calls `body` with the UTF-8 bytes of `string`, in place when it has them contiguously (native
  /// and small strings do).
  @inline(__always)
  static func withUTF8<R>(of string: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    if let result = string.utf8.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) {
      return result
    }
    var string = string
    return string.withUTF8 { body(UnsafeRawBufferPointer($0)) }
  }
}
