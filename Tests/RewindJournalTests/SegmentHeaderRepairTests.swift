import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Every field of a segment header but its flags follows from the format, the manifest and the
/// file's name. One flipped bit in the header of a segment whose batches all held made `repair`
/// move that segment and every later one aside (the whole journal, for the first segment's
/// header), and opening refused until then. Repair now writes such a header again, keeping the
/// damaged bytes in `quarantine/`, where the batch after it holds and numbers the record the
/// name says, and no segment names another journal (RELIABILITY 370).
@Suite struct SegmentHeaderRepairTests {
  static let journalID = JournalID(bytes: Array(1...16))

  /// Each single flipped bit of a header, compacted or not, gives back the header written.
  @Test(arguments: [UInt16(0), SegmentHeader.compactedFlag])
  func everyFlippedBitGivesBackTheHeaderWritten(flags: UInt16) {
    var header = SegmentHeader(journalID: Self.journalID, firstSequence: 281_970)
    header.flags = flags
    let written = header.encoded()
    for bit in 0..<(written.count * 8) {
      var damaged = written
      damaged[bit / 8] ^= 1 << (bit % 8)
      #expect(SegmentHeader.decode(damaged) != .success(header), "bit \(bit)")
      let rebuilt = SegmentHeader.rebuilt(over: damaged, journalID: Self.journalID, firstSequence: 281_970)
      #expect(rebuilt.encoded() == written, "bit \(bit)")
    }
  }

  /// A header overwritten whole says nothing of its flags: the segment reads as never compacted.
  @Test func aHeaderOverwrittenWholeGetsNoFlags() {
    let rebuilt = SegmentHeader.rebuilt(
      over: Array(repeating: 0x47, count: Layout.segmentHeaderSize), journalID: Self.journalID, firstSequence: 9)
    #expect(rebuilt.flags == 0)
    #expect(SegmentHeader.decode(rebuilt.encoded()) == .success(rebuilt))
  }

  /// A flipped bit in the header of the first, a middle or the last segment: `verify` reports
  /// it, a plan says the header will be written again and where the journal will end, changing
  /// nothing, and the repair writes back the bytes that were there, keeping the damaged ones.
  /// Every record reads again, `verify` finds the journal sound, and the index stays.
  @Test(arguments: ["first", "middle", "last"])
  func aDamagedSegmentHeaderIsWrittenAgain(place: String) async throws {
    let (dir, options, records) = try await JournalFixtures.smallSegments("header-\(place)", batches: 40, seed: 91)
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 3)
    let victim =
      switch place {
      case "first": segments[0]
      case "middle": segments[segments.count / 2]
      default: try #require(segments.last)
      }
    let written = try Files.read(dir.appending(victim))
    var damaged = written
    damaged[20] ^= 0x10  // inside the journal id
    try Files.write(damaged, to: dir.appending(victim))
    let index = try Files.read(dir.appending(Layout.indexName))

    let verification = try JournalReader(directory: dir.path).verify()
    #expect(verification.problems.count == 1, "\(verification.problems)")
    let problem = try #require(verification.problems.first)
    #expect(problem.file == victim && problem.offset == 0 && problem.headerRebuildable, "\(problem)")
    #expect(problem.message.contains("repair writes it again"), "\(problem)")
    #expect(journalError { _ = try Journal(directory: dir.path, options: options) }?.file == victim)

    let listed = Files.list(dir.path)
    let plan = try Journal.repair(directory: dir.path, dryRun: true)
    #expect(plan.headersRewritten.map(\.segment) == [victim], "\(plan.headersRewritten)")
    #expect(plan.moved.isEmpty && plan.zerosCut.isEmpty, "\(plan.moved)")
    #expect(plan.lastSequence == UInt64(records.count))
    #expect(Files.list(dir.path) == listed)
    #expect(try Files.read(dir.appending(victim)) == damaged, "a plan writes nothing")

