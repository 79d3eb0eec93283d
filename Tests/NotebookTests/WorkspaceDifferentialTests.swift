import Foundation
import Testing

@testable import Notebook
@testable import Rewind

/// The notes' tag cache under events applied straight to the workspace, as replay applies them,
/// including ones the manager never records (tags blank, in capitals, padded, spelled in two
/// Unicode forms that compare equal; tagging and untagging absent notes; imports with unsorted,
/// repeated tags and a note twice), with recording and replay contexts: every state kept along
/// the way must list, group and count its notes as a dictionary of them does, keep each note's
/// tags normalized, and come back equal, with the same canonical bytes and digest, from its
/// field encoding and from JSON.
@Test(arguments: [UInt64(1), 2, 3])
func workspaceTagCacheAgreesWithADictionaryUnderAppliedEvents(seed: UInt64) throws {
  var random = SeededRandom(seed: seed)
  let rawTags = [
    "", " ", "a", "A", " a ", "b", "Work", "work", "caf\u{E9}", "cafe\u{301}", "CAF\u{C9}", "\u{130}", "z z", "\t",
  ]
  let notebooks = [NotebookID(Identifier(high: 9, low: 1)), NotebookID(Identifier(high: 9, low: 2))]
  func pick<T>(_ list: [T]) -> T { list[Int(random.next() % UInt64(list.count))] }
  func noteID() -> NoteID { NoteID(Identifier(high: 1, low: random.next() % 400)) }
  func tags() -> [NoteTag] { (0..<Int(random.next() % 5)).map { _ in NoteTag(pick(rawTags)) } }
  var workspace = Workspace()
  var reference: [NoteID: Note] = [:]
  var kept: [(Workspace, [NoteID: Note])] = []
  for step in 0..<4_000 {
    var context = ApplyContext(recording: random.next() % 2 == 0)
    let id = noteID()
    switch random.next() % 40 {
    case 0..<12:
      let event = NoteCreated(id: id, notebook: pick(notebooks), title: "t\(step)", body: "b", tags: tags())
      var applied = event
      workspace.apply(&applied, &context)
      reference[id] = Note(id: id, notebook: event.notebook, title: event.title, body: event.body, tags: event.tags)
    case 12..<18:
      let tag = NoteTag(pick(rawTags))
      workspace.apply(NoteTagged(id: id, tag: tag), &context)
      if let note = reference[id] { reference[id]!.tags = Note.normalized(note.tags + [tag]) }
    case 18..<23:
      let tag = NoteTag(pick(rawTags))
      workspace.apply(NoteUntagged(id: id, tag: tag), &context)
      reference[id]?.tags.removeAll { $0 == tag }
    case 23..<27:
      var event = NoteRetitled(id: id, title: "r\(step)")
      workspace.apply(&event, &context)
      reference[id]?.title = "r\(step)"
    case 27..<31:
      workspace.apply(NoteDeleted(id: id), &context)
      reference[id] = nil
    case 31:
      let notebook = pick(notebooks)
      var notes: [Note] = []
      for _ in 0..<Int(random.next() % 40) {
        var note = Note(id: noteID(), notebook: pick(notebooks), title: "i\(step)", body: "", tags: [])
        note.tags = tags()  // as an event may hold them: not normalized
        notes.append(note)
      }
      if let first = notes.first, random.next() % 3 == 0 { notes.append(first) }
      workspace.apply(NotesImported(notebook: notebook, notes: notes), &context)
      let incoming = Set(notes.map(\.id))
      for (key, note) in reference where note.notebook == notebook && !incoming.contains(key) { reference[key] = nil }
      for var note in notes {
        note.notebook = notebook
        note.tags = Note.normalized(note.tags)
        reference[note.id] = note
      }
    default:
      var event = NoteBodyEdited(id: id, body: "e\(step)")
      workspace.apply(&event, &context)
      reference[id]?.body = "e\(step)"
    }
    if step % 200 == 0 { kept.append((workspace, reference)) }
  }
  kept.append((workspace, reference))
  for (index, (state, expected)) in kept.enumerated() {
    let label = "seed \(seed), kept \(index)"
    #expect(Note.all(in: state) == expected.values.sorted { $0.id < $1.id }, "\(label)")
    #expect(state.notes.cacheProblems().isEmpty, "\(label)")
    let allTags = Set(expected.values.flatMap(\.tags)).union(rawTags.map { NoteTag($0) })
    for tag in allTags {
      let want = expected.values.filter { $0.tags.contains(tag) }.sorted { $0.id < $1.id }
      #expect(Note.notes(taggedWith: tag, in: state) == want, "\(label), tag \(tag)")
    }
    var counts: [NoteTag: Int] = [:]
    for note in expected.values { for tag in Set(note.tags) { counts[tag, default: 0] += 1 } }
    #expect(NoteTag.index(in: state).map(\.count) == counts.sorted { $0.key < $1.key }.map(\.value), "\(label)")
    for note in Note.all(in: state) { #expect(Note.isNormalized(note.tags), "\(label)") }
    let bytes = try CanonicalEncoding.encode(state)
    let restored = try FieldDecoder().decode(Workspace.self, from: bytes)
    #expect(restored == state, "\(label)")
    #expect(try CanonicalEncoding.encode(restored) == bytes, "\(label)")
    #expect(restored.notes.cacheProblems().isEmpty, "\(label)")
    let json = try JSONDecoder().decode(Workspace.self, from: JSONEncoder().encode(state))
    #expect(json == state, "\(label)")
    #expect(try StateDigest.of(json) == StateDigest.of(state), "\(label)")
  }
}
