import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// `rewind verify` on a journal no registered model reads (another app's): with no model to
/// replay it, every event's envelope and fields are decoded without the app's types.
@Suite struct VerifyDecodingTests {
  /// Another app's journal, as that app writes it: a tally opened, then counted; and the tally's id.
  static func tallies() async throws -> (TemporaryDirectory, Identifier) {
    let written = TemporaryDirectory("cli-tally")
    let manager = try Manager<Tally>(
      directory: written.path, options: JournalOptions(durability: .none), ids: .sequential())
    let counter = try await manager.perform(.user) { _, command in
      let id = command.newID()
      command.record(TallyOpened(id: id, label: "visits"))
      return id
    }
    try await manager.perform(.user) { _, command in command.record(TallyCounted(tally: counter, by: 3)) }
    manager.close()
    return (written, counter)
  }

  /// Another app's journal: two `Tally` events, the second rewritten by `damage` (checksums stay
  /// valid: the bytes are wrong as written, as a buggy writer would leave them).
  static func journal(damage: ([UInt8]) -> [UInt8] = { $0 }) async throws -> TemporaryDirectory {
    let (written, _) = try await tallies()
    let reader = try JournalReader(directory: written.path)
    let records = try [1, 2].map { try #require(try reader.record(UInt64($0))) }
    let copy = TemporaryDirectory("cli-verify-copy")
    let journal = try Journal(directory: copy.path, options: JournalOptions(durability: .none))
    try journal.appendAndWait([
      NewRecord(timestamp: records[0].timestamp, payload: records[0].payload),
      NewRecord(timestamp: records[1].timestamp, payload: damage(records[1].payload)),
    ])
    journal.close()
    return copy
  }

  @Test func soundEventsDecodeFieldByField() async throws {
    let dir = try await Self.journal()
    let run = try await ToolRun.run("rewind", ["verify", dir.path])
    #expect(run.status == 0, "\(run.out)\(run.err)")
    #expect(run.out.contains("note: replay not checked: no registered model (workspace) knows this journal's events\n"))
    #expect(
      run.out.hasSuffix(
        "decoded: 2 events field by field, all sound\n"
          + "sound: 2 records in 1 frame, 1 segment, last sequence 2; frames and event decoding checked\n"),
      "\(run.out)")
  }

