import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// A deleted last segment is committed data lost, not an empty tail: the index still names it.
/// Opening refuses (it would number new records over the lost ones), `verify` reports it, and
/// `repair` lets the journal continue from what is left, saying what was lost.
@Suite struct MissingSegmentTests {
  @Test(arguments: [false, true])
  func aDeletedLastSegmentIsReportedAndRepairable(onlySegment: Bool) async throws {
    let dir = TemporaryDirectory("missing-last")
    let options = JournalFixtures.options(segmentBytes: onlySegment ? 64 << 20 : 2 << 10)
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: 40, seed: 61)
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try #require(onlySegment ? segments.count == 1 : segments.count > 2)
    let victim = try #require(segments.last)
    try FileManager.default.removeItem(atPath: dir.appending(victim))

    let error = journalError { _ = try Journal(directory: dir.path, options: options) }
    #expect(error?.code == .sequenceBreak, "\(String(describing: error))")
    #expect(error?.file == victim, "\(String(describing: error))")
    #expect(error?.offset == 0, "\(String(describing: error))")
    let first = Layout.firstSequence(ofSegmentNamed: victim)!
    #expect(error?.sequences?.lowerBound == first, "\(String(describing: error))")

    let report = try JournalReader(directory: dir.path).verify()
    #expect(report.problems.map(\.file) == [victim], "\(report.problems)")

    _ = try Journal.repair(directory: dir.path)
    let reopened = try Journal(directory: dir.path, options: options)
    #expect(reopened.lastSequence == first - 1)
    try reopened.appendAndWait([NewRecord(timestamp: 1, payload: [7])])
    reopened.close()
    let after = try JournalFixtures.readAll(dir.path)
    #expect(Array(after.dropLast()) == Array(records.prefix(Int(first - 1))))
    #expect(after.last?.sequence == first)
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
