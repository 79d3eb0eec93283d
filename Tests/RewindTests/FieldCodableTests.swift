import RewindTestSupport
import Testing

@testable import Rewind

/// A type with both forms: the synthesized Codable one and a hand-written one.
private struct Both: Codable, Equatable, FieldCodable {
  struct Part: Codable, Equatable, FieldCodable {
    var name: String
    var weight: Double
    func encodeFields(into writer: inout FieldWriter) {
      writer.write(name, for: "name")
      writer.write(weight, for: "weight")
    }
    init(name: String, weight: Double) {
      self.name = name
      self.weight = weight
    }
    init(fields reader: inout FieldReader) throws {
      name = try reader.read(String.self, for: "name")
      weight = try reader.read(Double.self, for: "weight")
    }
  }

  var id: Identifier
  var count: Int
  var big: UInt64
  var flag: Bool
  var title: String
  var tags: [String]
  var part: Part
  var parts: [Part]
  var extra: [Int]

  init(seed: UInt64) {
    id = Identifier(high: seed, low: ~seed)
    count = -Int(seed % 1000)
    big = seed &* 0x9E37_79B9
    flag = seed % 2 == 0
    title = "title \(seed) ü"
    tags = (0..<(seed % 4)).map { "t\($0)" }
    part = Part(name: "p", weight: Double(seed) / 3)
    parts = (0..<(seed % 3)).map { Part(name: "q\($0)", weight: -Double($0)) }
    extra = [Int(seed % 7), 1]
  }

  func encodeFields(into writer: inout FieldWriter) {
    writer.write(id, for: "id")
    writer.write(count, for: "count")
    writer.write(big, for: "big")
    writer.write(flag, for: "flag")
    writer.write(title, for: "title")
    writer.write(tags, for: "tags")
    writer.write(part, for: "part")
    writer.write(parts, for: "parts")
    try? writer.write(encoding: extra, for: "extra")
  }

  init(fields reader: inout FieldReader) throws {
    // Deliberately out of order for two fields: lookups still find them.
    title = try reader.read(String.self, for: "title")
    id = try reader.read(Identifier.self, for: "id")
    count = try reader.read(Int.self, for: "count")
    big = try reader.read(UInt64.self, for: "big")
    flag = try reader.read(Bool.self, for: "flag")
    tags = try reader.read([String].self, for: "tags")
    part = try reader.read(Part.self, for: "part")
    parts = try reader.read([Part].self, for: "parts")
    extra = try reader.read(decoding: [Int].self, for: "extra")
  }
}

@Test func handWrittenFieldsWriteTheSameBytesAsCodable() throws {
  let seed: UInt64 = 0xF1E1D
  print("handWrittenFieldsWriteTheSameBytesAsCodable seed \(seed)")
  var random = SeededGenerator(seed: seed)
  for _ in 0..<200 {
    let value = Both(seed: random.next())
    let fast = FieldEncoder().encodeFields(value)
    let codable = try FieldEncoder().encode(value)
    #expect(fast == codable)
    #expect(try FieldDecoder().decodeFields(Both.self, from: codable) == value)
    #expect(try FieldDecoder().decode(Both.self, from: fast) == value)
  }
}

@Test func handWrittenReaderReportsMissingFieldsAndNeverTraps() throws {
  struct Short: Encodable { var id: Identifier }
  let short = try FieldEncoder().encode(Short(id: Identifier(high: 1, low: 2)))
  #expect(throws: DecodingError.self) { try FieldDecoder().decodeFields(Both.self, from: short) }

  let bytes = FieldEncoder().encodeFields(Both(seed: 12345))
  for cut in 0..<bytes.count {
    #expect(throws: (any Error).self) { try FieldDecoder().decodeFields(Both.self, from: Array(bytes[..<cut])) }
  }
  for index in bytes.indices {
    var damaged = bytes
    damaged[index] ^= 0x5A
    _ = try? FieldDecoder().decodeFields(Both.self, from: damaged)
  }
}

/// Keys the in-place comparison of the next key does not take (a key of 127 bytes and more, whose
/// length takes two varint bytes; keys that share a prefix; a key asked for that is missing) are
/// still found by scanning, or named as missing.
private struct Keys: Equatable, FieldCodable {
  static let long = StaticString(
    "a key of more than one hundred and twenty-six bytes (UTF-8), so that its length plus one takes two varint bytes in the encoded output"
  )
  var short: Int
  var shortest: Int
  var long: String

