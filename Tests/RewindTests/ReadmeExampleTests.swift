import Foundation
import Rewind
import RewindTestSupport
import Testing

/// The README's "Using the model layer" example, compiled and run: its code lies between the
/// `README` markers below, and a test checks that the README shows exactly that code, so neither
/// can change without the other.
enum ReadmeExample {
  struct NotFound: Error {}

  // README begin: the model
  struct Note: StoreRecord {  // a record: a stable, ordered id and its values
    var id: Identifier
    var title: String
  }

  struct NoteAdded: Event {  // a fact: stable name, schema version, Codable
    static let name = "note.added"
    var id: Identifier
    var title: String
  }

  struct NoteRetitled: Event {
    static let name = "note.retitled"
    var id: Identifier
    var title: String
  }

  struct Notes: Model {  // the state: stores, changed only by apply functions
    var notes = Store<Note>(name: "notes")
    static func registerEvents(in registry: inout EventRegistry<Notes>) {
      registry.register(NoteAdded.self) { notes, event, context in
        notes.notes.insert(Note(id: event.id, title: event.title), context: &context)
      }
      registry.register(NoteRetitled.self) { notes, event, context in
        notes.notes.update(id: event.id, context: &context) { $0.title = event.title }
      }
    }
  }
  // README end

  /// The README's command: retitles note `id` in the journal at `path`. Returns the manager and
  /// the changes it announced from its opening on.
  static func retitle(path: String, id: Identifier, title: String) async throws -> (
    Manager<Notes>, AsyncStream<CommittedChange>
  ) {
    // README begin: the command
    let manager = try Manager<Notes>(directory: path, clock: .system, ids: .random)
    let changes = manager.changes()  // the changes committed from now on
    try await manager.perform(.user) { notes, command in  // validate, then record events
      guard notes.notes.contains(id: id) else { throw NotFound() }
      command.record(NoteRetitled(id: id, title: title))
    }  // returns once journaled and applied
    // README end
    return (manager, changes)
  }
}

@Suite struct ReadmeExampleTests {
  /// A journal holding one note, titled "draft", added through the README's model.
  static func journalWithANote(_ id: Identifier) async throws -> TemporaryDirectory {
    let directory = TemporaryDirectory("readme-example")
    let manager = try Manager<ReadmeExample.Notes>(directory: directory.path)
    defer { manager.close() }
    try await manager.perform(.user) { _, command in
      command.record(ReadmeExample.NoteAdded(id: id, title: "draft"))
    }
    return directory
  }

  @Test func theCommandIsJournaledAppliedAnnouncedAndReplaysToTheSameState() async throws {
    let id = Identifier(high: 7, low: 42)
    let directory = try await Self.journalWithANote(id)
    let (manager, changes) = try await ReadmeExample.retitle(path: directory.path, id: id, title: "final")
    defer { manager.close() }

    #expect(manager.state.notes.find(id: id)?.title == "final")
    #expect(manager.lastSequence == 2)
    var iterator = changes.makeAsyncIterator()
    let change = try #require(await iterator.next(), "the command's change is announced")
    #expect(change.sequences == 2...2)
    #expect(change.events.map(\.envelope.name) == ["note.retitled"])
    #expect(change.keys.map(\.store) == ["notes"])

    let rebuilt = try Replay.rebuild(ReadmeExample.Notes.self, directory: directory.path)
    #expect(rebuilt.lastSequence == 2)
    #expect(rebuilt.state == manager.state)
  }

  @Test func aCommandOnAMissingNoteThrowsAndWritesNothing() async throws {
    let directory = try await Self.journalWithANote(Identifier(high: 7, low: 42))
    await #expect(throws: ReadmeExample.NotFound.self) {
      _ = try await ReadmeExample.retitle(path: directory.path, id: Identifier(high: 1, low: 1), title: "final")
    }
    let rebuilt = try Replay.rebuild(ReadmeExample.Notes.self, directory: directory.path)
    #expect(rebuilt.lastSequence == 1)
    #expect(rebuilt.state.notes.find(id: Identifier(high: 7, low: 42))?.title == "draft")
  }

  /// The lines between the `README begin` and `README end` markers of this file, each trimmed
  /// and with runs of spaces made one (the formatter aligns comments differently from the README).
  static func normalized(_ lines: some Sequence<Substring>) -> [String] {
    lines.map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
  }

  @Test func theReadmeShowsThisCode() throws {
    let here = URL(fileURLWithPath: #filePath)
    let source = try String(contentsOf: here, encoding: .utf8)
    let readme = try String(
      contentsOf: here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("README.md"), encoding: .utf8)
    let section = try #require(readme.range(of: "## Using the model layer\n\n```swift\n"), "the README's section")
    let end = try #require(readme[section.upperBound...].range(of: "```\n"))
    let shown = Self.normalized(readme[section.upperBound..<end.lowerBound].split(separator: "\n")).joined(
      separator: "\n")

    var regions: [[Substring]] = []
    var current: [Substring]?
    for line in source.split(separator: "\n") {
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      if trimmed.hasPrefix("// README begin") {
        current = []
      } else if trimmed == "// README end" {
        regions.append(current ?? [])
        current = nil
      } else {
        current?.append(line)
      }
    }
    #expect(regions.count == 2)
    for region in regions {
      let code = Self.normalized(region).joined(separator: "\n")
      #expect(shown.contains(code), "README.md's \"Using the model layer\" must show:\n\(code)")
    }
  }
}
