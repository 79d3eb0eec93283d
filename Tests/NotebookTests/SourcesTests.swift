import Glibc
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Synchronization
import Testing

@testable import Rewind

/// A server whose fetch waits (without spinning) until its task is cancelled, and says whether
/// it saw that.
private final class StalledServer: NoteServer {
  private struct State {
    var cancelled = false
    var waiter: CheckedContinuation<Void, Never>?
  }
  private let state = Mutex(State())

  /// Set once a fetch has started waiting.
  let started = Signal("the fetch started")
  var sawCancellation: Bool { state.withLock { $0.cancelled } }

  func fetchNotes(in notebook: NotebookID) async throws -> [RemoteNote] {
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let resumeNow = state.withLock { state in
          if state.cancelled { return true }
          state.waiter = continuation
          return false
        }
        started.set()
        if resumeNow { continuation.resume() }
      }
    } onCancel: {
      let waiter = state.withLock { state in
        state.cancelled = true
        defer { state.waiter = nil }
        return state.waiter
      }
      waiter?.resume()
    }
    throw CancellationError()
  }
}

@Test(.timeLimit(.minutes(10))) func syncPullLandsThroughItsCommandWithSyncOrigin() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let manager = try makeNotebookManager(directory)
  let notebook = try await manager.createNotebook(title: "Synced")
  let local = try await manager.createNote(in: notebook, title: "Local", body: "kept", tags: ["home"])
  let server = InMemoryNoteServer()
  let remoteID = NoteID(Identifier(high: 5, low: 5))
  await server.publish([RemoteNote(id: remoteID, title: "Remote", body: "from server", tags: ["work"])], in: notebook)
  var changes = manager.changes().makeAsyncIterator()

  #expect(try await manager.pullNotes(from: server, into: notebook) == 1)
  #expect(Note.note(id: remoteID, in: manager.state)?.tags == ["work"])
  // A narrow sync change leaves the unrelated local note alone.
  #expect(Note.note(id: local, in: manager.state)?.body == "kept")
  let change = try #require(await changes.next())
  #expect(change.origin == .sync)

  // Pulling an edited feed records only what differs, as record-level events.
  await server.publish(
    [RemoteNote(id: remoteID, title: "Remote", body: "edited", tags: ["work", "todo"])], in: notebook)
  #expect(try await manager.pullNotes(from: server, into: notebook) == 2)
  let edit = try #require(await changes.next())
  #expect(edit.events.map(\.envelope.name) == ["note.bodyEdited", "note.tagged"])
  #expect(Note.all(in: manager.state).count == 2)
  manager.close()
}

@Test func cancellingAPullCancelsTheJobAndWritesNothing() async throws {
  let temporary = TemporaryDirectory()
  let manager = try makeNotebookManager(temporary.appending("journal"))
  let notebook = try await manager.createNotebook(title: "Synced")
  let written = manager.lastSequence
  let server = StalledServer()
  let pull = Task { try await manager.pullNotes(from: server, into: notebook) }
  try await server.started.wait()
  // The funnel stays open while the job runs off it.
  let other = try await manager.createNote(in: notebook, title: "meanwhile")
  pull.cancel()
  await #expect(throws: CancellationError.self) { try await pull.value }
  #expect(server.sawCancellation)
  #expect(manager.lastSequence == written + 1)
  #expect(Note.all(in: manager.state).map(\.id) == [other])
  manager.close()
}

