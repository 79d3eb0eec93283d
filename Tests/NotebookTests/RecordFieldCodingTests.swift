import Testing

@testable import Notebook
@testable import Rewind

/// The workspace's records are `FieldCodable` (their stores write and read them field by field
/// for snapshots and digests): their hand-written fields must be the bytes of their `Codable` form
/// (events such as `notes.imported` carry them through `Codable`, and journals hold those bytes),
/// and read back from either form, canonical or not.
@Suite struct RecordFieldCodingTests {
  func check<R: FieldCodable & Codable & Equatable>(_ record: R) throws {
    let codable = try FieldEncoder().encode(record)
    #expect(FieldEncoder().encodeFields(record) == codable)
    #expect(try FieldDecoder().decodeFields(R.self, from: codable) == record)
    let canonical = try CanonicalEncoding.encode(record)
    #expect(try FieldDecoder().decodeFields(R.self, from: canonical) == record)
    #expect(try FieldDecoder().decode(R.self, from: canonical) == record)
  }

  @Test func notesNotebooksAndReadingItemsWriteTheirCodableBytes() throws {
    var random = SeededRandom(seed: 0x5EC0)
    func id() -> Identifier { Identifier(high: random.next(), low: random.next()) }
    for index in 0..<300 {
      let tags = (0..<Int(random.next() % 4)).map { _ in NoteTag("tag\(random.next() % 9)") }
      try check(
        Note(
          id: NoteID(id()), notebook: NotebookID(id()), title: "note \(index)", body: "body ü \(random.next())",
          tags: tags))
      try check(Notebook(id: NotebookID(id()), title: "notebook \(index)"))
      try check(ReadingItem(id: ReadingItemID(id()), title: "item \(index)", isRead: random.next() % 2 == 0))
    }
  }
}
