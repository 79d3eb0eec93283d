import Glibc

/// One segment file opened for reading, with a read-ahead window so that walking many small
/// frames costs few system calls. Not thread-safe: each cursor or scan owns its own.
package final class SegmentFile {
  package let name: String
  package let path: String
  package let firstSequence: UInt64
  /// Read for every batch; accessed only by the owning thread (no dynamic exclusivity checks).
  @exclusivity(unchecked) package private(set) var size: Int64
  private let io: any FileIO
  private let fd: Int32
  /// Accessed only by the one thread that owns this file (no dynamic exclusivity checks).
  @exclusivity(unchecked) private var window: [UInt8] = []
  private var windowOffset: Int64 = 0
  /// The most a refill reads ahead: a scan reads the segment 1 MiB per system call.
  private static let readAhead = 1 << 20
  /// What the first refill reads ahead, and a refill that does not go on from the window: a
  /// cursor positioned by the index (a seek, `record(_:)`, a jump) finds its record within about
  /// one index interval (64 KiB by default) of where it starts. Reading 1 MiB there (and 1 MiB
  /// more for the segment header at the file's start), a seek spent most of its time copying and
  /// allocating bytes it never looked at.
  static let firstReadAhead = 64 << 10
  /// What the next refill reads ahead: `firstReadAhead`, doubled at each refill that goes on from
  /// where the window ends, up to `readAhead`.
  private var nextReadAhead = SegmentFile.firstReadAhead

  package init(directory: String, firstSequence: UInt64, io: any FileIO) throws {
    self.name = Layout.segmentName(firstSequence: firstSequence)
    self.path = directory + "/" + name
    self.firstSequence = firstSequence
    self.io = io
    self.fd = try io.open(path, flags: O_RDONLY, mode: 0)
    do {
      self.size = try io.size(fd, path: path)
    } catch {
      io.close(fd)
      throw error
    }
  }

  deinit { io.close(fd) }

  /// Reads from the file so far: a reader following a live journal knows by it when bytes it
  /// goes on with were read after those before them (`JournalCursor.reads`).
  /// Accessed only by the owning thread (no dynamic exclusivity checks).
  @exclusivity(unchecked) package private(set) var reads = 0

  private func read(count: Int, at offset: Int64) throws -> [UInt8] {
    reads += 1
    return try io.read(fd, count: count, at: offset, path: path)
  }

  /// Whether the journal's file of this name is still this one: not after `repair` moved it
  /// aside (a writer may since have made another of the same name) or compaction replaced it.
  package var isStillInItsPlace: Bool { io.isFile(fd, at: path) }

  /// Looks again at the file's size (a writer may have appended).
  package func refreshSize() throws {
    size = try io.size(fd, path: path)
  }

  /// Up to `count` bytes at `offset`, fewer only where the file ends. `count` must be bounded
  /// by the caller (by the journal's limits), never taken unchecked from the file.
  package func bytes(at offset: Int64, count: Int) throws -> ArraySlice<UInt8> {
    let end = offset + Int64(count)
    if offset >= windowOffset, end <= windowOffset + Int64(window.count) {
      let start = Int(offset - windowOffset)
      return window[start..<(start + count)]
    }
    if count >= Self.readAhead {
      return try read(count: count, at: offset)[...]
    }
    // Refill the window from `offset`; near the (last known) end of the file, read no more than
    // is there, so polling a live tail does not allocate a whole window each time. Likewise in
    // zeros seen earlier (preallocated space a writer is filling): only what is asked for. A read
    // that goes on from the window reads twice as far ahead as the last refill; one elsewhere
    // starts again at `firstReadAhead`.
    let goesOn = !window.isEmpty && offset >= windowOffset && offset <= windowOffset + Int64(window.count)
    nextReadAhead = goesOn ? min(nextReadAhead * 2, Self.readAhead) : Self.firstReadAhead
    let ahead = zeroChecked.contains(offset) ? 0 : min(Int64(nextReadAhead), size - offset)
    let wanted = Int(max(Int64(count), ahead))
    window = try read(count: wanted, at: offset)
    windowOffset = offset
    return window.prefix(count)
  }

  /// The segment header at the start of the file, through the read-ahead window: for a reader
  /// that goes on to read the batches after it.
  package func header() throws -> Result<SegmentHeader, SegmentHeader.Problem> {
    SegmentHeader.decode(Array(try bytes(at: 0, count: Layout.segmentHeaderSize)))
  }

  /// The segment header, read by itself: for a look at a file that reads nothing more of it,
  /// where `header()` would read a window ahead (64 KiB) for the next reader to read again.
  package func headerAlone() throws -> Result<SegmentHeader, SegmentHeader.Problem> {
    SegmentHeader.decode(try read(count: Layout.segmentHeaderSize, at: 0))
  }

  /// The batch header at `offset`, read by itself (no window ahead); nil when the bytes there are
  /// no batch header whose checksum holds.
  package func batchHeaderAlone(at offset: Int64, limits: JournalLimits) throws -> BatchHeader? {
    guard
      case .success(let header) = BatchHeader.decode(
        try read(count: Layout.batchHeaderSize, at: offset)[...], limits: limits)
    else { return nil }
    return header
  }

  /// What lies at `offset`: a whole, checked batch, the clean end of the file, or damage.
  ///
  /// - Parameters:
  ///   - expecting: the sequence number the batch must start with.
  ///   - checkFrame: also read the frame and check its CRC-32C (otherwise only the header is read,
  ///     and the frame is only known to be complete).
  ///
  /// Zeros from `offset` to the end of the file read as `.damaged` with kind `.zeroFilled`: the
  /// space a writer preallocates ahead of its frames (FORMAT.md, "Writing"). Whether that is the
  /// end of the journal (the last segment) or damage (a sealed one) is the caller's judgement.
  package func batch(at offset: Int64, expecting: UInt64, checkFrame: Bool, limits: JournalLimits) throws
    -> BatchRead
  {
    let read = try batch(at: offset, expecting: expecting, checkFrame: checkFrame, limits: limits, fresh: false)
    guard case .damaged = read, window.count > 0 else { return read }
    // The read-ahead window may hold zeros that a writer has since written over (preallocated
    // space): judge damage on the file itself.
    window = []
    windowOffset = 0
    return try batch(at: offset, expecting: expecting, checkFrame: checkFrame, limits: limits, fresh: true)
  }

  private func batch(at offset: Int64, expecting: UInt64, checkFrame: Bool, limits: JournalLimits, fresh: Bool)
    throws -> BatchRead
  {
    if offset == size { return .end }
    let headerBytes =
      fresh
      ? try read(count: Layout.batchHeaderSize, at: offset)[...]
      : try bytes(at: offset, count: Layout.batchHeaderSize)
    if headerBytes.first == 0, try isZeroFilled(from: offset) {
      return .damaged(BatchDamage(offset: offset, kind: .zeroFilled))
    }
    if headerBytes.count < Layout.batchHeaderSize {
      return .damaged(BatchDamage(offset: offset, kind: .truncatedHeader))
    }
    let header: BatchHeader
    switch BatchHeader.decode(headerBytes, limits: limits) {
    case .success(let decoded): header = decoded
    case .failure(let problem): return .damaged(BatchDamage(offset: offset, kind: .badHeader(problem)))
    }
    guard header.firstSequence == expecting else {
      return .damaged(BatchDamage(offset: offset, kind: .sequenceBreak(expected: expecting), header: header))
    }
    let frameOffset = offset + Int64(Layout.batchHeaderSize)
    guard frameOffset + Int64(header.frameLength) <= size else {
      return .damaged(BatchDamage(offset: offset, kind: .truncatedFrame, header: header))
    }
    guard checkFrame else { return .batch(header, frame: [][...]) }
    let frame =
      fresh
      ? try read(count: Int(header.frameLength), at: frameOffset)[...]
      : try bytes(at: frameOffset, count: Int(header.frameLength))
    guard frame.count == Int(header.frameLength) else {
      return .damaged(BatchDamage(offset: offset, kind: .truncatedFrame, header: header))
    }
    guard CRC32C.checksum(frame) == header.frameChecksum else {
      return .damaged(BatchDamage(offset: offset, kind: .frameChecksumMismatch, header: header))
    }
    return .batch(header, frame: frame)
  }

  /// Zeros known to fill `zeroChecked` (as of some earlier look). A writer only ever writes at
  /// its end, header first, so while the bytes at the start of that range are still zero, the
  /// rest of it is too: a reader polling a live tail checks only what the file gained since.
  private var zeroChecked: Range<Int64> = 0..<0

  /// Whether every byte from `offset` to the end of the file (`size`) is zero, and there is at
  /// least one: space preallocated by a writer and not written yet.
  package func isZeroFilled(from offset: Int64) throws -> Bool {
    guard offset < size else { return false }
    var from = offset
    if zeroChecked.contains(offset) { from = min(zeroChecked.upperBound, size) }
    guard try firstNonZero(from: from, to: size) == nil else { return false }
    zeroChecked = offset..<size
    return true
  }

  /// Where the bytes from `offset` on stop being anything but zeros: one past the last non-zero
  /// byte before the end of the file, or `offset` if there is none. What recovery moves aside of
  /// a torn tail in preallocated space is `offset..<nonZeroEnd(from: offset)`.
  package func nonZeroEnd(from offset: Int64) throws -> Int64 {
    var end = offset
    var position = offset
    while let found = try firstNonZero(from: position, to: size) {
      end = found.last + 1
      position = end
    }
    return end
  }

  /// Where the bytes that `damage` makes unreadable end, when nothing valid follows them: the
  /// damaged batch's extent, and beyond it up to the last non-zero byte. Zeros after that are
  /// preallocated space, not part of a torn tail.
  package func tornEnd(of damage: BatchDamage) throws -> Int64 {
    try tornEnd(from: damage.offset, header: damage.header)
  }

  /// The end of the damaged batch at `offset` (whose header is `header` when its checksum holds)
  /// and of any non-zero bytes after it. Its extent is the one its header declares; when the
  /// header's checksum fails, the frame length it states anyway, if that frame ends inside the
  /// file and past its last non-zero byte (a frame's last bytes are its content checksum's, and
  /// can be zeros: they are the frame's, not preallocated space); otherwise a header's 52 bytes.
  /// The same for any bytes: `verify`, opening and `repair` all judge a damaged tail by this.
  private func tornEnd(from offset: Int64, header: BatchHeader?) throws -> Int64 {
    let nonZero = try nonZeroEnd(from: offset)
    // Only zeros: nothing of a batch was written there.
    guard nonZero > offset else { return offset }
    var declared = offset + Int64(Layout.batchHeaderSize)
    if let header {
      declared = offset + header.totalLength
    } else if offset + Int64(Layout.batchHeaderSize) <= size {
      // The frame length the header states, unchecked here, so only believed when it agrees
      // with what the file holds.
      var field = ByteReader(try bytes(at: offset + Int64(BatchHeader.frameLengthOffset), count: 4))
      let stated = Int64(field.read(UInt32.self) ?? 0)
      let end = offset + Int64(Layout.batchHeaderSize) + stated
      if end <= size, end >= nonZero { declared = end }
    }
    return min(size, max(declared, nonZero))
  }

  /// Where the bytes from `offset` on that are worth keeping end, in the last segment of a
  /// journal: after the damaged batch at `offset` (as `tornEnd(of:)` finds its extent), after the
  /// last non-zero byte, and after the last whole frame (a frame's last bytes are its content
  /// checksum's, which can be zeros: about one frame in 256 ends in one). Only zeros after that
  /// are preallocated space. A frame is whole when its batch header's checksum holds (whatever
  /// the limits) and so does its frame's: not one whose header was written and whose frame was
  /// not.
  package func keptEnd(from offset: Int64) throws -> Int64 {
    guard offset < size else { return size }
    let atOffset = try? BatchHeader.decode(
      try bytes(at: offset, count: Layout.batchHeaderSize), limits: .largest
    ).get()
    var end = try tornEnd(from: offset, header: atOffset)
    // Later frames are looked for as `scanStart(after:)` says: past the damaged batch's frame
    // when its header's checksum holds (headers inside it are its content).
    var from = Self.scanStart(after: offset, header: atOffset)
    // One window for the whole scan: `from` only moves forward, so each byte is read about once,
    // not once per header found (a hostile tail of headers whose frames fail holds thousands).
    var window = ScanWindow()
    while let (at, header) = try nextValidBatchHeader(from: from, limits: .largest, window: &window) {
      let frameEnd = at + header.totalLength
      if frameEnd <= end {
        from = frameEnd  // kept anyway
      } else if frameEnd <= size, try frameChecksum(at: at + Int64(Layout.batchHeaderSize), header) {
        end = frameEnd
        from = frameEnd
      } else {
        from = at + 1
      }
    }
    return end
  }

  /// Whether the frame `header` declares, at `offset`, has the checksum it declares. Reads it in
  /// bounded chunks.
  private func frameChecksum(at offset: Int64, _ header: BatchHeader) throws -> Bool {
    var crc: UInt32 = 0
    var position = offset
    let end = offset + Int64(header.frameLength)
    while position < end {
      let bytes = try read(count: Int(min(Int64(1 << 20), end - position)), at: position)
      if bytes.isEmpty { return false }
      crc = bytes.withUnsafeBytes { CRC32C.checksum($0, continuing: crc) }
      position += Int64(bytes.count)
    }
    return crc == header.frameChecksum
  }

  /// The first non-zero byte in `from..<to`, and the last one of the chunk it was found in.
  private func firstNonZero(from: Int64, to: Int64) throws -> (first: Int64, last: Int64)? {
    let chunk = Int64(1 << 20)
    var position = from
    while position < to {
      let bytes = try read(count: Int(min(chunk, to - position)), at: position)
      if bytes.isEmpty { return nil }
      if let first = bytes.firstIndex(where: { $0 != 0 }) {
        let last = bytes.lastIndex(where: { $0 != 0 })!
        return (position + Int64(first), position + Int64(last))
      }
      position += Int64(bytes.count)
    }
    return nil
  }

  /// Whether a checksum-valid batch header starts anywhere after `offset`: if one does, bytes
  /// that do not hold a batch at `offset` (a segment header that is not valid) are followed by
  /// committed data. Judged whatever the reader's limits: a header written with larger ones is
  /// as whole (committed) as any.
  package func hasValidBatchHeader(after offset: Int64) throws -> Bool {
    try nextValidBatchHeader(from: offset + 1, limits: .largest) != nil
  }

  /// Whether a checksum-valid batch header follows `damage` (looked for from
  /// `scanStart(after:)`): if one does, the damage is in the middle of committed data, not a
  /// torn tail. Judged whatever the reader's limits, as `hasValidBatchHeader(after:)`.
  package func hasValidBatchHeader(after damage: BatchDamage) throws -> Bool {
    if let none = noBatchHeaderAfter, none.damage == damage, none.size == size { return false }
    let found = try nextValidBatchHeader(after: damage, limits: .largest) != nil
    noBatchHeaderAfter = found ? nil : (damage, size)
    return found
  }

  /// The damage after which `hasValidBatchHeader(after:)` last found no batch header, and the
  /// file's size then: asked again of the same damage in a file of the same size, the answer is
  /// the same without a scan. A follower polls a torn tail followed by preallocated zeros (a
  /// writer that crashed) every interval, and each scan read every zero to the end (megabytes).
  /// Bytes that change the answer change the damage or the size: a writer that finishes a frame
  /// the damage was part of (the next poll reads it whole), or recovery moving the tail aside.
  private var noBatchHeaderAfter: (damage: BatchDamage, size: Int64)?

  /// The first checksum-valid batch header after `damage`, looked for from
  /// `scanStart(after:)`, and where it starts: where a walk goes on after the damage.
  package func nextValidBatchHeader(after damage: BatchDamage, limits: JournalLimits) throws
    -> (Int64, BatchHeader)?
  {
    try nextValidBatchHeader(from: Self.scanStart(after: damage), limits: limits)
  }

  /// Where the bytes after `damage` that may hold later batches begin: the end of the damaged
  /// batch's declared extent when its header's checksum holds (`damage.header`), one byte after
  /// its offset otherwise. A header whose checksum holds is whole, and so is its frame length:
  /// the frame's bytes, whatever they are, are its content (a payload may embed journal bytes,
  /// which a frame stored raw shows as they are), not a later write; a writer writes the next
  /// batch at the end of that extent. When the extent reaches past the end of the file, nothing
  /// can follow. A header that does not hold declares nothing, so every byte after it is looked
  /// at. FORMAT.md, "Opening and recovery".
  package static func scanStart(after damage: BatchDamage) -> Int64 {
    scanStart(after: damage.offset, header: damage.header)
  }

  private static func scanStart(after offset: Int64, header: BatchHeader?) -> Int64 {
    guard let header else { return offset + 1 }
    return offset + header.totalLength
  }

  /// The first checksum-valid batch header after `offset`, and where it starts. Scans the bytes
  /// in bounded chunks, so a damaged file of any size costs time, not memory.
  ///
  /// Only the first `size` bytes count: the damage was judged on them, and bytes a writer appended
  /// since (a follower's view of the active segment) would make a frame still being written look
  /// like damage in the middle of committed data. A writer storing through a mapping writes
  /// inside that size: a reader then reads the damaged batch again after the scan
  /// (`JournalCursor.judge`).
  package func nextValidBatchHeader(after offset: Int64, limits: JournalLimits) throws -> (Int64, BatchHeader)? {
    try nextValidBatchHeader(from: offset + 1, limits: limits)
  }

  /// The first checksum-valid batch header at `from` or after it.
  private func nextValidBatchHeader(from: Int64, limits: JournalLimits) throws -> (Int64, BatchHeader)? {
    var window = ScanWindow()
    return try nextValidBatchHeader(from: from, limits: limits, window: &window)
  }

  /// Bytes of the file read by one scan for batch headers, kept for its next call.
  struct ScanWindow {
    var start: Int64 = 0
    var bytes: [UInt8] = []
  }

  /// `nextValidBatchHeader(from:limits:)`, reading only what `window` does not already hold.
  private func nextValidBatchHeader(from: Int64, limits: JournalLimits, window: inout ScanWindow) throws
    -> (Int64, BatchHeader)?
  {
    let magic: [UInt8] = [0x51, 0x2A, 0x4D, 0x18]
    let headerSize = Layout.batchHeaderSize
    var position = from
    while position + Int64(headerSize) <= size {
      if position < window.start || position + Int64(headerSize) > window.start + Int64(window.bytes.count) {
        let count = Int(min(Int64((1 << 20) + headerSize), size - position))
        window = ScanWindow(start: position, bytes: try read(count: count, at: position))
        if window.bytes.count < headerSize { return nil }
      }
      let bytes = window.bytes
      var i = Int(position - window.start)
      while i + headerSize <= bytes.count {
        if bytes[i] == magic[0], bytes[i + 1] == magic[1], bytes[i + 2] == magic[2], bytes[i + 3] == magic[3],
          case .success(let header) = BatchHeader.decode(bytes[i..<(i + headerSize)], limits: limits)
        {
          return (window.start + Int64(i), header)
        }
        i += 1
      }
      position = window.start + Int64(i)
    }
    return nil
  }
}

