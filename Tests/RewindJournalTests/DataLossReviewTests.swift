import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Failures that could lose acknowledged records, or report records as absent that the journal
/// holds (found in a review of the append, recovery and verification paths).
@Suite struct DataLossReviewTests {
  /// Two appends of `count` records each, large enough that a frame target of 64 bytes puts each
  /// in a frame of its own.
  static func appends(_ tag: Int, count: Int = 2) -> [[NewRecord]] {
    (0..<2).map { append in
      (0..<count).map {
        NewRecord(
          timestamp: Int64(tag * 10 + append),
          payload: Array("append \(tag).\(append).\($0) ".utf8) + [1, 2, 3])
      }
    }
  }

  @Test func aWriteThatCouldNotBeUndoneSaysItsRecordsMayBeWritten() async throws {
    // A group of two frames: the first reaches the file, the write of the second fails (a full
    // disk), and cutting the first again fails too (EIO). The first frame is whole and checked,
    // so every reader and the next writer take its records as committed. The appends must not
    // fail with `.io`, which promises that a failed append consumed no sequence numbers (and
    // which a manager turns into "nothing changed, and it can be retried": retried, the command
    // would be in the journal twice).
    var options = JournalFixtures.options(.none, frameBytes: 64)
    options.mapsActiveSegment = false
    let first = Self.appends(1, count: 1)[0]
    let group = Self.appends(2)

    // The first frame's length, from the same appends written without faults.
    let scratch = TemporaryDirectory("review-undone-scratch")
    let plain = try Journal(directory: scratch.path, options: options)
    try await plain.append(first)
    let segment = try #require(JournalFixtures.segments(scratch.path).last)
    let before = Files.size(scratch.appending(segment))
    try await plain.append(group[0])
    let frameLength = Files.size(scratch.appending(segment)) - before
    plain.close()

    let dir = TemporaryDirectory("review-undone")
    let faults = FaultInjectingFileIO()
    options.io = faults
    let journal = try Journal(directory: dir.path, options: options)
    try await journal.append(first)
    faults.arm(.shortWrite(bytes: frameLength, thenErrno: ENOSPC))
    faults.arm(.truncateError(EIO))
    let outcomes = Locked<[Result<ClosedRange<UInt64>, JournalError>]>([])
    for append in group {
      journal.enqueue(append, expectedFirst: nil) { outcome in
        outcomes.withLock { $0.append(outcome) }
      }
    }
    journal.lead()
    #expect(faults.struck == 2)
    // The process dies before it closes the journal (closing cuts the frame, if it can).
    let crashed = TemporaryDirectory("review-undone-crashed")
    try Files.copyDirectory(dir.path, to: crashed.path)
    journal.close()

    let errors = outcomes.withLock { $0 }.compactMap { outcome -> JournalError? in
      if case .failure(let error) = outcome { error } else { nil }
    }
    try #require(errors.count == 2, "both appends fail")
    let reopened = try JournalFixtures.readAll(crashed.path)
    #expect(
      reopened.count == 1 + group[0].count, "the first frame of the failed group is in the journal")
    for error in errors {
      #expect(
        error.code == .durabilityLost, "the outcome is unknown, not 'nothing written': \(error)")
      #expect(error.file == segment && error.offset != nil, "\(error)")
    }
  }

  /// The options `committedFramesCutOff` writes with (an index entry every 256 bytes, written by
  /// `pwrite`, not through a mapping), for the tests that open its journal again.
  static func cutOffOptions() -> JournalOptions {
    var options = JournalFixtures.options(.none, indexBytes: 256)
    options.mapsActiveSegment = false
    return options
  }

  /// A closed journal of 100 one-record frames, its last segment then cut short at the start of
  /// its 51st frame (a file system that lost the file's last blocks and its size with them; under
  /// `none` with `pwrite`, a power loss can, while the index file's own blocks survive). The
  /// index (an entry every 256 bytes) names batches after the cut.
  private static func committedFramesCutOff() async throws -> (
    dir: TemporaryDirectory, segment: String, lost: JournalFixtures.Frame
  ) {
    let dir = TemporaryDirectory("review-cut-off")
    let options = Self.cutOffOptions()
    let journal = try Journal(directory: dir.path, options: options)
    for tag in 0..<100 { try await journal.append(Self.appends(tag, count: 1)[0]) }
    journal.close()
    let segment = try #require(JournalFixtures.segments(dir.path).last)
    let frames = try JournalFixtures.frames(of: Files.read(dir.appending(segment)))
    try #require(frames.count == 100)
    let lost = frames[50]
    try JournalFixtures.truncate(dir.appending(segment), at: lost.offset)
    return (dir, segment, lost)
  }

  @Test func openingReportsCommittedFramesCutOffTheEnd() async throws {
    // The same loss as committed frames turned to zeros (PreallocationReviewTests), but the file
    // is shorter instead: the index still names the lost batches, so opening must say they are
    // gone rather than number new records over them in silence.
    let (dir, segment, lost) = try await Self.committedFramesCutOff()
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    defer { journal.close() }
    #expect(journal.lastSequence == lost.header.firstSequence - 1)
    let missing = try #require(journal.recovery.missingRecords, "\(journal.recovery)")
    #expect(!journal.recovery.isClean)
    #expect(missing.segment == segment && missing.offset == Int64(lost.offset), "\(missing)")
    #expect(missing.sequences.lowerBound == lost.header.firstSequence, "\(missing)")
    #expect(missing.sequences.upperBound > lost.header.firstSequence, "\(missing)")
  }

  @Test func verifyReportsCommittedFramesCutOffTheEnd() async throws {
    let (dir, segment, lost) = try await Self.committedFramesCutOff()
    let verification = try JournalReader(directory: dir.path).verify()
    #expect(!verification.isSound, "records the index names are gone")
    let problem = try #require(verification.problems.first)
    #expect(problem.file == segment && problem.offset == Int64(lost.offset), "\(problem)")
    #expect(problem.sequences?.lowerBound == lost.header.firstSequence, "\(problem)")
    #expect(problem.message.contains("index"), "\(problem)")

    // Repair takes note of the loss (it has nothing to move) and drops the index: the journal
    // then opens cleanly, at the cut.
    let report = try Journal.repair(directory: dir.path)
    #expect(report.moved.isEmpty, "no bytes are left to set aside: \(report.moved)")
    #expect(report.damage?.file == segment && report.damage?.offset == Int64(lost.offset), "\(report)")
    #expect(Files.list(dir.appending(Layout.quarantineName)).isEmpty, "no empty quarantine file")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    defer { journal.close() }
    #expect(journal.recovery.isClean, "\(journal.recovery)")
    #expect(journal.lastSequence == lost.header.firstSequence - 1)
  }

  @Test func aLossIsReportedOnceWhenTheIndexCouldNotBeRewritten() async throws {
    // The opening that reports the loss cannot rewrite the index (index.tmp fails), so the old
    // file still names the lost batches. The writer must not leave those entries behind it:
    // the next opening would take them for a loss again, of records numbered since.
    let (dir, _, lost) = try await Self.committedFramesCutOff()
    let faults = FaultInjectingFileIO()
    faults.arm(.writeError(EIO), pathContains: Layout.indexName + ".tmp")
    try await Self.expectTheLossSaidOnce(dir, lost, through: faults, struck: 1)
  }

  /// Opens the journal of `committedFramesCutOff` through `faults` (which must strike `struck`
  /// times), expecting the loss reported, appends one record and closes; then expects the journal
  /// sound and the next opening to report nothing gone, the record numbered after the cut.
  private static func expectTheLossSaidOnce(
    _ dir: TemporaryDirectory, _ lost: JournalFixtures.Frame, through faults: FaultInjectingFileIO, struck: Int,
    indexRemoved: Bool = false
  ) async throws {
    var options = Self.cutOffOptions()
    options.io = faults
    let journal = try Journal(directory: dir.path, options: options)
    #expect(faults.struck == struck)
    #expect(journal.recovery.missingRecords != nil, "\(journal.recovery)")
    if indexRemoved { #expect(!Files.list(dir.path).contains(Layout.indexName), "\(Files.list(dir.path))") }
    try await journal.append(Self.appends(1000, count: 1)[0])
    journal.close()

    let verification = try JournalReader(directory: dir.path).verify()
    #expect(verification.isSound, "\(verification.problems)")
    options.io = FaultInjectingFileIO()
    let reopened = try Journal(directory: dir.path, options: options)
    defer { reopened.close() }
    #expect(reopened.recovery.missingRecords == nil, "\(reopened.recovery)")
    #expect(reopened.lastSequence == lost.header.firstSequence)
  }

  @Test func aLossIsReportedOnceWhenTheIndexCouldBeNeitherRewrittenNorCut() async throws {
    // Replacing the index fails and so does cutting it in place: the writer gave up on the file
    // and left it naming the lost batches, so the next opening reported them gone again, and
    // readers met new batches where the old entries pointed. It removes the file now.
    let (dir, _, lost) = try await Self.committedFramesCutOff()
    let faults = FaultInjectingFileIO()
    faults.arm(.writeError(EIO), pathContains: Layout.indexName + ".tmp")
    faults.arm(.truncateError(EIO), pathContains: Layout.indexName)
    try await Self.expectTheLossSaidOnce(dir, lost, through: faults, struck: 2, indexRemoved: true)
  }

  @Test func anOutdatedIndexThatCannotBeRemovedEitherStopsTheOpening() async throws {
    // Nothing can be done to the old file: opening fails, located, and appends nothing under
    // it. The next opening that can rewrite it reports the loss (not yet said to anyone).
    let (dir, segment, lost) = try await Self.committedFramesCutOff()
    let faults = FaultInjectingFileIO()
    faults.arm(.writeError(EIO), pathContains: Layout.indexName + ".tmp")
    faults.arm(.truncateError(EIO), pathContains: Layout.indexName)
    // (The first removal is of `index.tmp`, which the failed replace cleans up.)
    faults.arm(.removeError(EACCES), pathContains: Layout.indexName, skip: 1)
    var options = Self.cutOffOptions()
    options.io = faults
    let error = journalError { _ = try Journal(directory: dir.path, options: options) }
    #expect(faults.struck == 3)
    #expect(error?.code == .staleIndex && error?.file == Layout.indexName, "\(String(describing: error))")
    #expect(error?.errno == EACCES, "\(String(describing: error))")
    #expect(error?.description.contains("records opening found gone") == true, "\(String(describing: error))")
    #expect(Files.list(dir.path).contains(Layout.indexName))

    options.io = FaultInjectingFileIO()
    let reopened = try Journal(directory: dir.path, options: options)
    defer { reopened.close() }
    let missing = try #require(reopened.recovery.missingRecords, "\(reopened.recovery)")
    #expect(missing.segment == segment && missing.sequences.lowerBound == lost.header.firstSequence, "\(missing)")
  }

  @Test func anIndexThatOnlyLagsIsLeftWhenItCanBeNeitherRewrittenNorCut() async throws {
    // An index that is a valid prefix of what the segments hold (as after a crash) names nothing
    // gone: left as it is when it cannot be rewritten, as before, for the next opening to extend.
    // Refusing to open, or removing it, would make a sound journal unusable on a read-only index.
    let dir = TemporaryDirectory("lagging-index")
    var options = Self.cutOffOptions()
    let journal = try Journal(directory: dir.path, options: options)
    for tag in 0..<60 { try await journal.append(Self.appends(tag, count: 1)[0]) }
    journal.close()
    let index = dir.appending(Layout.indexName)
    let bytes = try Files.read(index)
    try #require(bytes.count > SparseIndex.headerSize + 2 * IndexEntry.size)
    try Files.write(Array(bytes.dropLast(2 * IndexEntry.size)), to: index)
    let faults = FaultInjectingFileIO()
    faults.arm(.writeError(EIO), pathContains: Layout.indexName + ".tmp")
    faults.arm(.truncateError(EIO), pathContains: Layout.indexName)
    options.io = faults
    let reopened = try Journal(directory: dir.path, options: options)
    #expect(faults.struck == 2)
    #expect(reopened.recovery.isClean, "\(reopened.recovery)")
    #expect(Files.list(dir.path).contains(Layout.indexName), "the lagging index stays")
    try await reopened.append(Self.appends(100, count: 1)[0])
    reopened.close()
    let verification = try JournalReader(directory: dir.path).verify()
    #expect(verification.isSound, "\(verification.problems)")
  }

  @Test func anOpeningWhoseWriterCannotStartStillSaysWhatItFoundGone() async throws {
    // Recovery rewrote the index without the entries that witnessed the loss, then the writer's
    // thread could not start: the error is the only place left to say the records are gone.
    let (dir, segment, lost) = try await Self.committedFramesCutOff()
    let options = Self.cutOffOptions()
    let error = Threads.$refusingStarts.withValue(true) {
      journalError { _ = try Journal(directory: dir.path, options: options) }
    }
    #expect(error?.code == .io && error?.description.contains("pthread_create") == true, "\(String(describing: error))")
    let missing = try #require(error?.openingRecovery?.missingRecords, "\(String(describing: error))")
    #expect(missing.segment == segment && missing.sequences.lowerBound == lost.header.firstSequence, "\(missing)")
    #expect(error?.description.contains(missing.description) == true, "\(String(describing: error))")
  }

  @Test func anIndexEntryWithAHugeOffsetIsRefusedNotATrap() async {
    // The index is derived data that every reader and writer checks before trusting it. An entry
    // whose checksum holds but whose offset is near Int64.max (a hostile or garbled file) must
    // be refused like any entry pointing outside its segment, not overflow the check and stop
    // the process. Such an entry names records past the end of the journal: a reader reports
    // them gone (a located error), the writer's opening too (`missingRecords`), and goes on.
    await #expect(processExitsWith: .success) {
      let dir = TemporaryDirectory("review-huge-offset")
      let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
      try await journal.append([NewRecord(timestamp: 1, payload: [1, 2, 3])])
      journal.close()
      var writer = ByteWriter(capacity: IndexEntry.size)
      IndexEntry(firstSequence: 2, segment: 1, offset: .max - 8, maxTimestampBefore: 1).encode(into: &writer)
      let index = dir.appending(Layout.indexName)
      try Files.write(Files.read(index) + writer.bytes, to: index)
      let error = journalError { _ = try JournalFixtures.readAll(dir.path) }
      #expect(error?.code == .sequenceBreak && error?.sequences == 2...2, "\(String(describing: error))")
      let reopened = try Journal(directory: dir.path, options: JournalFixtures.options())
      #expect(reopened.lastSequence == 1)
      #expect(reopened.recovery.missingRecords?.sequences == 2...2, "\(reopened.recovery)")
      reopened.close()
      #expect(try JournalFixtures.readAll(dir.path).count == 1)
    }
  }
}

