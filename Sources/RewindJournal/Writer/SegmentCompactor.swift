import Foundation
import Synchronization

/// What compaction did to one sealed segment.
public struct CompactedSegment: Sendable, Equatable, CustomStringConvertible {
  /// The segment's file name.
  public var segment: String
  /// Its records (all of them, unchanged).
  public var records: UInt64
  /// Data frames before and after.
  public var framesBefore: Int
  public var framesAfter: Int
  /// File size before and after.
  public var bytesBefore: Int64
  public var bytesAfter: Int64
  /// Decoded bytes of its frames (records with their 20-byte headers), the same before and after.
  public var decodedBytes: Int64

  public var description: String {
    "\(segment): \(records) records, \(framesBefore) -> \(framesAfter) frames, \(bytesBefore) -> \(bytesAfter) bytes"
  }
}

/// What `Journal.compactSealedSegments()` (or the background compaction) did.
public struct CompactionReport: Sendable, Equatable {
  /// Segments rewritten, in order.
  public var compacted: [CompactedSegment] = []
  /// Sealed segments left alone because they were compacted before (their header says so).
  public var alreadyCompacted: [String] = []

  public init() {}

  public var bytesBefore: Int64 { compacted.reduce(0) { $0 + $1.bytesBefore } }
  public var bytesAfter: Int64 { compacted.reduce(0) { $0 + $1.bytesAfter } }
  public var records: UInt64 { compacted.reduce(0) { $0 + $1.records } }
}

/// Serialises changes to the `index` file between the writer, which appends entries through a
/// descriptor it keeps open, and compaction, which replaces the file. The value counts
/// replacements: when it changed, the writer reopens the file before appending.
///
/// `@unchecked Sendable`: `generation` is touched only under `lock` (an `NSLock`, a pthread
/// mutex, which ThreadSanitizer follows).
package final class IndexFileGate: @unchecked Sendable {
  private let lock = NSLock()
  private var generation: UInt64 = 0

  package init() {}

  package func withLock<R>(_ body: (inout UInt64) -> R) -> R {
    lock.lock()
    defer { lock.unlock() }
    return body(&generation)
  }
}

