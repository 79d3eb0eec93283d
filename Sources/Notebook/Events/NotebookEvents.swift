public import Rewind

public struct NotebookCreated: Event {
  public static let name = "notebook.created"
  public var id: NotebookID
  public var title: String
}

public struct NotebookRenamed: Event {
  public static let name = "notebook.renamed"
  public var id: NotebookID
  public var title: String
}

/// Version 2 added tags.
public struct NoteCreated: Event {
  public static let name = "note.created"
  public static let version: UInt32 = 2
  public var id: NoteID
  public var notebook: NotebookID
  public var title: String
  public var body: String
  public var tags: [NoteTag]
}

/// Version 1 of `note.created`, before notes had tags.
public struct NoteCreatedV1: Event {
  public static let name = "note.created"
  public static let version: UInt32 = 1
  public var id: NoteID
  public var notebook: NotebookID
  public var title: String
  public var body: String

  public init(id: NoteID, notebook: NotebookID, title: String, body: String) {
    self.id = id
    self.notebook = notebook
    self.title = title
    self.body = body
  }
}

public struct NoteRetitled: Event {
  public static let name = "note.retitled"
  public var id: NoteID
  public var title: String
}

public struct NoteBodyEdited: Event {
  public static let name = "note.bodyEdited"
  public var id: NoteID
  public var body: String
}

public struct NoteTagged: Event {
  public static let name = "note.tagged"
  public var id: NoteID
  public var tag: NoteTag
}

public struct NoteUntagged: Event {
  public static let name = "note.untagged"
  public var id: NoteID
  public var tag: NoteTag
}

public struct NoteDeleted: Event {
  public static let name = "note.deleted"
  public var id: NoteID
}

/// The explicit whole-collection replacement: after it, the notebook holds exactly `notes`.
/// Ordinary edits never replace a collection; only an import does.
public struct NotesImported: Event {
  public static let name = "notes.imported"
  public var notebook: NotebookID
  public var notes: [Note]
}

public struct EditorSettingsChanged: Event {
  public static let name = "settings.changed"
  public var settings: EditorSettings
}

public struct ReadingItemAdded: Event {
  public static let name = "reading.itemAdded"
  public var id: ReadingItemID
  public var title: String
}

public struct ReadingItemToggled: Event {
  public static let name = "reading.itemToggled"
  public var id: ReadingItemID
  public var isRead: Bool
}

public struct ReadingItemRemoved: Event {
  public static let name = "reading.itemRemoved"
  public var id: ReadingItemID
}

/// The explicit whole-list replacement, accepted only without duplicate identifiers.
public struct ReadingListImported: Event {
  public static let name = "reading.listImported"
  public var items: [ReadingItem]
}

// MARK: Hand-written field coding for the frequent note events (same bytes as their Codable form)

extension NoteCreated: FieldCodable {
  public func encodeFields(into writer: inout FieldWriter) {
    writer.write(id.raw, for: "id")
    writer.write(notebook.raw, for: "notebook")
    writer.write(title, for: "title")
    writer.write(body, for: "body")
    writer.write(tags.map(\.name), for: "tags")
  }

  public init(fields reader: inout FieldReader) throws {
    id = NoteID(try reader.read(Identifier.self, for: "id"))
    notebook = NotebookID(try reader.read(Identifier.self, for: "notebook"))
    title = try reader.read(String.self, for: "title")
    body = try reader.read(String.self, for: "body")
    tags = try reader.read([String].self, for: "tags").map { NoteTag($0) }
  }
}

extension NoteRetitled: FieldCodable {
  public func encodeFields(into writer: inout FieldWriter) {
    writer.write(id.raw, for: "id")
    writer.write(title, for: "title")
  }

  public init(fields reader: inout FieldReader) throws {
    id = NoteID(try reader.read(Identifier.self, for: "id"))
    title = try reader.read(String.self, for: "title")
  }
}

extension NoteBodyEdited: FieldCodable {
  public func encodeFields(into writer: inout FieldWriter) {
    writer.write(id.raw, for: "id")
    writer.write(body, for: "body")
  }

  public init(fields reader: inout FieldReader) throws {
    id = NoteID(try reader.read(Identifier.self, for: "id"))
    body = try reader.read(String.self, for: "body")
  }
}

extension NoteTagged: FieldCodable {
  public func encodeFields(into writer: inout FieldWriter) {
    writer.write(id.raw, for: "id")
    writer.write(tag.name, for: "tag")
  }

  public init(fields reader: inout FieldReader) throws {
    id = NoteID(try reader.read(Identifier.self, for: "id"))
    tag = NoteTag(try reader.read(String.self, for: "tag"))
  }
}

extension NoteUntagged: FieldCodable {
  public func encodeFields(into writer: inout FieldWriter) {
    writer.write(id.raw, for: "id")
    writer.write(tag.name, for: "tag")
  }

  public init(fields reader: inout FieldReader) throws {
    id = NoteID(try reader.read(Identifier.self, for: "id"))
    tag = NoteTag(try reader.read(String.self, for: "tag"))
  }
}

extension NoteDeleted: FieldCodable {
  public func encodeFields(into writer: inout FieldWriter) { writer.write(id.raw, for: "id") }

  public init(fields reader: inout FieldReader) throws { id = NoteID(try reader.read(Identifier.self, for: "id")) }
}
