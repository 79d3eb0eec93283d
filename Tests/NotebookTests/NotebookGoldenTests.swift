import Foundation
import Notebook
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// A Notebook journal recorded once (Journal/golden/notebook-v1) with every event type, a v1
/// `note.created` and every origin. Every later version of the code must replay it to the same
/// state and render its records the same way: the schema-evolution and encoding contract.
///
/// Re-record only when a new encoding version is introduced (older golden journals must keep
/// passing): `REWIND_RECORD_GOLDEN=1 swift test --filter NotebookGoldenTests`.
@Suite struct NotebookGoldenTests {
  static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Journal/golden/notebook-v1").path
  static var journalPath: String { folder + "/journal" }

  /// The state as text: every record of every store, in order, and the tag index.
  static func render(_ workspace: Workspace) -> String {
    var lines: [String] = []
    for notebook in Notebook.all(in: workspace) { lines.append("notebook \(notebook.id) \"\(notebook.title)\"") }
    for note in Note.all(in: workspace) {
      lines.append("note \(note.id) in \(note.notebook) \"\(note.title)\" \"\(note.body)\" tags \(note.tags)")
    }
    for count in NoteTag.index(in: workspace) { lines.append("tag \(count.tag) \(count.count)") }
    for item in ReadingItem.all(in: workspace) {
      lines.append("reading \(item.id) \"\(item.title)\" read \(item.isRead)")
    }
    let settings = EditorSettings.current(in: workspace)
    lines.append("settings \(settings.fontSize) \(settings.theme) \(settings.spellCheck)")
    return lines.joined(separator: "\n") + "\n"
  }

  /// Every record rendered as JSON, one a line.
  static func log(_ directory: String) throws -> String {
    let cursor = try JournalReader(directory: directory).records(from: 1)
    var lines: [String] = []
    while let record = try cursor.next() {
      lines.append(
        try EventRecord.json(sequence: record.sequence, timestamp: record.timestamp, payload: record.payload))
    }
    return lines.joined(separator: "\n") + "\n"
  }

  /// A record payload as an older build laid it out.
  static func raw(_ name: String, version: UInt64, command: Identifier, _ fields: some Encodable) throws -> [UInt8] {
    var writer = FieldBytesWriter()
    writer.append(EventRecord.layoutVersion)
    writer.appendString(name)
    writer.appendVarint(version)
    writer.appendString("user")
    writer.appendFixed64(command.high)
    writer.appendFixed64(command.low)
    writer.bytes += try FieldEncoder().encode(fields)
    return writer.bytes
  }

  /// Writes the golden journal: what an old build wrote by hand, then a session of commands.
  static func record(into directory: String) async throws {
    var options = JournalOptions(durability: .none)
    options.newJournalID = JournalID(hex: "4e6f7465626f6f6b476f6c64656e0001")
    let notebook = NotebookID(Identifier(high: 0xA, low: 1))
    let old = NoteID(Identifier(high: 0xA, low: 2))
    do {
      let journal = try Journal(directory: directory, options: options)
      let command = Identifier(high: 0xA, low: 0xC)
      // An older build wrote identifiers as strings; today's decoder still reads them.
      struct OldNotebookCreated: Encodable {
        var id: String
        var title: String
      }
      struct OldNoteCreated: Encodable {
        var id: String
        var notebook: String
        var title: String
        var body: String
      }
      try journal.appendAndWait([
        NewRecord(
          timestamp: 1_600_000_000_000_000_000,
          payload: try raw(
            "notebook.created", version: 1, command: command,
            OldNotebookCreated(id: notebook.description, title: "Archive"))),
        NewRecord(
          timestamp: 1_600_000_000_000_000_000,
          payload: try raw(
            "note.created", version: 1, command: command,
            OldNoteCreated(
              id: old.description, notebook: notebook.description, title: "From v1", body: "written before tags"))),
      ])
      journal.close()
    }
    let manager = try NotebookManager(
      directory: directory, options: options, clock: .stepping(from: 1_700_000_000_000_000_000), ids: .sequential())
    let work = try await manager.createNotebook(title: "Work")
    try await manager.renameNotebook(notebook, to: "Old archive")
    let plan = try await manager.createNote(in: work, title: "Plan", body: "swift bug list", tags: ["work"])
    let scratch = try await manager.createNote(in: work, title: "Scratch", body: "")
    try await manager.retitleNote(plan, to: "The plan")
    try await manager.editBody(of: scratch, to: "delete me")
    try await manager.tagNote(old, with: "legacy")
    try await manager.untagNote(plan, removing: "work")
    try await manager.deleteNote(scratch)
    try await manager.runAutoTagger(
      AutoTagger(rules: [(keyword: "bug", tag: "todo"), (keyword: "swift", tag: "swift")]))
    try await manager.applySyncedNotes(
      [RemoteNote(id: NoteID(Identifier(high: 0x5, low: 1)), title: "Synced", body: "from the server", tags: ["sync"])],
      into: work)
    try await manager.importNotes(
      [Note(id: old, notebook: notebook, title: "From v1", body: "imported again", tags: ["legacy", "imported"])],
      into: notebook)
    try await manager.updateSettings(EditorSettings(fontSize: 15, theme: "sepia", spellCheck: false))
    let book = try await manager.addReadingItem(title: "Dune")
    let other = try await manager.addReadingItem(title: "Dune")
    try await manager.toggleReadingItem(book)
    try await manager.removeReadingItem(other)
    try await manager.importReadingList([
      ReadingItem(id: book, title: "Dune", isRead: true),
      ReadingItem(id: ReadingItemID(Identifier(high: 0xB, low: 1)), title: "Emma"),
    ])
    manager.close()
  }

