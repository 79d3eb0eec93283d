import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

/// The funnel's promises to readers and the tag cache's to queries, checked against
/// recomputation over seeded random command sequences that mix every kind of command with
/// commands the manager refuses (unknown ids, blank tags, duplicate or foreign notes in a sync or
/// an import: some of those refused half-way, after recording events), appends that fail,
/// checkpoints and a late subscriber. After every command:
/// - the tag cache (`Note.notes(taggedWith:)`, `NoteTag.index`, `Store.cacheProblems()`) equals
///   what the notes alone give;
/// - a command that was refused or failed changed nothing (the stores, caches included) and was
///   announced to nobody;
/// - the stream got one change per committed command, in journal order, with no gap and no
///   repeat, naming exactly the notes and tags that changed.
/// Then every state the manager showed must come back, caches included, from a replay through
/// its sequence number, from a time machine walking back and forth over the journal (from its
/// keyframes and from snapshot files), and from a manager reopened from a snapshot, whose cache
/// must stay coherent under further commands.
@Test(.timeLimit(.minutes(10)), arguments: [UInt64(11), 12, 13])
func changesAndTagCacheFollowEveryCommandAndEveryWayOfRebuilding(seed: UInt64) async throws {
  print("changesAndTagCacheFollowEveryCommandAndEveryWayOfRebuilding seed \(seed)")
  var random = SeededGenerator(seed: seed)
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let io = FaultInjectingFileIO()
  var options = JournalOptions(durability: .always)
  options.io = io
  // No zeros written ahead: the fault strikes the write of the command's frame (a failed write
  // of zeros is passed over, and the frame grows the file itself).
  options.preallocationBytes = 0
  let manager = try NotebookManager(
    directory: directory, options: options, clock: .stepping(from: 1_700_000_000_000_000_000), ids: .sequential())
  var changes = manager.changes().makeAsyncIterator()
  let notebooks = [try await manager.createNotebook(title: "One"), try await manager.createNotebook(title: "Two")]
  for _ in notebooks { _ = await changes.next() }

  let tagPool: [NoteTag] = ["swift", "rust", "todo", "idea", "work"]
  let tagger = AutoTagger(rules: [(keyword: "bug", tag: "todo"), (keyword: "plan", tag: "idea")])
  let words = ["bug", "plan", "lunch", "draft", "swift"]
  func text() -> String {
    (0..<Int.random(in: 1...3, using: &random)).map { _ in words.randomElement(using: &random)! }.joined(separator: " ")
  }
  func tags() -> [NoteTag] {
    (0..<Int.random(in: 0...3, using: &random)).map { _ in tagPool.randomElement(using: &random)! }
  }
  let unknown = NoteID(Identifier(high: 0xDEAD, low: 1))

  var kept: [UInt64: Workspace] = [manager.current.lastSequence: manager.current.state]
  var late: (start: UInt64, changes: AsyncStream<CommittedChange>.Iterator)?
  var kinds: [String: Int] = [:]

  for step in 0..<160 {
    let (before, sequenceBefore) = manager.current
    let notes = before.notes.all()
    let someNote = notes.randomElement(using: &random)?.id ?? unknown
    let notebook = notebooks.randomElement(using: &random)!
    // What the step does, and whether the manager must refuse it (nothing written).
    var kind = ""
    var refused = false
    var failedAppend = false
    do {
      switch Int.random(in: 0..<100, using: &random) {
      case 0..<20:
        kind = "create"
        try await manager.createNote(in: notebook, title: text(), body: text(), tags: tags())
      case 20..<26:
        kind = "retitle"
        guard !notes.isEmpty else { continue }
        try await manager.retitleNote(someNote, to: text())
      case 26..<30:
        kind = "edit"
        guard !notes.isEmpty else { continue }
        try await manager.editBody(of: someNote, to: text())
      case 30..<40:
        kind = "tag"
        guard !notes.isEmpty else { continue }
        try await manager.tagNote(someNote, with: tagPool.randomElement(using: &random)!)
      case 40..<48:
        kind = "untag"
        guard !notes.isEmpty else { continue }
        let tag = before.notes.find(id: someNote)?.tags.randomElement(using: &random) ?? "todo"
        try await manager.untagNote(someNote, removing: tag)
      case 48..<53:
        kind = "delete"
        guard !notes.isEmpty else { continue }
        try await manager.deleteNote(someNote)
      case 53..<56:
        kind = "refused: unknown note"
        refused = true
        try await manager.tagNote(unknown, with: "todo")
      case 56..<58:
        kind = "refused: blank tag"
        refused = true
        try await manager.tagNote(someNote, with: "  ")
      case 58..<68:
        kind = "sync"
        let local = Note.notes(inNotebook: notebooks[0], in: before)
        var remote = local.filter { _ in Bool.random(using: &random) }.map {
          RemoteNote(id: $0.id, title: Bool.random(using: &random) ? $0.title : text(), body: $0.body, tags: tags())
        }
        for _ in 0..<Int.random(in: 0...3, using: &random) {
          remote.append(
            RemoteNote(
              id: NoteID(Identifier(high: 0xFEED, low: random.next())), title: text(), body: text(), tags: tags()))
        }
        try await manager.applySyncedNotes(remote, into: notebooks[0])
      case 68..<72:
        // Refused half-way: the notes before the foreign one were recorded already.
        kind = "refused: sync of a foreign note"
        guard let foreign = Note.notes(inNotebook: notebooks[1], in: before).first else { continue }
        refused = true
        let remote = [
          RemoteNote(id: NoteID(Identifier(high: 0xFEED, low: random.next())), title: text(), body: "", tags: tags()),
          RemoteNote(id: foreign.id, title: text(), body: "", tags: tags()),
        ]
        try await manager.applySyncedNotes(remote, into: notebooks[0])
      case 72..<78:
        kind = "import"
        let keep = Note.notes(inNotebook: notebooks[1], in: before).filter { _ in Bool.random(using: &random) }
        let fresh = (0..<Int.random(in: 0...3, using: &random)).map { _ in
          Note(
            id: NoteID(Identifier(high: 0xBEEF, low: random.next())), notebook: notebooks[1], title: text(),
            body: text(), tags: tags())
        }
        try await manager.importNotes(keep + fresh, into: notebooks[1])
      case 78..<80:
        kind = "refused: import naming a note twice"
        guard let twice = notes.first else { continue }
        refused = true
        try await manager.importNotes([twice, twice], into: twice.notebook)
      case 80..<86:
        kind = "auto-tagger"
        try await manager.runAutoTagger(tagger)
      case 86..<90:
        kind = "settings"
        try await manager.updateSettings(EditorSettings(fontSize: Int.random(in: 10...14, using: &random)))
      case 90..<94:
        kind = "checkpoint"
        try await manager.recordCheckpoint()
      default:
        kind = "failed append"
        failedAppend = true
        io.arm(.writeError(EIO))
        try await manager.createNote(in: notebook, title: text(), tags: tags())
      }
      #expect(!refused && !failedAppend, "seed \(seed), step \(step): \(kind) was accepted")
    } catch let error as NotebookError {
      #expect(refused, "seed \(seed), step \(step): \(kind) refused: \(error)")
    } catch let error as ManagerError {
      #expect(failedAppend && error.code == .appendFailed, "seed \(seed), step \(step): \(kind): \(error)")
    }
    io.disarm()
    kinds[kind, default: 0] += 1

    let (state, last) = manager.current
    let context = "seed \(seed), step \(step), \(kind)"
    #expect(cacheMismatches(in: state, alsoAsking: tagPool) == [], "\(context)")
    if refused || failedAppend {
      #expect(last == sequenceBefore, "\(context)")
      #expect(state == before, "\(context): a command that wrote nothing changed the state")
    }
    // The changes since the last step: one per committed command, gapless, naming what changed.
    var reached = sequenceBefore
    var touched: Set<ChangeKey> = []
    while reached < last {
      let change = try #require(await changes.next(), "\(context)")
      #expect(change.sequences.lowerBound == reached + 1, "\(context): after \(reached) came \(change)")
      #expect(change.events.map(\.envelope.sequence) == Array(change.sequences), "\(context)")
      reached = change.sequences.upperBound
      touched.formUnion(change.keys)
    }
    #expect(reached == last, "\(context)")
    #expect(touched.filter { $0.store == "notes" } == noteKeysThatDiffer(from: before, to: state), "\(context)")
    kept[last] = state
    if step == 80 { late = (last, manager.changes().makeAsyncIterator()) }
  }
  #expect(kinds.count == 16, "seed \(seed): every kind of step ran: \(kinds.sorted { $0.key < $1.key })")

  let (final, finalSequence) = manager.current
  manager.close()
  let extra = await changes.next()
  #expect(extra.map(\.description) == nil, "seed \(seed): a change after the last commit")
  // The late subscriber got exactly the changes after its subscription.
  var lateSeen: [ClosedRange<UInt64>] = []
  if var lateChanges = late?.changes {
    while let change = await lateChanges.next() { lateSeen.append(change.sequences) }
  }
  let lateStart = try #require(late?.start)
  #expect(lateSeen.first?.lowerBound == lateStart + 1, "seed \(seed)")
  #expect(zip(lateSeen, lateSeen.dropFirst()).allSatisfy { $0.upperBound + 1 == $1.lowerBound }, "seed \(seed)")
  #expect(lateSeen.last?.upperBound == finalSequence, "seed \(seed)")

  // Replay: every state the manager showed, caches included (`Store`'s `==` compares them).
  for (sequence, state) in kept.sorted(by: { $0.key < $1.key }) {
    let replayed = try Replay.rebuild(Workspace.self, directory: directory, through: sequence)
    #expect(replayed.state == state, "seed \(seed): replay through \(sequence)")
    #expect(cacheMismatches(in: replayed.state, alsoAsking: tagPool) == [], "seed \(seed): replay through \(sequence)")
  }

  // Snapshots every 20 records, then time machines walking back and forth: one that keeps
  // keyframes often, and one that keeps almost none and so starts seeks from the snapshots.
  let written = try Snapshots.update(Workspace.self, directory: directory, every: 20, keep: 1_000)
  #expect(written.count >= 3, "seed \(seed): snapshots \(written)")
  let sequences = kept.keys.sorted()
  for (interval, maxKeyframes) in [(UInt64(7), 1_024), (30, 2)] {
    let machine = try TimeMachine<Workspace>(
      directory: directory, keyframeInterval: interval, maxKeyframes: maxKeyframes)
    for move in 0..<60 {
      let label = "seed \(seed), keyframes every \(interval), move \(move)"
      if Bool.random(using: &random) {
        try machine.jump(to: sequences.randomElement(using: &random)!)
      } else {
        try machine.step(by: Int.random(in: -15...15, using: &random))
      }
      #expect(cacheMismatches(in: machine.state, alsoAsking: tagPool) == [], "\(label), at \(machine.position)")
      if let expected = kept[machine.position] {
        #expect(machine.state == expected, "\(label), at \(machine.position)")
      }
    }
    if maxKeyframes == 2 { #expect(machine.snapshotsRead > 0, "seed \(seed): no seek started from a snapshot") }
  }

  // Reopened from the newest snapshot: the same state and a coherent cache, kept so by new commands.
  let reopened = try NotebookManager(
    directory: directory, options: JournalOptions(durability: .always),
    clock: .stepping(from: 1_800_000_000_000_000_000),
    ids: .sequential(prefix: 1 << 40))
  #expect(reopened.state == final, "seed \(seed)")
  for note in Note.all(in: reopened.state).prefix(8) {
    if let tag = note.tags.first { try await reopened.untagNote(note.id, removing: tag) }
    try await reopened.tagNote(note.id, with: tagPool.randomElement(using: &random)!)
    #expect(cacheMismatches(in: reopened.state, alsoAsking: tagPool) == [], "seed \(seed): after reopening")
  }
  reopened.close()
}

/// Where the notes' tag cache disagrees with what the notes alone give: `Store.cacheProblems()`,
/// then `Note.notes(taggedWith:)` for each tag in use and each of `extra`, then `NoteTag.index`.
func cacheMismatches(in state: Workspace, alsoAsking extra: [NoteTag]) -> [String] {
  var problems = state.notes.cacheProblems()
  var recomputed: [NoteTag: [Note]] = [:]
  for note in Note.all(in: state) {  // in id order
    for tag in Set(note.tags) { recomputed[tag, default: []].append(note) }
  }
  for tag in Set(recomputed.keys).union(extra).sorted() {
    let cached = Note.notes(taggedWith: tag, in: state).map(\.id)
    let expected = (recomputed[tag] ?? []).map(\.id)
    if cached != expected { problems.append("notes tagged \(tag): the cache gives \(cached), the notes \(expected)") }
  }
  let index = NoteTag.index(in: state)
  let expected = recomputed.map { TagCount(tag: $0.key, count: $0.value.count) }.sorted { $0.tag < $1.tag }
  if index != expected { problems.append("tag index: the cache gives \(index), the notes \(expected)") }
  return problems
}

/// The notes-store keys whose answer differs between two states: each note whose value changed,
/// each tag whose notes changed.
func noteKeysThatDiffer(from before: Workspace, to after: Workspace) -> Set<ChangeKey> {
  var keys: Set<ChangeKey> = []
  let ids = Set(Note.all(in: before).map(\.id)).union(Note.all(in: after).map(\.id))
  for id in ids where Note.note(id: id, in: before) != Note.note(id: id, in: after) {
    keys.insert(.record("notes", id))
  }
  let tags = Set(Note.all(in: before).flatMap(\.tags)).union(Note.all(in: after).flatMap(\.tags))
  for tag in tags
  where Note.notes(taggedWith: tag, in: before).map(\.id) != Note.notes(taggedWith: tag, in: after).map(\.id) {
    keys.insert(.group("notes", tag))
  }
  return keys
}

/// A tag two notes write in two Unicode forms that compare equal is one tag, one group of the
/// cache; the tag index names it as the first note (in id order) writes it, whatever the order of
/// the commands that led there, so the manager, a replay and a manager reopened from a snapshot
/// give the same bytes (entry 215). The cache files the group under the form that entered it
/// first: the decomposed form here, the composed one for a store read from a snapshot.
@Test func theTagIndexNamesATagAsItsFirstNoteWritesIt() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let manager = try makeNotebookManager(directory)
  let book = try await manager.createNotebook(title: "b")
  let decomposed = NoteTag("cafe\u{301}")
  let composed = NoteTag("caf\u{E9}")
  #expect(decomposed == composed && decomposed.name.unicodeScalars.count != composed.name.unicodeScalars.count)
  let first = try await manager.createNote(in: book, title: "first", tags: [decomposed])
  _ = try await manager.createNote(in: book, title: "second", tags: [composed])
  func forms(_ state: Workspace) -> [[Unicode.Scalar]] {
    NoteTag.index(in: state).map { Array($0.tag.name.unicodeScalars) }
  }
  // Each stage: the form the first note holding the tag writes.
  try await manager.untagNote(first, removing: decomposed)
  #expect(forms(manager.state) == [Array(composed.name.unicodeScalars)])
  try await manager.tagNote(first, with: decomposed)
  #expect(forms(manager.state) == [Array(decomposed.name.unicodeScalars)])
  try await manager.untagNote(first, removing: decomposed)
  let (state, last) = manager.current
  #expect(forms(state) == [Array(composed.name.unicodeScalars)])
  manager.close()
  #expect(forms(try Replay.rebuild(Workspace.self, directory: directory).state) == forms(state))
  try Snapshots.take(Workspace.self, directory: directory)
  let reopened = try makeNotebookManager(directory)
  #expect(reopened.lastSequence == last)
  #expect(forms(reopened.state) == forms(state))
  reopened.close()
}

/// What `StoreRecord` and `StateDigest` document, and RELIABILITY's known limits list: Swift
/// compares strings by canonical equivalence, so an import that changes only the Unicode form of
/// a note's title leaves a state equal (`==`) to the one before, and its change names no key,
/// though the title's bytes, and with them the state's digest, changed (entry 216).
@Test func aChangeOfUnicodeFormOnlyIsEqualToReadersButNotToTheDigest() async throws {
  let temporary = TemporaryDirectory()
  let manager = try makeNotebookManager(temporary.appending("journal"))
  let book = try await manager.createNotebook(title: "b")
  let id = try await manager.createNote(in: book, title: "caf\u{E9}")
  var changes = manager.changes().makeAsyncIterator()
  let before = manager.state
  var note = try #require(Note.note(id: id, in: before))
  note.title = "cafe\u{301}"
  try await manager.importNotes([note], into: book)
  let change = try #require(await changes.next())
  let after = manager.state
  #expect(Note.note(id: id, in: after)?.title.unicodeScalars.count == 5)
  #expect(after == before)
  #expect(change.keys == [])
  #expect(try StateDigest.of(after) != StateDigest.of(before))
  manager.close()
}
