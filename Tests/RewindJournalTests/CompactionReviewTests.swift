import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Compaction attacked: segments of every shape keep every record, sequence, timestamp and
/// payload, and the index they get points at record boundaries with the right sequence and
/// timestamp; a failed directory sync after the rename leaves the index in step with the file.
@Suite struct CompactionReviewTests {
  /// A shape of sealed segment: the options it is written with, the records appended (one batch
  /// per element), and the decoded bytes a compacted frame gathers.
  struct Shape: CustomStringConvertible, Sendable {
    var description: String
    var segmentBytes: Int
    var limits = JournalLimits()
    var frameContentBytes = SegmentCompactor.defaultFrameContentBytes
    /// Payload sizes of each batch.
    var batches: [[Int]]
  }

  static let shapes: [Shape] = [
    // One frame per segment: each batch fills most of a segment, so the next one rolls.
    Shape(
      description: "one frame per segment", segmentBytes: 8 << 10,
      batches: Array(repeating: [900, 1800, 2700], count: 6)),
    // Many frames of one record each.
    Shape(description: "frames of one record", segmentBytes: 8 << 10, batches: (0..<400).map { [$0 % 97] }),
    // Every record larger than the frame compaction gathers: each original frame stays alone.
    Shape(
      description: "records larger than the compacted frame", segmentBytes: 16 << 10, frameContentBytes: 2 << 10,
      batches: (0..<30).map { [3000 + 97 * $0] }),
    // Frames of the largest batch small limits allow, each holding the largest record.
    Shape(
      description: "the largest record of small limits", segmentBytes: 160 << 10,
      limits: JournalLimits(maxRecordBytes: 64 << 10, maxBatchBytes: (64 << 10) + Layout.recordHeaderSize),
      batches: Array(repeating: [64 << 10], count: 8)),
    // The largest record the default limits allow (4 MiB), alone in its segment, and small ones.
    Shape(
      description: "the largest record of the default limits", segmentBytes: 1 << 20,
      batches: [[100, 200], [4 << 20], [10], [4 << 20], [5, 6, 7]]),
  ]

  @Test(arguments: shapes)
  func everyRecordIsIdenticalAfterCompaction(shape: Shape) async throws {
    let dir = TemporaryDirectory("compact-shape")
    var options = JournalFixtures.options(
      .none, segmentBytes: shape.segmentBytes, frameBytes: 1 << 20, indexBytes: 1024)
    options.limits = shape.limits
    let journal = try Journal(directory: dir.path, options: options)
    var random = SeededGenerator(seed: 7)
    var expected: [JournalRecord] = []
    // Timestamps that go back now and then, and repeat: compaction must keep each one as it was.
    var clock: Int64 = 1_700_000_000_000_000_000
    for sizes in shape.batches {
      let batch = sizes.map { size in
        clock += Int64.random(in: -2_000...5_000, using: &random)
        return NewRecord(timestamp: clock, payload: (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) })
      }
      let range = try await journal.append(batch)
      for (sequence, record) in zip(range, batch) {
        expected.append(JournalRecord(sequence: sequence, timestamp: record.timestamp, payload: record.payload))
      }
    }
    journal.close()
    let names = JournalFixtures.segments(dir.path)
    try #require(names.count >= 2, "\(shape): \(names)")

    let compactor = SegmentCompactor(
      directory: try JournalDirectory(path: dir.path, io: PosixFileIO()), options: options, indexGate: IndexFileGate())
    let report = try compactor.compactSealed(frameContentBytes: shape.frameContentBytes)
    compactor.close()
    #expect(report.compacted.map(\.segment) == Array(names.dropLast()), "\(shape)")
    for name in names.dropLast() { #expect(try CompactionTests.header(dir.appending(name)).isCompacted) }

    let reader = try JournalReader(directory: dir.path, limits: shape.limits)
    #expect(try JournalFixtures.readAll(reader.records(from: 1)) == expected, "\(shape)")
    let verification = try reader.verify()
    #expect(verification.isSound && verification.records == UInt64(expected.count), "\(verification)")
    try Self.checkIndexEntries(dir.path, records: expected, limits: shape.limits)
    for record in expected {
      #expect(try reader.record(record.sequence) == record)
      #expect(try reader.records(from: record.sequence).next() == record)
    }
  }

