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

  /// `tags` with `tag` added, computed in place: when `tags` is already normalized (as every apply
  /// path leaves it), the tag is inserted where it sorts unless it is there or empty, without
  /// building, filtering and sorting a new array (replay tags notes often).
  ///
  /// `String`'s `<` is no strict weak order across Unicode forms, so the search can pass over a
  /// tag equal to this one in another form, or find no place strictly between two neighbours
  /// (`"cafe\u{301}"` and `"caf\u{E9}s"` sort neither way): a tag held in either form is not
  /// added again, and one the search cannot place is added by `normalized`.
  static func insert(_ tag: NoteTag, into tags: inout [NoteTag]) {
    guard isNormalized(tags) else {
      tags = normalized(tags + [tag])
      return
    }
    guard !tag.isEmpty else { return }
    var low = 0
    var high = tags.count
    while low < high {
      let middle = (low + high) / 2
      if tags[middle] < tag { low = middle + 1 } else { high = middle }
    }
    if low < tags.count && tags[low] == tag { return }
    if tags.contains(tag) { return }
    if (low > 0 && !(tags[low - 1] < tag)) || (low < tags.count && !(tag < tags[low])) {
      tags = normalized(tags + [tag])
      return
    }
    tags.insert(tag, at: low)
  }

  /// Whether `tags` is sorted, without duplicates or empty tags (what `normalized` returns).
  static func isNormalized(_ tags: [NoteTag]) -> Bool {
    for index in tags.indices {
      if tags[index].isEmpty || (index > 0 && !(tags[index - 1] < tags[index])) { return false }
    }
    return true
  }

  /// `tags` sorted, without duplicates or empty tags: the same for the same tags in any order.
  ///
  /// Tags equal in two Unicode forms are one tag: the form kept is the one whose UTF-8 sorts
  /// first. They are sorted by `sortedAlike`, since `String`'s `<` is no strict weak order across
  /// forms: sorted by `<` alone, the same tags in another order (a `Set`'s, from one process to the
  /// next) came out in another order, and a tag equal to another but not next to it stayed twice.
  /// Each result is its own normalized form.
  static func normalized(_ tags: [NoteTag]) -> [NoteTag] {
    // Tags decoded from a journal are normalized already (every apply path leaves them so): kept
    // as they are, without a new array.
    if isNormalized(tags) { return tags }
    var seen = Set<NoteTag>(minimumCapacity: tags.count)
    let distinct = tags.filter { !$0.isEmpty }
      .sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
      .filter { seen.insert($0).inserted }
    return sortedAlike(distinct)
  }
}

/// Snapshots and digests write every note: field by field, the bytes of its `Codable` form (see
/// `FieldCodable`), read back in the order of the canonical encoding (fields sorted by name),
/// which is how snapshots hold them.
extension Note: FieldCodable {
  public func encodeFields(into writer: inout FieldWriter) {
    writer.write(id.raw, for: "id")
    writer.write(notebook.raw, for: "notebook")
    writer.write(title, for: "title")
    writer.write(body, for: "body")
    writer.write(tags.map(\.name), for: "tags")
  }

  /// As the `Codable` form: the tags as they were written.
  public init(fields reader: inout FieldReader) throws {
    body = try reader.read(String.self, for: "body")
    id = NoteID(try reader.read(Identifier.self, for: "id"))
    notebook = NotebookID(try reader.read(Identifier.self, for: "notebook"))
    tags = try reader.read([String].self, for: "tags").map { NoteTag($0) }
    title = try reader.read(String.self, for: "title")
  }
}