@Test(.timeLimit(.minutes(10))) func autoTaggerLandsWithAutomationOriginInOneChange() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let manager = try makeNotebookManager(directory)
  let notebook = try await manager.createNotebook(title: "N")
  let a = try await manager.createNote(in: notebook, title: "Fix the bug", body: "")
  let b = try await manager.createNote(in: notebook, title: "Swift plan", body: "bug too")
  var changes = manager.changes().makeAsyncIterator()
  let tagger = AutoTagger(rules: [(keyword: "bug", tag: "todo"), (keyword: "swift", tag: "swift")])

  #expect(try await manager.runAutoTagger(tagger) == 3)
  let change = try #require(await changes.next())
  #expect(change.origin == .automation)
  #expect(change.events.count == 3)
  #expect(Set(change.events.map(\.envelope.commandID)).count == 1)
  #expect(Note.notes(taggedWith: "todo", in: manager.state).map(\.id) == [a, b])
  #expect(NoteTag.index(in: manager.state) == [TagCount(tag: "swift", count: 1), TagCount(tag: "todo", count: 2)])
  // Running it again finds nothing to do and writes nothing.
  let written = manager.lastSequence
  #expect(try await manager.runAutoTagger(tagger) == 0)
  #expect(manager.lastSequence == written)
  manager.close()

  let origins = try Replay.events(of: Workspace.self, directory: directory).map(\.envelope.origin)
  #expect(origins == [.user, .user, .user, .automation, .automation, .automation])
}

/// A rule whose tag is blank once trimmed adds nothing (as `tagNote` refuses a blank tag): no
/// `NoteTagged` event with an empty tag is journaled.
@Test func aBlankAutoTaggerRuleAddsNoTag() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let manager = try makeNotebookManager(directory)
  let notebook = try await manager.createNotebook(title: "N")
  let note = try await manager.createNote(in: notebook, title: "Fix the bug", body: "")
  let tagger = AutoTagger(rules: [(keyword: "bug", tag: "  "), (keyword: "fix", tag: "todo")])

  #expect(tagger.missingTags(for: try #require(Note.note(id: note, in: manager.state))) == ["todo"])
  #expect(try await manager.runAutoTagger(tagger) == 1)
  #expect(Note.note(id: note, in: manager.state)?.tags == ["todo"])
  #expect(try await manager.runAutoTagger(tagger) == 0)  // nothing left to do, every run
  manager.close()
  let tags = try Replay.events(of: Workspace.self, directory: directory).compactMap { ($0.event as? NoteTagged)?.tag }
  #expect(tags == ["todo"])
}

/// A rule with a blank keyword (empty, or white space only) would tag every note (every text
/// contains the empty string): it is refused where it is made, as a programming error.
@Test func anAutoTaggerRuleWithABlankKeywordIsRefused() async {
  await #expect(processExitsWith: .failure) {
    _ = AutoTagger(rules: [(keyword: "bug", tag: "todo"), (keyword: "", tag: "all")])
  }
  await #expect(processExitsWith: .failure) {
    _ = AutoTagger(rules: [(keyword: " \t\n", tag: "all")])
  }
  #expect(AutoTagger(rules: [(keyword: " bug ", tag: "todo")]).rules.count == 1, "a keyword with spaces around it")
}

@Test func noteCreatedVersion1UpcastsToVersion2() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let notebook = NotebookID(Identifier(high: 0, low: 1))
  let note = NoteID(Identifier(high: 0, low: 2))
  do {
    let journal = try Journal(directory: directory)
    let command = Identifier(high: 9, low: 9)
    // What an old build wrote: a notebook (through a current manager's encoding) and a v1 note.
    let created = try FieldEncoder().encode(["id": notebook.description, "title": "Old"])
    var first = FieldBytesWriter()
    first.append(EventRecord.layoutVersion)
    first.appendString("notebook.created")
    first.appendVarint(1)
    first.appendString("user")
    first.appendFixed64(command.high)
    first.appendFixed64(command.low)
    first.bytes += created
    try journal.appendAndWait([
      NewRecord(timestamp: 1, payload: first.bytes),
      NewRecord(
        timestamp: 2,
        payload: try EventRecord.encode(
          NoteCreatedV1(id: note, notebook: notebook, title: "Old note", body: "b"), origin: .user, commandID: command)),
    ])
    journal.close()
  }
  let manager = try makeNotebookManager(directory)
  #expect(
    Note.note(id: note, in: manager.state) == Note(id: note, notebook: notebook, title: "Old note", body: "b", tags: [])
  )
  // New events after old ones keep working.
  try await manager.tagNote(note, with: "legacy")
  #expect(Note.notes(taggedWith: "legacy", in: manager.state).map(\.id) == [note])
  manager.close()
}