/// A frame ends with its content checksum (xxh32), whose last byte is 0 for about one frame in
/// 256: committed bytes, not preallocated space. Repair used to leave such zeros out of what it
/// moved aside (and cut them), and `verify` counted them as preallocated.
@Suite struct TrailingZeroFrameTests {
  /// A payload whose batch of one record, numbered `sequence`, encodes to a frame ending in 0.
  static func payloadEndingInZero(sequence: UInt64, timestamp: Int64) throws -> [UInt8]? {
    var scratch: [UInt8] = []
    var output: [UInt8] = []
    let encoder = LZ4FrameEncoder()
    for n in 0..<100_000 {
      let payload = Array("record \(n)".utf8)
      let (_, end) = try BatchCodec.encode(
        [NewRecord(timestamp: timestamp, payload: payload)], firstSequence: sequence, encoder: encoder,
        scratch: &scratch, into: &output, at: 0)
      if output[end - 1] == 0 { return payload }
    }
    return nil
  }

  /// A closed journal whose first segment's last frame ends in a zero byte; with `sealed`, a
  /// second segment follows it. Returns the first segment's path and frames.
  static func journal(sealed: Bool) async throws -> (TemporaryDirectory, segment: String, [JournalFixtures.Frame]) {
    let dir = TemporaryDirectory("trailing-zero")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(segmentBytes: 1 << 10))
    let records = try await JournalFixtures.write(journal, batches: 3, seed: 44)
    let sequence = UInt64(records.count + 1)
    let payload = try #require(try Self.payloadEndingInZero(sequence: sequence, timestamp: Int64.max / 2))
    try journal.appendAndWait([NewRecord(timestamp: Int64.max / 2, payload: payload)])
    if sealed {
      // Too large for the rest of the first segment: it goes into a second one.
      var random = SeededGenerator(seed: 45)
      let noise = (0..<1200).map { _ in UInt8.random(in: 0...255, using: &random) }
      try journal.appendAndWait([NewRecord(timestamp: Int64.max / 2, payload: noise)])
    }
    journal.close()
    try #require(JournalFixtures.segments(dir.path).count == (sealed ? 2 : 1))
    let segment = dir.appending(Layout.segmentName(firstSequence: 1))
    let bytes = try Files.read(segment)
    let frames = try JournalFixtures.frames(of: bytes)
    try #require(frames.count == 4 && frames.last?.header.firstSequence == sequence && bytes.last == 0)
    return (dir, segment, frames)
  }

  @Test(arguments: [false, true])
  func repairMovesAFrameEndingInZeroWhole(sealed: Bool) async throws {
    let (dir, segment, frames) = try await Self.journal(sealed: sealed)
    try JournalFixtures.flip(segment, at: frames[1].offset + Layout.batchHeaderSize + 3)
    let damaged = try Files.read(segment)
    let report = try Journal.repair(directory: dir.path)
    let moved = try #require(report.moved.first, "\(report)")
    #expect(moved.offset == Int64(frames[1].offset), "\(report)")
    #expect(moved.length == Int64(damaged.count - frames[1].offset), "every byte up to the file's end: \(report)")
    #expect(try Files.read(dir.appending(moved.movedTo)) == Array(damaged[frames[1].offset...]))
    #expect(Files.size(segment) == frames[1].offset)
    #expect(report.lastSequence == frames[0].header.lastSequence)
  }

  @Test func verifyCountsNoByteOfALastFrameAsPreallocated() async throws {
    let (dir, segment, frames) = try await Self.journal(sealed: false)
    try JournalFixtures.flip(segment, at: frames[3].offset + Layout.batchHeaderSize + 3)
    let report = try JournalReader(directory: dir.path).verify()
    #expect(report.preallocatedBytes == 0, "\(report)")
    #expect(report.lastSequence == frames[2].header.lastSequence, "\(report)")
  }
}
