import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Contract 6: opening after a crash keeps every complete frame, moves a torn tail aside into
/// `quarantine/` (never deletes it) and reports exactly what it moved.
@Suite struct TornTailTests {
  /// A closed journal of one segment with small frames, and what it holds.
  struct Original {
    let dir = TemporaryDirectory("torn")
    var records: [JournalRecord] = []
    var segment = ""
    var bytes: [UInt8] = []
    var frames: [JournalFixtures.Frame] = []

    var segmentPath: String { dir.appending(segment) }

    /// The records of the frames that end at or before `offset`.
    func records(before offset: Int) -> [JournalRecord] {
      let last = frames.last(where: { $0.end <= offset })?.header.lastSequence ?? 0
      return Array(records.prefix(Int(last)))
    }
  }

  static func makeOriginal(batches: Int = 12, seed: UInt64) async throws -> Original {
    var original = Original()
    let journal = try Journal(directory: original.dir.path, options: JournalFixtures.options())
    original.records = try await JournalFixtures.write(
      journal, batches: batches, maxRecords: 3, maxPayload: 24, seed: seed)
    journal.close()
    original.segment = try #require(JournalFixtures.segments(original.dir.path).last)
    original.bytes = try Files.read(original.segmentPath)
    original.frames = try JournalFixtures.frames(of: original.bytes)
    try #require(original.frames.count == batches)
    return original
  }

  /// Opens the damaged copy in `path` and checks recovery against the original: the frames that
  /// end by `boundary` are kept, and `removed` (the bytes from `boundary` on) is moved aside exactly.
  static func checkRecovery(
    at path: String, original: Original, keptUpTo boundary: Int, removed: [UInt8], context: String
  ) async throws {
    // A reader (no lock, no repair) sees the complete frames and treats the rest as unwritten.
    let expected = original.records(before: boundary)
    #expect(try JournalFixtures.readAll(path) == expected, "reader, \(context)")

    let journal = try Journal(directory: path, options: JournalFixtures.options())
    let report = journal.recovery
    if removed.isEmpty {
      #expect(report.movedAside.isEmpty, "\(context): nothing to move on a frame boundary")
    } else {
      #expect(report.movedAside.count == 1, "\(context)")
      if let moved = report.movedAside.first {
        #expect(moved.segment == original.segment, "\(context)")
        #expect(moved.offset == Int64(boundary), "\(context)")
        #expect(moved.length == Int64(removed.count), "\(context)")
        #expect(try Files.read(path + "/" + moved.movedTo) == removed, "\(context): quarantine holds the removed bytes")
      }
    }
    #expect(report.lastSequence == UInt64(expected.count), "\(context)")
    #expect(journal.lastSequence == UInt64(expected.count), "\(context)")
    #expect(Files.size(path + "/" + original.segment) == boundary, "\(context)")
    #expect(try JournalFixtures.readAll(path) == expected, "after recovery, \(context)")

    // Appending continues the sequence without a gap.
    let record = NewRecord(timestamp: 9, payload: Array("after \(context)".utf8))
    let range = try await journal.append([record, record])
    #expect(range == UInt64(expected.count + 1)...UInt64(expected.count + 2), "\(context)")
    journal.close()
    let appended = range.map { JournalRecord(sequence: $0, timestamp: record.timestamp, payload: record.payload) }
    #expect(try JournalFixtures.readAll(path) == expected + appended, "after appending, \(context)")
    let reopened = try Journal(directory: path, options: JournalFixtures.options())
    #expect(reopened.recovery.isClean, "\(context): a second open finds nothing to do")
    reopened.close()
  }

  @Test func truncatingAtEveryOffsetOfTheLastTwoFramesRecovers() async throws {
    let original = try await Self.makeOriginal(seed: 21)
    let from = original.frames[original.frames.count - 2].offset
    let copy = TemporaryDirectory("torn-copy")
    var cuts = 0
    for cut in from...original.bytes.count {
      let path = copy.appending("j")
      try Files.copyDirectory(original.dir.path, to: path)
      try JournalFixtures.truncate(path + "/" + original.segment, at: cut)
      let kept = original.frames.last(where: { $0.end <= cut })?.end ?? Layout.segmentHeaderSize
      try await Self.checkRecovery(
        at: path, original: original, keptUpTo: kept, removed: Array(original.bytes[kept..<cut]),
        context: "cut at \(cut)")
      cuts += 1
    }
    #expect(cuts == original.bytes.count - from + 1)
  }

