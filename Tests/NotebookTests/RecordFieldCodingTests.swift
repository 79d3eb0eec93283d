import Foundation
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

  /// Of two entries with equal keys the first is read (FORMAT.md), wherever the second stands and
  /// in whichever order the reader asks: `Codable`, the hand-written fields (which look for each
  /// key from the entry after the last one read) and the audit rendering all take the first.
  @Test func aRepeatedKeyReadsItsFirstEntryOnEveryPath() throws {
    func identifier(_ low: UInt64) -> [UInt8] {
      [10] + [UInt8](repeating: 0, count: 8) + withUnsafeBytes(of: low.littleEndian) { Array($0) }
    }
    func string(_ text: String) -> [UInt8] { [6, UInt8(text.utf8.count)] + Array(text.utf8) }
    let note = Note(
      id: NoteID(Identifier(high: 0, low: 1)), notebook: NotebookID(Identifier(high: 0, low: 2)),
      title: "title", body: "body", tags: [NoteTag("tag")])
    // The entries as `Note` writes them, and for each key a second entry with another value.
    let entries: [(key: String, value: [UInt8], other: [UInt8])] = [
      ("id", identifier(1), identifier(7)), ("notebook", identifier(2), identifier(8)),
      ("title", string("title"), string("later")), ("body", string("body"), string("later")),
      ("tags", [7] + string("tag") + [9], [7] + string("later") + [9]),
    ]
    func entry(_ key: String, _ value: [UInt8]) -> [UInt8] { [UInt8(key.utf8.count + 1)] + Array(key.utf8) + value }
    for (repeated, duplicate) in entries.enumerated() {
      for order in [entries.indices.map { $0 }, entries.indices.reversed()] {
        for position in 0...entries.count {
          var body: [[UInt8]] = order.map { entry(entries[$0].key, entries[$0].value) }
          // The second entry after the first one, wherever it is.
          let firstAt = order.firstIndex(of: repeated)!
          guard position > firstAt else { continue }
          body.insert(entry(duplicate.key, duplicate.other), at: position)
          let bytes: [UInt8] = [8] + Array(body.joined()) + [0]
          let context = "key \(duplicate.key), order \(order), second entry at \(position)"
          #expect(try FieldDecoder().decode(Note.self, from: bytes) == note, "\(context)")
          #expect(try FieldDecoder().decodeFields(Note.self, from: bytes) == note, "\(context)")
          var notes: [String] = []
          let json = try FieldRenderer.json(bytes, notes: &notes)
          let rendered = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
          let expected = try #require(
            try JSONSerialization.jsonObject(with: Data(FieldRenderer.json(FieldEncoder().encode(note)).utf8))
              as? [String: Any])
          #expect(NSDictionary(dictionary: rendered) == NSDictionary(dictionary: expected), "\(context): \(json)")
          #expect(json.components(separatedBy: "\"\(duplicate.key)\":").count == 2, "\(context): \(json)")
          #expect(notes.count == 1 && notes[0].contains("repeats the key \"\(duplicate.key)\""), "\(notes)")
        }
      }
    }
  }
}
