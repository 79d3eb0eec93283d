import Foundation
import RewindTestSupport
import Testing

@testable import Rewind

/// A store whose records are `FieldCodable` writes and reads them by their hand-written fields
/// (`FieldCodableTreeValues`, `FieldCodableArray`): the bytes must be those of the `Codable` records.
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

  /// Decoding files each record under each of its group keys once, however many it has and
  /// however often it names one (a few keys are compared among themselves, many go through a
  /// set), whether the records are read by their hand-written fields or through `Codable`.
  @Test func decodingFilesRepeatedAndManyGroupKeysOnce() throws {
    let keys: [[String]] = [
      [], ["a"], ["a", "a"], ["b", "a", "b", "a"],
      ["a", "b", "c", "d", "e", "f", "g", "h"],  // eight: compared
      ["c", "a", "c", "b", "d", "e", "f", "g", "h", "i", "j", "a"],  // twelve, two repeated: a set
    ]
    var plain = Store<Plain>(name: "things")
    var fast = Store<Fast>(name: "things")
    var context = ApplyContext(recording: false)
    for (index, groups) in keys.enumerated() {
      let record = Plain(id: Identifier(high: 0, low: UInt64(index + 1)), title: "t", count: index, groups: groups)
      plain.insert(record, context: &context)
      fast.insert(Fast(record), context: &context)
    }
    let bytes = try FieldEncoder().encode(plain)
    let decodedPlain = try FieldDecoder().decode(Store<Plain>.self, from: bytes)
    let decodedFast = try FieldDecoder().decode(Store<Fast>.self, from: bytes)
    #expect(decodedPlain == plain)
    #expect(decodedFast == fast)
    for group in ["a", "b", "c", "i", "j", "z"] {
      let expected = keys.indices.filter { keys[$0].contains(group) }.map { Identifier(high: 0, low: UInt64($0 + 1)) }
      #expect(decodedPlain.records(inGroup: group).map(\.id) == expected, "\(group)")
      #expect(decodedFast.records(inGroup: group).map(\.id) == expected, "\(group)")
      #expect(decodedFast.count(inGroup: group) == expected.count, "\(group)")
    }
    #expect(decodedPlain.groupCounts().map(\.key) == plain.groupCounts().map(\.key))
    #expect(decodedPlain.cacheProblems().isEmpty && decodedFast.cacheProblems().isEmpty)
  }

  /// Records out of id order are accepted (and filed as inserted); two with one id are not.
  @Test func recordsOutOfOrderAreInsertedAndASharedIdThrows() throws {
    struct Written: Encodable {
      var name = "things"
      var records: [Plain]
    }
    let first = Plain(id: Identifier(high: 0, low: 1), title: "one", count: 1, groups: ["a"])
    let second = Plain(id: Identifier(high: 0, low: 2), title: "two", count: 2, groups: ["a", "b"])
    let reversed = try FieldEncoder().encode(Written(records: [second, first]))
    for store in [
      try FieldDecoder().decode(Store<Plain>.self, from: reversed).all().map(\.title),
      try FieldDecoder().decode(Store<Fast>.self, from: reversed).all().map(\.title),
    ] {
      #expect(store == ["one", "two"])
    }
    let decoded = try FieldDecoder().decode(Store<Fast>.self, from: reversed)
    #expect(decoded.records(inGroup: "a").map(\.title) == ["one", "two"])
    #expect(decoded.cacheProblems().isEmpty)

    let twice = try FieldEncoder().encode(Written(records: [first, second, first]))
    #expect(throws: DecodingError.self) { try FieldDecoder().decode(Store<Plain>.self, from: twice) }
    #expect(throws: DecodingError.self) { try FieldDecoder().decode(Store<Fast>.self, from: twice) }
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
