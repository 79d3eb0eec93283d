import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

@testable import Notebook
@testable import Rewind

/// The auto-tagger followed the changes through an unbounded stream: a burst of commands while it
/// was tagging grew its buffer without bound. It now follows a bounded one and, fallen behind,
/// subscribes again and runs over every note. Two changes buffered at most; the tagger held before
/// it tags the first note while ten more notes that mention a bug are created: it tags the first,
/// reads the two changes buffered, falls behind, catches up once, and every note ends up tagged.
@Test(.timeLimit(.minutes(10))) func anAutoTaggerThatFallsBehindStillTagsEveryNote() async throws {
  let temporary = TemporaryDirectory()
  let manager = try makeNotebookManager(temporary.appending("journal"))
  let notebook = try await manager.createNotebook(title: "N")
  let holding = Signal("the tagger held before its first tagging")
  let release = Signal("the test's burst committed")
  let taggings = Counter(0)
  let catchUps = Counter(0)
  var following = AutoTaggerFollowing()
  following.limit = 2
  following.beforeTagging = {
    if taggings.advance(by: 1) == 0 {
      holding.set()
      try? await release.wait()
    }
  }
  following.resubscribed = { _ = catchUps.advance(by: 1) }
  let changes = manager.changes()
  let automation = manager.startAutoTagger(AutoTagger(rules: [(keyword: "bug", tag: "todo")]), following: following)
  let everyNoteTagged = Task {
    for await change in changes where change.origin == .automation {
      if Note.notes(taggedWith: "todo", in: manager.state).count == 11 { return true }
    }
    return false
  }

  try await manager.createNote(in: notebook, title: "A bug")
  try await holding.wait()
  for index in 0..<10 { try await manager.createNote(in: notebook, title: "bug \(index)") }
  release.set()
  #expect(await boundedValue(of: everyNoteTagged), "every note is tagged")
  #expect(catchUps.advance(by: 0) == 1, "the tagger fell behind and caught up once")

  automation.cancel()
  _ = await automation.result
  manager.close()
}

/// The auto-tagger runs until the manager closes, and a close is its end, not a failure. Closed
/// while it was tagging a change (between reading it and committing its tags), it ended with the
/// manager's `.closed` error, where a close while it waited for a change ended it quietly; it now
/// ends quietly both ways, and nothing of the tags it was about to add is written.
@Test(.timeLimit(.minutes(10))) func anAutoTaggerClosedWhileTaggingEndsWithoutAnError() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let manager = try makeNotebookManager(directory)
  let notebook = try await manager.createNotebook(title: "N")
  let holding = Signal("the tagger held before it tags")
  let release = Signal("the test's close")
  var following = AutoTaggerFollowing()
  following.beforeTagging = {
    holding.set()
    try? await release.wait()
  }
  let automation = manager.startAutoTagger(AutoTagger(rules: [(keyword: "bug", tag: "todo")]), following: following)
  try await manager.createNote(in: notebook, title: "A bug")
  try await holding.wait()
  manager.close()
  release.set()
  await #expect(throws: Never.self) { try await boundedValue(of: automation) }
  let events = try Replay.events(of: Workspace.self, directory: directory)
  #expect(events.map(\.envelope.name) == ["notebook.created", "note.created"])
}

/// The auto-tagger answered only the changes committed after it started: a note committed just
/// before a close (or a crash), before the tagger answered it, was never tagged after the app
/// opened again, nor was a note written before the tagger was started. It now catches up first.
@Test(.timeLimit(.minutes(10))) func anAutoTaggerCatchesUpOnNotesCommittedBeforeItStarted() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let first = try makeNotebookManager(directory)
  let notebook = try await first.createNotebook(title: "N")
  let bug = try await first.createNote(in: notebook, title: "A bug")
  let lunch = try await first.createNote(in: notebook, title: "Lunch")
  first.close()

  let manager = try NotebookManager(
    directory: directory, options: JournalOptions(durability: .always),
    clock: .stepping(from: 1_800_000_000_000_000_000))
  let changes = manager.changes()
  let automation = manager.startAutoTagger(AutoTagger(rules: [(keyword: "bug", tag: "todo")]))
  let answered = Task { () async throws -> [String] in
    for await change in changes where change.origin == .automation { return change.events.map(\.envelope.name) }
    return []
  }
  #expect(try await boundedValue(of: answered) == ["note.tagged"])
  #expect(Note.notes(taggedWith: "todo", in: manager.state).map(\.id) == [bug])
  #expect(manager.state.notes.find(id: lunch)?.tags == [])

  // Started again on notes it has tagged, it adds nothing.
  automation.cancel()
  _ = await automation.result
  let written = manager.lastSequence
  let again = manager.startAutoTagger(AutoTagger(rules: [(keyword: "bug", tag: "todo")]))
  try await manager.createNote(in: notebook, title: "Another bug")
  let tagged = Task {
    while Note.notes(taggedWith: "todo", in: manager.state).count < 2 { try await Task.sleep(for: .milliseconds(5)) }
    return manager.lastSequence
  }
  #expect(try await boundedValue(of: tagged) == written + 2, "the new note and its tag, nothing more")
  again.cancel()
  _ = await again.result
  manager.close()
}

/// A pass whose tags are more than one command may hold (the journal's `maxBatchBytes`; 16 KiB
/// here, about 170,000 tags at the default 16 MiB) threw `tooLarge` every time, so a tagger
/// catching up on a large notebook never ran, and `runAutoTagger` on it always failed (found by
/// the review of the manager, Dec 6). It is split into runs of the notes, in id order, each one
/// command; every note gets its tag, once.
@Test func aPassTooLargeForOneCommandIsSplit() async throws {
  let temporary = TemporaryDirectory()
  var options = JournalOptions(durability: .none)
  options.limits = JournalLimits(maxRecordBytes: 4_096, maxBatchBytes: 16_384)
  let directory = temporary.appending("journal")
  let manager = try NotebookManager(
    directory: directory, options: options, clock: .stepping(from: 1_700_000_000_000_000_000), ids: .sequential())
  let notebook = try await manager.createNotebook(title: "N")
  for index in 0..<400 { _ = try await manager.createNote(in: notebook, title: "bug \(index)") }
  let tagger = AutoTagger(rules: [(keyword: "bug", tag: "todo")])
  #expect(try await manager.runAutoTagger(tagger) == 400)
  #expect(Note.notes(taggedWith: "todo", in: manager.state).count == 400)
  #expect(try await manager.runAutoTagger(tagger) == 0, "tagged once")
  manager.close()
  let tagged = try Replay.events(of: Workspace.self, directory: directory).filter {
    $0.envelope.name == NoteTagged.name
  }
  #expect(tagged.count == 400)
  #expect(Set(tagged.map(\.envelope.commandID)).count > 1, "several commands")
}
