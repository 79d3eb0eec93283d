import Notebook
import Rewind
import Testing

/// Tags are trimmed and lowercased, and a note's tags are sorted without duplicates or empty tags,
/// whichever path (the ASCII fast path or the Unicode one) a tag takes.
@Test(arguments: [
  ("swift", "swift"), ("  Swift\t", "swift"), ("TODO", "todo"), ("a-b_c.9", "a-b_c.9"), ("\n", ""), ("", ""),
  ("\u{A0}Éclair\u{2003}", "éclair"), ("ÜBER", "über"), ("x y", "x y"), (" x y ", "x y"),
])
func tagsAreTrimmedAndLowercased(raw: String, expected: String) {
  #expect(NoteTag(raw).name == expected)
}

@Test func noteTagsAreSortedUniqueAndNonEmpty() {
  let id = NoteID(Identifier(high: 1, low: 2))
  let notebook = NotebookID(Identifier(high: 3, low: 4))
  let tags: [NoteTag] = ["work", "Idea", "", "work", "idea", "a", "  ", "zeta", "a"]
  let note = Note(id: id, notebook: notebook, title: "t", body: "b", tags: tags)
  #expect(note.tags.map(\.name) == ["a", "idea", "work", "zeta"])
  #expect(Note(id: id, notebook: notebook, title: "t", body: "b", tags: [""]).tags.isEmpty)
  #expect(Note(id: id, notebook: notebook, title: "t", body: "b", tags: ["one"]).tags.map(\.name) == ["one"])
  #expect(Note(id: id, notebook: notebook, title: "t", body: "b", tags: ["b", "b"]).tags.map(\.name) == ["b"])
}
