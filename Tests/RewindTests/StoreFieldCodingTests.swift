import Foundation
import RewindTestSupport
import Testing

@testable import Rewind

/// A store whose records are `FieldCodable` writes and reads them by their hand-written fields
/// (`FieldCodableArray`): the bytes must be those of the `Codable` records.
@Suite struct StoreFieldCodingTests {
  /// The same record twice: `Plain` through `Codable` only, `Fast` also `FieldCodable`.
  struct Plain: StoreRecord, Codable {
    var id: Identifier
    var title: String
    var count: Int
    var groups: [String]
    var groupKeys: [String] { groups }
  }

  struct Fast: StoreRecord, Codable, FieldCodable {
    var id: Identifier
    var title: String
    var count: Int
    var groups: [String]
    var groupKeys: [String] { groups }

    init(_ plain: Plain) {
      (id, title, count, groups) = (plain.id, plain.title, plain.count, plain.groups)
    }

    func encodeFields(into writer: inout FieldWriter) {
      writer.write(id, for: "id")
      writer.write(title, for: "title")
      writer.write(count, for: "count")
      writer.write(groups, for: "groups")
    }

    init(fields reader: inout FieldReader) throws {
      count = try reader.read(Int.self, for: "count")
      groups = try reader.read([String].self, for: "groups")
      id = try reader.read(Identifier.self, for: "id")
      title = try reader.read(String.self, for: "title")
    }
  }

  func stores(_ count: Int, seed: UInt64) -> (Store<Plain>, Store<Fast>) {
    var random = SeededRandom(seed: seed)
    var plain = Store<Plain>(name: "things")
    var fast = Store<Fast>(name: "things")
    var context = ApplyContext(recording: false)
    for index in 0..<count {
      let record = Plain(
        id: Identifier(high: random.next(), low: random.next()), title: "thing \(index) ü",
        count: Int(truncatingIfNeeded: random.next()) >> 3,
        groups: (0..<Int(random.next() % 3)).map { _ in "g\(random.next() % 5)" })
      plain.insert(record, context: &context)
      fast.insert(Fast(record), context: &context)
    }
    return (plain, fast)
  }

  @Test(arguments: [0, 1, 500])
  func fieldCodableRecordsWriteTheBytesOfTheirCodableForm(count: Int) throws {
    let (plain, fast) = stores(count, seed: UInt64(count) + 11)
    let plainBytes = try FieldEncoder().encode(plain)
    #expect(try FieldEncoder().encode(fast) == plainBytes)
    #expect(try CanonicalEncoding.encode(fast) == CanonicalEncoding.encode(plain))

    // Each reads the other's bytes, canonical or not, to the same records and groups.
    let canonical = try CanonicalEncoding.encode(plain)
    for bytes in [plainBytes, canonical] {
      let decodedFast = try FieldDecoder().decode(Store<Fast>.self, from: bytes)
      let decodedPlain = try FieldDecoder().decode(Store<Plain>.self, from: bytes)
      #expect(decodedFast == fast)
      #expect(decodedPlain == plain)
      #expect(decodedFast.cacheProblems().isEmpty)
      for group in (0..<5).map({ "g\($0)" }) {
        #expect(decodedFast.records(inGroup: group).map(\.id) == plain.records(inGroup: group).map(\.id))
      }
    }
  }

  /// Through another encoder (JSON), the records go element by element through `Codable`.
  @Test func otherCodersGoThroughCodable() throws {
    let (plain, fast) = stores(50, seed: 3)
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    let json = try encoder.encode(fast)
    #expect(json == (try encoder.encode(plain)))
    #expect(try JSONDecoder().decode(Store<Fast>.self, from: json) == fast)
  }

  /// Damaged bytes throw, never trap, and records that are not an array are named.
  @Test func damagedRecordsThrow() throws {
    let (_, fast) = stores(20, seed: 5)
    let bytes = try FieldEncoder().encode(fast)
    for cut in stride(from: 0, to: bytes.count, by: 7) {
      #expect(throws: (any Error).self) { try FieldDecoder().decode(Store<Fast>.self, from: Array(bytes[..<cut])) }
    }
    struct NotAnArray: Encodable {
      var name = "things"
      var records = 5
    }
    #expect(throws: DecodingError.self) {
      try FieldDecoder().decode(Store<Fast>.self, from: FieldEncoder().encode(NotAnArray()))
    }
  }
}
