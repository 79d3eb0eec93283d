import Notebook
import Rewind
import RewindTestSupport
import Testing

private let tagPool: [NoteTag] = ["swift", "rust", "todo", "idea", "work", "home"]
private let tagger = AutoTagger(rules: [
  (keyword: "bug", tag: "todo"), (keyword: "swift", tag: "swift"), (keyword: "plan", tag: "idea"),
])
private let words = ["bug", "swift", "plan", "lunch", "notes", "draft"]

/// Long seeded random command sequences from users, sync and automation; after every command the
/// cached queries must equal the naive reference and the from-scratch computation, and the
/// command's change must name exactly the records and tags that changed.
@Test(.timeLimit(.minutes(10)), arguments: [UInt64(1), 2, 3, 0xC0FFEE])
func cachesStayCoherentUnderRandomCommands(seed: UInt64) async throws {
  print("cachesStayCoherentUnderRandomCommands seed \(seed)")
  var random = SeededGenerator(seed: seed)
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let manager = try makeNotebookManager(directory)
  var changes = manager.changes().makeAsyncIterator()
  let notebooks = [try await manager.createNotebook(title: "One"), try await manager.createNotebook(title: "Two")]
  _ = await changes.next()
  _ = await changes.next()
  var reference = ReferenceNotebook()
  var origins: Set<Origin> = []

  func text() -> String {
    (0..<Int.random(in: 1...3, using: &random)).map { _ in words.randomElement(using: &random)! }.joined(separator: " ")
  }
  func tags() -> [NoteTag] {
    (0..<Int.random(in: 0...3, using: &random)).map { _ in tagPool.randomElement(using: &random)! }
  }
  func someNote() -> NoteID? { reference.notes.keys.sorted().randomElement(using: &random) }

  for step in 0..<150 {
    let before = manager.state
    let sequenceBefore = manager.lastSequence
    let origin: Origin
    switch Int.random(in: 0..<100, using: &random) {
    case 0..<30:
      origin = .user
      let notebook = notebooks.randomElement(using: &random)!
      let (title, body, noteTags) = (text(), text(), tags())
      let id = try await manager.createNote(in: notebook, title: title, body: body, tags: noteTags)
      reference.notes[id] = Note(id: id, notebook: notebook, title: title, body: body, tags: noteTags)
    case 30..<40:
      origin = .user
      guard let id = someNote() else { continue }
      let title = text()
      try await manager.retitleNote(id, to: title)
      reference.notes[id]?.title = title
    case 40..<48:
      origin = .user
      guard let id = someNote() else { continue }
      let body = text()
      try await manager.editBody(of: id, to: body)
      reference.notes[id]?.body = body
    case 48..<58:
      origin = .user
      guard let id = someNote() else { continue }
      let tag = tagPool.randomElement(using: &random)!
      try await manager.tagNote(id, with: tag)
      let tagged = Array(Set(reference.notes[id]!.tags + [tag])).sorted()
      reference.notes[id]?.tags = tagged
    case 58..<66:
      origin = .user
      guard let id = someNote(), let tag = reference.notes[id]?.tags.randomElement(using: &random) else { continue }
      try await manager.untagNote(id, removing: tag)
      reference.notes[id]?.tags.removeAll { $0 == tag }
    case 66..<72:
      origin = .user
      guard let id = someNote() else { continue }
      try await manager.deleteNote(id)
      reference.notes[id] = nil
    case 72..<86:
      origin = .sync
      let notebook = notebooks[0]
      var remote: [RemoteNote] = []
      let local = reference.notes.values.filter { $0.notebook == notebook }.sorted { $0.id < $1.id }
      for note in local where Bool.random(using: &random) {
        remote.append(
          RemoteNote(
            id: note.id, title: Bool.random(using: &random) ? note.title : text(), body: note.body, tags: tags()))
      }
      for _ in 0..<Int.random(in: 0...2, using: &random) {
        remote.append(
          RemoteNote(
            id: NoteID(Identifier(high: 0xFEED, low: random.next())), title: text(), body: text(), tags: tags()))
      }
      try await manager.applySyncedNotes(remote, into: notebook)
      for incoming in remote {
        reference.notes[incoming.id] = Note(
          id: incoming.id, notebook: notebook, title: incoming.title, body: incoming.body, tags: incoming.tags)
      }
    case 86..<95:
      origin = .automation
      try await manager.runAutoTagger(tagger)
      for (id, note) in reference.notes {
        reference.notes[id]?.tags = Array(Set(note.tags + tagger.missingTags(for: note))).sorted()
      }
    default:
      origin = .import
      let notebook = notebooks[1]
      let kept = reference.notes.values.filter { $0.notebook == notebook && Bool.random(using: &random) }
      let fresh = (0..<Int.random(in: 0...2, using: &random)).map { _ in
        Note(
          id: NoteID(Identifier(high: 0xBEEF, low: random.next())), notebook: notebook, title: text(), body: text(),
          tags: tags())
      }
      try await manager.importNotes(kept + fresh, into: notebook)
      for note in reference.notes.values where note.notebook == notebook { reference.notes[note.id] = nil }
      for note in kept + fresh { reference.notes[note.id] = note }
    }
    let state = manager.state
    let context = "seed \(seed), step \(step), origin \(origin)"

    #expect(Note.all(in: state) == reference.notes.values.sorted { $0.id < $1.id }, "\(context)")
    for tag in Set(tagPool).union(reference.allTags) {
      let cached = Note.notes(taggedWith: tag, in: state)
      #expect(cached == reference.notes(taggedWith: tag), "\(context), tag \(tag)")
      #expect(cached == Note.all(in: state).filter { $0.tags.contains(tag) }, "\(context), tag \(tag)")
    }
    #expect(NoteTag.index(in: state) == reference.tagIndex(), "\(context)")

    guard manager.lastSequence != sequenceBefore else { continue }
    origins.insert(origin)
    let change = try #require(await changes.next(), "\(context)")
    #expect(change.origin == origin, "\(context)")
    #expect(change.sequences.upperBound == manager.lastSequence, "\(context)")
    let expected = noteKeysThatDiffer(from: before, to: state)
    #expect(Set(change.keys.filter { $0.store == "notes" }) == expected, "\(context)")
  }
  #expect(origins.isSuperset(of: [.user, .sync, .automation, .import]), "seed \(seed)")
  manager.close()
  #expect(try Replay.rebuild(Workspace.self, directory: directory).state == manager.state, "seed \(seed)")
}