  @Test(arguments: [1, 7, 47, 48, 49, 300, 4096])
  func zerosAfterTheLastFrameArePreallocatedSpace(count: Int) async throws {
    // A writer that preallocated and was killed: its frames, then zeros to the end of the file.
    let original = try await Self.makeOriginal(batches: 4, seed: 22)
    let copy = TemporaryDirectory("torn-zeros")
    let path = copy.appending("j")
    try Files.copyDirectory(original.dir.path, to: path)
    try Files.write(original.bytes + [UInt8](repeating: 0, count: count), to: path + "/" + original.segment)
    #expect(try JournalFixtures.readAll(path) == original.records, "a reader takes the zeros for the end")
    let verification = try JournalReader(directory: path).verify()
    #expect(verification.isSound && verification.unfinishedTail == nil)
    #expect(verification.preallocatedBytes == Int64(count))

    let journal = try Journal(directory: path, options: JournalFixtures.options())
    #expect(journal.recovery.isClean, "zeros are not a torn tail: nothing is moved aside")
    #expect(!FileManager.default.fileExists(atPath: path + "/" + Layout.quarantineName))
    #expect(journal.lastSequence == UInt64(original.records.count))
    let record = NewRecord(timestamp: 9, payload: Array("after \(count) zeros".utf8))
    let range = try await journal.append([record])
    #expect(range == UInt64(original.records.count + 1)...UInt64(original.records.count + 1))
    journal.close()
    let bytes = try Files.read(path + "/" + original.segment)
    #expect(Array(bytes.prefix(original.bytes.count)) == original.bytes, "the new frame follows the old ones")
    #expect(try JournalFixtures.frames(of: bytes).count == original.frames.count + 1, "no zeros left after closing")
    #expect(
      try JournalFixtures.readAll(path)
        == original.records + [JournalRecord(sequence: range.lowerBound, timestamp: 9, payload: record.payload)])
  }

  @Test(arguments: [1, 20, 51, 52, 53, 400])
  func aTornFrameFollowedByZerosMovesOnlyTheFrameAside(cut: Int) async throws {
    // A crash while a frame was being written over preallocated zeros: part of the last frame
    // reached the disk, the zeros after it did not change.
    let original = try await Self.makeOriginal(batches: 4, seed: 26)
    let last = original.frames.last!
    let cut = min(cut, Int(last.header.totalLength) - 1)
    let copy = TemporaryDirectory("torn-zeros-frame")
    let path = copy.appending("j")
    try Files.copyDirectory(original.dir.path, to: path)
    var damaged = original.bytes
    for i in (last.offset + cut)..<last.end { damaged[i] = 0 }
    damaged += [UInt8](repeating: 0, count: 1 << 20)
    try Files.write(damaged, to: path + "/" + original.segment)
    let expected = original.records(before: last.offset)
    #expect(try JournalFixtures.readAll(path) == expected, "a reader sees the frame as not written yet")
    let verification = try JournalReader(directory: path).verify()
    #expect(verification.isSound, "\(verification.problems)")
    #expect(verification.unfinishedTail?.offset == Int64(last.offset))

    let journal = try Journal(directory: path, options: JournalFixtures.options())
    let moved = try #require(journal.recovery.movedAside.first)
    #expect(journal.recovery.movedAside.count == 1)
    #expect(moved.offset == Int64(last.offset))
    // The frame's bytes, not the megabyte of zeros after it: a batch header's 52 if the header is
    // torn before its frame length (bytes 24-27), which states the frame's extent otherwise.
    let length = cut >= 28 ? Int(last.header.totalLength) : Layout.batchHeaderSize
    #expect(moved.length == Int64(length))
    #expect(try Files.read(path + "/" + moved.movedTo) == Array(damaged[last.offset..<(last.offset + length)]))
    #expect(journal.lastSequence == UInt64(expected.count))
    journal.close()
    #expect(Files.size(path + "/" + original.segment) == last.offset)
    #expect(try JournalFixtures.readAll(path) == expected)
  }

  @Test(arguments: [UInt8(0x00), 0xF0])
  func aDamagedLastFrameIsUnfinishedWhateverItsLastByte(lastByte: UInt8) async throws {
    // A damaged last frame that fills the file, as a crash can leave it. Its last byte is its
    // content checksum's, zero in about one frame in 256: `verify` called the damage a problem
    // unless that byte was zero, and then called the zero preallocated space, while readers and
    // opening take it for a torn tail whatever its bytes.
    let original = try await Self.makeOriginal(batches: 4, seed: 27)
    let last = original.frames.last!
    for (what, at) in [("frame", last.offset + Layout.batchHeaderSize + 5), ("batch header", last.offset + 30)] {
      let copy = TemporaryDirectory("torn-last-byte")
      let path = copy.appending("j")
      try Files.copyDirectory(original.dir.path, to: path)
      var damaged = original.bytes
      damaged[at] ^= 0x5A
      damaged[last.end - 1] = lastByte
      try Files.write(damaged, to: path + "/" + original.segment)
      let context = "\(what) damaged, last byte \(lastByte)"
      let verification = try JournalReader(directory: path).verify()
      #expect(verification.isSound, "\(context): \(verification.problems)")
      #expect(verification.unfinishedTail?.offset == Int64(last.offset), "\(context)")
      #expect(verification.preallocatedBytes == 0, "\(context): the frame's own bytes are not preallocated space")
      let journal = try Journal(directory: path, options: JournalFixtures.options())
      #expect(journal.recovery.movedAside.map(\.length) == [last.header.totalLength], "\(context): the whole frame")
      journal.close()
    }
  }

  @Test(arguments: [0, 4096])
  func openingAndRepairMoveTheSameBytesOfADamagedLastFrame(zeros: Int) async throws {
    // Opening moved a damaged last frame's declared extent, repair only up to its last non-zero
    // byte, cutting a checksum byte that was zero; of a torn header, the bytes the file holds
    // against those up to its last non-zero one. Both now move all of the damaged frame, and
    // neither the preallocated zeros after it.
    let original = try await Self.makeOriginal(batches: 4, seed: 28)
    let last = original.frames.last!
    var frameDamaged = original.bytes
    frameDamaged[last.offset + Layout.batchHeaderSize + 5] ^= 0x5A
    frameDamaged[last.end - 1] = 0
    var headerDamaged = frameDamaged
    headerDamaged[last.offset + Layout.batchHeaderSize + 5] ^= 0x5A
    headerDamaged[last.offset + 30] ^= 0x5A
    var tornHeader = Array(original.bytes.prefix(last.offset + 20))
    tornHeader[tornHeader.count - 3..<tornHeader.count] = [0, 0, 0]
    let cases = [
      ("damaged frame", frameDamaged, Int(last.header.totalLength)),
      ("damaged header", headerDamaged, Int(last.header.totalLength)),
      // Cut short by the end of the file: what it holds; followed by zeros: a header's 52 bytes.
      ("torn header", tornHeader, zeros == 0 ? 20 : Layout.batchHeaderSize),
    ]
    for (what, damaged, length) in cases {
      let bytes = damaged + [UInt8](repeating: 0, count: zeros)
      var moved: [[UInt8]] = []
      for repair in [false, true] {
        let copy = TemporaryDirectory("torn-agree")
        let path = copy.appending("j")
        try Files.copyDirectory(original.dir.path, to: path)
        try Files.write(bytes, to: path + "/" + original.segment)
        let entries: [QuarantinedBytes]
        if repair {
          entries = try Journal.repair(directory: path).moved
        } else {
          let journal = try Journal(directory: path, options: JournalFixtures.options())
          entries = journal.recovery.movedAside
          journal.close()
        }
        let context = "\(what), \(repair ? "repair" : "opening")"
        #expect(entries.map(\.offset) == [Int64(last.offset)], "\(context)")
        #expect(entries.map(\.length) == [Int64(length)], "\(context)")
        moved += try entries.map { try Files.read(path + "/" + $0.movedTo) }
        #expect(Files.size(path + "/" + original.segment) == last.offset, "\(context)")
      }
      #expect(moved.count == 2 && moved[0] == moved[1], "\(what): the same bytes")
      #expect(moved.first == Array(bytes[last.offset..<(last.offset + length)]), "\(what)")
    }
  }

  @Test func repairCutsTheZerosOfALastSegmentItMovesWhole() async throws {
    // Damage at the last segment's first frame moves the whole segment; its preallocated zeros
    // were kept in the quarantined copy, against FORMAT.md ("cut, not kept").
    let original = try await Self.makeOriginal(batches: 4, seed: 29)
    let copy = TemporaryDirectory("torn-whole")
    let path = copy.appending("j")
    try Files.copyDirectory(original.dir.path, to: path)
    var damaged = original.bytes
    damaged[original.frames[0].offset + Layout.batchHeaderSize + 5] ^= 0x5A
    try Files.write(damaged + [UInt8](repeating: 0, count: 8192), to: path + "/" + original.segment)
    let report = try Journal.repair(directory: path)
    let moved = try #require(report.moved.first, "\(report)")
    #expect(report.moved.count == 1 && moved.offset == 0, "\(report)")
    #expect(moved.length == Int64(damaged.count), "\(report)")
    #expect(try Files.read(path + "/" + moved.movedTo) == damaged)
  }

  @Test func theRecordsOfADamagedIndexedFrameAreCountedByItsHeader() async throws {
    // A damaged last frame the index names holds committed records: verify and opening counted
    // only its first ("187 at least through 187"), though its header, whose checksum holds,
    // declares them all.
    let dir = TemporaryDirectory("torn-counted")
    let options = JournalFixtures.options(indexBytes: 1)
    let journal = try Journal(directory: dir.path, options: options)
    _ = try await JournalFixtures.write(journal, batches: 3, seed: 30)
    let record = NewRecord(timestamp: 9, payload: Array("one of four".utf8))
    let range = try await journal.append([record, record, record, record])
    journal.close()
    let segment = dir.appending(try #require(JournalFixtures.segments(dir.path).last))
    let last = try #require(try JournalFixtures.frames(of: Files.read(segment)).last)
    try #require(last.header.sequences == range)
    try JournalFixtures.flip(segment, at: last.offset + Layout.batchHeaderSize + 5)
    let verification = try JournalReader(directory: dir.path).verify()
    let problem = try #require(verification.problems.first, "\(verification)")
    #expect(problem.sequences == range && problem.sequencesMayGoFurther, "\(problem)")
    let reopened = try Journal(directory: dir.path, options: options)
    #expect(reopened.recovery.missingRecords?.sequences == range, "\(reopened.recovery)")
    reopened.close()
  }

  @Test(arguments: [1, 7, 47, 48, 49, 300, 4096])
  func randomBytesAfterTheLastFrameAreMovedAside(count: Int) async throws {
    let original = try await Self.makeOriginal(batches: 4, seed: 23)
    var random = SeededGenerator(seed: UInt64(count))
    try await Self.checkGarbage(random.bytes(count), after: original)
  }

  @Test func aValidHeaderWithoutItsFrameIsMovedAside() async throws {
    // A crash after the header of a new batch reached the disk but before its frame did.
    let original = try await Self.makeOriginal(batches: 4, seed: 24)
    let last = original.frames.last!
    let header = Array(original.bytes[last.offset..<(last.offset + Layout.batchHeaderSize)])
    var copyOfHeader = try BatchHeader.decode(header[...], limits: JournalLimits()).get()
    copyOfHeader.firstSequence = last.header.lastSequence + 1
    var writer = ByteWriter()
    copyOfHeader.encode(into: &writer)
    try await Self.checkGarbage(writer.bytes, after: original)
  }

  /// Counts the bytes read, for tests of how much a scan reads.
  final class ReadCountingFileIO: ForwardingFileIO {
    let base: any FileIO = PosixFileIO()
    private let count = Locked(0)
    var bytesRead: Int { count.withLock { $0 } }

    func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws -> Int {
      let n = try base.pread(fd, into: buffer, at: offset, path: path)
      count.withLock { $0 += n }
      return n
    }
  }

  @Test func aTailOfManyValidHeadersWhoseFramesFailIsScannedOnce() async throws {
    // Each header found after the damage started a new scan reading up to 1 MiB from it: a tail
    // of n such headers cost n times its length in reads. (Opening refuses such a segment: valid
    // headers after damage are damage in the middle; repair moves it, judged by `keptEnd`.)
    let original = try await Self.makeOriginal(batches: 4, seed: 31)
    var header = original.frames.last!.header
    header.frameLength = 8
    header.frameChecksum = 0
    var garbage: [UInt8] = []
    for n in 0..<2_000 {
      header.firstSequence = original.frames.last!.header.lastSequence + 1 + UInt64(n)
      var writer = ByteWriter()
      header.encode(into: &writer)
      garbage += writer.bytes + [UInt8](repeating: 0xAB, count: Int(header.frameLength))
    }

    let copy = TemporaryDirectory("torn-headers")
    try Files.copyDirectory(original.dir.path, to: copy.path)
    try Files.write(original.bytes + garbage, to: copy.appending(original.segment))
    let io = ReadCountingFileIO()
    let file = try SegmentFile(directory: copy.path, firstSequence: 1, io: io)
    let from = Int64(original.bytes.count)
    try #require(try file.nextValidBatchHeader(after: from, limits: .largest)?.0 == from + header.totalLength)
    let before = io.bytesRead
    #expect(try file.keptEnd(from: from) == file.size)
    #expect(io.bytesRead - before < 4 * Int(file.size), "\(io.bytesRead - before) bytes read of \(file.size)")
  }

  static func checkGarbage(_ garbage: [UInt8], after original: Original) async throws {
    let copy = TemporaryDirectory("torn-garbage")
    let path = copy.appending("j")
    try Files.copyDirectory(original.dir.path, to: path)
    try Files.write(original.bytes + garbage, to: path + "/" + original.segment)
    try await checkRecovery(
      at: path, original: original, keptUpTo: original.bytes.count, removed: garbage,
      context: "\(garbage.count) bytes of garbage")
  }

  @Test func aTornTailInANewSegmentAfterARollIsMovedAside() async throws {
    // The last segment is not the first: recovery must look at the right file.
    let (dir, _, records) = try await JournalFixtures.smallSegments("torn-roll", batches: 60, seed: 25)
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 2)
    let lastPath = dir.appending(segments.last!)
    let bytes = try Files.read(lastPath)
    let frames = try JournalFixtures.frames(of: bytes)
    let cut = frames.last!.offset + 5
    try JournalFixtures.truncate(lastPath, at: cut)
    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options(segmentBytes: 2 << 10))
    #expect(reopened.recovery.movedAside.map(\.segment) == [segments.last!])
    #expect(reopened.recovery.movedAside.first?.offset == Int64(frames.last!.offset))
    let kept = Int(frames.last!.header.firstSequence) - 1
    #expect(reopened.lastSequence == UInt64(kept))
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path) == Array(records.prefix(kept)))
  }
}

