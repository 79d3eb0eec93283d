public import Rewind

/// A notebook: a named collection of notes.
public struct Notebook: StoreRecord, Codable {
  public var id: NotebookID
  public var title: String

  public init(id: NotebookID, title: String) {
    self.id = id
    self.title = title
  }
}

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

/// An entry of the reading list. Identity is `id`; two items may share a title.
public struct ReadingItem: StoreRecord, Codable {
  public var id: ReadingItemID
  public var title: String
  public var isRead: Bool

  public init(id: ReadingItemID, title: String, isRead: Bool = false) {
    self.id = id
    self.title = title
    self.isRead = isRead
  }
}

/// How the editor looks: one value, changed as a whole.
public struct EditorSettings: Sendable, Equatable, Codable {
  public var fontSize: Int
  public var theme: String
  public var spellCheck: Bool

  public init(fontSize: Int = 13, theme: String = "light", spellCheck: Bool = true) {
    self.fontSize = fontSize
    self.theme = theme
    self.spellCheck = spellCheck
  }
}
