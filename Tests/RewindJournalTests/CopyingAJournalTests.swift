import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// What the README's "Backing up a journal" says: a copy of the directory taken while no writer
/// has it open is the journal, and a file-by-file copy of a journal a writer appends to is not
/// one, when the writer seals a segment and starts the next while the copy runs.
@Suite struct CopyingAJournalTests {
  private static func copy(_ name: String, from source: TemporaryDirectory, to target: TemporaryDirectory) throws {
    try FileManager.default.copyItem(atPath: source.appending(name), toPath: target.appending(name))
  }

  @Test func aCopyOfAClosedJournalIsTheJournal() async throws {
    let dir = TemporaryDirectory("copy-closed")
    let options = JournalFixtures.options(segmentBytes: 2 << 10)
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: 60, seed: 5)
    journal.close()
    try #require(JournalFixtures.segments(dir.path).count > 2)

    let copy = TemporaryDirectory("copy-closed-backup")
    for name in Files.list(dir.path) where name != "LOCK" { try Self.copy(name, from: dir, to: copy) }
    let report = try JournalReader(directory: copy.path).verify()
    #expect(report.isSound && report.records == UInt64(records.count), "\(report)")
    #expect(try JournalFixtures.readAll(copy.path) == records)
    let reopened = try Journal(directory: copy.path, options: options)
    #expect(reopened.recovery.isClean && reopened.lastSequence == UInt64(records.count))
    reopened.close()
  }

  /// The copy takes the active segment as it stands, the writer then seals it and starts the
  /// next, and the copy takes that one: the records appended to the first segment after it was
  /// copied are in neither copied file. Every record the copy holds is the journal's, and
  /// `verify` names the gap rather than reading the copy as a shorter journal.
  @Test func aFileByFileCopyOfAJournalBeingWrittenCanMissRecords() async throws {
    let dir = TemporaryDirectory("copy-live")
    let options = JournalFixtures.options(.always, segmentBytes: 2 << 10)
    let journal = try Journal(directory: dir.path, options: options)
    var records = try await JournalFixtures.write(journal, batches: 3, seed: 7)
    let active = try #require(JournalFixtures.segments(dir.path).last)
    let copy = TemporaryDirectory("copy-live-backup")
    try Self.copy(Layout.manifestName, from: dir, to: copy)
    try Self.copy(active, from: dir, to: copy)
    let copiedThrough = UInt64(records.count)
    while JournalFixtures.segments(dir.path).last == active {
      records = try await JournalFixtures.write(journal, batches: 1, seed: UInt64(records.count), after: records)
    }
    for name in JournalFixtures.segments(dir.path) where name != active { try Self.copy(name, from: dir, to: copy) }
    journal.close()

    let next = try #require(Layout.firstSequence(ofSegmentNamed: JournalFixtures.segments(copy.path)[1]))
    try #require(next > copiedThrough + 1, "the copied segment held every record of the first")
    let report = try JournalReader(directory: copy.path).verify()
    #expect(!report.isSound, "\(report)")
    let gap = report.problems.compactMap(\.sequences).first
    #expect(gap?.lowerBound == copiedThrough + 1 && gap?.upperBound == next - 1, "\(report.problems)")
    // What the copy holds before the gap is the journal's.
    let cursor = try JournalReader(directory: copy.path).records(from: 1)
    var intact: [JournalRecord] = []
    while intact.count < Int(copiedThrough), let record = try cursor.next() { intact.append(record) }
    #expect(intact == Array(records.prefix(Int(copiedThrough))), "\(intact.count) records")
  }
}