/// A batch written with larger limits than a reader's is committed data: its header's checksum
/// holds, which no torn write leaves. Opening, reading, `verify` and `repair` with smaller limits
/// used to take the last such batch for a torn tail: readers stopped before it, and opening moved
/// it aside and numbered new records over it.
@Suite struct LargerLimitsTests {
  // Tens of MiB compressed, checksummed, read back and compared take seconds of a debug build:
  // that work runs on threads of its own (`onOwnThread`, `journalErrorOnOwnThread`), and the
  // tests check its results. On the cooperative pool (two threads on two cores) it held up every
  // other test's awaits for a minute and more in a full run.

  /// A journal whose limits allow 64 MiB batches: two small batches, then one of about 21 MiB
  /// (over the default 16 MiB), last. Returns the journal's records and the large batch's offset.
  static func journal() async throws -> (TemporaryDirectory, records: [JournalRecord], offset: Int) {
    let dir = TemporaryDirectory("larger-limits")
    var options = JournalFixtures.options()
    options.limits = Self.writerLimits
    let journal = try Journal(directory: dir.path, options: options)
    var records = try await JournalFixtures.write(journal, batches: 2, seed: 31)
    let (large, range, offset, header) = try await onOwnThread {
      let large = (0..<3).map {
        NewRecord(timestamp: Int64($0), payload: [UInt8](repeating: UInt8($0), count: 7 << 20))
      }
      let range = try journal.appendAndWait(large)
      journal.close()
      let bytes = try Files.read(dir.appending(Layout.segmentName(firstSequence: 1)))
      let offset = JournalFixtures.usedLength(bytes)
      let header = try BatchHeader.decode(bytes[offset...], limits: Self.writerLimits).get()
      return (large, range, offset, (first: header.firstSequence, contentLength: Int(header.contentLength)))
    }
    for (sequence, record) in zip(range, large) {
      records.append(JournalRecord(sequence: sequence, timestamp: record.timestamp, payload: record.payload))
    }
    try #require(header.first == range.lowerBound && header.contentLength > JournalLimits().maxBatchBytes)
    return (dir, records, offset)
  }

