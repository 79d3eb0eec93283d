import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// A deleted last segment is committed data lost, not an empty tail: the index still names it.
/// Opening refuses (it would number new records over the lost ones), `verify` reports it, and
/// `repair` lets the journal continue from what is left, saying what was lost.
@Suite struct MissingSegmentTests {
  /// `movedAside`: the segment is in `quarantine/` under its name, where a repair stopped part way
  /// leaves the segments it moved: every report says so, where the bytes are.
  @Test(arguments: [false, true], [false, true])
  func aDeletedLastSegmentIsReportedAndRepairable(onlySegment: Bool, movedAside: Bool) async throws {
    let dir = TemporaryDirectory("missing-last")
    let options = JournalFixtures.options(segmentBytes: onlySegment ? 64 << 20 : 2 << 10)
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: 40, seed: 61)
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try #require(onlySegment ? segments.count == 1 : segments.count > 2)
    let victim = try #require(segments.last)
    if movedAside {
      try FileManager.default.createDirectory(atPath: dir.appending("quarantine"), withIntermediateDirectories: false)
      try FileManager.default.moveItem(atPath: dir.appending(victim), toPath: dir.appending("quarantine/" + victim))
      // An earlier repair's file of that name, renamed as the move names it when taken, is named
      // too; another file beginning with it is not.
      for other in [".2", ".from-8.tail"] {
        #expect(
          FileManager.default.createFile(atPath: dir.appending("quarantine/" + victim + other), contents: Data([1])))
      }
    } else {
      try FileManager.default.removeItem(atPath: dir.appending(victim))
    }
    let whereItIs = "(quarantine/\(victim), quarantine/\(victim).2 may hold it: a repair moves segments to quarantine/"

    let error = journalError { _ = try Journal(directory: dir.path, options: options) }
    #expect(error?.message.contains(whereItIs) == movedAside, "\(String(describing: error))")
    #expect(error?.message.contains(".from-8.tail") == false, "\(String(describing: error))")
    let readError = journalError { _ = try JournalFixtures.readAll(dir.path) }
    #expect(readError?.code == .sequenceBreak, "\(String(describing: readError))")
    #expect(readError?.message.contains(whereItIs) == movedAside, "\(String(describing: readError))")
    #expect(error?.code == .sequenceBreak, "\(String(describing: error))")
    #expect(error?.file == victim, "\(String(describing: error))")
    #expect(error?.offset == 0, "\(String(describing: error))")
    let first = Layout.firstSequence(ofSegmentNamed: victim)!
    #expect(error?.sequences?.lowerBound == first, "\(String(describing: error))")
    // Known gone through the last batch the index names in it (not only its first), and maybe
    // further: the text says so.
    let lastNamed = try #require(
      SparseIndex.lastEntry(
        directory: dir.path, journalID: JournalReader(directory: dir.path).id, segment: first, atOrAfter: 0,
        io: PosixFileIO()))
    if onlySegment { #expect(lastNamed.firstSequence > first) }
    #expect(error?.sequences == first...lastNamed.firstSequence, "\(String(describing: error))")
    #expect(error?.sequencesMayGoFurther == true, "\(String(describing: error))")

    let report = try JournalReader(directory: dir.path).verify()
    #expect(report.problems.map(\.file) == [victim], "\(report.problems)")
    #expect(report.problems.first?.sequences == first...lastNamed.firstSequence, "\(report.problems)")
    #expect(report.problems.first?.description.contains("from \(first) at least through") == true)
    #expect(report.problems.first?.message.contains(whereItIs) == movedAside, "\(report.problems)")

    _ = try Journal.repair(directory: dir.path)
    let reopened = try Journal(directory: dir.path, options: options)
    #expect(reopened.lastSequence == first - 1)
    try reopened.appendAndWait([NewRecord(timestamp: 1, payload: [7])])
    reopened.close()
    let after = try JournalFixtures.readAll(dir.path)
    #expect(Array(after.dropLast()) == Array(records.prefix(Int(first - 1))))
    #expect(after.last?.sequence == first)
  }

  /// A missing segment before intact ones (the first, or one in the middle) is a gap only a
  /// backup fills: repair used to move every later segment aside (the first case left an empty
  /// journal), though they were intact. It now refuses, moving nothing, and neither it nor the
  /// writer or a reader sends the user to it. Each names exactly the records missing: the missing
  /// first segment's range used to include the first record of the segment after it. `verify`
  /// reports the gap once, naming the missing file (it used to report it at the segment after
  /// the gap too).
  @Test(arguments: [0, 1])
  func repairRefusesRecordsMissingBeforeIntactSegments(victim: Int) async throws {
    let dir = TemporaryDirectory("missing-gap")
    let options = JournalFixtures.options(segmentBytes: 2 << 10)
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: 40, seed: 63)
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 2)
    let backup = try Files.read(dir.appending(segments[victim]))
    try FileManager.default.removeItem(atPath: dir.appending(segments[victim]))
    let gone =
      Layout.firstSequence(
        ofSegmentNamed: segments[victim])!...(Layout.firstSequence(
        ofSegmentNamed: segments[victim + 1])! - 1)
    let left = JournalFixtures.segments(dir.path)

    let verification = try JournalReader(directory: dir.path).verify()
    #expect(verification.problems.count == 1, "reported once: \(verification.problems)")
    let problem = try #require(verification.problems.first)
    #expect(problem.missingBeforeIntactSegments, "\(verification.problems)")
    #expect(problem.sequences == gone, "\(problem)")
    #expect(problem.file == segments[victim], "the missing file is named: \(problem)")

    for index in [true, false] {
      if !index { try FileManager.default.removeItem(atPath: dir.appending(Layout.indexName)) }
      let writer = journalError("writer, index \(index)") { _ = try Journal(directory: dir.path, options: options) }
      let reader = journalError("reader, index \(index)") { _ = try JournalFixtures.readAll(dir.path) }
      for error in [writer, reader] {
        #expect(error?.code == .sequenceBreak, "\(String(describing: error))")
        #expect(error?.sequences == gone, "index \(index): \(String(describing: error))")
        #expect(error?.missingBeforeIntactSegments == true, "index \(index): \(String(describing: error))")
        #expect(error?.description.contains("from a backup") == true, "\(String(describing: error))")
        #expect(error?.description.contains("moves the damaged part aside") == false, "\(String(describing: error))")
      }
      for dryRun in [true, false] {
        let error = journalError("repair, index \(index)") {
          _ = try Journal.repair(directory: dir.path, dryRun: dryRun)
        }
        #expect(error?.code == .sequenceBreak, "\(String(describing: error))")
        #expect(error?.sequences == gone, "\(String(describing: error))")
        #expect(error?.description.contains("Nothing was moved") == true, "\(String(describing: error))")
        let says = victim == 0 ? "the journal's first records are missing" : "records are missing between segments"
        #expect(error?.description.contains(says) == true, "\(String(describing: error))")
      }
      #expect(JournalFixtures.segments(dir.path) == left, "nothing may be moved")
      #expect(!Files.list(dir.path).contains("quarantine"))
      #expect(FileManager.default.fileExists(atPath: dir.appending(Layout.indexName)) == index)
    }

    // Restored from a backup, the journal is whole.
    try Files.write(backup, to: dir.appending(segments[victim]))
    #expect(try JournalFixtures.readAll(dir.path) == records)
  }

  /// Two segments missing side by side: `verify` names each file with its own records. The
  /// first one's range used to run to the next segment present, over the second's.
  @Test(arguments: [false, true])
  func twoMissingSegmentsInARowEachNameTheirOwnRecords(atTheEnd: Bool) async throws {
    let dir = TemporaryDirectory("missing-two")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(segmentBytes: 2 << 10))
    _ = try await JournalFixtures.write(journal, batches: 80, seed: 65)
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 3)
    let gone = atTheEnd ? Array(segments.suffix(2)) : [segments[1], segments[2]]
    for name in gone { try FileManager.default.removeItem(atPath: dir.appending(name)) }
    let firsts = try gone.map { try #require(Layout.firstSequence(ofSegmentNamed: $0)) }

    let report = try JournalReader(directory: dir.path).verify()
    #expect(report.problems.map(\.file) == gone, "\(report.problems)")
    #expect(report.problems.first?.sequences == firsts[0]...(firsts[1] - 1), "\(report.problems)")
    #expect(report.problems.first?.sequencesMayGoFurther == false, "\(report.problems)")
    #expect(report.problems.last?.sequences?.lowerBound == firsts[1], "\(report.problems)")
    if atTheEnd {
      #expect(report.problems.last?.sequencesMayGoFurther == true, "\(report.problems)")
    } else {
      let next = try #require(Layout.firstSequence(ofSegmentNamed: segments[3]))
      #expect(report.problems.last?.sequences == firsts[1]...(next - 1), "\(report.problems)")
    }
    #expect(report.problems.allSatisfy(\.missingBeforeIntactSegments) == !atTheEnd, "\(report.problems)")
  }

  /// A manifest whose journal id no segment carries (every segment names one other journal) is
  /// the one file likelier wrong: repair refuses, moving nothing, and names the segments' id, where
  /// it used to move every segment aside and leave an empty journal. One foreign segment among
  /// the journal's own is still repaired (`verify` locates it, repair moves it and what follows).
  /// A last segment whose header is damaged and which holds no valid batch is moved aside by
  /// opening (the trace of a crash while it was made); but when the index names batches in it,
  /// they were committed, and opening says they are gone.
  @Test(arguments: [false, true])
  func aDamagedLastSegmentTheIndexNamesIsReportedMissing(indexed: Bool) async throws {
    let dir = TemporaryDirectory("damaged-last")
    let options = JournalFixtures.options(segmentBytes: 2 << 10, indexBytes: 256)
    let journal = try Journal(directory: dir.path, options: options)
    _ = try await JournalFixtures.write(journal, batches: 60, seed: 64)
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 2)
    let victim = try #require(segments.last)
    let first = try #require(Layout.firstSequence(ofSegmentNamed: victim))
    let index = try JournalReader(directory: dir.path).loadIndex(JournalDirectory(path: dir.path, io: PosixFileIO()))
    let named = try #require(index.entries.last(where: { $0.segment == first }))
    if !indexed { try FileManager.default.removeItem(atPath: dir.appending(Layout.indexName)) }
    let size = Files.size(dir.appending(victim))
    try Files.write([UInt8](repeating: 0, count: size), to: dir.appending(victim))

    let reopened = try Journal(directory: dir.path, options: options)
    defer { reopened.close() }
    #expect(reopened.recovery.movedAside.map(\.segment) == [victim], "\(reopened.recovery)")
    #expect(reopened.lastSequence == first - 1)
    if indexed {
      let missing = try #require(reopened.recovery.missingRecords, "\(reopened.recovery)")
      #expect(missing.segment == victim && missing.sequences == first...named.firstSequence, "\(missing)")
      #expect(missing.indexedOffset == named.offset, "\(missing)")
    } else {
      #expect(reopened.recovery.missingRecords == nil, "nothing witnesses records there")
    }
  }

  @Test func repairRefusesWhenOnlyTheManifestDisagrees() async throws {
    let dir = TemporaryDirectory("manifest-id")
    let options = JournalFixtures.options(segmentBytes: 2 << 10)
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: 40, seed: 62)
    let ownID = journal.id
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 2)
    let other = JournalID.random()
    try Files.write(Manifest(journalID: other).encoded(), to: dir.appending(Layout.manifestName))

    for dryRun in [true, false] {
      let error = journalError { _ = try Journal.repair(directory: dir.path, dryRun: dryRun) }
      #expect(error?.code == .badManifest, "\(String(describing: error))")
      #expect(error?.file == Layout.manifestName)
      #expect(error?.message.contains("belong to journal \(ownID)") == true, "\(String(describing: error))")
    }
    #expect(JournalFixtures.segments(dir.path) == segments, "nothing may be moved")
    #expect(!Files.list(dir.path).contains("quarantine"))
    // verify names the id repair names, rather than advise the repair that refuses.
    #expect(try JournalReader(directory: dir.path).verify().segmentsJournalID == ownID)

    // With the manifest put back, the journal is whole.
    try Files.write(Manifest(journalID: ownID).encoded(), to: dir.appending(Layout.manifestName))
    #expect(try JournalFixtures.readAll(dir.path) == records)
    #expect(try JournalReader(directory: dir.path).verify().segmentsJournalID == nil)
  }
}
