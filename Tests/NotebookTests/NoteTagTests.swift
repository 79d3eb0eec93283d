import Rewind
import RewindTestSupport
import Testing

@testable import Notebook

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

/// Tagging inserts the tag in place into normalized tags; whatever the tags (unsorted, repeated,
/// empty), the result is what normalizing the tags with the new one gives.
@Test func insertingATagEqualsNormalizingWithIt() {
  var random = SeededRandom(seed: 42)
  let names: [NoteTag] = ["", "a", "b", "idea", "work", "zeta", "éclair", "a-b"]
  for _ in 0..<2_000 {
    let count = Int(random.next() % 6)
    var tags = (0..<count).map { _ in names[Int(random.next() % UInt64(names.count))] }
    if random.next() % 2 == 0 { tags = Note.normalized(tags) }
    let tag = names[Int(random.next() % UInt64(names.count))]
    var inserted = tags
    Note.insert(tag, into: &inserted)
    #expect(inserted == Note.normalized(tags + [tag]))
    #expect(Note.isNormalized(inserted))
  }
  #expect(!Note.isNormalized(["b", "a"]))
  #expect(!Note.isNormalized(["a", "a"]))
  #expect(!Note.isNormalized([""]))
  #expect(Note.isNormalized(["a", "b"]))
}

/// Titles and tags are trimmed of Unicode's white space; the ASCII shortcut agrees with the
/// Unicode property on every ASCII and Latin-1 scalar, and on the white space beyond them.
@Test func whiteSpaceShortcutAgreesWithUnicode() {
  let scalars = (0...0x3000).compactMap(Unicode.Scalar.init) + ["\u{FEFF}", "\u{205F}", "\u{3000}"]
  for scalar in scalars {
    #expect(scalar.isWhiteSpace == scalar.properties.isWhitespace, "U+\(String(scalar.value, radix: 16))")
  }
  #expect("\u{85}\u{A0} a\u{2028}b \t\u{3000}".trimmed == "a\u{2028}b")
  #expect(" \n\t\u{B}\u{C}\r".trimmed == "")
  #expect("title".trimmed == "title")
  #expect("x".trimmed == "x")
  #expect("\u{1F600} ".trimmed == "\u{1F600}")
}

/// The shortcut for strings that start and end with printable ASCII trims exactly as the search
/// over the scalars does, whatever scalar stands at either end.
@Test func trimmingShortcutAgreesWithTheScalarSearch() {
  func reference(_ text: String) -> String {
    let scalars = Array(text.unicodeScalars)
    guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
      let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
    else { return "" }
    var result = String.UnicodeScalarView()
    result.append(contentsOf: scalars[first...last])
    return String(result)
  }
  let scalars = (0...0x3000).compactMap(Unicode.Scalar.init) + ["\u{FEFF}", "\u{1F600}"]
  for scalar in scalars {
    for text in ["\(scalar)a b", "a b\(scalar)", "\(scalar)a\(scalar)", "\(scalar)", "a\(scalar)b"] {
      #expect(text.trimmed == reference(text), "U+\(String(scalar.value, radix: 16))")
    }
  }
  #expect(" title ".trimmed == "title")
  #expect("title\u{85}".trimmed == "title")
  #expect("\u{A0}title".trimmed == "title")
}

/// Tags in two Unicode forms (found by the review of the caches, Dec 6). `String`'s `<` is no
/// strict weak order across forms (neither `"cafe\u{301}"` nor `"caf\u{E9}s"` sorts before the
/// other), and `normalized` sorted by it and dropped only neighbours that repeated: a command
/// recorded other tags for the same tags in another order (`[caf\u{E9}, caf\u{E9}s, cafe\u{301}]`
/// kept "café" twice, the same three in the reverse order two tags), so other events and another
/// digest. Commands record `Note.recorded`: one result whatever the order, each tag once.
@Test func recordedTagsAreTheSameWhateverOrderTheyCameIn() {
  let tags: [NoteTag] = ["caf\u{E9}", "caf\u{E9}s", "cafe\u{301}", "e\u{301}", "\u{E9}a", "b"]
  var results: Set<[[Unicode.Scalar]]> = []
  for order in permutations(tags) {
    let recorded = Note.recorded(order)
    results.insert(recorded.map { Array($0.name.unicodeScalars) })
    // "café" once (composed and decomposed are one tag), each other tag once.
    #expect(recorded.count == 5, "\(order) -> \(recorded)")
    // Applied (`Note.init` normalizes), the note holds them as recorded.
    let note = Note(
      id: NoteID(Identifier(high: 1, low: 2)), notebook: NotebookID(Identifier(high: 3, low: 4)), title: "t",
      body: "", tags: recorded)
    #expect(note.tags.count == 5)
  }
  #expect(results.count == 1, "\(results)")
  // Whatever order they come in, `normalized` (the apply paths') keeps each tag once.
  for order in permutations(tags) { #expect(Note.normalized(order).count == 5, "\(order)") }
}

/// Tagging a note with a tag it holds in another Unicode form adds nothing (the binary search
/// went past the equal tag and inserted it a second time).
@Test func taggingWithAnotherFormOfAHeldTagAddsNothing() {
  var tags = Note.normalized(["cafe\u{301}", "cafe\u{301}s"])
  #expect(tags.count == 2 && Note.isNormalized(tags))
  Note.insert("caf\u{E9}s", into: &tags)
  Note.insert("caf\u{E9}", into: &tags)
  #expect(
    tags.map { Array($0.name.unicodeScalars) } == [
      Array("cafe\u{301}".unicodeScalars), Array("cafe\u{301}s".unicodeScalars),
    ])
  var composed: [NoteTag] = ["caf\u{E9}s"]
  Note.insert("cafe\u{301}", into: &composed)
  #expect(composed.count == 2)
}