  static let writerLimits = JournalLimits(maxRecordBytes: 8 << 20, maxBatchBytes: 64 << 20)

  /// The error names the segment, the offset, the batch's size and the limit, and says what to do.
  static func expectLimitError(_ error: JournalError?, offset: Int, _ what: String) {
    #expect(error?.code == .limitExceeded, "\(what): \(String(describing: error))")
    #expect(error?.file == Layout.segmentName(firstSequence: 1), "\(what)")
    #expect(error?.offset == Int64(offset), "\(what)")
    let text = error?.description ?? ""
    #expect(text.contains("exceeds the limit of \(JournalLimits().maxBatchBytes)"), "\(what): \(text)")
    #expect(text.contains("written, or compacted, with larger limits"), "\(what): \(text)")
  }

  /// A journal's own `reader()` reads what the journal holds, whatever limits it was opened
  /// with: as every other reader in the library, with the largest limits.
  @Test func aJournalsOwnReaderReadsItsLargeBatches() async throws {
    let (dir, records, _) = try await Self.journal()
    let readBack = try await onOwnThread {
      var options = JournalFixtures.options()
      options.limits = Self.writerLimits
      let journal = try Journal(directory: dir.path, options: options)
      defer { journal.close() }
      return try JournalFixtures.readAll(journal.reader().records()) == records
    }
    #expect(readBack, "the journal's reader reads back every record, the large batch's too")
  }

