import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// A file named like a segment whose segment header is not valid, with no valid batch in it and
/// no index entry naming it, holds nothing committed: a stray file. Its name is no evidence of
/// records before it, and repair moves it aside alone. A segment whose header is damaged but
/// whose batches are there is no stray: its records were committed.
@Suite struct StrayFileTests {
  /// Garbage named like a later segment made the journal unreadable and unrepairable: `verify`
  /// reported records missing up to its name (records that never existed) and `repair` refused,
  /// calling the garbage an intact segment. Named inside the journal's range, it made `verify`
  /// stop there and `repair` move every later segment aside. Now `verify` reports the file alone,
  /// and repair moves it alone, keeping every record.
  @Test(arguments: ["after", "inside"])
  func aGarbageFileNamedLikeASegmentIsMovedAsideAlone(place: String) async throws {
    let (dir, _, records) = try await JournalFixtures.smallSegments("stray-\(place)", batches: 40, seed: 71)
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 2)
    let second = try #require(Layout.firstSequence(ofSegmentNamed: segments[1]))
    let stray = Layout.segmentName(firstSequence: place == "after" ? 99_999 : second + 1)
    try Files.write(Array(String(repeating: "garbage", count: 10).utf8), to: dir.appending(stray))

    let verification = try JournalReader(directory: dir.path).verify()
    #expect(verification.problems.count == 1, "\(verification.problems)")
    let problem = try #require(verification.problems.first)
    #expect(problem.file == stray)
    #expect(problem.strayFile)
    #expect(!problem.missingBeforeIntactSegments)
    #expect(problem.sequences == nil, "no records are missing: \(problem)")
    #expect(problem.message.contains("not a Rewind segment"), "\(problem)")
    #expect(verification.lastSequence == UInt64(records.count))

