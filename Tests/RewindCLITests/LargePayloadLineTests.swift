import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind
@testable import RewindCLI

/// `log` and `tail` show the first characters of each event's fields, and render only as far as
/// that takes (`AuditedEvent.init(_:lineWidth:)`): a payload of hundreds of megabytes, which
/// a small LZ4 frame decompresses to, rendered whole took minutes and gigabytes for one line.
/// Each line must read as it did when the whole payload was rendered: the rest of the payload is
/// still read, for the same errors and notes.
@Suite struct LargePayloadLineTests {
  struct Bulky: Event {
    static let name = "test.bulky"
    var values: [Int?]
    var text: String
  }

  static func record(_ payload: [UInt8], _ sequence: UInt64 = 1) -> JournalRecord {
    JournalRecord(sequence: sequence, timestamp: 1_767_225_600_000_000_000, payload: payload)
  }

  static func event(_ event: Bulky) throws -> JournalRecord {
    record(try EventRecord.encode(event, origin: .user, commandID: Identifier(high: 1, low: 2)))
  }

  /// Payloads far past the budget: an event of a million nulls, one of a long string of
  /// two-byte characters and escapes, fields that do not decode, and non-event payloads of text
  /// (cut inside a character) and of bytes.
  static func large() throws -> [(String, JournalRecord)] {
    let escapes = String(repeating: "ü\u{1B}\"", count: 200_000)
    let fields = try EventRecord.encode(
      Bulky(values: [], text: "x"), origin: .user, commandID: Identifier(high: 1, low: 2))
    return [
      ("a million nulls", try event(Bulky(values: Array(repeating: nil, count: 1_000_000), text: "after"))),
      ("a long string", try event(Bulky(values: [1, 2], text: escapes))),
      ("fields that do not decode", record(fields.dropLast() + [UInt8](repeating: 0x07, count: 300_000))),
      ("text", record(Array(String(repeating: "é", count: 300_000).utf8))),
      ("bytes", record([0xFF] + [UInt8](repeating: 0, count: 300_000))),
      // Text at the start, a byte that is not UTF-8 far past what a line shows: hex, as whole.
      ("text, then a bad byte", record(Array(String(repeating: "a", count: 300_000).utf8) + [0xFF])),
      // Characters of many bytes each: more room is taken until the line has its characters.
      ("emoji", try event(Bulky(values: [], text: String(repeating: "👨‍👩‍👧‍👦", count: 100_000)))),
      (
        "combining marks",
        try event(Bulky(values: [], text: String(repeating: "e\u{301}\u{302}\u{303}\u{304}", count: 100_000)))
      ),
      ("text of emoji", record(Array(String(repeating: "🇫🇷", count: 100_000).utf8))),
    ]
  }

  /// Payloads a little past the first budget, of characters of many bytes: whole, or cut past
  /// what the line shows.
  static func justPast() throws -> [(String, JournalRecord)] {
    [
      ("thirty families", try event(Bulky(values: [], text: String(repeating: "👨‍👩‍👧‍👦", count: 30)))),
      ("flags as text", record(Array(String(repeating: "🇫🇷", count: 200).utf8))),
    ]
  }

  @Test(arguments: [1, 10, 160])
  func aLineOfALargePayloadIsTheLineOfItsWholeRendering(width: Int) throws {
    for (what, record) in try Self.large() + Self.justPast() {
      let whole = AuditedEvent(record)
      let cut = AuditedEvent(record, lineWidth: width)
      // An escape at the cut may take six bytes for one; characters of many bytes, more room.
      #expect(cut.payload.utf8.count <= 256 * renderingBudget(width: width), "\(what): \(cut.payload.utf8.count) bytes")
      #expect(cut.line(width: width) == whole.line(width: width), "\(what)")
      #expect(cut.problem == whole.problem, "\(what): \(String(describing: cut.problem))")
      #expect(cut.payloadEncoding == whole.payloadEncoding, "\(what)")
    }
    for (what, record) in try Self.large() {
      #expect(AuditedEvent(record, lineWidth: width).isCut, "\(what): rendered whole")
    }
  }

  /// The demo's events, each far under the budget, render whole and alike.
  @Test func smallPayloadsRenderWhole() async throws {
    let journal = try await NotebookJournal.write(commands: 300, seed: 12)
    let cursor = try JournalReader(directory: journal.path).records()
    var count = 0
    while let record = try cursor.next() {
      let whole = AuditedEvent(record)
      let budgeted = AuditedEvent(record, lineWidth: 160)
      #expect(!budgeted.isCut && budgeted.payload == whole.payload, "\(record.sequence)")
      #expect(budgeted.line(width: 160) == whole.line(width: 160))
      count += 1
    }
    #expect(count > 250)
  }
}