  @Test func smallerLimitsFailClearlyAndChangeNothing() async throws {
    let (dir, _, offset) = try await Self.journal()
    let segment = dir.appending(Layout.segmentName(firstSequence: 1))
    let before = try await onOwnThread { try Files.read(segment) }
    let reader = try JournalReader(directory: dir.path)
    Self.expectLimitError(
      try await journalErrorOnOwnThread { _ = try JournalFixtures.readAll(reader.records()) }, offset: offset, "read")
    Self.expectLimitError(try await journalErrorOnOwnThread { _ = try reader.verify() }, offset: offset, "verify")
    Self.expectLimitError(
      try await journalErrorOnOwnThread { _ = try reader.lastSequence() }, offset: offset, "lastSequence")
    Self.expectLimitError(
      try await journalErrorOnOwnThread { _ = try Journal(directory: dir.path, options: JournalFixtures.options()) },
      offset: offset, "open")
    Self.expectLimitError(
      try await journalErrorOnOwnThread { _ = try Journal.repair(directory: dir.path) }, offset: offset, "repair")
    #expect(try await onOwnThread { try Files.read(segment) == before }, "nothing moved or cut")
    #expect(!Files.list(dir.path).contains("quarantine"))
  }

  /// Damage before the large batch is in the middle of committed data, whatever the limits it
  /// is judged with: the batch after it is whole, though too large for them. Before, the scan
  /// for a valid header after the damage used the reader's limits and missed it, so the damage
  /// read as a torn tail: readers stopped before it in silence and opening moved the large batch
  /// aside with the damaged one.
  @Test func damageBeforeALargerBatchIsNotATornTail() async throws {
    let (dir, records, offset) = try await Self.journal()
    let segment = dir.appending(Layout.segmentName(firstSequence: 1))
    var bytes = try await onOwnThread { try Files.read(segment) }
    let frames = try JournalFixtures.frames(of: Array(bytes[..<offset]))
    let second = try #require(frames.last)
    bytes[second.end - 8] ^= 0x40  // inside the second small batch's frame
    let damaged = bytes
    try await onOwnThread { try Files.write(damaged, to: segment) }
    let sequences = second.header.firstSequence...second.header.lastSequence
    let read = try await journalErrorOnOwnThread {
      _ = try JournalFixtures.readAll(JournalReader(directory: dir.path).records())
    }
    #expect(read?.code == .corrupt && read?.offset == Int64(second.offset), "\(String(describing: read))")
    let opened = try await journalErrorOnOwnThread {
      _ = try Journal(directory: dir.path, options: JournalFixtures.options())
    }
    #expect(opened?.code == .corrupt && opened?.offset == Int64(second.offset), "\(String(describing: opened))")
    #expect(opened?.sequences?.contains(sequences.lowerBound) == true, "\(String(describing: opened))")
    #expect(try await onOwnThread { try Files.read(segment) == damaged }, "nothing moved or cut")
    #expect(records.count > Int(sequences.upperBound))
    // `verify` looked for that header with the reader's limits too, so it called the damage an
    // unfinished tail and the journal sound, and `repair` moved the large batch aside with it.
    // Both now fail at the large batch, as without damage before it; with the writer's limits,
    // `verify` reports the damage, located.
    let verified = try await journalErrorOnOwnThread { _ = try JournalReader(directory: dir.path).verify() }
    #expect(verified?.code == .limitExceeded, "\(String(describing: verified))")
    let repaired = try await journalErrorOnOwnThread { _ = try Journal.repair(directory: dir.path) }
    #expect(repaired?.code == .limitExceeded, "\(String(describing: repaired))")
    #expect(try await onOwnThread { try Files.read(segment) == damaged }, "repair moved nothing")
    let report = try await onOwnThread { try JournalReader(directory: dir.path, limits: Self.writerLimits).verify() }
    #expect(report.problems.map(\.offset) == [Int64(second.offset)], "\(report.problems)")
    #expect(report.unfinishedTail == nil)
  }

