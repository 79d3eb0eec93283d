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
