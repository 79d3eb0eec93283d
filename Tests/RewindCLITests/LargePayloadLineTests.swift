import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind
@testable import RewindCLI

/// `log` and `tail` show the first characters of each event's fields, and render only as far as
/// that takes (`AuditedEvent.init(_:renderingAtMost:)`): a payload of hundreds of megabytes, which
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
    ]
  }

  @Test(arguments: [1, 10, 160])
  func aLineOfALargePayloadIsTheLineOfItsWholeRendering(width: Int) throws {
    for (what, record) in try Self.large() {
      let whole = AuditedEvent(record)
      let cut = AuditedEvent(record, renderingAtMost: renderingBudget(width: width))
      #expect(cut.isCut, "\(what): rendered whole")
      // An escape at the cut may take six bytes for one.
      #expect(cut.payload.utf8.count <= 8 * renderingBudget(width: width), "\(what): \(cut.payload.utf8.count) bytes")
      #expect(cut.line(width: width) == whole.line(width: width), "\(what)")
      #expect(cut.problem == whole.problem, "\(what): \(String(describing: cut.problem))")
    }
  }

  /// The demo's events, each far under the budget, render whole and alike.
  @Test func smallPayloadsRenderWhole() async throws {
    let journal = try await NotebookJournal.write(commands: 300, seed: 12)
    let cursor = try JournalReader(directory: journal.path).records()
    var count = 0
    while let record = try cursor.next() {
      let whole = AuditedEvent(record)
      let budgeted = AuditedEvent(record, renderingAtMost: renderingBudget(width: 160))
      #expect(!budgeted.isCut && budgeted.payload == whole.payload, "\(record.sequence)")
      #expect(budgeted.line(width: 160) == whole.line(width: 160))
      count += 1
    }
    #expect(count > 250)
  }
}
