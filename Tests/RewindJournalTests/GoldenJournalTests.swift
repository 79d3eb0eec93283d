import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// The golden journal in Journal/golden/v1 was written by format version 1. Every later version
/// must still read it, record for record, as its contents.json says.
///
/// To re-record it (only when the format version changes, into a new vN folder):
/// `REWIND_RECORD_GOLDEN=1 swift test --filter GoldenJournalTests`.
@Suite struct GoldenJournalTests {
  static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Journal/golden/v1").path
  static var journalPath: String { folder + "/journal" }

  struct Contents: Codable, Equatable {
    struct Record: Codable, Equatable {
      var seq: UInt64
      var timestamp: Int64
      var payloadHex: String
    }
    var format: Int
    var journalID: String
    var segments: [String]
    var records: [Record]
  }

  /// The records the golden journal holds, made deterministically: text and binary payloads,
  /// an empty one, batches of 1 to 9 records, timestamps that step back once.
  static func goldenBatches() -> [[NewRecord]] {
    var random = SeededGenerator(seed: 0x601D)
    var clock: Int64 = 1_767_225_600_000_000_000  // 2026-01-01T00:00:00Z
    var batches: [[NewRecord]] = []
    for batch in 0..<40 {
      var records: [NewRecord] = []
      for i in 0..<(batch % 9 + 1) {
        clock += batch == 20 && i == 0 ? -5_000_000_000 : Int64.random(in: 1...2_000_000_000, using: &random)
        let payload: [UInt8] =
          switch (batch + i) % 4 {
          case 0: Array(#"{"name":"note.created","id":"n\#(batch)-\#(i)","title":"golden"}"#.utf8)
          case 1: random.bytes(Int.random(in: 1...64, using: &random))
          case 2: []
          default: random.eventLikePayload(200)
          }
        records.append(NewRecord(timestamp: clock, payload: payload))
      }
      batches.append(records)
    }
    return batches
  }

  static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

  @Test(
    .enabled(
      if: ProcessInfo.processInfo.environment["REWIND_RECORD_GOLDEN"] == "1", "records the golden files when asked"))
  func recordGoldenJournalWhenAsked() throws {
    try? FileManager.default.removeItem(atPath: Self.folder)
    try FileManager.default.createDirectory(atPath: Self.folder, withIntermediateDirectories: true)
    var options = JournalOptions(durability: .none)
    options.newJournalID = JournalID(hex: "52657769e4641476f6c64656e0000001")!
    options.segmentTargetBytes = 2048
    options.indexIntervalBytes = 512
    let journal = try Journal(directory: Self.journalPath, options: options)
    var records: [Contents.Record] = []
    for batch in Self.goldenBatches() {
      let range = try journal.appendAndWait(batch)
      for (sequence, record) in zip(range, batch) {
        records.append(.init(seq: sequence, timestamp: record.timestamp, payloadHex: Self.hex(record.payload)))
      }
    }
    journal.close()
    try FileManager.default.removeItem(atPath: Self.journalPath + "/LOCK")
    let contents = Contents(
      format: 1, journalID: journal.id.description,
      segments: Files.list(Self.journalPath).filter { $0.hasSuffix(".lz4") }, records: records)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(contents).write(to: URL(fileURLWithPath: Self.folder + "/contents.json"))
  }

  static func contents() throws -> Contents {
    try JSONDecoder().decode(Contents.self, from: Data(contentsOf: URL(fileURLWithPath: folder + "/contents.json")))
  }

  @Test func goldenJournalReadsBackAsRecorded() throws {
    let contents = try Self.contents()
    #expect(contents.segments.count >= 2, "the golden journal should span segments")
    let reader = try JournalReader(directory: Self.journalPath)
    #expect(try reader.id.description == contents.journalID)
    var read: [Contents.Record] = []
    let cursor = try reader.records()
    while let record = try cursor.next() {
      read.append(.init(seq: record.sequence, timestamp: record.timestamp, payloadHex: Self.hex(record.payload)))
    }
    #expect(read == contents.records)
    let report = try reader.verify()
    #expect(report.isSound)
    #expect(report.unfinishedTail == nil)
    #expect(report.segments == contents.segments.count)
  }

  @Test func goldenJournalSeeksByIndex() throws {
    let contents = try Self.contents()
    let reader = try JournalReader(directory: Self.journalPath)
    for record in contents.records {
      #expect(try reader.record(record.seq).map { Self.hex($0.payload) } == record.payloadHex)
    }
  }

  @Test func goldenJournalOpensForWritingAndContinues() throws {
    let contents = try Self.contents()
    let copy = TemporaryDirectory("golden")
    try Files.copyDirectory(Self.journalPath, to: copy.appending("journal"))
    let journal = try Journal(directory: copy.appending("journal"))
    #expect(journal.recovery.isClean)
    #expect(journal.recovery.indexRepairReason == nil, "the golden index should be current")
    #expect(journal.lastSequence == UInt64(contents.records.count))
    let next = try journal.appendAndWait([NewRecord(timestamp: 0, payload: [42])])
    #expect(next.lowerBound == UInt64(contents.records.count + 1))
  }

  /// The golden journal was generated from `goldenBatches()`; if either changes, they disagree.
  @Test func goldenContentsMatchTheirGenerator() throws {
    let expected = Self.goldenBatches().flatMap { $0 }
    let contents = try Self.contents()
    #expect(contents.records.map(\.payloadHex) == expected.map { Self.hex($0.payload) })
    #expect(contents.records.map(\.timestamp) == expected.map(\.timestamp))
  }
}
