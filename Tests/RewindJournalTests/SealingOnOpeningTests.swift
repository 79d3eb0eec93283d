import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// `JournalOptions.sealsLastSegmentOnOpening`: a journal at rest is compacted whole, its last
/// segment too; opening seals only a segment that holds a record; a failed seal opens nothing and
/// changes nothing.
@Suite struct SealingOnOpeningTests {
  static func sealing(_ io: (any FileIO)? = nil) -> JournalOptions {
    var options = CompactionTests.options(io)
    options.sealsLastSegmentOnOpening = true
    return options
  }

  /// What each test starts from: a journal of `batches` batches (each its own frame, in several
  /// segments) written without the option and closed; its directory, records and segment names.
  static func closedJournal(_ name: String, batches: Int, seed: UInt64) async throws -> (
    dir: TemporaryDirectory, expected: [JournalRecord], names: [String]
  ) {
    let dir = TemporaryDirectory(name)
    let journal = try Journal(directory: dir.path, options: CompactionTests.options())
    let expected = try await JournalFixtures.write(journal, batches: batches, maxPayload: 60, seed: seed)
    journal.close()
    return (dir, expected, JournalFixtures.segments(dir.path))
  }

  @Test func aJournalAtRestIsCompactedWholeAndAppendsGoOnInANewSegment() async throws {
    let (dir, expected, names) = try await Self.closedJournal("seal-open", batches: 300, seed: 21)
    let last = try Files.read(dir.appending(names.last!))
    #expect(names.count >= 4)

    let sealed = try Journal(directory: dir.path, options: Self.sealing())
    #expect(sealed.recovery.isClean, "\(sealed.recovery)")
    #expect(sealed.lastSequence == UInt64(expected.count))
    let now = JournalFixtures.segments(dir.path)
    #expect(now == names + [Layout.segmentName(firstSequence: UInt64(expected.count) + 1)])
    // The old last segment is sealed as it was (no preallocated zeros after its last frame).
    #expect(try Files.read(dir.appending(names.last!)) == last)

    let report = try sealed.compactSealedSegments()
    #expect(report.compacted.map(\.segment) == names, "every segment, the last one too")
    #expect(report.records == UInt64(expected.count))
    for name in names { #expect(try CompactionTests.header(dir.appending(name)).isCompacted, "\(name)") }
    let more = try await JournalFixtures.write(sealed, batches: 40, maxPayload: 60, seed: 22, after: expected)
    sealed.close()
    // The compacted segments took no new frame.
    #expect(try Files.read(dir.appending(names.last!)).count == Int(report.compacted.last!.bytesAfter))

    #expect(try JournalFixtures.readAll(dir.path) == more)
    let verification = try JournalReader(directory: dir.path).verify()
    #expect(verification.isSound && verification.records == UInt64(more.count), "\(verification)")
    try CompactionTests.checkIndex(dir.path)
    let reopened = try Journal(directory: dir.path, options: CompactionTests.options())
    #expect(reopened.recovery.isClean && reopened.recovery.indexRepairReason == nil, "\(reopened.recovery)")
    reopened.close()
    try await LZ4ToolTests.checkSegments(dir.path, records: more)
  }

  /// A last segment that holds no record (a new journal's, or the one the last sealing opening
  /// started) is not sealed: opening so again and again adds no segment.
  @Test func aLastSegmentWithoutRecordsIsNotSealed() async throws {
    let dir = TemporaryDirectory("seal-open-empty")
    for _ in 0..<2 { try Journal(directory: dir.path, options: Self.sealing()).close() }
    #expect(JournalFixtures.segments(dir.path) == [Layout.segmentName(firstSequence: 1)])

    let journal = try Journal(directory: dir.path, options: Self.sealing())
    let expected = try await JournalFixtures.write(journal, batches: 3, maxPayload: 60, seed: 23)
    journal.close()
    for _ in 0..<2 { try Journal(directory: dir.path, options: Self.sealing()).close() }
    #expect(
      JournalFixtures.segments(dir.path)
        == [1, UInt64(expected.count) + 1].map { Layout.segmentName(firstSequence: $0) })
    #expect(try JournalFixtures.readAll(dir.path) == expected)
    #expect(try JournalReader(directory: dir.path).verify().isSound)
  }

