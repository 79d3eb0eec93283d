import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Records the index names and the disk no longer holds are a loss every reader reports, not a
/// shorter journal: a missing segment (last, in the middle, or the only one) is refused when a
/// cursor is made, and a cursor that ends before the last batch the index named says so. A stale
/// index (compaction rewrote a segment since) is no such evidence.
@Suite struct IndexedLossTests {
  enum Victim: CaseIterable { case last, middle, only }

  @Test(arguments: Victim.allCases)
  func aReaderRefusesAJournalWhoseIndexNamesAMissingSegment(victim: Victim) async throws {
    let dir = TemporaryDirectory("indexed-loss-segment")
    let options = JournalFixtures.options(segmentBytes: victim == .only ? 64 << 20 : 2 << 10)
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: 40, seed: 71)
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try #require(victim == .only ? segments.count == 1 : segments.count > 2)
    let name = victim == .middle ? segments[1] : try #require(segments.last)
    let first = try #require(Layout.firstSequence(ofSegmentNamed: name))
    try FileManager.default.removeItem(atPath: dir.appending(name))

    let reader = try JournalReader(directory: dir.path)
    for (what, read) in [
      ("read from 1", { _ = try JournalFixtures.readAll(reader.records()) }),
      ("last sequence", { _ = try reader.lastSequence() }),
      ("record 1", { _ = try reader.record(1) }),
      ("since a time", { _ = try reader.records(since: 0).next() }),
    ] as [(String, () throws -> Void)] {
      let error = journalError(what, read)
      #expect(error?.code == .sequenceBreak, "\(what): \(String(describing: error))")
      #expect(error?.file == name, "\(what): \(String(describing: error))")
      #expect(error?.sequences?.lowerBound == first, "\(what): \(String(describing: error))")
      #expect(error?.description.contains("\(name) is missing, but the index names it") == true, "\(what)")
      #expect(error?.description.contains("rewind verify") == true, "\(what): \(String(describing: error))")
      if victim == .middle {
        let next = try #require(Layout.firstSequence(ofSegmentNamed: segments[2]))
        #expect(error?.sequences?.upperBound == next - 1, "\(what): \(String(describing: error))")
        #expect(error?.missingBeforeIntactSegments == true, "\(what): \(String(describing: error))")
      } else {
        // The last segment's records are known gone through its last batch the index names.
        #expect(error?.sequencesMayGoFurther == true, "\(what): \(String(describing: error))")
        #expect(error?.description.contains("from \(first) at least through") == true, "\(String(describing: error))")
      }
    }