  @Test(
    .enabled(
      if: ProcessInfo.processInfo.environment["REWIND_RECORD_GOLDEN"] == "1", "records the golden files when asked"))
  func recordGoldenJournalWhenAsked() async throws {
    try? FileManager.default.removeItem(atPath: Self.folder)
    try FileManager.default.createDirectory(atPath: Self.folder, withIntermediateDirectories: true)
    try await Self.record(into: Self.journalPath)
    try? FileManager.default.removeItem(atPath: Self.journalPath + "/LOCK")
    let state = try Replay.rebuild(Workspace.self, directory: Self.journalPath).state
    try Self.render(state).write(toFile: Self.folder + "/state.txt", atomically: true, encoding: .utf8)
    try Self.log(Self.journalPath).write(toFile: Self.folder + "/log.jsonl", atomically: true, encoding: .utf8)
  }

  @Test func goldenJournalReplaysToTheRecordedState() throws {
    let expected = try String(contentsOfFile: Self.folder + "/state.txt", encoding: .utf8)
    let replayed = try Replay.rebuild(Workspace.self, directory: Self.journalPath)
    #expect(Self.render(replayed.state) == expected)
    #expect(replayed.lastSequence > 20)
  }

  @Test func goldenJournalRendersAsRecorded() throws {
    let expected = try String(contentsOfFile: Self.folder + "/log.jsonl", encoding: .utf8)
    #expect(try Self.log(Self.journalPath) == expected)
  }

  @Test func goldenJournalHoldsEveryEventTypeAndOrigin() throws {
    let events = try Replay.events(of: Workspace.self, directory: Self.journalPath)
    let names = Set(events.map(\.envelope.name))
    #expect(names.count == 14)  // every registered name
    #expect(events.contains { $0.envelope.name == "note.created" && $0.envelope.version == 1 })
    #expect(Set(events.map(\.envelope.origin)) == [.user, .sync, .automation, .import])
  }

  /// Recording the same session today gives byte-identical records. If this fails, the encoding
  /// changed: keep this golden journal (it must still replay) and record a new version beside it.
  @Test func recordingAgainGivesTheSameBytes() async throws {
    let temporary = TemporaryDirectory("notebook-golden")
    try await Self.record(into: temporary.appending("journal"))
    let fresh = try Self.records(temporary.appending("journal"))
    let golden = try Self.records(Self.journalPath)
    #expect(fresh.count == golden.count)
    for (new, old) in zip(fresh, golden) {
      #expect(new == old, "record \(old.sequence) encodes differently today: record a new golden version")
    }
  }

  static func records(_ directory: String) throws -> [JournalRecord] {
    let cursor = try JournalReader(directory: directory).records(from: 1)
    var records: [JournalRecord] = []
    while let record = try cursor.next() { records.append(record) }
    return records
  }
}
