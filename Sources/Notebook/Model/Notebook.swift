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

/// Field by field, the bytes of its `Codable` form (see `FieldCodable` and `Note`'s).
extension Notebook: FieldCodable {
  public func encodeFields(into writer: inout FieldWriter) {
    writer.write(id.raw, for: "id")
    writer.write(title, for: "title")
  }

  public init(fields reader: inout FieldReader) throws {
    id = NotebookID(try reader.read(Identifier.self, for: "id"))
    title = try reader.read(String.self, for: "title")
  }
}