@Test(.timeLimit(.minutes(10))) func importIsTheOnlyWholeCollectionReplacement() async throws {
  let temporary = TemporaryDirectory()
  let manager = try makeNotebookManager(temporary.appending("journal"))
  let one = try await manager.createNotebook(title: "One")
  let two = try await manager.createNotebook(title: "Two")
  let stale = try await manager.createNote(in: one, title: "stale")
  let other = try await manager.createNote(in: two, title: "other notebook")
  let snapshot = manager.state  // a caller holding an older snapshot…
  let added = try await manager.createNote(in: one, title: "added later")
  // …makes a narrow edit from it: only that note changes; the later note survives.
  let target = try #require(Note.note(id: stale, in: snapshot))
  try await manager.retitleNote(target.id, to: "renamed")
  #expect(Note.notes(inNotebook: one, in: manager.state).map(\.title) == ["renamed", "added later"])

  var changes = manager.changes().makeAsyncIterator()
  let imported = Note(id: NoteID(Identifier(high: 3, low: 3)), notebook: one, title: "imported", body: "", tags: ["x"])
  try await manager.importNotes([imported], into: one)
  let change = try #require(await changes.next())
  #expect(change.origin == .import)
  #expect(change.events.map(\.envelope.name) == ["notes.imported"])
  #expect(Note.notes(inNotebook: one, in: manager.state) == [imported])
  #expect(Note.note(id: added, in: manager.state) == nil)
  #expect(Note.note(id: other, in: manager.state)?.title == "other notebook")
  manager.close()
}

@Test(.timeLimit(.minutes(10))) func aFailedAppendLeavesNotesQueriesAndObserversUnchanged() async throws {
  let temporary = TemporaryDirectory()
  let io = FaultInjectingFileIO()
  let manager = try makeNotebookManager(temporary.appending("journal"), io: io)
  let notebook = try await manager.createNotebook(title: "N")
  let note = try await manager.createNote(in: notebook, title: "t", tags: ["a"])
  let before = manager.state
  var changes = manager.changes().makeAsyncIterator()

  io.arm(.writeError(ENOSPC))
  await #expect(throws: ManagerError.self) {
    try await manager.runAutoTagger(AutoTagger(rules: [(keyword: "t", tag: "b")]))
  }
  #expect(manager.state == before)
  #expect(Note.notes(taggedWith: "b", in: manager.state).isEmpty)
  #expect(NoteTag.index(in: manager.state) == [TagCount(tag: "a", count: 1)])

  try await manager.tagNote(note, with: "c")
  let change = try #require(await changes.next())
  #expect(change.events.map(\.envelope.name) == ["note.tagged"])
  #expect(change.origin == .user)
  manager.close()
}

@Test(.timeLimit(.minutes(10))) func settingsAndNotebookRenamesAreRecordLevelChanges() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let manager = try makeNotebookManager(directory)
  let notebook = try await manager.createNotebook(title: "Draft")
  var changes = manager.changes().makeAsyncIterator()

  let settings = EditorSettings(fontSize: 16, theme: "dark", spellCheck: false)
  try await manager.updateSettings(settings)
  #expect(EditorSettings.current(in: manager.state) == settings)
  #expect(try #require(await changes.next()).keys == [.value("settings")])
  try await manager.renameNotebook(notebook, to: "  Final ")
  #expect(Notebook.notebook(id: notebook, in: manager.state)?.title == "Final")
  #expect(try #require(await changes.next()).keys == [.record("notebooks", notebook)])

  // Setting the same values again is not a change: nothing is written.
  let written = manager.lastSequence
  try await manager.updateSettings(settings)
  try await manager.renameNotebook(notebook, to: "Final")
  #expect(manager.lastSequence == written)
  let blank = await #expect(throws: NotebookError.self) { try await manager.renameNotebook(notebook, to: "   ") }
  #expect(blank?.code == .blankTitle)
  manager.close()
  #expect(try Replay.rebuild(Workspace.self, directory: directory).state == manager.state)
}