    let done = try Journal.repair(directory: dir.path)
    #expect(done.headersRewritten.map(\.segment) == [victim], "\(done.headersRewritten)")
    #expect(done.moved.isEmpty, "\(done.moved)")
    #expect(done.lastSequence == UInt64(records.count))
    #expect(try Files.read(dir.appending(victim)) == written)
    let kept = try #require(done.headersRewritten.first?.movedTo)
    #expect(try Files.read(dir.appending(kept)) == Array(damaged[..<Layout.segmentHeaderSize]))
    #expect(try Files.read(dir.appending(Layout.indexName)) == index, "the index names batches that stay")
    #expect(try JournalReader(directory: dir.path).verify().isSound)
    #expect(try JournalFixtures.readAll(dir.path) == records)
  }

  /// Written again only on the evidence: a header over a damaged first batch moves with its
  /// segment, as before; so does a damaged header while another segment's header, whose checksum
  /// holds, names another journal (the manifest may be what is wrong, and its id would be
  /// written), and that other header is left as it is too. The review of the day's change found
  /// two more, now moved as before too: another journal's segment under this name, its header's
  /// checksum damaged, was written this journal's id and its records passed for this journal's;
  /// and with a manifest naming another id (by one bit), a damaged header was written that id.
  /// Nor is a header overwritten whole (its id is no evidence), or one the index does not vouch
  /// for (no index).
  @Test(arguments: [
    "firstBatch", "anotherJournal", "anotherJournalsSegment", "wrongManifest", "overwritten", "noIndex",
  ])
  func aHeaderIsWrittenAgainOnlyOnTheEvidence(case kind: String) async throws {
    let (dir, _, _) = try await JournalFixtures.smallSegments("header-\(kind)", batches: 40, seed: 92)
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 3)
    let victim = segments[2]
    if kind == "anotherJournalsSegment" {
      // The same numbering (the fixture's records), another journal id.
      let (other, _, _) = try await JournalFixtures.smallSegments("header-other", batches: 40, seed: 92)
      try Files.write(try Files.read(other.appending(victim)), to: dir.appending(victim))
    }
    var bytes = try Files.read(dir.appending(victim))
    switch kind {
    case "anotherJournalsSegment": bytes[41] ^= 0x01  // its checksum
    case "overwritten": for offset in 0..<Layout.segmentHeaderSize { bytes[offset] = 0x47 }
    default: bytes[20] ^= 0x10
    }
    if kind == "firstBatch" { bytes[Layout.segmentHeaderSize + 20] ^= 0x10 }
    try Files.write(bytes, to: dir.appending(victim))
    if kind == "noIndex" { try FileManager.default.removeItem(atPath: dir.appending(Layout.indexName)) }
    if kind == "wrongManifest" {
      let manifest = dir.appending(Layout.manifestName)
      var text = try String(contentsOfFile: manifest, encoding: .utf8)
      let id = try #require(text.firstRange(of: #/"journalID"\s*:\s*"/#)).upperBound
      let digit = try #require(Int(String(text[id]), radix: 16))
      text.replaceSubrange(id...id, with: String(digit ^ 1, radix: 16))  // one bit of the id
      try #require(text != (try String(contentsOfFile: manifest, encoding: .utf8)), "the manifest's id changed")
      try text.write(toFile: manifest, atomically: true, encoding: .utf8)
    }
    let foreign = segments[1]
    if kind == "anotherJournal" {
      var other = try Files.read(dir.appending(foreign))
      let first = try #require(Layout.firstSequence(ofSegmentNamed: foreign))
      other.replaceSubrange(
        0..<Layout.segmentHeaderSize,
        with: SegmentHeader(journalID: JournalID(bytes: Array(repeating: 7, count: 16)), firstSequence: first)
          .encoded())
      try Files.write(other, to: dir.appending(foreign))
    }

    let problems = try JournalReader(directory: dir.path).verify().problems
    let problem = try #require(problems.first { $0.file == victim && $0.offset == 0 }, "\(problems)")
    #expect(!problem.headerRebuildable, "\(problem)")
    #expect(problems.allSatisfy { !$0.headerRebuildable }, "\(problems)")
    // Moved from the first damage on, as before: the segment naming another journal, every
    // segment when the manifest names another, else the damaged one.
    let first = kind == "anotherJournal" ? foreign : kind == "wrongManifest" ? segments[0] : victim
    let plan = try Journal.repair(directory: dir.path, dryRun: true)
    #expect(plan.headersRewritten.isEmpty, "\(plan.headersRewritten)")
    #expect(plan.moved.first?.segment == first && plan.moved.first?.offset == 0, "\(plan.moved)")
    let done = try Journal.repair(directory: dir.path)
    #expect(done.headersRewritten.isEmpty, "\(done.headersRewritten)")
    #expect(done.moved.map(\.segment) == plan.moved.map(\.segment), "\(done.moved)")
    #expect(Files.list(dir.appending("quarantine")).allSatisfy { !$0.hasSuffix(".header") })
  }

  /// A one-segment journal whose manifest names another id by one bit, its segment header damaged
  /// (the review's case): no other segment names the journal, but the index's header does, and
  /// disagrees with the manifest, so the header is not written with the manifest's id.
  @Test func aManifestTheIndexDisagreesWithIsNotWrittenIntoAHeader() async throws {
    let dir = TemporaryDirectory("header-manifest-one")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    _ = try await JournalFixtures.write(journal, batches: 60, seed: 93)
    journal.close()
    let segment = try #require(JournalFixtures.segments(dir.path).first)
    var bytes = try Files.read(dir.appending(segment))
    bytes[20] ^= 0x10
    try Files.write(bytes, to: dir.appending(segment))
    let manifest = dir.appending(Layout.manifestName)
    var text = try String(contentsOfFile: manifest, encoding: .utf8)
    let id = try #require(text.firstRange(of: #/"journalID"\s*:\s*"/#)).upperBound
    let digit = try #require(Int(String(text[id]), radix: 16))
    text.replaceSubrange(id...id, with: String(digit ^ 1, radix: 16))
    try text.write(toFile: manifest, atomically: true, encoding: .utf8)

    let problems = try JournalReader(directory: dir.path).verify().problems
    #expect(problems.first?.file == segment && problems.first?.headerRebuildable == false, "\(problems)")
    let plan = try Journal.repair(directory: dir.path, dryRun: true)
    #expect(plan.headersRewritten.isEmpty, "\(plan.headersRewritten)")
    #expect(try Files.read(dir.appending(segment)) == bytes)
  }

  /// A journal of one segment whose index names several of its batches: the directory, the
  /// segment, the last entry past its first batch, and the records written.
  static func indexedSegment(_ name: String, seed: UInt64) async throws -> (
    TemporaryDirectory, String, IndexEntry, [JournalRecord]
  ) {
    let dir = TemporaryDirectory(name)
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(indexBytes: 256))
    let records = try await JournalFixtures.write(journal, batches: 60, seed: seed)
    journal.close()
    let segment = try #require(JournalFixtures.segments(dir.path).first)
    let layout = try JournalDirectory(path: dir.path, io: JournalOptions().io)
    let entries = SparseIndex.scanWellFormed(directory: dir.path, journalID: layout.journalID, io: JournalOptions().io)
      .entries
    let entry = try #require(entries.last { $0.offset > Int64(Layout.segmentHeaderSize) }, "\(entries)")
    return (dir, segment, entry, records)
  }

  /// An index entry whose batch the segment numbers otherwise (a batch header that holds, its
  /// first sequence moved on): the index contradicts the segment, and the header is left. The
  /// first mend read such a batch as damage of its own, which contradicted nothing.
  @Test func anIndexEntryTheSegmentContradictsKeepsTheHeader() async throws {
    let (dir, segment, entry, _) = try await Self.indexedSegment("header-index-contradicts", seed: 94)
    var bytes = try Files.read(dir.appending(segment))
    let at = Int(entry.offset)
    guard case .success(var header) = BatchHeader.decode(bytes[at..<(at + Layout.batchHeaderSize)], limits: .largest)
    else {
      Issue.record("no batch header at the entry's offset")
      return
    }
    header.firstSequence += 1_000
    var writer = ByteWriter(capacity: Layout.batchHeaderSize)
    header.encode(into: &writer)
    bytes.replaceSubrange(at..<(at + Layout.batchHeaderSize), with: writer.bytes)
    bytes[20] ^= 0x10
    try Files.write(bytes, to: dir.appending(segment))

    let problems = try JournalReader(directory: dir.path).verify().problems
    let problem = try #require(problems.first { $0.file == segment && $0.offset == 0 }, "\(problems)")
    #expect(!problem.headerRebuildable, "\(problem)")
    #expect(try Journal.repair(directory: dir.path, dryRun: true).headersRewritten.isEmpty)
  }

  /// A batch header damaged at an index entry's place (its checksum fails) contradicts nothing:
  /// it is damage of its own. With one bit of the segment header flipped too, repair writes the
  /// header again and moves the segment's tail from that batch on, where 16ff0fd moved the whole
  /// segment (helper-224).
  @Test func aDamagedBatchAtAnIndexEntryLeavesTheHeaderToBeWritten() async throws {
    let (dir, segment, entry, records) = try await Self.indexedSegment("header-index-damaged-batch", seed: 95)
    var bytes = try Files.read(dir.appending(segment))
    let written = bytes
    bytes[Int(entry.offset) + 20] ^= 0x10  // inside the batch header: its checksum fails
    bytes[20] ^= 0x10
    try Files.write(bytes, to: dir.appending(segment))

    let problems = try JournalReader(directory: dir.path).verify().problems
    let problem = try #require(problems.first { $0.file == segment && $0.offset == 0 }, "\(problems)")
    #expect(problem.headerRebuildable, "\(problem)")
    let done = try Journal.repair(directory: dir.path)
    #expect(done.headersRewritten.map(\.segment) == [segment], "\(done)")
    #expect(done.moved.map(\.offset) == [entry.offset], "\(done.moved)")
    #expect(done.lastSequence == entry.firstSequence - 1)
    #expect(try Files.read(dir.appending(segment)) == Array(written[..<Int(entry.offset)]))
    #expect(try JournalFixtures.readAll(dir.path) == records.filter { $0.sequence < entry.firstSequence })
  }
}