  @Test func anEventWhoseFieldsDoNotDecodeIsAFinding() async throws {
    let dir = try await Self.journal { payload in Array(payload.dropLast(3)) }
    let run = try await ToolRun.run("rewind", ["verify", dir.path])
    #expect(run.status == 1, "\(run.out)\(run.err)")
    #expect(
      run.out.contains(
        "problem: sequence 2: tally.counted v1 has Rewind's envelope but its fields do not decode ("),
      "\(run.out)")
    #expect(run.out.contains("`rewind show \(dir.path) 2` shows its bytes\n"))
    // The frames themselves are sound: the finding is the decoding, not a checksum. The frames'
    // line says so of the frames alone; no line calls the journal sound (it said `sound: 2
    // records ...` above the problem), and the last line is the verdict.
    #expect(run.out.contains("frames: sound, 2 records in 1 frame, 1 segment, last sequence 2\n"), "\(run.out)")
    #expect(!run.out.split(separator: "\n").contains { $0.hasPrefix("sound") }, "\(run.out)")
    #expect(
      run.out.hasSuffix(
        "decoded: 2 events field by field, 1 does not decode\n"
          + "not sound: the frames are sound through sequence 2, but event decoding did not pass: see the "
          + "problems above\n"), "\(run.out)")
  }

  @Test func recordsThatAreNotRewindEventsAreCountedNotFaulted() async throws {
    let dir = TemporaryDirectory("cli-verify-raw")
    let journal = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    try journal.appendAndWait([NewRecord(timestamp: 1, payload: Array("plain".utf8))])
    journal.close()
    let run = try await ToolRun.run("rewind", ["verify", dir.path])
    #expect(run.status == 0, "\(run.out)\(run.err)")
    #expect(
      run.out.hasSuffix(
        "decoded: 0 events field by field, 1 record that is not a Rewind event (not checked), all sound\n"
          + "sound: 1 record in 1 frame, 1 segment, last sequence 1; frames and event decoding checked\n"),
      "\(run.out)")
  }

  /// A Notebook journal with one record among its first 1,000 that the workspace cannot read
  /// was no journal of any registered model's to `verify`, which said "replay not checked" and
  /// "sound", exit 0, where the same record later on was a problem (a review of the events,
  /// Dec 7). The one model that knows the journal's events replays it now, and names the record.
  @Test(arguments: ["a newer version", "not an event", "an unknown name"])
  func aRecordTheJournalsModelCannotReadIsAProblem(record: String) async throws {
    let written = try await NotebookJournal.write(commands: 12, seed: 5)
    let reader = try JournalReader(directory: written.path)
    var records: [NewRecord] = []
    for sequence in 1...written.lastSequence {
      let record = try #require(try reader.record(sequence))
      records.append(NewRecord(timestamp: record.timestamp, payload: record.payload))
    }
    var payload = records[4].payload
    if record == "not an event" {
      payload = Array("not an event".utf8)
    } else if record == "an unknown name" {
      payload = try EventRecord.encode(
        ForeignEvent(label: "x"), origin: .user, commandID: Identifier(high: 0, low: 5))
    } else {
      // The envelope: layout 1, the name's length and bytes, then the schema version.
      let versionAt = 2 + Int(payload[1])
      try #require(payload[1] < 0x80 && payload[versionAt] < 0x80)
      payload[versionAt] = 9
    }
    records[4] = NewRecord(timestamp: records[4].timestamp, payload: payload)
    let copy = TemporaryDirectory("cli-verify-unreadable")
    let journal = try Journal(directory: copy.path, options: JournalOptions(durability: .none))
    try journal.appendAndWait(records)
    journal.close()
    let run = try await ToolRun.run("rewind", ["verify", copy.path])
    #expect(run.status == 1, "\(record): \(run.out)\(run.err)")
    #expect(run.out.contains("problem: replay of workspace stops at sequence 5: "), "\(record): \(run.out)")
    #expect(!run.out.contains("replay not checked"), "\(record): \(run.out)")
    #expect(!run.out.contains("\nsound: "), "\(record): \(run.out)")
  }

  /// Another app's journal that shares one event name with the Notebook (its own
  /// `settings.changed` beside an event of its own) was taken for the workspace's, since that
  /// model alone knew some name among its records: `verify` replayed it with the workspace and
  /// called a sound journal not sound, exit 1 (a library user's walkthrough, Dec 7). A model is a
  /// journal's when it knows most of its event names; this one is decoded field by field.
  @Test func anotherAppsJournalSharingANameIsNotTheNotebooks() async throws {
    let directory = TemporaryDirectory("cli-verify-shared-name")
    let command = Identifier(high: 0, low: 1)
    let payloads = try [
      EventRecord.encode(ForeignSettings(currency: "EUR"), origin: .user, commandID: command),
      EventRecord.encode(ForeignEvent(label: "gear"), origin: .user, commandID: command),
      EventRecord.encode(ForeignEvent(label: "cog"), origin: .user, commandID: command),
    ]
    let journal = try Journal(directory: directory.path, options: JournalOptions(durability: .none))
    try journal.appendAndWait(payloads.map { NewRecord(timestamp: 1, payload: $0) })
    journal.close()
    let run = try await ToolRun.run("rewind", ["verify", directory.path])
    #expect(run.status == 0, "\(run.out)\(run.err)")
    #expect(
      run.out.contains(
        "note: replay not checked: no registered model (workspace) knows more than half of this journal's event "
          + "names (workspace knows 1 of 2)\n"), "\(run.out)")
    #expect(
      run.out.hasSuffix(
        "decoded: 3 events field by field, all sound\n"
          + "sound: 3 records in 1 frame, 1 segment, last sequence 3; frames and event decoding checked\n"),
      "\(run.out)")
  }
}

/// An event of no registered model's.
private struct ForeignEvent: Event {
  static let name = "widget.added"
  var label: String
}

/// Another app's event under a name the Notebook also registers, with fields of its own.
private struct ForeignSettings: Event {
  static let name = "settings.changed"
  var currency: String
}