  /// A record over the reader's `maxRecordBytes`, in a batch within its `maxBatchBytes`: a whole
  /// record, not damage. Reading and `verify` fail with `limitExceeded` naming it, and repair
  /// moves nothing; before, they called it corrupt, and repair moved it aside.
  @Test func aRecordWrittenWithLargerLimitsIsNotDamage() async throws {
    let dir = TemporaryDirectory("larger-record")
    var options = JournalFixtures.options()
    options.limits = Self.writerLimits
    let journal = try Journal(directory: dir.path, options: options)
    var records = try await JournalFixtures.write(journal, batches: 2, seed: 37)
    let (large, range) = try await onOwnThread {
      let large = NewRecord(timestamp: 1, payload: [UInt8](repeating: 5, count: 5 << 20))
      return (large, try journal.appendAndWait([large]))
    }
    records.append(JournalRecord(sequence: range.lowerBound, timestamp: 1, payload: large.payload))
    journal.close()
    let segment = dir.appending(Layout.segmentName(firstSequence: 1))
    let before = try await onOwnThread { try Files.read(segment) }
    let offset = JournalFixtures.usedLength(Array(before[..<(before.count - 1)]))

    let reader = try JournalReader(directory: dir.path)
    for (what, error) in [
      ("read", try await journalErrorOnOwnThread { _ = try JournalFixtures.readAll(reader.records()) }),
      ("verify", try await journalErrorOnOwnThread { _ = try reader.verify() }),
      ("repair", try await journalErrorOnOwnThread { _ = try Journal.repair(directory: dir.path) }),
    ] {
      #expect(error?.code == .limitExceeded, "\(what): \(String(describing: error))")
      #expect(error?.offset == Int64(offset) && error?.sequences == range, "\(what): \(String(describing: error))")
      #expect(error?.description.contains("written with larger limits") == true, "\(what)")
    }
    let (unchanged, readBack) = try await onOwnThread { [records] in
      (
        try Files.read(segment) == before,
        try JournalFixtures.readAll(JournalReader(directory: dir.path, limits: .largest).records()) == records
      )
    }
    #expect(unchanged, "nothing moved or cut")
    #expect(readBack, "a reader with the largest limits reads every record")
  }

  @Test(arguments: [writerLimits, JournalLimits.largest])
  func theWritersLimitsOrLargerReadIt(limits: JournalLimits) async throws {
    let (dir, records, _) = try await Self.journal()
    var options = JournalFixtures.options()
    options.limits = limits
    let (readBack, report, damage, opened) = try await onOwnThread { [options] in
      let reader = try JournalReader(directory: dir.path, limits: limits)
      let readBack = try JournalFixtures.readAll(reader.records()) == records
      let report = try reader.verify()
      let damage = try Journal.repair(directory: dir.path, options: options).damage
      let journal = try Journal(directory: dir.path, options: options)
      defer { journal.close() }
      return (
        readBack, report, damage, (clean: journal.recovery.isClean, last: journal.lastSequence, "\(journal.recovery)")
      )
    }
    #expect(readBack)
    #expect(report.isSound && report.unfinishedTail == nil && report.records == UInt64(records.count), "\(report)")
    #expect(damage == nil)
    #expect(opened.clean && opened.last == UInt64(records.count), "\(opened.2)")
  }
}
