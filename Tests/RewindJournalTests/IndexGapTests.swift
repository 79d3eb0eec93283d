import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// A sealed segment that the index names nowhere while later segments have entries: what an
/// index append that failed left behind when a later writer could not rewrite the index at
/// opening either and appended its entries to the old file, after the gap (writers before the
/// index backlog did; see `aWriterThatCannotReplaceAStaleIndexRewritesItInPlace`).
@Suite struct IndexGapTests {
  /// One index entry per segment (the interval is larger than a segment), small segments.
  static func options(_ io: any FileIO, indexBytes: Int = 1 << 20) -> JournalOptions {
    var options = JournalFixtures.options(.none, segmentBytes: 1 << 10, indexBytes: indexBytes)
    options.mapsActiveSegment = false
    options.io = io
    return options
  }

  /// Appends one-batch frames until the journal has `segments` segments.
  static func write(
    _ journal: Journal, until segments: Int, in dir: TemporaryDirectory, after: [JournalRecord], seed: UInt64
  ) async throws -> [JournalRecord] {
    var records = after
    var seed = seed
    while JournalFixtures.segments(dir.path).count < segments {
      records = try await JournalFixtures.write(journal, batches: 1, seed: seed, after: records)
      seed += 1
    }
    return records
  }

  /// Four segments; the index file holds an entry for the first and the fourth only (made by
  /// removing the two between from the index a writer left).
  static func journalWithIndexGap() async throws -> (dir: TemporaryDirectory, records: [JournalRecord]) {
    let dir = TemporaryDirectory("unnamed-segment")
    let journal = try Journal(directory: dir.path, options: Self.options(FaultInjectingFileIO()))
    let records = try await Self.write(journal, until: 4, in: dir, after: [], seed: 100)
    journal.close()

    let segments = JournalFixtures.segments(dir.path)
    let entries = try #require(try Self.entries(dir.appending(Layout.indexName)), "whole entries")
    try #require(
      entries.map { Layout.segmentName(firstSequence: $0.segment) } == segments, "one entry per segment: \(entries)")
    var index = ByteWriter()
    index.bytes = Array(try Files.read(dir.appending(Layout.indexName)).prefix(SparseIndex.headerSize))
    for entry in [entries[0], entries[3]] { entry.encode(into: &index) }
    try Files.write(index.bytes, to: dir.appending(Layout.indexName))
    return (dir, records)
  }

  @Test func aSealedSegmentCutShortIsFoundWhenTheIndexNamesItNowhere() async throws {
    // Segment 2 loses its last frame. The index has no entry for it, so the end check of
    // sealed segments (which walks from a segment's last entry) skipped it: the journal opened
    // as clean, and a reader then failed at a hole the writer had appended past.
    let (dir, _) = try await Self.journalWithIndexGap()
    let segment = JournalFixtures.segments(dir.path)[1]
    let frames = try JournalFixtures.frames(of: Files.read(dir.appending(segment)))
    try #require(frames.count > 1)
    let lost = frames[frames.count - 1]
    try JournalFixtures.truncate(dir.appending(segment), at: lost.offset)

    let error = journalError {
      let journal = try Journal(directory: dir.path, options: Self.options(FaultInjectingFileIO()))
      journal.close()
    }
    #expect(error?.code == .sequenceBreak, "\(String(describing: error))")
    #expect(error?.file == segment && error?.offset == Int64(lost.offset), "\(String(describing: error))")
    #expect(error?.sequences?.contains(lost.header.firstSequence) == true, "\(String(describing: error))")
  }

  @Test func aSealedSegmentTheIndexNamesNowhereGetsItsEntriesBack() async throws {
    // Undamaged, the journal opens and reads whole, and the index is rebuilt with an entry for
    // the first frame of every segment again (it is derived data: missing parts are rebuilt).
    let (dir, records) = try await Self.journalWithIndexGap()
    let journal = try Journal(directory: dir.path, options: Self.options(FaultInjectingFileIO()))
    #expect(journal.recovery.isClean, "\(journal.recovery)")
    #expect(journal.recovery.indexRepairReason == "stale", "\(journal.recovery)")
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path) == records)
    let index = try Files.read(dir.appending(Layout.indexName))
    let segments = JournalFixtures.segments(dir.path).compactMap { Layout.firstSequence(ofSegmentNamed: $0) }
    let named = stride(from: SparseIndex.headerSize, to: index.count, by: IndexEntry.size).compactMap {
      IndexEntry.decode(index[$0...].prefix(IndexEntry.size))
    }
    #expect(named.map(\.segment) == segments, "\(named)")
    #expect(named.map(\.offset).allSatisfy { $0 == Int64(Layout.segmentHeaderSize) }, "\(named)")
  }

  /// The entries of the index file at `path`; nil unless the file is a header and whole entries.
  static func entries(_ path: String) throws -> [IndexEntry]? {
    let bytes = try Files.read(path)
    guard bytes.count >= SparseIndex.headerSize, (bytes.count - SparseIndex.headerSize) % IndexEntry.size == 0
    else { return nil }
    let entries = stride(from: SparseIndex.headerSize, to: bytes.count, by: IndexEntry.size).compactMap {
      IndexEntry.decode(bytes[$0...].prefix(IndexEntry.size))
    }
    return entries.count == (bytes.count - SparseIndex.headerSize) / IndexEntry.size ? entries : nil
  }

  @Test(arguments: [
    FaultInjectingFileIO.Fault.writeError(EIO), .shortWrite(bytes: 17, thenErrno: ENOSPC),
  ])
  func aWriterWritesTheEntriesOfAFailedIndexAppendLater(fault: FaultInjectingFileIO.Fault) async throws {
    // One index append fails (EIO, or ENOSPC after part of an entry reached the file); later
    // ones succeed. The writer used to give up on the index for the rest of its life; it now
    // writes the entries it could not, in order, before the next ones, so the file it leaves
    // equals what a fresh derivation gives, entry by entry.
    let dir = TemporaryDirectory("resume")
    let io = FaultInjectingFileIO()
    let journal = try Journal(directory: dir.path, options: Self.options(io, indexBytes: 256))
    var records = try await JournalFixtures.write(journal, batches: 1, seed: 1)
    io.arm(fault, pathContains: Layout.indexName)
    records = try await Self.write(journal, until: 3, in: dir, after: records, seed: 100)
    #expect(io.struck == 1)
    records = try await Self.write(journal, until: 5, in: dir, after: records, seed: 200)
    journal.close()
    let written = try #require(try Self.entries(dir.appending(Layout.indexName)), "whole entries")

    try FileManager.default.removeItem(atPath: dir.appending(Layout.indexName))
    let reopened = try Journal(directory: dir.path, options: Self.options(FaultInjectingFileIO(), indexBytes: 256))
    #expect(reopened.recovery.indexRepairReason == "missing", "\(reopened.recovery)")
    reopened.close()
    let derived = try #require(try Self.entries(dir.appending(Layout.indexName)), "whole entries")
    try #require(derived.count > 5, "several entries per segment: \(derived)")
    #expect(written.count == derived.count)
    for (position, entry) in derived.enumerated() {
      #expect(position < written.count && written[position] == entry, "entry \(position) of \(derived.count)")
    }
    #expect(try JournalFixtures.readAll(dir.path) == records)
  }

  @Test func verifyNamesTheSegmentsTheIndexNamesNowhere() async throws {
    // The index is derived data: the gap is a notice (which segments, which records), not a
    // problem. It used to go unmentioned.
    let (dir, records) = try await Self.journalWithIndexGap()
    let firsts = JournalFixtures.segments(dir.path).compactMap { Layout.firstSequence(ofSegmentNamed: $0) }
    try #require(firsts.count == 4)
    let report = try JournalReader(directory: dir.path).verify()
    #expect(report.isSound && report.records == UInt64(records.count), "\(report)")
    #expect(
      report.unindexed == [
        UnindexedRecords(segment: Layout.segmentName(firstSequence: firsts[1]), sequences: firsts[1]...(firsts[2] - 1)),
        UnindexedRecords(segment: Layout.segmentName(firstSequence: firsts[2]), sequences: firsts[2]...(firsts[3] - 1)),
      ], "\(report.unindexed)")

    // Once a writer opened the journal (and derived the entries), there is nothing to say.
    try Journal(directory: dir.path, options: Self.options(FaultInjectingFileIO())).close()
    #expect(try JournalReader(directory: dir.path).verify().unindexed == [])
  }

  @Test func aWriterGivesUpOnABacklogPastItsLimit() throws {
    // Every index append fails for longer than the backlog may grow (one entry per frame):
    // the writer gives up on the index, and writes nothing more to it when appends to it would
    // succeed again. The file keeps what it held before, whole; the next opening extends it.
    let dir = TemporaryDirectory("backlog-limit")
    var options = JournalFixtures.options(.none, indexBytes: 1)
    options.mapsActiveSegment = false
    let io = IndexOutageFileIO()
    options.io = io
    let journal = try Journal(directory: dir.path, options: options)
    let record = NewRecord(timestamp: 1, payload: [1, 2, 3])
    _ = try journal.appendAndWait([record])
    io.failing.withLock { $0 = true }
    for _ in 0...JournalWriter.indexBacklogLimit { _ = try journal.appendAndWait([record]) }
    io.failing.withLock { $0 = false }
    let failed = io.failures.withLock { $0 }
    for _ in 0..<10 { _ = try journal.appendAndWait([record]) }
    journal.close()
    #expect(failed == JournalWriter.indexBacklogLimit + 1)
    #expect(io.failures.withLock { $0 } == failed, "no more tries")
    let written = try #require(try Self.entries(dir.appending(Layout.indexName)), "whole entries")
    #expect(written.map(\.firstSequence) == [1])

    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options(.none, indexBytes: 1))
    #expect(reopened.recovery.indexRepairReason == "stale", "\(reopened.recovery)")
    #expect(reopened.recovery.indexEntriesRebuilt == JournalWriter.indexBacklogLimit + 11, "\(reopened.recovery)")
    reopened.close()
  }

  @Test func aBacklogIsDroppedWhenCompactionReplacesTheIndex() async throws {
    // Compaction rewrites the index from the file, which lacks the backlog, and the backlog may
    // name the compacted segment's old layout: the writer must not append it to the new file.
    // The file stays whole and in order (no entry names a batch that is not there), and the
    // next opening extends it.
    let dir = TemporaryDirectory("backlog-compaction")
    let io = IndexOutageFileIO()
    let journal = try Journal(directory: dir.path, options: Self.options(io, indexBytes: 256))
    var records = try await JournalFixtures.write(journal, batches: 1, seed: 1)
    io.failing.withLock { $0 = true }
    records = try await Self.write(journal, until: 3, in: dir, after: records, seed: 100)
    #expect(io.failures.withLock { $0 } > 0)
    #expect(try !journal.compactSealedSegments().compacted.isEmpty)
    io.failing.withLock { $0 = false }
    records = try await Self.write(journal, until: 5, in: dir, after: records, seed: 200)
    journal.close()

    let written = try #require(try Self.entries(dir.appending(Layout.indexName)), "whole entries")
    let reopened = try Journal(directory: dir.path, options: Self.options(FaultInjectingFileIO(), indexBytes: 256))
    #expect(reopened.recovery.indexRepairReason == "stale", "\(reopened.recovery)")
    reopened.close()
    let derived = try #require(try Self.entries(dir.appending(Layout.indexName)), "whole entries")
    #expect(Array(derived.prefix(written.count)) == written, "what the writer left is a prefix of the derivation")
    #expect(try JournalFixtures.readAll(dir.path) == records)
  }

  @Test func aWriterThatCannotReplaceAStaleIndexRewritesItInPlace() async throws {
    // Opening finds the index stale (segments 2 and 3 named nowhere) and cannot replace it
    // (index.tmp fails). The writer used to append its entries to the old file, after the gap;
    // it now cuts the file and writes the derived entries in place, then its own after them.
    let (dir, records) = try await Self.journalWithIndexGap()
    let faults = FaultInjectingFileIO()
    faults.arm(.writeError(EIO), pathContains: Layout.indexName + ".tmp")
    let journal = try Journal(directory: dir.path, options: Self.options(faults))
    #expect(faults.struck == 1)
    #expect(journal.recovery.indexRepairReason == "stale", "\(journal.recovery)")
    // The failed replacement leaves no index.tmp behind (on a full disk it would keep its space).
    #expect(!Files.list(dir.path).contains(Layout.indexName + ".tmp"))
    let all = try await Self.write(journal, until: 5, in: dir, after: records, seed: 300)
    journal.close()
    let written = try #require(try Self.entries(dir.appending(Layout.indexName)), "whole entries")
    let segments = JournalFixtures.segments(dir.path)
    #expect(written.map { Layout.segmentName(firstSequence: $0.segment) } == segments, "\(written)")

    let reopened = try Journal(directory: dir.path, options: Self.options(FaultInjectingFileIO()))
    #expect(reopened.recovery.isClean && reopened.recovery.indexRepairReason == nil, "\(reopened.recovery)")
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path) == all)
  }
}

/// Fails every write to the index file (the writer's appends, named `index`) with ENOSPC while
/// `failing` is set; compaction's `index.tmp` and everything else pass.
final class IndexOutageFileIO: ForwardingFileIO {
  let base: any FileIO = PosixFileIO()
  let failing = Locked(false)
  let failures = Locked(0)

  func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws -> Int {
    if path.hasSuffix(Layout.indexName), failing.withLock({ $0 }) {
      failures.withLock { $0 += 1 }
      throw SystemCallError("write", path: path, errno: ENOSPC)
    }
    return try base.pwrite(fd, bytes, at: offset, path: path)
  }
}