  init(short: Int, shortest: Int, long: String) {
    self.short = short
    self.shortest = shortest
    self.long = long
  }

  func encodeFields(into writer: inout FieldWriter) {
    writer.write(short, for: "short")
    writer.write(shortest, for: "shortest")
    writer.write(long, for: Self.long)
  }

  init(fields reader: inout FieldReader) throws {
    shortest = try reader.read(Int.self, for: "shortest")
    short = try reader.read(Int.self, for: "short")
    long = try reader.read(String.self, for: Self.long)
    let prefixFound = reader.contains("shortes")
    #expect(!prefixFound)
    var missing = reader
    #expect(throws: DecodingError.self) { try missing.read(Int.self, for: "shor") }
  }
}

@Test func keysTheInPlaceComparisonLeavesAreFoundByScanning() throws {
  #expect(Keys.long.utf8CodeUnitCount >= 127)
  let value = Keys(short: 1, shortest: -2, long: "value")
  #expect(try FieldDecoder().decodeFields(Keys.self, from: FieldEncoder().encodeFields(value)) == value)
}

/// A string and an identifier read in the order they were written, which `FieldReader` reads in
/// place when the key is the next one and the length is one or two varint bytes; a long field
/// after them, so that a length misread would still lie within the bytes.
private struct InOrder: Equatable, FieldCodable {
  static let tail = String(repeating: "t", count: 40_000)
  var id: Identifier
  var text: String
  var tail = Self.tail

  init(id: Identifier, text: String) {
    self.id = id
    self.text = text
  }

  func encodeFields(into writer: inout FieldWriter) {
    writer.write(id, for: "id")
    writer.write(text, for: "text")
    writer.write(tail, for: "tail")
  }

  init(fields reader: inout FieldReader) throws {
    id = try reader.read(Identifier.self, for: "id")
    text = try reader.read(String.self, for: "text")
    tail = try reader.read(String.self, for: "tail")
  }
}

/// The in-place reads give what the general reads give: strings whose length takes one, two and
/// three varint bytes, a length in two bytes where one would do, an identifier stored as its hex
/// string, a value of the wrong type, and every cut of the bytes (which throws, never traps).
@Test func readsInPlaceGiveWhatTheGeneralReadsGive() throws {
  let id = Identifier(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)
  for length in [0, 1, 15, 16, 127, 128, 200, 16_383, 16_384, 20_000] {
    let text = String(repeating: "é", count: length / 2) + String(repeating: "x", count: length % 2)
    let value = InOrder(id: id, text: text)
    let bytes = FieldEncoder().encodeFields(value)
    #expect(try FieldDecoder().decodeFields(InOrder.self, from: bytes) == value, "length \(length)")
    if length == 200 {
      for cut in 0..<bytes.count {
        #expect(throws: DecodingError.self, "cut at \(cut)") {
          try FieldDecoder().decodeFields(InOrder.self, from: Array(bytes[..<cut]))
        }
      }
    }
  }

  // An empty string's length written as two varint bytes (0x80 0x00): read as the general read reads it.
  let empty = FieldEncoder().encodeFields(InOrder(id: id, text: ""))
  let emptyText = [4 + 1] + Array("text".utf8) + [FieldTag.string.rawValue, 0]
  let at = try #require(empty.firstRange(of: emptyText))
  var padded = empty
  padded.replaceSubrange(at, with: emptyText.dropLast() + [0x80, 0])
  #expect(try FieldDecoder().decodeFields(InOrder.self, from: padded) == InOrder(id: id, text: ""))

  // The identifier as its 32 hex digits, as the Codable form may hold it; a number where the text is.
  struct AsText: Encodable {
    var id: String
    var text: String
    var tail = InOrder.tail
  }
  struct Numbered: Encodable {
    var id: Identifier
    var text: Int
    var tail = InOrder.tail
  }
  let asText = try FieldEncoder().encode(AsText(id: id.description, text: "t"))
  #expect(try FieldDecoder().decodeFields(InOrder.self, from: asText) == InOrder(id: id, text: "t"))
  let numbered = try FieldEncoder().encode(Numbered(id: id, text: 3))
  #expect(throws: DecodingError.self) { try FieldDecoder().decodeFields(InOrder.self, from: numbered) }
}