  /// Every entry of the index points at a batch header in its segment whose first sequence is the
  /// entry's, and says the largest timestamp of the records before it; every sealed segment has an
  /// entry at its first frame.
  static func checkIndexEntries(_ directory: String, records: [JournalRecord], limits: JournalLimits) throws {
    let layout = try JournalDirectory(path: directory, io: PosixFileIO())
    let index = try JournalReader(directory: directory, limits: limits).loadIndex(layout)
    let bytes = try Files.read(directory + "/" + Layout.indexName)
    #expect(bytes.count == SparseIndex.headerSize + index.entries.count * IndexEntry.size, "index wholly valid")
    var segments: [UInt64: [UInt64: JournalFixtures.Frame]] = [:]
    for first in layout.segments {
      // Up to its last frame: an open writer keeps zeros after the active segment's.
      let bytes = try Files.read(directory + "/" + Layout.segmentName(firstSequence: first))
      let frames = try JournalFixtures.frames(of: Array(bytes.prefix(JournalFixtures.usedLength(bytes))))
      segments[first] = Dictionary(uniqueKeysWithValues: frames.map { (UInt64($0.offset), $0) })
    }
    for entry in index.entries {
      let frame = segments[entry.segment]?[UInt64(entry.offset)]
      #expect(frame?.header.firstSequence == entry.firstSequence, "\(entry) not at a frame with its sequence")
      let before = records.prefix(Int(entry.firstSequence) - 1).map(\.timestamp).max() ?? Int64.min
      #expect(entry.maxTimestampBefore == before, "\(entry): the records before it reach \(before)")
    }
    for first in layout.segments.dropLast() {
      #expect(index.entries.contains { $0.segment == first && $0.offset == Int64(Layout.segmentHeaderSize) })
    }
  }

  /// Fails the directory sync that follows the rename of a compacted copy, once.
  final class FailingDirectorySyncIO: ForwardingFileIO, @unchecked Sendable {
    let base: any FileIO = PosixFileIO()
    let directory: String
    let lock = NSLock()
    var renamed = false
    var struck = 0

    init(directory: String) { self.directory = directory }

    func rename(_ from: String, to: String) throws {
      try base.rename(from, to: to)
      lock.withLock { if from.hasSuffix(".compact.tmp") && struck == 0 { renamed = true } }
    }

    func sync(_ fd: Int32, metadata: Bool, path: String) throws {
      let strike = lock.withLock {
        guard renamed, path == directory else { return false }
        renamed = false
        struck += 1
        return true
      }
      if strike { throw SystemCallError("fsync", path: path, errno: EIO) }
      try base.sync(fd, metadata: metadata, path: path)
    }
  }

  /// The copy was renamed over the segment, then the directory sync failed: the error says so, and
  /// the index is still re-derived for the file now in place (the next compaction skips the
  /// segment, its header saying compacted, so nothing else would ever re-derive it for this
  /// writer), later compactions go on, and the next writer finds the index current.
  @Test func aFailedDirectorySyncAfterTheRenameStillRederivesTheIndex() async throws {
    let dir = TemporaryDirectory("compact-dirsync")
    let io = FailingDirectorySyncIO(directory: dir.path)
    let journal = try Journal(directory: dir.path, options: CompactionTests.options(io))
    let expected = try await JournalFixtures.write(journal, batches: 300, maxPayload: 60, seed: 131)
    let names = JournalFixtures.segments(dir.path)

    let error = journalError { _ = try journal.compactSealedSegments() }
    #expect(io.struck == 1)
    #expect(error?.code == .io && error?.file == names[0], "\(String(describing: error))")
    #expect(error?.message.contains("fsync") == true, "\(String(describing: error))")
    #expect(try CompactionTests.header(dir.appending(names[0])).isCompacted)
    try Self.checkIndexEntries(dir.path, records: expected, limits: JournalLimits())

    let report = try journal.compactSealedSegments()
    #expect(report.alreadyCompacted == [names[0]] && report.compacted.count == names.count - 2, "\(report)")
    let more = try await JournalFixtures.write(journal, batches: 40, maxPayload: 60, seed: 132, after: expected)
    journal.close()
    try Self.checkIndexEntries(dir.path, records: more, limits: JournalLimits())
    let reopened = try Journal(directory: dir.path, options: CompactionTests.options())
    #expect(reopened.recovery.indexRepairReason == nil && reopened.recovery.isClean, "\(reopened.recovery)")
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path) == more)
  }
}