/// Rewrites sealed segments into large frames compressed with LZ4HC (see FORMAT.md,
/// "Compaction"). Owned by an open `Journal` (whose lock makes it the only writer); one segment
/// at a time, whether asked by `Journal.compactSealedSegments()` or by the background thread.
///
/// For each segment: every frame of the original is read and checked (CRC-32C, LZ4 checksums,
/// record framing); whole frames are merged, in order, into frames of up to `frameContentBytes`
/// decoded bytes; the new segment is written under `<segment>.compact.tmp`, fsynced, read back
/// and compared with the original (each frame's records against its header, the decoded bytes byte
/// for byte), renamed over it, and the directory fsynced.
/// The index entries of that segment are then re-derived. Any failure before the rename removes
/// the temporary file and leaves the original as it was. When replacing the index file fails, its
/// entries of the segment stay those of the old frames: they are derived again at the next
/// compaction (of any segment, or of none), with those of every segment left so since.
///
/// `@unchecked Sendable`: the mutable state is guarded by `serial` (compaction) and `queueLock`
/// (the background queue).
package final class SegmentCompactor: @unchecked Sendable {
  /// LZ4HC level (liblz4's `compressionLevel`), chosen by measurement: on the benchmark corpus's
  /// first segment (252,496 Notebook events, 266 B/event as written; `rewind-bench --full --only
  /// compaction`, release, 1 MiB frames), bytes/event and decoded MB/s compacted (read, check,
  /// compress, write, fsync, read back, compare) were: fast (0) 108 at 103; 3: 93.4 at 49;
  /// 6: 90.5 at 31; 9: 89.7 at 22; 12: 89.2 at 9.6. Level 6 is the knee: 1.5% over level 12's
  /// size at 3x its speed, and 1.4x level 9's speed for 0.9% more bytes.
  package static let defaultLevel: Int32 = 6
  /// Decoded bytes a compacted frame gathers (whole original frames; one larger frame alone).
  /// At level 6: 256 KiB frames 91.9 B/event, 1 MiB 90.5, 4 MiB 90.1; larger frames cost a
  /// seek more decoding, and 1 MiB is also the writer's frame target.
  package static let defaultFrameContentBytes = 1 << 20

  let directory: JournalDirectory
  let options: JournalOptions
  let indexGate: IndexFileGate
  /// The LZ4HC level of every segment this compactor writes (the benchmark compares levels).
  package let level: Int32
  private var io: any FileIO { directory.io }
  private var path: String { directory.path }

  /// Held while a segment is compacted; `closed` is guarded by it.
  private let serial = NSLock()
  private var closed = false
  /// Set by `close()`: compaction in progress stops at the next frame.
  private let stopping = Atomic<Bool>(false)

  // The background queue, guarded by `queueLock`.
  private let queueLock = NSCondition()
  private var queue: [UInt64] = []
  private var threadRunning = false
  private var background = CompactionReport()
  private var backgroundFailure: JournalError?

  /// Segments compacted whose index entries still name their old frames, replacing the index file
  /// having failed: each with its size before compaction (which those entries fit) and its new
  /// frames. Guarded by `serial`.
  private var staleIndex: [UInt64: (originalSize: Int64, frames: [WrittenFrame])] = [:]

  package init(
    directory: JournalDirectory, options: JournalOptions, indexGate: IndexFileGate,
    level: Int32 = SegmentCompactor.defaultLevel
  ) {
    self.directory = directory
    self.options = options
    self.indexGate = indexGate
    self.level = level
  }

  // MARK: Explicit compaction

  /// Compacts every sealed segment (all but the last) not compacted yet, in order, into frames of
  /// at most `frameContentBytes` decoded bytes (and at most `options.limits.maxBatchBytes`).
  /// - Throws: `JournalError`: `.closed`, `.corrupt`/`.sequenceBreak` naming the damaged segment
  ///   and offset (that segment and the later ones are left as they are), `.io`.
  package func compactSealed(
    frameContentBytes: Int = SegmentCompactor.defaultFrameContentBytes, progress: ((CompactedSegment) -> Void)? = nil
  ) throws -> CompactionReport {
    var report = CompactionReport()
    let segments = try JournalDirectory.listSegments(path, io: io)
    for (position, first) in segments.enumerated().dropLast() {
      switch try compact(segment: first, next: segments[position + 1], frameContentBytes: frameContentBytes) {
      case .compacted(let done):
        report.compacted.append(done)
        progress?(done)
      case .alreadyCompacted: report.alreadyCompacted.append(Layout.segmentName(firstSequence: first))
      }
    }
    return report
  }

  package enum Outcome {
    case compacted(CompactedSegment)
    case alreadyCompacted
  }

  /// Compacts one sealed segment, `next` being the first sequence of the segment after it, into
  /// frames of at most `frameContentBytes` decoded bytes (and `options.limits.maxBatchBytes`).
  package func compact(
    segment first: UInt64, next: UInt64, frameContentBytes: Int = SegmentCompactor.defaultFrameContentBytes
  ) throws -> Outcome {
    serial.lock()
    defer { serial.unlock() }
    let closedError = JournalError(.closed, "the journal is closed", directory: path)
    guard !closed else { throw closedError }
    // Entries a failed index replacement left stale: derived again now, whatever this call does
    // (the segment may be compacted already, or fail).
    if !staleIndex.isEmpty { rewriteIndex() }
    do {
      return try compactLocked(segment: first, next: next, frameContentBytes: frameContentBytes)
    } catch is Cancelled {
      throw closedError
    }
  }

  private struct Cancelled: Error {}

  /// A frame of the new segment: where it starts, its first record and its largest timestamp.
  private struct WrittenFrame {
    var offset: Int64
    var firstSequence: UInt64
    var maxTimestamp: Int64
  }

  private func compactLocked(segment first: UInt64, next: UInt64, frameContentBytes: Int) throws -> Outcome {
    let name = Layout.segmentName(firstSequence: first)
    let segmentPath = path + "/" + name
    let temporary = segmentPath + ".compact.tmp"
    // A leftover of an interrupted compaction: a copy, never the only one of anything.
    try wrap(name) { () throws in try io.removeFile(temporary) }

    let original = try directory.openChecked(segment: first)
    let header = try wrap(name) { () throws in try original.header().get() }
    if header.isCompacted { return .alreadyCompacted }

    var newHeader = header
    newHeader.flags |= SegmentHeader.compactedFlag
    let fd = try wrap(temporary) { () throws in
      try io.open(temporary, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
    }
    var written: (frames: [WrittenFrame], size: Int64, framesBefore: Int, records: UInt64, decoded: Int64)
    do {
      written = try writeCompacted(
        original, header: newHeader, next: next, frameContentBytes: frameContentBytes, to: fd, path: temporary)
      try wrap(temporary) { () throws in try io.sync(fd, metadata: true, path: temporary) }
      io.close(fd)
    } catch {
      io.close(fd)
      try? io.removeFile(temporary)
      throw error
    }
    do {
      try checkReadBack(temporary, header: newHeader, size: written.size, against: first)
      try wrap(temporary) { () throws in try io.rename(temporary, to: segmentPath) }
    } catch {
      try? io.removeFile(temporary)
      throw error
    }
    // The rename is done: whether or not the directory sync holds, `S` is the compacted file from
    // now on, and the index must follow it. A later compaction skips `S` (its header says
    // compacted), so nothing else would re-derive its entries while this writer lives.
    let directorySync = Result { () throws in try wrap(name) { () throws in try io.syncDirectory(path) } }
    staleIndex[first] = (original.size, written.frames)
    rewriteIndex()
    try directorySync.get()
    return .compacted(
      CompactedSegment(
        segment: name, records: written.records, framesBefore: written.framesBefore,
        framesAfter: written.frames.count, bytesBefore: original.size, bytesAfter: written.size,
        decodedBytes: written.decoded))
  }

  /// Reads every frame of `original` (CRC-32C, LZ4 checksums, record framing), merges their
  /// decoded content into large frames and writes the new segment to `fd`.
  private func writeCompacted(
    _ original: SegmentFile, header: SegmentHeader, next: UInt64, frameContentBytes: Int, to fd: Int32,
    path temporary: String
  ) throws -> (frames: [WrittenFrame], size: Int64, framesBefore: Int, records: UInt64, decoded: Int64) {
    let encoder = LZ4FrameEncoder(compressionLevel: level)
    let decoder = LZ4FrameDecoder()
    let target = min(max(frameContentBytes, 1), options.limits.maxBatchBytes)
    var output = header.encoded()
    var fileOffset: Int64 = 0
    var frames: [WrittenFrame] = []
    // The frame being gathered: decoded content of whole original frames.
    var pending: [UInt8] = []
    pending.reserveCapacity(target)
    var pendingRecords = 0
    var pendingFirst = original.firstSequence
    var pendingRange = (low: Int64.max, high: Int64.min)
    var framesBefore = 0
    var decoded: Int64 = 0

    func flushFrame() throws {
      guard pendingRecords > 0 else { return }
      let frameOffset = fileOffset + Int64(output.count)
      let headerStart = output.count
      output.append(contentsOf: repeatElement(0, count: Layout.batchHeaderSize))
      let frameStart = output.count
      let frameLength: Int
      do {
        frameLength = try pending.withUnsafeBytes { (content) throws in
          try encoder.compress(content, appendingTo: &output)
        }
      } catch {
        throw JournalError(.io, "LZ4 compression failed: \(error)", directory: path, file: original.name)
      }
      let batch = BatchHeader(
        firstSequence: pendingFirst, recordCount: UInt32(pendingRecords), contentLength: UInt32(pending.count),
        frameLength: UInt32(frameLength), minTimestamp: pendingRange.low, maxTimestamp: pendingRange.high,
        frameChecksum: CRC32C.checksum(output[frameStart...]))
      var writer = ByteWriter(capacity: Layout.batchHeaderSize)
      batch.encode(into: &writer)
      output.replaceSubrange(headerStart..<frameStart, with: writer.bytes)
      frames.append(WrittenFrame(offset: frameOffset, firstSequence: pendingFirst, maxTimestamp: batch.maxTimestamp))
      pendingFirst = batch.lastSequence + 1
      pending.removeAll(keepingCapacity: true)
      pendingRecords = 0
      pendingRange = (Int64.max, Int64.min)
    }
    func writeOut() throws {
      try wrap(temporary) { () throws in
        try output.withUnsafeBytes { (bytes) throws in try io.writeAll(fd, bytes, at: fileOffset, path: temporary) }
      }
      fileOffset += Int64(output.count)
      output.removeAll(keepingCapacity: true)
    }

    var offset = Int64(Layout.segmentHeaderSize)
    var expected = original.firstSequence
    walk: while true {
      if stopping.load(ordering: .relaxed) { throw Cancelled() }
      let read = try wrap(original.name) { () throws in
        try original.batch(at: offset, expecting: expected, checkFrame: true, limits: options.limits)
      }
      switch read {
      case .end:
        break walk
      case .damaged(let damage):
        throw directory.error(damage, in: original, expecting: expected)
      case .batch(let batch, let frame):
        // Whole frames only: a batch never spans two frames.
        if pendingRecords > 0, pending.count + Int(batch.contentLength) > target {
          try flushFrame()
          if output.count >= 1 << 20 { try writeOut() }
        }
        let range = try decodeChecked(frame, header: batch, decoder: decoder, in: original, at: offset) {
          pending.append(contentsOf: $0)
        }
        pendingRange = (min(pendingRange.low, range.low), max(pendingRange.high, range.high))
        pendingRecords += Int(batch.recordCount)
        framesBefore += 1
        decoded += Int64(batch.contentLength)
        offset += batch.totalLength
        expected = batch.lastSequence + 1
      }
    }
    guard expected == next else {
      throw JournalError.segmentBreak(
        "segment ends at sequence \(expected - 1), but the next one starts at \(next)", expected: expected,
        next: next, directory: path, file: original.name, offset: offset)
    }
    try flushFrame()
    try writeOut()
    return (frames, fileOffset, framesBefore, expected - original.firstSequence, decoded)
  }

  /// Decodes a frame whose CRC-32C matched (LZ4's own checksums checked too), checks its records
  /// against its header, hands the decoded content to `body` and returns the exact timestamp range.
  private func decodeChecked(
    _ frame: ArraySlice<UInt8>, header: BatchHeader, decoder: LZ4FrameDecoder, in file: SegmentFile, at offset: Int64,
    _ body: (UnsafeRawBufferPointer) throws -> Void
  ) throws -> (low: Int64, high: Int64) {
    do {
      return try frame.withUnsafeBytes { frame in
        try decoder.decompress(frame, expectedLength: Int(header.contentLength)) { content in
          let range = try checkRecords(content, header: header, limits: options.limits)
          try body(content)
          return range
        }
      }
    } catch let failure as LZ4Failure {
      throw JournalError(
        .corrupt, "LZ4 frame does not decode: \(failure)", directory: path, file: file.name, offset: offset,
        sequences: header.sequences)
    } catch let failure as BatchDecodingFailure {
      throw failure.error(directory: path, file: file.name, offset: offset, sequences: header.sequences)
    }
  }

  /// Reads the new segment back from disk and checks that it holds exactly the records of the
  /// original (sequence, timestamp, payload), in the same order, and nothing else: each new frame's
  /// records are checked against its header (numbering, count, exact timestamp range), and the
  /// decoded bytes of all its frames are compared with those of the original's, byte for byte.
  private func checkReadBack(_ temporary: String, header: SegmentHeader, size: Int64, against first: UInt64) throws {
    let name = Layout.segmentName(firstSequence: first)
    func mismatch(_ why: String) -> JournalError {
      JournalError(
        .io, "the compacted copy does not read back as the original (\(why)); the original is kept",
        directory: path, file: name)
    }
    let original = try directory.openChecked(segment: first)
    var originals = SegmentContent(file: original, limits: options.limits, directory: directory)
    let fd = try wrap(temporary) { () throws in try io.open(temporary, flags: O_RDONLY, mode: 0) }
    defer { io.close(fd) }
    let diskSize = try wrap(temporary) { () throws in try io.size(fd, path: temporary) }
    guard diskSize == size else { throw mismatch("\(diskSize) bytes on disk, \(size) written") }
    let head = try wrap(temporary) { () throws in
      try io.read(fd, count: Layout.segmentHeaderSize, at: 0, path: temporary)
    }
    guard case .success(let decodedHeader) = SegmentHeader.decode(head), decodedHeader == header else {
      throw mismatch("segment header")
    }
    let decoder = LZ4FrameDecoder()
    var offset = Int64(Layout.segmentHeaderSize)
    var expected = first
    while offset < size {
      let bytes = try wrap(temporary) { () throws in
        try io.read(fd, count: Layout.batchHeaderSize, at: offset, path: temporary)
      }
      guard case .success(let batch) = BatchHeader.decode(bytes[...], limits: options.limits),
        batch.firstSequence == expected, offset + batch.totalLength <= size
      else { throw mismatch("batch header at byte offset \(offset)") }
      let frame = try wrap(temporary) { () throws in
        try io.read(fd, count: Int(batch.frameLength), at: offset + Int64(Layout.batchHeaderSize), path: temporary)
      }
      guard frame.count == Int(batch.frameLength), CRC32C.checksum(frame) == batch.frameChecksum else {
        throw mismatch("frame checksum at byte offset \(offset)")
      }
      var same = true
      let range: (low: Int64, high: Int64)
      do {
        range = try frame.withUnsafeBytes { frame in
          try decoder.decompress(frame, expectedLength: Int(batch.contentLength)) { content in
            let range = try checkRecords(content, header: batch, limits: options.limits)
            same = try originals.matches(content)
            return range
          }
        }
      } catch let error as JournalError {
        throw error
      } catch {
        throw mismatch("frame at byte offset \(offset) does not decode: \(error)")
      }
      guard same else { throw mismatch("the records of the frame at byte offset \(offset) differ") }
      guard range.low == batch.minTimestamp, range.high == batch.maxTimestamp else {
        throw mismatch("timestamp range of the frame at byte offset \(offset)")
      }
      expected = batch.lastSequence + 1
      offset += batch.totalLength
    }
    guard try originals.atEnd() else { throw mismatch("records missing from sequence \(expected)") }
  }

  // MARK: The index

  /// Replaces the entries of each segment of `staleIndex` in the index with ones derived from its
  /// new frames, by the writer's interval rule, and empties `staleIndex`; when replacing the file
  /// fails, keeps it for the next compaction (the entries stay stale meanwhile: readers check each
  /// entry and read the segment from its start). The index is derived data: when it is missing or
  /// damaged it is left alone (readers check every entry; the next writer rebuilds it).
  /// Called under `serial`.
  private func rewriteIndex() {
    let indexPath = path + "/" + Layout.indexName
    indexGate.withLock { generation in
      // Kept only when the replacement itself fails.
      let stale = staleIndex.sorted { $0.key < $1.key }
      staleIndex.removeAll()
      guard let fd = try? io.open(indexPath, flags: O_RDONLY, mode: 0) else { return }
      let fileSize = try? io.size(fd, path: indexPath)
      io.close(fd)
      var sizes: [UInt64: Int64] = [:]
      for segment in (try? JournalDirectory.listSegments(path, io: io)) ?? [] {
        if let file = try? directory.open(segment: segment) { sizes[segment] = file.size }
      }
      // The stale entries fit the files as they were: loaded so, the whole file is valid.
      for (first, segment) in stale { sizes[first] = segment.originalSize }
      let (index, validBytes) = SparseIndex.load(
        directory: path, journalID: directory.journalID, segments: sizes, io: io)
      guard validBytes == fileSize else { return }
      var entries = index.entries
      for (first, segment) in stale {
        let startEntry = entries.first {
          $0.segment == first && $0.offset == Int64(Layout.segmentHeaderSize) && $0.firstSequence == first
        }
        guard let base = startEntry?.maxTimestampBefore ?? maxTimestamp(before: first) else { return }
        var derived: [IndexEntry] = []
        var running = base
        var lastIndexed: Int64 = 0
        for frame in segment.frames {
          if lastIndexed == 0 || frame.offset - lastIndexed >= Int64(options.indexIntervalBytes) {
            derived.append(
              IndexEntry(
                firstSequence: frame.firstSequence, segment: first, offset: frame.offset, maxTimestampBefore: running))
            lastIndexed = frame.offset
          }
          running = max(running, frame.maxTimestamp)
        }
        entries = entries.filter { $0.segment < first } + derived + entries.filter { $0.segment > first }
      }
      var writer = ByteWriter(capacity: SparseIndex.headerSize + entries.count * IndexEntry.size)
      writer.write(SparseIndex.header(journalID: directory.journalID))
      for entry in entries { entry.encode(into: &writer) }
      // Synced before the rename, the directory after it (derived data: a failure leaves it stale,
      // until the next compaction tries again).
      guard (try? io.replaceFile(indexPath, with: writer.bytes)) != nil else {
        for (first, segment) in stale { staleIndex[first] = segment }
        return
      }
      generation &+= 1
      try? io.syncDirectory(path)
    }
  }

  /// The largest timestamp of the records before segment `first`, from their batch headers
  /// (when the index does not say); nil if they cannot be read.
  private func maxTimestamp(before first: UInt64) -> Int64? {
    var running = Int64.min
    for segment in (try? JournalDirectory.listSegments(path, io: io)) ?? [] where segment < first {
      guard let file = try? directory.open(segment: segment) else { return nil }
      var offset = Int64(Layout.segmentHeaderSize)
      var expected = segment
      while true {
        switch try? file.batch(at: offset, expecting: expected, checkFrame: false, limits: options.limits) {
        case .batch(let header, _)?:
          running = max(running, header.maxTimestamp)
          offset += header.totalLength
          expected = header.lastSequence + 1
        case .end?: break
        default: return nil
        }
        if offset >= file.size { break }
      }
    }
    return running
  }

  // MARK: In the background

  /// Queues sealed segments for compaction on a low-priority thread (started when needed).
  package func enqueue(_ segments: [UInt64]) {
    queueLock.lock()
    defer { queueLock.unlock() }
    guard !stopping.load(ordering: .relaxed) else { return }
    queue.append(contentsOf: segments)
    guard !threadRunning else { return }
    threadRunning = true
    do {
      try Threads.start(named: "rewind-journal-compactor") { [self] in runBackground() }
    } catch {
      // No thread now (the process is at its thread limit): the segments stay queued, and the
      // next segment sealed tries again. Compaction only saves space.
      threadRunning = false
    }
  }

  /// Queues every sealed segment present now (those compacted already are skipped when reached).
  package func enqueueSealed() {
    let segments = (try? JournalDirectory.listSegments(path, io: io)) ?? []
    enqueue(Array(segments.dropLast()))
  }

  /// What the background compaction did so far, and its last failure.
  package var backgroundState: (CompactionReport, JournalError?) {
    queueLock.lock()
    defer { queueLock.unlock() }
    return (background, backgroundFailure)
  }

  private func runBackground() {
    lowerThreadPriority()
    while true {
      queueLock.lock()
      guard !queue.isEmpty, !stopping.load(ordering: .relaxed) else {
        threadRunning = false
        queueLock.broadcast()
        queueLock.unlock()
        return
      }
      let first = queue.removeFirst()
      queueLock.unlock()
      let segments = (try? JournalDirectory.listSegments(path, io: io)) ?? []
      guard let position = segments.firstIndex(of: first), position + 1 < segments.count else { continue }
      let outcome: Result<Outcome, JournalError>
      do {
        outcome = .success(try compact(segment: first, next: segments[position + 1]))
      } catch  where stopping.load(ordering: .relaxed) {
        continue
      } catch {
        outcome = .failure(JournalError(error, directory: path, file: Layout.segmentName(firstSequence: first)))
      }
      queueLock.lock()
      switch outcome {
      case .success(.compacted(let done)): background.compacted.append(done)
      case .success(.alreadyCompacted): background.alreadyCompacted.append(Layout.segmentName(firstSequence: first))
      case .failure(let error): backgroundFailure = error
      }
      queueLock.unlock()
    }
  }

  /// Stops the background thread (a compaction in progress is abandoned, its original kept),
  /// waits for any compaction to end, and refuses later ones.
  package func close() {
    stopping.store(true, ordering: .relaxed)
    queueLock.lock()
    while threadRunning { queueLock.wait() }
    queueLock.unlock()
    serial.lock()
    closed = true
    serial.unlock()
  }

  private func wrap<T>(_ file: String, _ body: () throws -> T) throws -> T {
    do {
      return try body()
    } catch let error as Cancelled {
      throw error
    } catch {
      // Errors name files relative to the journal directory.
      let relative = file.hasPrefix(path + "/") ? String(file.dropFirst(path.count + 1)) : file
      throw JournalError(error, directory: path, file: relative)
    }
  }
}

/// The decoded content of a segment's frames, in order (checked as the cursor checks them),
/// consumed by comparison with the content of another segment's frames.
private struct SegmentContent {
  let file: SegmentFile
  let limits: JournalLimits
  let directory: JournalDirectory
  var offset = Int64(Layout.segmentHeaderSize)
  var expected: UInt64
  var buffer: [UInt8] = []
  var position = 0
  let decoder = LZ4FrameDecoder()

  init(file: SegmentFile, limits: JournalLimits, directory: JournalDirectory) {
    self.file = file
    self.limits = limits
    self.directory = directory
    self.expected = file.firstSequence
  }

  /// Loads the next frame's content; false at the end of the segment.
  private mutating func load() throws -> Bool {
    switch try file.batch(at: offset, expecting: expected, checkFrame: true, limits: limits) {
    case .end: return false
    case .damaged(let damage): throw directory.error(damage, in: file, expecting: expected)
    case .batch(let header, let frame):
      buffer = try frame.withUnsafeBytes { try decoder.decompress($0, expectedLength: Int(header.contentLength)) }
      position = 0
      offset += header.totalLength
      expected = header.lastSequence + 1
      return true
    }
  }

  /// Whether the next `bytes.count` bytes of content are `bytes` (consuming them).
  mutating func matches(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
    var done = 0
    while done < bytes.count {
      if position == buffer.count {
        guard try load() else { return false }
        continue
      }
      let count = min(bytes.count - done, buffer.count - position)
      let equal = buffer.withUnsafeBytes { own in
        memcmp(own.baseAddress! + position, bytes.baseAddress! + done, count) == 0
      }
      guard equal else { return false }
      position += count
      done += count
    }
    return true
  }

  /// Whether every byte was consumed.
  mutating func atEnd() throws -> Bool {
    while position == buffer.count {
      guard try load() else { return true }
    }
    return false
  }
}

/// Checks the records of a frame's decoded content against its header (`BatchCodec.forEachRecord`),
/// without copying payloads out. Returns the smallest and largest timestamp.
private func checkRecords(_ content: UnsafeRawBufferPointer, header: BatchHeader, limits: JournalLimits) throws
  -> (low: Int64, high: Int64)
{
  var low = Int64.max
  var high = Int64.min
  try BatchCodec.forEachRecord(in: content, header: header, limits: limits) { _, timestamp, _ in
    low = min(low, timestamp)
    high = max(high, timestamp)
  }
  return (low, high)
}

/// Background compaction must not take CPU from the appenders and readers: on Linux, a thread
/// can be given its own nice value.
private func lowerThreadPriority() {
  #if os(Linux)
    // The thread's id, from /proc/thread-self ("<pid>/task/<tid>"): Glibc's gettid is not imported.
    var link = [CChar](repeating: 0, count: 64)
    let count = readlink("/proc/thread-self", &link, link.count - 1)
    guard count > 0,
      let tid = String(decoding: link[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: "/")
        .last.flatMap({ id_t($0) })
    else { return }
    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), tid, 19)
  #endif
}
