import Foundation
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

/// The README's "Using the model layer" example, compiled and run: its code lies between the
/// `README` markers below, and a test checks that the README and the overview of the library's
/// documentation (`Rewind.docc/Rewind.md`) show exactly that code, so none can change without the
/// others. The overview's last line, a read, lies between the `DocC` markers; the body of the
/// funnel article's change stream example ("Change streams"), between the `Funnel` markers.
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
    // DocC begin: the read
    let retitled = manager.state.notes.find(id: id)  // a read: no funnel
    // DocC end
    #expect(retitled?.title == title)
    return (manager, changes)
  }

  /// The funnel article's example: the titles of `manager`'s notes, kept up to date from a
  /// bounded change stream, caught up whenever it falls behind; returned once the manager closes.
  static func titles(following manager: Manager<Notes>, bufferingAtMost limit: Int) async -> [Identifier: String] {
    // Funnel begin
    while true {
      let changes = manager.changes(bufferingAtMost: limit)  // subscribe first,
      let (state, last) = manager.current  // then read the state it continues
      var titles = Dictionary(uniqueKeysWithValues: state.notes.all().map { ($0.id, $0.title) })
      do {
        for try await change in changes where change.sequences.lowerBound > last {
          for recorded in change.events {
            if let added = recorded.event as? NoteAdded { titles[added.id] = added.title }
            if let retitled = recorded.event as? NoteRetitled { titles[retitled.id] = retitled.title }
          }
        }
        return titles  // the manager closed
      } catch {
        continue  // ChangeStreamError: fell behind; rebuild and subscribe again
      }
    }
    // Funnel end
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

  /// `lines`, each trimmed and with runs of spaces made one (the formatter aligns comments
  /// differently from the README).
  static func normalized(_ lines: some Sequence<Substring>) -> [String] {
    lines.map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
  }

  /// The regions of this file between `// KIND begin` and `// KIND end` markers, normalized.
  static func regions(_ kind: String) throws -> [String] {
    let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
    var regions: [[Substring]] = []
    var current: [Substring]?
    for line in source.split(separator: "\n") {
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      if trimmed.hasPrefix("// \(kind) begin") {
        current = []
      } else if trimmed == "// \(kind) end" {
        regions.append(current ?? [])
        current = nil
      } else {
        current?.append(line)
      }
    }
    return regions.map { normalized($0).joined(separator: "\n") }
  }

  /// The normalized lines of the first Swift code block after `heading` in the file at `path`
  /// (relative to the package's root).
  static func codeBlock(in path: String, after heading: String) throws -> String {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let text = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    let section = try #require(text.range(of: heading + "\n\n"), "\(path)'s \(heading)")
    let start = try #require(text[section.upperBound...].range(of: "```swift\n"), "\(path)'s code")
    let end = try #require(text[start.upperBound...].range(of: "```\n"))
    return normalized(text[start.upperBound..<end.lowerBound].split(separator: "\n")).joined(separator: "\n")
  }

  @Test func theReadmeShowsThisCode() throws {
    let shown = try Self.codeBlock(in: "README.md", after: "## Using the model layer")
    let regions = try Self.regions("README")
    #expect(regions.count == 2)
    for code in regions {
      #expect(shown.contains(code), "README.md's \"Using the model layer\" must show:\n\(code)")
    }
  }

  @Test func theFunnelArticleShowsThisCode() throws {
    let shown = try Self.codeBlock(in: "Sources/Rewind/Rewind.docc/TheFunnel.md", after: "## Change streams")
    let regions = try Self.regions("Funnel")
    #expect(regions.count == 1)
    for code in regions {
      #expect(shown.contains(code), "Rewind.docc/TheFunnel.md's \"Change streams\" must show:\n\(code)")
    }
  }

  /// The article's follower ends with the titles of every note. With a stream of one change at
  /// most, and four tasks making commands that need no fsync, it falls behind (how often depends
  /// on the scheduling) and catches up each time from the current state.
  @Test(.timeLimit(.minutes(10))) func theFunnelArticlesFollowerEndsWithEveryTitle() async throws {
    let directory = TemporaryDirectory("readme-example")
    let manager = try Manager<ReadmeExample.Notes>(
      directory: directory.path, options: JournalOptions(durability: .none), ids: .sequential())
    let follower = Task { await ReadmeExample.titles(following: manager, bufferingAtMost: 1) }
    let writers = (0..<4).map { writer in
      Task {
        var titles: [Identifier: String] = [:]
        for index in 0..<50 {
          let id = try await manager.perform(.user) { _, command in
            let id = command.newID()
            command.record(ReadmeExample.NoteAdded(id: id, title: "draft"))
            return id
          }
          try await manager.perform(.user) { _, command in
            command.record(ReadmeExample.NoteRetitled(id: id, title: "note \(writer).\(index)"))
          }
          titles[id] = "note \(writer).\(index)"
        }
        return titles
      }
    }
    var expected: [Identifier: String] = [:]
    for writer in writers { expected.merge(try await writer.value) { $1 } }
    manager.close()
    #expect(expected.count == 200)
    #expect(await boundedValue(of: follower) == expected)
  }

  @Test func theDocumentationOverviewShowsThisCode() throws {
    let shown = try Self.codeBlock(in: "Sources/Rewind/Rewind.docc/Rewind.md", after: "## Overview")
    let regions = try Self.regions("README") + Self.regions("DocC")
    #expect(regions.count == 3)
    for code in regions {
      #expect(shown.contains(code), "Rewind.docc/Rewind.md's overview must show:\n\(code)")
    }
  }
}