  /// A seal that fails at opening (the fsync of the last segment, the new segment's creation)
  /// opens nothing: the error says which file, the lock is released, and the journal reads and
  /// opens as before, every record kept.
  @Test(arguments: [
    (FaultInjectingFileIO.Fault.syncError(EIO), "last"), (.writeError(ENOSPC), "new"), (.renameError(EIO), ""),
  ])
  func aFailedSealOpensNothingAndLosesNothing(fault: FaultInjectingFileIO.Fault, file: String) async throws {
    let (dir, expected, names) = try await Self.closedJournal("seal-open-fault", batches: 100, seed: 24)
    let next = Layout.segmentName(firstSequence: UInt64(expected.count) + 1)
    let io = FaultInjectingFileIO()
    io.arm(fault, pathContains: file == "last" ? names.last! : file == "new" ? next : "")
    let error = journalError("\(fault)") { _ = try Journal(directory: dir.path, options: Self.sealing(io)) }
    #expect(io.struck == 1)
    #expect(error != nil)
    #expect(error?.file?.hasPrefix(file == "last" ? names.last! : next) == true, "\(String(describing: error))")

    // Opened again without the fault (the lock was released): the records are all there; a
    // new segment the failed seal may have left holds no record and is appended to.
    let reopened = try Journal(directory: dir.path, options: CompactionTests.options())
    #expect(reopened.lastSequence == UInt64(expected.count))
    let more = try await JournalFixtures.write(reopened, batches: 5, maxPayload: 60, seed: 25, after: expected)
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path) == more)
    #expect(try JournalReader(directory: dir.path).verify().isSound)
  }

  /// With background compaction too (`compactsSealedSegments`), the segment sealed at opening is
  /// compacted only once the writer has written its index file. Handed over by the seal itself, it
  /// could be compacted (its index entries re-derived for the new frames) before the writer's own
  /// rewrite of the index, which then put back the entries of the old frames: the next opening
  /// found them wrong and rebuilt the index ("damaged"). Here the compaction is at its quickest,
  /// done before `onSeal` returns, and the index is stale, so that the writer rewrites it.
  @Test func theSegmentSealedAtOpeningIsCompactedOnlyOnceTheWriterWroteItsIndex() async throws {
    let (dir, expected, names) = try await Self.closedJournal("seal-open-index", batches: 150, seed: 26)
    // Its last two entries cut (whole): opening derives them again and rewrites the file.
    let indexPath = dir.appending(Layout.indexName)
    let index = try Files.read(indexPath)
    try Files.write(Array(index.prefix(index.count - 2 * IndexEntry.size)), to: indexPath)

    var options = Self.sealing()
    options.compactsSealedSegments = true
    let layout = try JournalDirectory(path: dir.path, io: options.io)
    let start = try JournalRecovery(directory: layout, options: options).run()
    try #require(!start.indexIsCurrent)
    // `Journal.init`'s parts, the background compaction of each sealed segment run at once.
    let gate = IndexFileGate()
    let compactor = SegmentCompactor(directory: layout, options: options, indexGate: gate)
    let writer = try JournalWriter(
      directory: layout, options: options, start: start, indexGate: gate,
      onSeal: { _ in _ = try? compactor.compactSealed() })
    _ = try compactor.compactSealed()  // `Journal` queues every sealed segment once the writer is made
    writer.close {}
    compactor.close()

    for name in names { #expect(try CompactionTests.header(dir.appending(name)).isCompacted, "\(name)") }
    try CompactionTests.checkIndex(dir.path)
    let reopened = try Journal(directory: dir.path, options: CompactionTests.options())
    #expect(reopened.recovery.isClean && reopened.recovery.indexRepairReason == nil, "\(reopened.recovery)")
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path) == expected)
  }

  /// A last segment whose tail a crash tore: opening moves the torn bytes aside first, then seals
  /// the segment at its last whole frame (never with the torn bytes inside a sealed segment, where
  /// they would read as damage), and compaction keeps every record before them.
  @Test func aTornTailIsMovedAsideBeforeTheSeal() async throws {
    let (dir, expected, names) = try await Self.closedJournal("seal-open-torn", batches: 100, seed: 27)
    let lastPath = dir.appending(names.last!)
    let bytes = try Files.read(lastPath)
    try #require(bytes.count > Layout.segmentHeaderSize + Layout.batchHeaderSize)
    try Files.write(Array(bytes.dropLast(3)), to: lastPath)  // the last frame's checksum cut short

    let sealed = try Journal(directory: dir.path, options: Self.sealing())
    let moved = sealed.recovery.movedAside
    #expect(moved.count == 1 && moved.first?.segment == names.last!, "\(sealed.recovery)")
    let kept = Int(sealed.lastSequence)
    #expect(kept < expected.count && kept > 0)
    #expect(Files.size(lastPath) == Int(moved.first?.offset ?? -1), "sealed at the last whole frame")
    #expect(JournalFixtures.segments(dir.path) == names + [Layout.segmentName(firstSequence: UInt64(kept) + 1)])
    let report = try sealed.compactSealedSegments()
    sealed.close()
    #expect(report.compacted.map(\.segment) == names)
    #expect(try JournalFixtures.readAll(dir.path) == Array(expected.prefix(kept)))
    #expect(try JournalReader(directory: dir.path).verify().isSound)
    let reopened = try Journal(directory: dir.path, options: CompactionTests.options())
    #expect(reopened.recovery.isClean, "\(reopened.recovery)")
    reopened.close()
  }

  /// A follower that has read the whole journal, at the end of its last segment, reads on once
  /// that segment is sealed at an opening, compacted (renamed over) and appended after: every
  /// record once, in order, and no damage or cut reported.
  @Test func aFollowerAtTheEndReadsOnAcrossTheSealAndTheCompaction() async throws {
    let (dir, expected, _) = try await Self.closedJournal("seal-open-follow", batches: 100, seed: 28)
    var follower = try JournalReader(directory: dir.path).follow(from: 1).makeAsyncIterator()
    var seen: [JournalRecord] = []
    while seen.count < expected.count, let record = try await follower.next() { seen.append(record) }
    #expect(seen == expected)

    let sealed = try Journal(directory: dir.path, options: Self.sealing())
    let report = try sealed.compactSealedSegments()
    #expect(report.compacted.map(\.segment).last == JournalFixtures.segments(dir.path).dropLast().last)
    let more = try await JournalFixtures.write(sealed, batches: 10, maxPayload: 60, seed: 29, after: expected)
    sealed.close()
    while seen.count < more.count, let record = try await follower.next() { seen.append(record) }
    #expect(seen == more)
  }

  /// A last segment that ends in preallocated zeros (as a crash under `always` or `batched` leaves
  /// it) is sealed at its last frame: the zeros, which a segment with a successor must not hold
  /// (readers take them there for damage), are cut before the new segment is made. A failed cut
  /// opens nothing: no segment added, the zeros left for the next opening to cut.
  @Test func preallocatedZerosAreCutBeforeTheSealAndAFailedCutOpensNothing() async throws {
    let (dir, expected, names) = try await Self.closedJournal("seal-open-zeros", batches: 100, seed: 30)
    let lastPath = dir.appending(names.last!)
    let bytes = try Files.read(lastPath)
    try Files.write(bytes + [UInt8](repeating: 0, count: 4096), to: lastPath)

    let io = FaultInjectingFileIO()
    io.arm(.truncateError(EIO), pathContains: names.last!)
    let error = journalError("truncate") { _ = try Journal(directory: dir.path, options: Self.sealing(io)) }
    #expect(io.struck == 1)
    #expect(error?.file?.hasPrefix(names.last!) == true, "\(String(describing: error))")
    #expect(JournalFixtures.segments(dir.path) == names)
    #expect(Files.size(lastPath) == bytes.count + 4096)

    let sealed = try Journal(directory: dir.path, options: Self.sealing())
    #expect(sealed.recovery.isClean, "\(sealed.recovery)")
    #expect(try Files.read(lastPath) == bytes, "sealed at its last frame")
    #expect(
      JournalFixtures.segments(dir.path) == names + [Layout.segmentName(firstSequence: UInt64(expected.count) + 1)])
    let report = try sealed.compactSealedSegments()
    sealed.close()
    #expect(report.compacted.map(\.segment) == names)
    #expect(try JournalFixtures.readAll(dir.path) == expected)
    #expect(try JournalReader(directory: dir.path).verify().isSound)
  }
}