extension CompactionReviewTests {
  /// A journal written with small limits (64 KiB batches), compacted by a process with the
  /// default ones told the readers' limit (`rewind compact --frame`): the writer with
  /// the small limits still opens it, and its readers read every record. (Without the limit, the
  /// 1 MiB merged frames make that writer's opening fail with `limitExceeded`.)
  @Test func aJournalOfSmallLimitsCompactedWithLargerOnesStillOpensWithItsOwn() async throws {
    let dir = TemporaryDirectory("compact-small-limits")
    var small = JournalFixtures.options(.none, segmentBytes: 256 << 10, frameBytes: 64 << 10, indexBytes: 4 << 10)
    small.limits = JournalLimits(maxRecordBytes: 1 << 10, maxBatchBytes: 64 << 10)
    let journal = try Journal(directory: dir.path, options: small)
    let expected = try await JournalFixtures.write(journal, batches: 3000, maxPayload: 400, seed: 141)
    journal.close()
    try #require(JournalFixtures.segments(dir.path).count >= 2)

    let other = try Journal(directory: dir.path, options: JournalFixtures.options(.none))
    let report = try other.compactSealedSegments(frameContentBytes: small.limits.maxBatchBytes)
    #expect(!report.compacted.isEmpty && report.compacted.allSatisfy { $0.framesAfter < $0.framesBefore })
    other.close()

    let reopened = try Journal(directory: dir.path, options: small)
    reopened.close()
    let reader = try JournalReader(directory: dir.path, limits: small.limits)
    #expect(try JournalFixtures.readAll(reader.records(from: 1)) == expected)
    #expect(try reader.verify().isSound)
  }
}

extension CompactionReviewTests {
  /// A cursor stopped inside a sealed segment when it is replaced, with most of the segment
  /// beyond its 1 MiB read-ahead, and cursors made before the compaction but not yet read: every
  /// record once, in order, as it was (a reader keeps the file it opened; the new one is another).
  @Test func aCursorInsideTheReplacedSegmentReadsOn() async throws {
    let dir = TemporaryDirectory("compact-cursor")
    var options = JournalFixtures.options(.none, segmentBytes: 5 << 19, frameBytes: 1 << 10, indexBytes: 64 << 10)
    options.preallocationBytes = 0
    let journal = try Journal(directory: dir.path, options: options)
    var random = SeededGenerator(seed: 151)
    var expected: [JournalRecord] = []
    for i in 0..<1600 {
      // Random, so that frames do not shrink: about 2.5 MiB per segment, 600 records each.
      let payload = (0..<4000).map { _ in UInt8.random(in: 0...255, using: &random) }
      let range = try await journal.append([NewRecord(timestamp: Int64(i / 3), payload: payload)])
      expected.append(JournalRecord(sequence: range.lowerBound, timestamp: Int64(i / 3), payload: payload))
    }
    let names = JournalFixtures.segments(dir.path)
    try #require(names.count >= 3, "\(names)")
    let second = try #require(Layout.firstSequence(ofSegmentNamed: names[1]))
    let reader = try JournalReader(directory: dir.path)
    let probes = [second + 200, 1, UInt64(expected.count)]
    let unread = try probes.map { try reader.records(from: $0) }
    var read: [JournalRecord] = []
    let cursor = try reader.records(from: 1)
    while read.count < Int(second + 10), let record = try cursor.next() { read.append(record) }

    let report = try journal.compactSealedSegments()
    #expect(report.compacted.count == names.count - 1)
    while let record = try cursor.next() { read.append(record) }
    #expect(read == expected)
    for (probe, cursor) in zip(probes, unread) {
      #expect(try JournalFixtures.readAll(cursor) == Array(expected[Int(probe - 1)...]), "from \(probe)")
    }
    for probe in stride(from: 1, through: expected.count, by: 97) {
      #expect(try reader.record(UInt64(probe)) == expected[probe - 1])
      #expect(
        try reader.records(since: expected[probe - 1].timestamp).next()?.timestamp == expected[probe - 1].timestamp)
    }
    #expect(try reader.verify().isSound)
    journal.close()
  }
}

