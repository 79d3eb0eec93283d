/// The skippable frame in front of every data frame (see FORMAT.md, "Batch header"). It says
/// which records the following LZ4 frame holds and how long it is, so readers can check it with
/// CRC-32C and skip it without decompressing.
package struct BatchHeader: Equatable {
  package var firstSequence: UInt64
  package var recordCount: UInt32
  /// Bytes of the decoded frame content.
  package var contentLength: UInt32
  /// Bytes of the LZ4 frame that follows this header.
  package var frameLength: UInt32
  package var minTimestamp: Int64
  package var maxTimestamp: Int64
  /// CRC-32C of the LZ4 frame's bytes.
  package var frameChecksum: UInt32

  package var lastSequence: UInt64 { firstSequence + UInt64(recordCount) - 1 }
  package var sequences: ClosedRange<UInt64> { firstSequence...lastSequence }
  /// Bytes of header and frame together.
  package var totalLength: Int64 { Int64(Layout.batchHeaderSize) + Int64(frameLength) }
  /// Where `frameLength` lies in the header: read alone, unchecked, to measure a damaged batch
  /// (`SegmentFile.tornEnd`).
  package static let frameLengthOffset = 24

  /// Writes the header's `Layout.batchHeaderSize` bytes at `pointer` (as `encode(into:)` does).
  package func encode(to pointer: UnsafeMutableRawPointer) {
    pointer.storeBytes(of: Layout.batchHeaderMagic.littleEndian, as: UInt32.self)
    pointer.storeBytes(of: UInt32(Layout.batchHeaderPayloadSize).littleEndian, toByteOffset: 4, as: UInt32.self)
    pointer.storeBytes(of: firstSequence.littleEndian, toByteOffset: 8, as: UInt64.self)
    pointer.storeBytes(of: recordCount.littleEndian, toByteOffset: 16, as: UInt32.self)
    pointer.storeBytes(of: contentLength.littleEndian, toByteOffset: 20, as: UInt32.self)
    pointer.storeBytes(of: frameLength.littleEndian, toByteOffset: Self.frameLengthOffset, as: UInt32.self)
    pointer.storeBytes(of: minTimestamp.littleEndian, toByteOffset: 28, as: Int64.self)
    pointer.storeBytes(of: maxTimestamp.littleEndian, toByteOffset: 36, as: Int64.self)
    pointer.storeBytes(of: frameChecksum.littleEndian, toByteOffset: 44, as: UInt32.self)
    let covered = UnsafeRawBufferPointer(
      start: pointer + Layout.skippableHeaderSize, count: Layout.batchHeaderSize - Layout.skippableHeaderSize - 4)
    pointer.storeBytes(of: CRC32C.checksum(covered).littleEndian, toByteOffset: 48, as: UInt32.self)
  }

  /// Appends the header's `Layout.batchHeaderSize` bytes to `writer` (through `encode(to:)`, the
  /// one place the layout is written).
  package func encode(into writer: inout ByteWriter) {
    let start = writer.bytes.count
    writer.bytes.append(contentsOf: repeatElement(0, count: Layout.batchHeaderSize))
    writer.bytes.withUnsafeMutableBytes { encode(to: $0.baseAddress! + start) }
  }

  /// Why bytes are not a valid batch header.
  package enum Problem: Error, Equatable, CustomStringConvertible {
    case truncated
    case badMagic(UInt32)
    case badSize(UInt32)
    case checksumMismatch
    case implausible(String)
    /// A header whose checksum holds but which declares more than the reader's limits accept:
    /// written with larger limits (or hostile), never torn.
    case exceedsLimits(String)

    /// Whether a torn write could have left it. A header whose checksum holds is whole, and a
    /// writer writes none that it would refuse: implausible or too large for the reader, it is
    /// committed data (or hostile), not an unfinished frame.
    package var isWhole: Bool {
      switch self {
      case .implausible, .exceedsLimits: true
      case .truncated, .badMagic, .badSize, .checksumMismatch: false
      }
    }

    package var description: String {
      switch self {
      case .truncated: "batch header cut short"
      case .badMagic(let magic): "no batch header here (found magic 0x\(String(magic, radix: 16)))"
      case .badSize(let size): "batch header declares payload size \(size), expected \(Layout.batchHeaderPayloadSize)"
      case .checksumMismatch: "batch header checksum mismatch"
      case .implausible(let why): "batch header is implausible: \(why)"
      case .exceedsLimits(let why): "batch header declares \(why)"
      }
    }
  }

  /// Decodes the header at the start of `bytes`, checking its checksum and the limits.
  package static func decode(_ bytes: ArraySlice<UInt8>, limits: JournalLimits) -> Result<BatchHeader, Problem> {
    bytes.withUnsafeBytes { decode($0, limits: limits) }
  }

  /// Decodes the header at the start of `bytes` (the layout `encode(to:)` writes), read in place
  /// once per batch: the cursor decodes one for every command it reads.
  static func decode(_ bytes: UnsafeRawBufferPointer, limits: JournalLimits) -> Result<BatchHeader, Problem> {
    @inline(__always) func load<T: FixedWidthInteger>(_ offset: Int, as _: T.Type = T.self) -> T {
      T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
    guard bytes.count >= 4 else { return .failure(.truncated) }
    let magic = load(0, as: UInt32.self)
    guard magic == Layout.batchHeaderMagic else { return .failure(.badMagic(magic)) }
    guard bytes.count >= 8 else { return .failure(.truncated) }
    let size = load(4, as: UInt32.self)
    guard size == UInt32(Layout.batchHeaderPayloadSize) else { return .failure(.badSize(size)) }
    guard bytes.count >= Layout.batchHeaderSize else { return .failure(.truncated) }
    let header = BatchHeader(
      firstSequence: load(8), recordCount: load(16), contentLength: load(20), frameLength: load(frameLengthOffset),
      minTimestamp: load(28), maxTimestamp: load(36), frameChecksum: load(44))
    let crcPosition = Layout.batchHeaderSize - 4
    let covered = UnsafeRawBufferPointer(rebasing: bytes[Layout.skippableHeaderSize..<crcPosition])
    guard CRC32C.checksum(covered) == load(crcPosition, as: UInt32.self) else { return .failure(.checksumMismatch) }
    if let why = header.implausibility { return .failure(.implausible(why)) }
    if let why = header.excess(over: limits) { return .failure(.exceedsLimits(why)) }
    return .success(header)
  }

  /// A reason the header cannot describe a frame any writer writes, or nil.
  var implausibility: String? {
    if recordCount == 0 { return "no records" }
    if firstSequence == 0 { return "sequence numbers start at 1" }
    if firstSequence > UInt64.max - UInt64(recordCount) { return "sequence numbers overflow" }
    if Int(contentLength) < Int(recordCount) * Layout.recordHeaderSize {
      return "decoded size \(contentLength) too small for \(recordCount) records"
    }
    if minTimestamp > maxTimestamp { return "timestamps out of order" }
    if Int(contentLength) > JournalLimits.largest.maxBatchBytes {
      return "decoded size \(contentLength) exceeds what any writer writes (\(JournalLimits.largest.maxBatchBytes))"
    }
    if Int(frameLength) > Self.largestFrame(.largest) {
      return "frame size \(frameLength) exceeds what any writer writes (\(Self.largestFrame(.largest)))"
    }
    // LZ4 decodes at most about 255 bytes from each byte of a frame. A larger claim is no
    // writer's, and would have a reader allocate far more than the bytes it was given (readers
    // such as `rewind` accept batches up to `JournalLimits.largest`).
    if Int(contentLength) > Int(frameLength) * Self.maximumExpansion + 4096 {
      return "decoded size \(contentLength) is more than an LZ4 frame of \(frameLength) bytes can hold"
    }
    return nil
  }

  /// The most bytes LZ4 decodes from one byte of a frame (a match's length grows by 255 per
  /// byte that encodes it).
  static let maximumExpansion = 255

  /// What the header declares beyond `limits` (a frame a writer with larger limits wrote), or nil.
  func excess(over limits: JournalLimits) -> String? {
    if Int(contentLength) > limits.maxBatchBytes {
      return "a decoded size of \(contentLength) bytes, which exceeds the limit of \(limits.maxBatchBytes) "
        + "(limits.maxBatchBytes)"
    }
    if Int(frameLength) > Self.largestFrame(limits) {
      return "a frame of \(frameLength) bytes, which exceeds the limit of \(Self.largestFrame(limits)) "
        + "for limits.maxBatchBytes \(limits.maxBatchBytes)"
    }
    return nil
  }

  /// The largest LZ4 frame a writer makes of `limits.maxBatchBytes` bytes (incompressible data
  /// grows a little).
  static func largestFrame(_ limits: JournalLimits) -> Int {
    limits.maxBatchBytes + limits.maxBatchBytes / 128 + 4096
  }
}
