public import Rewind

/// A note: filed under its tags in the notes store's grouping cache.
public struct Note: StoreRecord, Codable {
  public var id: NoteID
  public var notebook: NotebookID
  public var title: String
  public var body: String
  /// Sorted, without duplicates or empty tags.
  public var tags: [NoteTag]

  public init(id: NoteID, notebook: NotebookID, title: String, body: String, tags: [NoteTag]) {
    self.id = id
    self.notebook = notebook
    self.title = title
    self.body = body
    self.tags = Note.normalized(tags)
  }

  public var groupKeys: [NoteTag] { tags }

  /// `tags` sorted, without duplicates or empty tags. Sorts and drops neighbours that repeat
  /// (no `Set`): replay normalizes the tags of every note created or tagged.
  static func normalized(_ tags: [NoteTag]) -> [NoteTag] {
    var sorted = tags.filter { !$0.isEmpty }
    guard sorted.count > 1 else { return sorted }
    sorted.sort()
    var kept = 1
    for index in 1..<sorted.count where sorted[index] != sorted[kept - 1] {
      sorted[kept] = sorted[index]
      kept += 1
    }
    sorted.removeLast(sorted.count - kept)
    return sorted
  }
}
