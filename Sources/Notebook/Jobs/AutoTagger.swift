/// An automation: tags notes whose title or body mentions a keyword. Its result lands through the
/// manager like any other change, with origin `.automation`.
public struct AutoTagger: Sendable {
  /// Keyword (matched case-insensitively in title and body) and the tag it adds. A rule whose tag
  /// is blank (empty once trimmed) adds nothing, as `NotebookManager.tagNote` refuses such a tag.
  public var rules: [(keyword: String, tag: NoteTag)]

  public init(rules: [(keyword: String, tag: NoteTag)]) { self.rules = rules }

  /// The tags the rules give `note` that it does not have yet, in tag order.
  public func missingTags(for note: Note) -> [NoteTag] {
    let text = (note.title + " " + note.body).lowercased()
    let wanted = rules.filter { !$0.tag.isEmpty && text.contains($0.keyword.lowercased()) }.map(\.tag)
    return Array(Set(wanted).subtracting(note.tags)).sorted()
  }
}
