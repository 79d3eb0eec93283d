/// Little-endian encoding into a growing byte buffer. Every integer the journal writes is
/// little-endian, as in the LZ4 frame format itself.
package struct ByteWriter {
  package var bytes: [UInt8]

  package init(capacity: Int = 0) {
    bytes = []
    bytes.reserveCapacity(capacity)
  }

  package mutating func write<T: FixedWidthInteger>(_ value: T) {
    withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
  }

  package mutating func write(_ other: [UInt8]) {
    bytes.append(contentsOf: other)
  }

  package mutating func write(_ other: ArraySlice<UInt8>) {
    bytes.append(contentsOf: other)
  }
}

/// Bounds-checked little-endian decoding. Reading past the end returns `nil`, never traps: the
/// bytes may come from a damaged or hostile file.
package struct ByteReader {
  package let bytes: ArraySlice<UInt8>
  package private(set) var position: Int

  package init(_ bytes: ArraySlice<UInt8>) {
    self.bytes = bytes
    self.position = bytes.startIndex
  }

  package init(_ bytes: [UInt8]) {
    self.init(bytes[...])
  }

  package var remaining: Int { bytes.endIndex - position }

  package mutating func read<T: FixedWidthInteger>(_: T.Type = T.self) -> T? {
    let size = MemoryLayout<T>.size
    guard remaining >= size else { return nil }
    let offset = position - bytes.startIndex
    let value = bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
    position += size
    return value
  }

  package mutating func read(count: Int) -> ArraySlice<UInt8>? {
    guard count >= 0, remaining >= count else { return nil }
    defer { position += count }
    return bytes[position..<(position + count)]
  }
}

extension Array where Element == UInt8 {
  /// Makes the array at least `length` bytes long, appending the zeros it lacks (its room at
  /// least doubled when it must grow, so a buffer grown again and again is reallocated in
  /// amortized constant time per byte). For buffers written through pointers at offsets, whose
  /// used length is kept elsewhere: writing there costs no per-call append. Only the bytes
  /// missing are appended: a buffer cut back after each use (`LZ4FrameEncoder.compress(_:appendingTo:)`
  /// gathering a compaction's frames) once got as many zeros as it held at every call.
  @inline(__always)
  package mutating func ensureCount(_ length: Int) {
    guard count < length else { return }
    if capacity < length { reserveCapacity(Swift.max(length, 2 * capacity)) }
    append(contentsOf: repeatElement(0, count: length - count))
  }

  /// Reads a little-endian integer at `offset`; the caller has checked the bounds.
  @inline(__always)
  package func loadLE<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
    withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
  }
}
