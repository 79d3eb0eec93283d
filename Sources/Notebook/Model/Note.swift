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
  /// tag equal to this one in another form (`"caf\u{E9}s"` past `"cafe\u{301}s"`): a tag held in
  /// either form is not added again. Where the search places a tag is unchanged (journals written
  /// before replay as they did); only the duplicate it could add is not.
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
    tags.insert(tag, at: low)
  }

  /// Whether `tags` is sorted, without duplicates or empty tags (what `normalized` returns).
  static func isNormalized(_ tags: [NoteTag]) -> Bool {
    for index in tags.indices {
      if tags[index].isEmpty || (index > 0 && !(tags[index - 1] < tags[index])) { return false }
    }
    return true
  }

  /// `tags` sorted, without duplicates or empty tags. Sorts and drops neighbours that repeat
  /// (no `Set`): replay normalizes the tags of every note created or tagged. Then drops any tag
  /// equal to one kept before it: `String`'s `<` is no strict weak order across Unicode forms, so
  /// two forms of one tag need not end up neighbours (`[café, cafés, café]` kept "café" twice).
  /// What it returns depends on the order `tags` come in when they mix Unicode forms (the apply
  /// paths keep it, so that journals written before replay as they did): commands record
  /// `recorded(_:)`, which gives it one order first.
  static func normalized(_ tags: [NoteTag]) -> [NoteTag] {
    // Tags decoded from a journal are normalized already (every apply path leaves them so): kept
    // as they are, without a new array.
    if isNormalized(tags) { return tags }
    var sorted = tags.filter { !$0.isEmpty }
    guard sorted.count > 1 else { return sorted }
    sorted.sort()
    var kept = 1
    for index in 1..<sorted.count where !sorted[..<kept].contains(sorted[index]) {
      sorted[kept] = sorted[index]
      kept += 1
    }
    sorted.removeLast(sorted.count - kept)
    return sorted
  }

  /// The tags a command records for `tags`, given in any order: `normalized` of them in one order
  /// (`sortedAlike`), so that the same tags record the same event in every process, whatever order
  /// they came in (an app's `Set` gives its hash order).
  /// Fewer than two tags have one order already (`createNote`'s usual case: no `sortedAlike`).
  static func recorded(_ tags: [NoteTag]) -> [NoteTag] { normalized(tags.count < 2 ? tags : sortedAlike(tags)) }
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
