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

/// Field by field, the bytes of its `Codable` form, read in canonical order (see `FieldCodable`
/// and `Note`'s).
extension ReadingItem: FieldCodable {
  public func encodeFields(into writer: inout FieldWriter) {
    writer.write(id.raw, for: "id")
    writer.write(title, for: "title")
    writer.write(isRead, for: "isRead")
  }

  public init(fields reader: inout FieldReader) throws {
    id = ReadingItemID(try reader.read(Identifier.self, for: "id"))
    isRead = try reader.read(Bool.self, for: "isRead")
    title = try reader.read(String.self, for: "title")
  }
}
