public import Rewind

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