@Test(.timeLimit(.minutes(10))) func theRunningAutoTaggerReactsToOtherSourcesThroughTheFunnel() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let manager = try makeNotebookManager(directory)
  let notebook = try await manager.createNotebook(title: "N")
  var changes = manager.changes().makeAsyncIterator()
  let automation = manager.startAutoTagger(AutoTagger(rules: [(keyword: "bug", tag: "todo")]))

  let note = try await manager.createNote(in: notebook, title: "A bug")
  let created = try #require(await changes.next())
  #expect(created.origin == .user)
  let tagged = try #require(await changes.next())  // the automation's answer, through the funnel
  #expect(tagged.origin == .automation)
  #expect(tagged.events.map(\.envelope.name) == ["note.tagged"])
  let quiet = try await manager.createNote(in: notebook, title: "Lunch")  // nothing to tag
  #expect(try #require(await changes.next()).origin == .user)

  // A sync change that mentions a bug is tagged too.
  try await manager.applySyncedNotes([RemoteNote(id: quiet, title: "Lunch", body: "bug in the soup")], into: notebook)
  #expect(try #require(await changes.next()).origin == .sync)
  let retagged = try #require(await changes.next())
  #expect(retagged.origin == .automation)
  #expect(Note.notes(taggedWith: "todo", in: manager.state).map(\.id) == [note, quiet])

  // A note another automation of the app writes is tagged too (the tagger used to pass over
  // every change of origin `.automation`, taking them all for its own).
  let ruled = try await manager.createNote(in: notebook, title: "A bug a rule filed", origin: .automation)
  let filed = try #require(await changes.next())
  #expect(filed.origin == .automation && filed.events.map(\.envelope.name) == ["note.created"])
  let answered = try #require(await changes.next())
  #expect(answered.origin == .automation && answered.events.map(\.envelope.name) == ["note.tagged"])
  #expect(Set(Note.notes(taggedWith: "todo", in: manager.state).map(\.id)) == [note, quiet, ruled])

  automation.cancel()
  _ = await automation.result
  manager.close()
  let origins = try Replay.events(of: Workspace.self, directory: directory).map(\.envelope.origin)
  #expect(origins == [.user, .user, .automation, .user, .sync, .automation, .automation, .automation])
}

