import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Damage to segments that are not the last, as `verify` reports it and `repair` acts on it.
///
/// A segment that is not the last, cut short: the records from the cut up to the next segment's
/// first are in no file, and only a backup brings them back. Cut at a batch's end, verify called
/// it a break in the sequence and repair refused it, moving nothing; cut inside a batch (its
/// header or its frame), verify reported the damaged batch first, without the flag repair
/// refuses by, and repair moved that segment's tail and every later segment aside, intact as
/// they were, for the next writer to number new records over theirs (a review of the
/// maintenance commands, Dec 7).
@Suite struct CutSealedSegmentTests {
  /// A journal of 40 batches in segments of 2 KiB (more than three), and its segments' names.
  static func segmented(_ name: String, seed: UInt64) async throws -> (TemporaryDirectory, [String]) {
    let dir = TemporaryDirectory(name)
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(segmentBytes: 2 << 10))
    _ = try await JournalFixtures.write(journal, batches: 40, seed: seed)
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 3)
    return (dir, segments)
  }

  @Test(arguments: ["at a batch's end", "in a batch header", "inside a frame"])
  func repairRefusesASealedSegmentCutShortBeforeItsSuccessor(cut: String) async throws {
    let (dir, segments) = try await Self.segmented("cut-sealed-segment", seed: 72)
    let path = dir.appending(segments[1])
    let bytes = try Files.read(path)
    let frames = segmentFrames(in: bytes)
    try #require(frames.count > 2, "\(frames.count) batches in the segment")
    let frame = frames[frames.count / 2]
    let at =
      switch cut {
      case "at a batch's end": frame.offset
      case "in a batch header": frame.offset + 20
      default: frame.middleOfData
      }
    try Files.write(Array(bytes[..<at]), to: path)
    let next = try #require(Layout.firstSequence(ofSegmentNamed: segments[2]))

    let report = try JournalReader(directory: dir.path).verify()
    let first = try #require(report.problems.first)
    #expect(first.missingBeforeIntactSegments, "\(cut): \(report.problems)")
    #expect(first.sequences == frame.header.firstSequence...(next - 1), "\(cut): \(report.problems)")
    #expect(report.problems.count == 1, "one loss, one problem: \(report.problems)")

    let error = journalError { _ = try Journal.repair(directory: dir.path) }
    #expect(error?.code == .sequenceBreak, "\(cut): \(String(describing: error))")
    #expect(error?.missingBeforeIntactSegments == true, "\(cut): \(String(describing: error))")
    #expect(JournalFixtures.segments(dir.path) == segments, "nothing moved")
    #expect(try Files.read(path).count == at, "the cut segment is as it was")
  }

  /// A repair's plan said where the journal would end by where a reader finds its end when zeros
  /// end a sealed segment and a later segment's header is damaged: at the journal's last record,
  /// where the repair then ended it before the damaged segment (and moved the snapshots past
  /// that, which the plan left out; a review of the maintenance commands, Dec 7). The plan and
  /// the repair end it alike now.
  @Test func aRepairsPlanEndsTheJournalWhereTheRepairDoes() async throws {
    let (dir, segments) = try await Self.segmented("repair-plan-end", seed: 73)
    let zeros = dir.appending(segments[0])
    try Files.write(try Files.read(zeros) + [UInt8](repeating: 0, count: 5000), to: zeros)
    let damaged = dir.appending(segments[2])
    var bytes = try Files.read(damaged)
    bytes[20] ^= 0x5A
    // Its first batch too: a damaged header over batches that hold is written again, not moved.
    bytes[Layout.segmentHeaderSize + 20] ^= 0x5A
    try Files.write(bytes, to: damaged)
    let first = try #require(Layout.firstSequence(ofSegmentNamed: segments[2]))

    let plan = try Journal.repair(directory: dir.path, dryRun: true)
    #expect(plan.lastSequence == first - 1, "\(plan)")
    let done = try Journal.repair(directory: dir.path)
    #expect(done.lastSequence == first - 1, "\(done)")
    #expect(try JournalReader(directory: dir.path).lastSequence() == first - 1)
  }

  /// A segment whose header is damaged was passed over by `verify`: its batches were not
  /// counted (`rewind stats`, which says it counts every segment file, undercounted frames and
  /// records), and the next segment was reported as a break in the sequence, records missing
  /// before intact segments, though they were in that segment's valid batches (a review of the
  /// maintenance commands, Dec 7). Its batches are walked now: one problem, every frame counted.
  @Test func aSegmentWithADamagedHeaderIsOneProblemAndItsFramesCount() async throws {
    let (dir, segments) = try await Self.segmented("damaged-segment-header", seed: 74)
    let whole = try JournalReader(directory: dir.path).verify()
    try #require(whole.isSound)
    let path = dir.appending(segments[1])
    var bytes = try Files.read(path)
    bytes[20] ^= 0x5A
    try Files.write(bytes, to: path)

    let report = try JournalReader(directory: dir.path).verify()
    #expect(report.problems.count == 1, "\(report.problems)")
    #expect(report.problems.first?.file == segments[1] && report.problems.first?.offset == 0, "\(report.problems)")
    #expect(!report.problems.contains { $0.missingBeforeIntactSegments }, "\(report.problems)")
    #expect(report.batches == whole.batches && report.records == whole.records, "\(report)")
    #expect(report.lastSequenceRead == whole.lastSequence)
  }

  /// Zeros ending a sealed segment whose successor starts right after its last record hold no
  /// record: `verify` says so, and `repair` cuts them keeping every segment. A reader stopped
  /// there (`rewind backup`, `log`) said "records may be missing here" and "Committed data is
  /// damaged" (a review of the maintenance commands, Dec 7); it says what `verify` says now. A
  /// stray file's error names `repair` too.
  @Test func zerosThatHoldNoRecordAreSaidToHoldNone() async throws {
    let (dir, segments) = try await Self.segmented("zeros-no-record", seed: 75)
    let path = dir.appending(segments[1])
    try Files.write(try Files.read(path) + [UInt8](repeating: 0, count: 3000), to: path)
    let next = try #require(Layout.firstSequence(ofSegmentNamed: segments[2]))
    let error = journalError { _ = try JournalFixtures.readAll(dir.path) }
    #expect(error?.code == .corrupt, "\(String(describing: error))")
    let text = error.map(String.init(describing:)) ?? ""
    #expect(text.contains("the next segment starts at sequence \(next), so no records are missing"), "\(text)")
    #expect(text.contains("`rewind repair` takes them out (zeros cut, "), "\(text)")
    #expect(!text.contains("Committed data is damaged"), "\(text)")
  }

  /// A reader stopped at a sealed segment cut inside a batch said "Committed data is damaged …
  /// `rewind repair` moves the damaged part aside", which repair refuses for it, and named only
  /// the cut batch's records (the review of the day's change, Dec 7). It names the records gone
  /// up to the successor's first and sends to a backup, as `verify` does. With the successor
  /// missing too, `verify` names both losses: the cut's records, then the missing file's (the
  /// missing segment's problem had taken the cut's place).
  @Test func aCutBeforeALaterSegmentIsNamedAsRecordsGone() async throws {
    let (dir, segments) = try await Self.segmented("cut-sealed-reader", seed: 76)
    let path = dir.appending(segments[1])
    let bytes = try Files.read(path)
    let frame = try #require(segmentFrames(in: bytes).dropFirst().first)
    try Files.write(Array(bytes[..<frame.middleOfData]), to: path)
    let next = try #require(Layout.firstSequence(ofSegmentNamed: segments[2]))
    let error = journalError { _ = try JournalFixtures.readAll(dir.path) }
    #expect(error?.sequences == frame.header.firstSequence...(next - 1), "\(String(describing: error))")
    #expect(error?.missingBeforeIntactSegments == true, "\(String(describing: error))")
    #expect(error?.description.contains("restore the segment that held them from a backup") == true)

    try FileManager.default.removeItem(atPath: dir.appending(segments[2]))
    let after = try #require(Layout.firstSequence(ofSegmentNamed: segments[3]))
    let report = try JournalReader(directory: dir.path).verify()
    #expect(
      report.problems.map(\.sequences) == [frame.header.firstSequence...(next - 1), next...(after - 1)],
      "\(report.problems)")
    #expect(report.problems.map(\.file) == [segments[1], segments[2]], "\(report.problems)")
  }
}