    let plan = try Journal.repair(directory: dir.path, dryRun: true)
    #expect(plan.moved.map(\.segment) == [stray], "\(plan.moved)")
    #expect(plan.lastSequence == UInt64(records.count))
    let done = try Journal.repair(directory: dir.path)
    #expect(done.moved.map(\.segment) == [stray], "\(done.moved)")
    #expect(done.moved.first?.movedTo == Layout.quarantineName + "/" + stray)
    #expect(try Files.read(dir.appending(Layout.quarantineName + "/" + stray)).count == 70)
    #expect(JournalFixtures.segments(dir.path) == segments)
    #expect(try JournalReader(directory: dir.path).verify().isSound)
    #expect(try JournalFixtures.readAll(dir.path) == records)
  }

  /// A file named like a segment starting at sequence 0 (no segment does) with valid batches
  /// after a damaged header trapped `verify`, `repair` and `stats` (records missing "1...0"), and
  /// opening for writing called it segments missing. Now it is a stray whatever it holds: `verify`
  /// reports it alone, repair moves it alone, and the journal opens as before.
  @Test func aFileNamedForSequenceZeroIsAStrayWhateverItHolds() async throws {
    let (dir, options, records) = try await JournalFixtures.smallSegments("stray-zero", batches: 40, seed: 76)
    let segments = JournalFixtures.segments(dir.path)
    var copy = try Files.read(dir.appending(segments[0]))
    copy[20] ^= 0xFF  // a damaged segment header; the batches after it are segment 1's
    let zero = Layout.segmentName(firstSequence: 0)
    try Files.write(copy, to: dir.appending(zero))

    let opening = journalError { _ = try Journal(directory: dir.path, options: options) }
    #expect(opening?.file == zero, "\(String(describing: opening))")
    #expect(opening?.message.contains("no segment does") == true, "\(String(describing: opening))")
    let verification = try JournalReader(directory: dir.path).verify()
    #expect(verification.problems.count == 1, "\(verification.problems)")
    #expect(verification.problems.first?.file == zero)
    #expect(verification.problems.first?.strayFile == true)
    #expect(verification.problems.first?.sequences == nil)
    #expect(verification.lastSequence == UInt64(records.count))
    let done = try Journal.repair(directory: dir.path)
    #expect(done.moved.map(\.segment) == [zero], "\(done.moved)")
    #expect(JournalFixtures.segments(dir.path) == segments)
    #expect(try JournalReader(directory: dir.path).verify().isSound)
    let reopened = try Journal(directory: dir.path, options: options)
    #expect(reopened.lastSequence == UInt64(records.count))
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path) == records)
  }

  /// Opening for writing already moved a stray last file aside (it is the trace of a segment
  /// creation cut short, or of something from outside), numbering on after the last record.
  @Test func openingForWritingMovesAStrayLastFileAside() async throws {
    let (dir, options, records) = try await JournalFixtures.smallSegments("stray-open", batches: 40, seed: 72)
    let stray = Layout.segmentName(firstSequence: 99_999)
    try Files.write(Array(String(repeating: "garbage", count: 10).utf8), to: dir.appending(stray))
    let reopened = try Journal(directory: dir.path, options: options)
    #expect(reopened.recovery.movedAside.map(\.segment) == [stray])
    #expect(reopened.lastSequence == UInt64(records.count))
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path) == records)
  }

  /// A file system that refuses `flock` (ENOLCK) made `repair` say another writer held the lock;
  /// it now reports the failure as it is, as a writer's opening does.
  @Test func aLockThatCannotBeTakenIsReportedAsItIs() async throws {
    final class NoLocksIO: ForwardingFileIO, @unchecked Sendable {
      let base: any FileIO = PosixFileIO()
      func tryLock(_ fd: Int32, path: String) throws -> Bool {
        throw JournalError(.io, "flock \(path): No locks available (errno \(ENOLCK))")
      }
    }
    let dir = TemporaryDirectory("repair-nolock")
    let journal = try Journal(directory: dir.path)
    try journal.appendAndWait([NewRecord(timestamp: 1, payload: [1])])
    journal.close()
    var options = JournalOptions()
    options.io = NoLocksIO()
    let error = journalError { _ = try Journal.repair(directory: dir.path, options: options) }
    #expect(error?.code != .locked, "\(String(describing: error))")
    #expect(error?.message.contains("No locks available") == true, "\(String(describing: error))")
  }

  /// The leftover of a segment creation cut short (`NAME.lz4.tmp`) goes aside at opening, and the
  /// report says how many bytes went (it said 0).
  @Test func anUnfinishedSegmentCreationIsMovedAsideWithItsSize() async throws {
    let (dir, options, records) = try await JournalFixtures.smallSegments("stray-tmp", batches: 10, seed: 77)
    let leftover = Layout.segmentName(firstSequence: UInt64(records.count) + 1) + ".tmp"
    try Files.write([UInt8](repeating: 7, count: 44), to: dir.appending(leftover))
    let reopened = try Journal(directory: dir.path, options: options)
    let moved = reopened.recovery.movedAside
    reopened.close()
    #expect(moved.map(\.segment) == [leftover], "\(moved)")
    #expect(moved.first?.length == 44, "\(moved)")
    #expect(moved.first?.reason == "unfinished segment creation", "\(moved)")
    #expect(try JournalFixtures.readAll(dir.path) == records)
  }

  /// A segment whose header is destroyed but whose batches are there is no stray: `verify` says
  /// it holds committed records, and repair moves it saying so (a header overwritten whole is
  /// not written again: `SegmentHeaderRepairTests`). Past a missing segment, repair still refuses
  /// (records are missing before it), changing nothing: not even a header with one bit flipped,
  /// which it would write again.
  @Test(arguments: [false, true])
  func aSegmentWithADamagedHeaderIsNoStray(afterAGap: Bool) async throws {
    let (dir, _, records) = try await JournalFixtures.smallSegments("stray-header", batches: 40, seed: 73)
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 2)
    let victim = try #require(segments.last)
    var bytes = try Files.read(dir.appending(victim))
    if afterAGap {
      // One bit: a header repair would write again, but not before refusing.
      bytes[20] ^= 0x10
    } else {
      for offset in 0..<Layout.segmentHeaderSize { bytes[offset] = 0x47 }
    }
    try Files.write(bytes, to: dir.appending(victim))
    if afterAGap { try FileManager.default.removeItem(atPath: dir.appending(segments[segments.count - 2])) }

    let verification = try JournalReader(directory: dir.path).verify()
    #expect(!verification.problems.contains { $0.strayFile }, "\(verification.problems)")
    if afterAGap {
      for dryRun in [true, false] {
        let error = journalError { _ = try Journal.repair(directory: dir.path, dryRun: dryRun) }
        #expect(error?.code == .sequenceBreak, "\(String(describing: error))")
      }
      #expect(JournalFixtures.segments(dir.path).last == victim, "nothing moved")
      #expect(try Files.read(dir.appending(victim)) == bytes, "nothing written")
    } else {
      let problem = try #require(verification.problems.first)
      #expect(problem.file == victim)
      #expect(problem.message.contains("holds committed records"), "\(problem)")
      let opening = journalError { _ = try Journal(directory: dir.path, options: JournalFixtures.options()) }
      #expect(opening?.file == victim && opening?.isStrayFile == false, "\(String(describing: opening))")
      let done = try Journal.repair(directory: dir.path)
      #expect(done.moved.map(\.segment) == [victim])
      #expect(done.moved.first?.reason.contains("holds committed records") == true, "\(done.moved)")
      #expect(done.headersRewritten.isEmpty)
      let first = try #require(Layout.firstSequence(ofSegmentNamed: victim))
      #expect(try JournalFixtures.readAll(dir.path) == records.filter { $0.sequence < first })
    }
  }

  /// A plan (a dry run) opened the journal as a writer: it created `LOCK` in a journal that had
  /// none, and failed while a writer held the lock. It now only reads.
  @Test func aPlanTakesNoLockAndWritesNothing() async throws {
    let dir = TemporaryDirectory("plan-lock")
    let options = JournalFixtures.options(segmentBytes: 2 << 10)
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: 20, seed: 74)
    // While a writer holds the journal: a plan works, the repair itself refuses.
    let plan = try Journal.repair(directory: dir.path, dryRun: true)
    #expect(plan.damage == nil)
    #expect(plan.lastSequence == UInt64(records.count))
    #expect(journalError { _ = try Journal.repair(directory: dir.path) }?.code == .locked)
    journal.close()

    try FileManager.default.removeItem(atPath: dir.appending(Layout.lockName))
    var bytes = try Files.read(dir.appending(try #require(JournalFixtures.segments(dir.path).last)))
    bytes.append(contentsOf: [0x51, 0x2A, 0x4D, 0x18, 1, 2, 3])
    try Files.write(bytes, to: dir.appending(try #require(JournalFixtures.segments(dir.path).last)))
    let before = Files.list(dir.path)
    let damaged = try Journal.repair(directory: dir.path, dryRun: true)
    #expect(damaged.damage != nil)
    #expect(Files.list(dir.path) == before, "a plan creates nothing, not even LOCK")
  }

  /// A copy of a segment under another name (its header's first sequence is not its name's, and
  /// the segment its header names is there) made `verify` stop at the copy's name and `repair`
  /// move it and every later segment aside, though every record was there. Now the copy alone is
  /// the damage: `verify` reports it alone, and repair moves it alone.
  @Test(arguments: ["inside", "after"])
  func aCopyOfASegmentUnderAnotherNameIsMovedAsideAlone(place: String) async throws {
    let (dir, _, records) = try await JournalFixtures.smallSegments("misnamed-\(place)", batches: 40, seed: 75)
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 3)
    let second = try #require(Layout.firstSequence(ofSegmentNamed: segments[1]))
    let copy = Layout.segmentName(firstSequence: place == "inside" ? second - 3 : UInt64(records.count) + 10)
    try Files.write(try Files.read(dir.appending(segments[1])), to: dir.appending(copy))

    let verification = try JournalReader(directory: dir.path).verify()
    #expect(verification.problems.count == 1, "\(verification.problems)")
    let problem = try #require(verification.problems.first)
    #expect(problem.file == copy)
    #expect(problem.strayFile)
    #expect(problem.sequences == nil, "no records are missing: \(problem)")
    #expect(problem.message.contains("a copy of it under another name"), "\(problem)")
    #expect(problem.message.contains(segments[1]), "\(problem)")
    #expect(verification.lastSequence == UInt64(records.count))

    let plan = try Journal.repair(directory: dir.path, dryRun: true)
    #expect(plan.moved.map(\.segment) == [copy], "\(plan.moved)")
    #expect(plan.lastSequence == UInt64(records.count))
    let done = try Journal.repair(directory: dir.path)
    #expect(done.moved.map(\.segment) == [copy], "\(done.moved)")
    #expect(JournalFixtures.segments(dir.path) == segments)
    #expect(try Files.read(dir.appending(Layout.quarantineName + "/" + copy)) == Files.read(dir.appending(segments[1])))
    #expect(try JournalReader(directory: dir.path).verify().isSound)
    #expect(try JournalFixtures.readAll(dir.path) == records)
  }

  /// A stray file named inside the journal's range (a copy of a segment saved under another
  /// number, or junk under such a name) was chosen by every read that seeks the segment of a
  /// sequence number by its name: from a record in the stray's range, one record there, the
  /// journal's end. Each refused the journal as damaged, or left records out, though `verify`
  /// found nothing committed damaged (Known limits until Dec 7). Reads now pass over such a
  /// file, with the index and without it, and read every record as a read from the start does.
  @Test(arguments: ["copy", "garbage"], [true, false])
  func readsThatSeekASegmentByNamePassOverAStrayFile(kind: String, indexed: Bool) async throws {
    let (dir, _, records) = try await JournalFixtures.smallSegments("stray-seek-\(kind)", batches: 120, seed: 77)
    let segments = JournalFixtures.segments(dir.path).compactMap(Layout.firstSequence(ofSegmentNamed:))
    let count = UInt64(records.count)
    try #require(segments.count > 3 && segments[2] - segments[1] >= 3 && count - segments.last! >= 3)
    let inside = segments[1] + (segments[2] - segments[1]) / 2
    let inLast = segments.last! + (count - segments.last!) / 2
    let bytes =
      kind == "copy"
      ? try Files.read(dir.appending(Layout.segmentName(firstSequence: segments[0])))
      : Array(String(repeating: "garbage", count: 10).utf8)
    let strays = [0, inside, inLast].map { Layout.segmentName(firstSequence: $0) }
    for stray in strays { try Files.write(bytes, to: dir.appending(stray)) }
    if !indexed { try FileManager.default.removeItem(atPath: dir.appending(Layout.indexName)) }

    let reader = try JournalReader(directory: dir.path)
    #expect(try reader.lastSequence() == count)
    for sequence in [inside, inside + 1, segments[2] - 1, segments[2], inLast, inLast + 1, count] {
      let expected = Array(records[Int(sequence - 1)...])
      let read = try JournalFixtures.readAll(reader.records(from: sequence))
      #expect(read == expected, "from \(sequence)")
      #expect(try reader.record(sequence) == expected.first, "record \(sequence)")
      let time = expected[0].timestamp
      let readSince = try JournalFixtures.readAll(reader.records(since: time))
      #expect(readSince == records.filter { $0.timestamp >= time }, "since the time of \(sequence)")
    }
    if indexed {
      let verification = try reader.verify()
      #expect(verification.problems.map(\.file) == strays, "\(verification.problems)")
      #expect(verification.problems.allSatisfy { $0.strayFile })
    }
  }

  /// Opening for writing refused a journal holding a copy of a segment under another number, or
  /// junk named inside the journal, saying committed data was damaged. It still refuses (repair
  /// moves such a file aside, and says so), now naming the file a stray that damages nothing
  /// committed; the directory is left as it was.
  @Test(arguments: ["copy inside", "copy last", "garbage inside"])
  func openingForWritingNamesAStrayInsideTheJournalAsOne(kind: String) async throws {
    let (dir, options, records) = try await JournalFixtures.smallSegments("stray-writer", batches: 120, seed: 78)
    let segments = JournalFixtures.segments(dir.path)
    let firsts = segments.compactMap(Layout.firstSequence(ofSegmentNamed:))
    let count = UInt64(records.count)
    try #require(firsts.count > 3 && firsts[2] - firsts[1] >= 2 && count > firsts.last! + 1)
    let stray = Layout.segmentName(firstSequence: kind == "copy last" ? firsts.last! + 1 : firsts[1] + 1)
    let bytes =
      kind.hasPrefix("copy")
      ? try Files.read(dir.appending(segments[0])) : Array(String(repeating: "garbage", count: 10).utf8)
    try Files.write(bytes, to: dir.appending(stray))

    let error = journalError { _ = try Journal(directory: dir.path, options: options) }
    #expect(error?.file == stray, "\(String(describing: error))")
    #expect(error?.isStrayFile == true, "\(String(describing: error))")
    #expect(error?.advice?.contains("Nothing committed is damaged") == true, "\(String(describing: error))")
    #expect(JournalFixtures.segments(dir.path) == (segments + [stray]).sorted())
    let done = try Journal.repair(directory: dir.path)
    #expect(done.moved.map(\.segment) == [stray], "\(done.moved)")
    let reopened = try Journal(directory: dir.path, options: options)
    #expect(reopened.lastSequence == count)
    reopened.close()
  }

  /// A live journal's last segment ends in the zeros its writer preallocated. A copy of a segment
  /// named inside that segment's range made every reader take the copy for the last segment, and
  /// the zeros for damage in a sealed one ("records may be missing here": the review of entry
  /// 356, on a journal a killed writer left). The last segment is the last file that is no
  /// stray: its zeros are the end again. Junk named past the end is named where the read ends,
  /// as after a sealed end.
  @Test(arguments: ["copy inside", "junk past the end"])
  func aStrayFileLeavesTheZerosOfALiveJournalTheEnd(place: String) async throws {
    let dir = TemporaryDirectory("stray-live")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    defer { journal.close() }
    let records = try await JournalFixtures.write(journal, batches: 200, seed: 79)
    let segments = JournalFixtures.segments(dir.path)
    let last = try #require(segments.last.flatMap(Layout.firstSequence(ofSegmentNamed:)))
    let count = UInt64(records.count)
    try #require(count > last + 1)
    try #require(try Files.read(dir.appending(segments.last!)).last == 0, "preallocated zeros end the segment")
    if place == "copy inside" {
      try Files.write(
        try Files.read(dir.appending(segments[0])), to: dir.appending(Layout.segmentName(firstSequence: last + 1)))
      let reader = try JournalReader(directory: dir.path)
      #expect(try reader.lastSequence() == count)
      #expect(try JournalFixtures.readAll(reader.records(from: last)) == Array(records[Int(last - 1)...]))
    } else {
      let stray = Layout.segmentName(firstSequence: count + 50)
      try Files.write(Array(String(repeating: "garbage", count: 10).utf8), to: dir.appending(stray))
      let error = journalError { _ = try JournalReader(directory: dir.path).lastSequence() }
      #expect(error?.isStrayFile == true && error?.file == stray, "\(String(describing: error))")
    }
  }
}