/// A sync whose body records events for the first remote notes and then rejects a later one (it
/// belongs to another notebook) writes nothing, also when it validated against a command still
/// being written (the manager's working copy): the journal, the notes, the tag index and the
/// change stream show nothing of it; its error comes once that command is journaled; and the
/// next command, validated against the working copy, does not see the note it began to create.
@Test(.timeLimit(.minutes(10))) func aSyncRejectedPartWayWritesNothingAndLeavesTheCachesAlone() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let io = HeldWriteFileIO()
  let readings = Locked(0)
  let syncValidating = Signal("the sync's command reading the clock")
  let clock = TimeSource {
    let reading = readings.withLock { readings in
      readings += 1
      return readings
    }
    if reading == 5 { syncValidating.set() }  // two notebooks and two notes before it
    return 1_700_000_000_000_000_000 + Int64(reading) * 1_000_000
  }
  var options = JournalOptions(durability: .always)
  options.io = io
  let manager = try NotebookManager(directory: directory, options: options, clock: clock, ids: .sequential())
  let here = try await manager.createNotebook(title: "Here")
  let elsewhere = try await manager.createNotebook(title: "Elsewhere")
  let theirs = try await manager.createNote(in: elsewhere, title: "theirs", tags: ["t"])
  var changes = manager.changes().makeAsyncIterator()

  io.holdNextWrite()
  let held = Task { try await manager.createNote(in: here, title: "held", tags: ["t"]) }
  try await onOwnThread { try io.waitUntilHolding() }
  let fresh = NoteID(Identifier(high: 7, low: 7))
  let sync = Task {
    try await manager.applySyncedNotes(
      [
        RemoteNote(id: fresh, title: "fresh", body: "", tags: ["t", "u"]),
        RemoteNote(id: theirs, title: "moved", body: "", tags: ["t"]),
      ], into: here)
  }
  try await syncValidating.wait()
  io.releaseWrite()
  let heldNote = try await held.value
  await #expect(throws: NotebookError.self) { try await sync.value }

  let state = manager.state
  #expect(Note.note(id: fresh, in: state) == nil)
  #expect(Note.note(id: theirs, in: state)?.title == "theirs")
  #expect(Note.notes(taggedWith: "t", in: state).map(\.id) == [theirs, heldNote])
  #expect(NoteTag.index(in: state) == [TagCount(tag: "t", count: 2)])
  #expect(manager.lastSequence == 4)
  await #expect(throws: NotebookError.self) { try await manager.tagNote(fresh, with: "v") }
  let next = try await manager.createNote(in: here, title: "next", tags: ["u"])
  #expect(NoteTag.index(in: manager.state) == [TagCount(tag: "t", count: 2), TagCount(tag: "u", count: 1)])
  #expect(try #require(await changes.next()).sequences == 4...4)
  let last = try #require(await changes.next())
  #expect(last.sequences == 5...5)
  #expect(last.keys.contains(.record("notes", next.raw)))
  manager.close()
  let replayed = try Replay.rebuild(Workspace.self, directory: directory)
  #expect(replayed.state == manager.state)
  #expect(replayed.lastSequence == 5)
}

/// The auto-tagger's missing tags came out of a set sorted by `String`'s `<`, which is no strict
/// weak order across Unicode forms: their order, and so the order of the `note.tagged` events it
/// records, followed the set's hash order, which its rules' order (how the set was filled) and
/// the process's hash seed decide. One order now, whatever the rules' order.
@Test func theAutoTaggersTagsComeInOneOrder() {
  let forms = ["e\u{301}", "\u{E9}a", "caf\u{E9}s", "cafe\u{301}", "b", "e"]
  let note = Note(
    id: NoteID(Identifier(high: 1, low: 1)), notebook: NotebookID(Identifier(high: 2, low: 1)), title: "a word",
    body: "", tags: [])
  let orders = Set(
    permutations(forms).map { rules in
      AutoTagger(rules: rules.map { (keyword: "word", tag: NoteTag($0)) }).missingTags(for: note)
        .map { Array($0.name.unicodeScalars) }
    })
  #expect(orders.count == 1, "\(orders)")
}

/// `importNotes` recorded the caller's notes as given: a padded title stayed padded (every other
/// command trims), so the next sync of the same title recorded a retitle that changed nothing a
/// reader sees but the padding; and a note naming another notebook was recorded so while the
/// apply filed it in the target, so `show` and `export` told another story than the state.
@Test func importedNotesAreRecordedAsTheyLand() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let manager = try makeNotebookManager(directory)
  let target = try await manager.createNotebook(title: "Target")
  let other = try await manager.createNotebook(title: "Other")
  let id = NoteID(Identifier(high: 0x1D, low: 1))
  try await manager.importNotes(
    [Note(id: id, notebook: other, title: "  Plan \t", body: "b", tags: ["x"])], into: target)
  let imported = try #require(manager.state.notes.find(id: id))
  #expect(imported.title == "Plan" && imported.notebook == target)

  // The same title from the server is no change.
  let written = manager.lastSequence
  try await manager.applySyncedNotes([RemoteNote(id: id, title: "Plan", body: "b", tags: ["x"])], into: target)
  #expect(manager.lastSequence == written, "a sync of what was imported records nothing")
  manager.close()

  let events = try Replay.events(of: Workspace.self, directory: directory)
  let event = try #require(events.last?.event as? NotesImported)
  #expect(event.notes.map(\.title) == ["Plan"] && event.notes.map(\.notebook) == [target], "\(event)")
}