extension CompactionReviewTests {
  /// The index replacement after a compaction fails (the rename of `index.tmp`): the index names
  /// the segment's old frames, and reads are still right (each entry is checked where it is used:
  /// a stale one costs a read from the segment's start). The next compaction, of the next segment
  /// or of none, replaces the index again with the entries of both, keeping those the writer
  /// appended meanwhile. (Left stale, the segment's entries past its new end also kept every later
  /// compaction from replacing the index: it loads only when the whole file fits the segments.)
  @Test func aFailedIndexReplacementIsRetriedAtTheNextCompaction() async throws {
    let dir = TemporaryDirectory("compact-stale")
    let io = FaultInjectingFileIO()
    let journal = try Journal(directory: dir.path, options: CompactionTests.options(io))
    var expected: [JournalRecord] = []
    var seed: UInt64 = 235
    /// Appends batches of ten until the journal has `count` segments.
    func write(untilSegments count: Int) async throws {
      while JournalFixtures.segments(dir.path).count < count {
        expected = try await JournalFixtures.write(journal, batches: 10, maxPayload: 60, seed: seed, after: expected)
        seed += 1
      }
    }
    try await write(untilSegments: 2)

    io.arm(.renameError(EIO), pathContains: "/" + Layout.indexName)
    let first = try journal.compactSealedSegments()
    #expect(io.struck == 1 && first.compacted.count == 1, "\(first)")
    let stale = SparseIndex.wellFormedEntries(
      directory: dir.path, journalID: try JournalReader(directory: dir.path).id, io: PosixFileIO())
    #expect(stale.filter { $0.segment == 1 }.count > 1, "the old frames' entries stay: \(stale)")
    // Still right, from every record and by time, with a cached index too (the time machine's).
    let cached = try JournalReader(directory: dir.path, io: PosixFileIO(), cachingIndex: true)
    for reader in [try JournalReader(directory: dir.path), cached] {
      for record in expected {
        #expect(try reader.records(from: record.sequence).next() == record)
        #expect(try reader.records(since: record.timestamp).next()?.timestamp == record.timestamp)
      }
    }

    // Nothing left to compact: the index is replaced all the same.
    let again = try journal.compactSealedSegments()
    #expect(again.compacted.isEmpty && again.alreadyCompacted.count == 1, "\(again)")
    try Self.checkIndexEntries(dir.path, records: expected, limits: JournalLimits())

    // Failed again, then another segment compacted: both segments' entries are derived.
    try await write(untilSegments: 4)
    io.arm(.renameError(EIO), pathContains: "/" + Layout.indexName)
    let third = try journal.compactSealedSegments()
    #expect(io.struck == 2 && third.compacted.count == 2, "\(third)")
    try Self.checkIndexEntries(dir.path, records: expected, limits: JournalLimits())
    expected = try await JournalFixtures.write(journal, batches: 20, maxPayload: 60, seed: seed, after: expected)
    journal.close()
    try Self.checkIndexEntries(dir.path, records: expected, limits: JournalLimits())
    let reopened = try Journal(directory: dir.path, options: CompactionTests.options())
    #expect(reopened.recovery.indexRepairReason == nil, "\(reopened.recovery)")
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path) == expected)
  }
}
