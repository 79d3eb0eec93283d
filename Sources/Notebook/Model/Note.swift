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

  static func normalized(_ tags: [NoteTag]) -> [NoteTag] { Array(Set(tags.filter { !$0.isEmpty })).sorted() }
}