/// The result of reading at one offset of a segment.
package enum BatchRead {
  case batch(BatchHeader, frame: ArraySlice<UInt8>)
  case end
  case damaged(BatchDamage)
}

/// Where and how a segment stops being valid.
package struct BatchDamage: Equatable {
  package enum Kind: Equatable, CustomStringConvertible {
    case truncatedHeader
    case badHeader(BatchHeader.Problem)
    case truncatedFrame
    case frameChecksumMismatch
    case sequenceBreak(expected: UInt64)
    case undecodable(String)
    /// Zeros from here to the end of the file: preallocated space not written yet. The end of
    /// the journal in the last segment; damage anywhere else.
    case zeroFilled

    /// Whether a write cut short (by a crash, or still in progress) can leave this: not a header
    /// or frame whose checksums hold but whose sequence or sizes are wrong. Only damage that can
    /// be torn may end the last segment as its unfinished tail; anything else is committed.
    package var canBeTorn: Bool {
      switch self {
      case .truncatedHeader, .truncatedFrame, .frameChecksumMismatch, .zeroFilled: true
      case .badHeader(let problem): !problem.isWhole
      case .sequenceBreak, .undecodable: false
      }
    }

    package var description: String {
      switch self {
      case .zeroFilled: "zeros from here to the end of the file (preallocated space, not written)"
      case .truncatedHeader: "batch header cut short by the end of the file"
      case .badHeader(let problem): problem.description
      case .truncatedFrame: "frame cut short by the end of the file"
      case .frameChecksumMismatch: "frame checksum mismatch"
      case .sequenceBreak(let expected): "sequence break: expected a batch starting at \(expected)"
      case .undecodable(let why): why
      }
    }
  }

  package var offset: Int64
  package var kind: Kind
  package var header: BatchHeader?

  /// The sequence numbers the damage stands for, where the record `expecting` was due: as many
  /// as its batch header counts, numbered from `expecting`, when that header holds (its count is
  /// what a walk passes the batch by); nil when it does not. A header that follows on numbers
  /// them so itself; one that breaks the sequence does not, and its own numbers are not the
  /// records' (an earlier batch written again names records already read, one numbered on
  /// records past the journal's end: helper-219 and helper-220, Dec 7). What readers' errors and
  /// `verify`'s problems name.
  package func sequences(expecting: UInt64) -> ClosedRange<UInt64>? {
    guard let header else { return nil }
    let (last, overflow) = expecting.addingReportingOverflow(UInt64(max(header.recordCount, 1)) - 1)
    return expecting...(overflow ? .max : last)
  }

  package init(offset: Int64, kind: Kind, header: BatchHeader? = nil) {
    self.offset = offset
    self.kind = kind
    self.header = header
  }
}
