import Rewind

/// An automation: tags notes whose title or body mentions a keyword. Its result lands through the
/// manager like any other change, with origin `.automation`.
public struct AutoTagger: Sendable {
  /// Keyword (matched case-insensitively in title and body) and the tag it adds. A rule whose tag
  /// is blank (empty once trimmed) adds nothing, as `NotebookManager.tagNote` refuses such a tag.
  /// No keyword is blank (see `init(rules:)`).
  public let rules: [(keyword: String, tag: NoteTag)]

  /// - Precondition: no rule's keyword is blank (empty once trimmed): every note's text contains
  ///   the empty string, so such a rule would tag every note. Rules are the app's code, not data.
  public init(rules: [(keyword: String, tag: NoteTag)]) {
    for rule in rules {
      precondition(!rule.keyword.trimmed.isEmpty, "an auto-tagger rule's keyword is blank (tag \(rule.tag))")
    }
    self.rules = rules
  }

  /// The tags the rules give `note` that it does not have yet, in tag order.
  public func missingTags(for note: Note) -> [NoteTag] {
    let text = (note.title + " " + note.body).lowercased()
    let wanted = rules.filter { !$0.tag.isEmpty && text.contains($0.keyword.lowercased()) }.map(\.tag)
    // Sorted alike whatever order a set gives them (`String`'s `<` is no strict weak order across
    // Unicode forms): the order of the events the tagger records.
    return sortedAlike(Set(wanted).subtracting(note.tags))
  }
}