    if victim == .middle {
      // Records missing before intact segments: repair refuses, moving nothing (see
      // MissingSegmentTests.repairRefusesRecordsMissingBeforeIntactSegments).
      #expect(journalError { _ = try Journal.repair(directory: dir.path) }?.missingBeforeIntactSegments == true)
      return
    }
    // Repair leaves a journal every reader opens: the index goes, what is left reads whole.
    _ = try Journal.repair(directory: dir.path)
    #expect(try JournalFixtures.readAll(dir.path) == Array(records.prefix(Int(first - 1))))
  }

  /// The last segment ends before a batch the index names: cut short, or its last frames turned
  /// to zeros (which read as preallocated space). Readers used to end there in silence; the next
  /// writer reports the same loss (`RecoveryReport.missingRecords`), and once it has rebuilt the
  /// index, readers read what is left.
  @Test(arguments: [false, true])
  func aReaderThatEndsBeforeAnIndexedBatchReportsTheLoss(zeros: Bool) async throws {
    let dir = TemporaryDirectory("indexed-loss-tail")
    let options = JournalFixtures.options(indexBytes: 256)
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: 40, seed: 72)
    journal.close()
    let segment = try #require(JournalFixtures.segments(dir.path).last)
    let path = dir.appending(segment)
    let bytes = try Files.read(path)
    let frames = try JournalFixtures.frames(of: bytes)
    let cut = frames[frames.count / 2]
    if zeros {
      try Files.write(Array(bytes[..<cut.offset]) + [UInt8](repeating: 0, count: bytes.count - cut.offset), to: path)
    } else {
      try JournalFixtures.truncate(path, at: cut.offset)
    }
    let kept = Array(records.prefix(Int(cut.header.firstSequence - 1)))

    let reader = try JournalReader(directory: dir.path)
    let cursor = try reader.records()
    var read: [JournalRecord] = []
    let error = journalError { while let record = try cursor.next() { read.append(record) } }
    #expect(read == kept, "every record before the loss is read")
    #expect(error?.code == .sequenceBreak, "\(String(describing: error))")
    #expect(error?.file == segment)
    #expect(error?.offset == Int64(cut.offset))
    #expect(error?.sequences?.lowerBound == cut.header.firstSequence, "\(String(describing: error))")
    #expect(error?.message.contains("committed records are gone") == true, "\(String(describing: error))")
    // The count stops at the last batch the index names: later records of the segment left no
    // trace, and the text says so rather than give the range as if it were all.
    #expect(error?.sequencesMayGoFurther == true, "\(String(describing: error))")
    #expect(
      error?.description.contains("sequences from \(cut.header.firstSequence) at least through") == true,
      "\(String(describing: error))")
    let problem = try #require(reader.verify().problems.first)
    #expect(problem.sequencesMayGoFurther, "\(problem)")
    #expect(
      problem.description.contains("sequences from \(cut.header.firstSequence) at least through "), "\(problem)")
    #expect(problem.description.contains("cannot be counted"), "\(problem)")
    #expect(journalError { _ = try reader.lastSequence() }?.code == .sequenceBreak)
    #expect(journalError { _ = try reader.record(UInt64(records.count)) }?.code == .sequenceBreak)
    // Records before the loss are still there to be read one by one.
    #expect(try reader.record(1) == records[0])

    let writer = try Journal(directory: dir.path, options: options)
    #expect(writer.recovery.missingRecords?.sequences.lowerBound == cut.header.firstSequence)
    writer.close()
    #expect(try JournalFixtures.readAll(dir.path) == kept)
  }

  /// A committed batch of the last segment cut short inside its frame (damage, where a crash
  /// leaves only an unfinished frame the index never names): opening moves the cut frame aside as
  /// a torn tail, and, since the index names the batch, reports its records gone too, as
  /// `RecoveryReport.movedAside` says.
  @Test func aCommittedBatchCutShortIsMovedAsideAndReportedMissing() async throws {
    let dir = TemporaryDirectory("indexed-loss-torn")
    let options = JournalFixtures.options(indexBytes: 256)
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: 40, seed: 73)
    journal.close()
    let segment = try #require(JournalFixtures.segments(dir.path).last)
    let path = dir.appending(segment)
    let frames = try JournalFixtures.frames(of: try Files.read(path))
    let cut = frames[frames.count / 2]
    try JournalFixtures.truncate(path, at: cut.offset + Int(cut.header.totalLength) / 2)

    let writer = try Journal(directory: dir.path, options: options)
    let moved = try #require(writer.recovery.movedAside.first, "the cut frame is moved aside")
    #expect(moved.segment == segment && moved.offset == Int64(cut.offset), "\(moved)")
    #expect(moved.sequences == cut.header.sequences, "\(moved)")
    let missing = try #require(writer.recovery.missingRecords, "the index names the cut batch: records gone")
    #expect(missing.sequences.lowerBound == cut.header.firstSequence, "\(missing)")
    #expect(missing.sequences.contains(cut.header.lastSequence), "\(missing)")
    #expect(!writer.recovery.isClean)
    writer.close()
    #expect(try JournalFixtures.readAll(dir.path) == Array(records.prefix(Int(cut.header.firstSequence - 1))))
  }

  /// A crash between compaction's rename and its index replacement leaves entries that point into
  /// the old layout of a sealed segment, some past its new end: stale, not a loss.
  @Test func aStaleIndexAfterCompactionIsNoLoss() async throws {
    let dir = TemporaryDirectory("indexed-loss-stale")
    let options = JournalFixtures.options(segmentBytes: 4 << 10, indexBytes: 256)
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: 80, seed: 73)
    let index = try Files.read(dir.appending(Layout.indexName))
    #expect(try !journal.compactSealedSegments().compacted.isEmpty)
    journal.close()
    try Files.write(index, to: dir.appending(Layout.indexName))

    let reader = try JournalReader(directory: dir.path)
    #expect(try JournalFixtures.readAll(reader.records()) == records)
    #expect(try reader.lastSequence() == UInt64(records.count))
    for sequence in stride(from: 1, through: records.count, by: 7) {
      #expect(try reader.record(UInt64(sequence)) == records[sequence - 1])
    }
  }

  /// Repair removes the index last, once what it moved is safe in quarantine/. When that removal
  /// fails (EACCES, EIO), the index still names the records moved, or lost without a byte left:
  /// every reader would report them lost. Repair used to return as if done; it now throws
  /// `.staleIndex` naming the file, and running it again once the cause is gone finishes it.
  @Test(arguments: [Victim.middle, .last])
  func aRepairThatCannotRemoveTheIndexSaysSo(victim: Victim) async throws {
    let dir = TemporaryDirectory("indexed-loss-repair-index")
    let options = JournalFixtures.options(segmentBytes: 4 << 10, indexBytes: 128)
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: 60, seed: 74)
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 2)
    let kept: [JournalRecord]
    if victim == .middle {
      // A damaged frame in a middle segment: it and later segments move into quarantine/.
      let path = dir.appending(segments[1])
      let frames = try JournalFixtures.frames(of: try Files.read(path))
      let damaged = frames[frames.count / 2]
      try JournalFixtures.flip(path, at: damaged.offset + Layout.batchHeaderSize + 2)
      kept = Array(records.prefix(Int(damaged.header.firstSequence - 1)))
    } else {
      // The last segment cut short where the index names a batch: no bytes to move, only the index.
      let path = dir.appending(try #require(segments.last))
      let frames = try JournalFixtures.frames(of: try Files.read(path))
      let cut = frames[frames.count / 2]
      try JournalFixtures.truncate(path, at: cut.offset)
      kept = Array(records.prefix(Int(cut.header.firstSequence - 1)))
    }

    let io = FaultInjectingFileIO()
    io.arm(.removeError(EACCES), pathContains: "/" + Layout.indexName)
    var faulty = options
    faulty.io = io
    let error = journalError { _ = try Journal.repair(directory: dir.path, options: faulty) }
    #expect(io.struck == 1)
    #expect(error?.code == .staleIndex, "\(String(describing: error))")
    #expect(error?.file == Layout.indexName)
    #expect(error?.errno == EACCES)
    #expect(error?.description.contains("could not remove the index") == true, "\(String(describing: error))")
    #expect(
      error?.description.contains("run `rewind repair`, which removes it") == true, "\(String(describing: error))")
    if victim == .middle {
      #expect(error?.description.contains("moved the damaged part aside") == true)
      #expect(!FileManager.default.fileExists(atPath: dir.appending(segments[2])), "the moves are done")
    }
    #expect(FileManager.default.fileExists(atPath: dir.appending(Layout.indexName)))

    // Again, with nothing in the way: the index goes, and what is left reads whole.
    let report = try Journal.repair(directory: dir.path, options: options)
    #expect(report.lastSequence == UInt64(kept.count))
    #expect(!FileManager.default.fileExists(atPath: dir.appending(Layout.indexName)))
    #expect(try JournalFixtures.readAll(dir.path) == kept)
  }
}
