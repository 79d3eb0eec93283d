import Notebook

/// A naive model of the notes to compare the real one against: plain dictionaries, every query
/// computed from scratch, no caches. Updated from the same commands' intent, not from events.
struct ReferenceNotebook {
  var notes: [NoteID: Note] = [:]

  func notes(taggedWith tag: NoteTag) -> [Note] {
    notes.values.filter { $0.tags.contains(tag) }.sorted { $0.id < $1.id }
  }

  func tagIndex() -> [TagCount] {
    var counts: [NoteTag: Int] = [:]
    for note in notes.values { for tag in Set(note.tags) { counts[tag, default: 0] += 1 } }
    return counts.map { TagCount(tag: $0.key, count: $0.value) }.sorted { $0.tag < $1.tag }
  }

  var allTags: Set<NoteTag> { Set(notes.values.flatMap(\.tags)) }
}
