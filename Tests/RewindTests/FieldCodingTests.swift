import RewindTestSupport
import Testing

@testable import Rewind

private struct Sample: Codable, Equatable {
  enum Mood: String, Codable { case calm, busy }
  struct Inner: Codable, Equatable {
    var label: String
    var weights: [Double]
  }
  var id: UInt64
  var delta: Int
  var small: Int8
  var title: String
  var tags: [String]
  var done: Bool
  var score: Double
  var ratio: Float
  var note: String?
  var missing: Int?
  var mood: Mood
  var inner: Inner
  var inners: [Inner]
  var nested: [[Int]]
  var table: [String: Int]
}

private func sample() -> Sample {
  Sample(
    id: .max, delta: -123_456_789, small: -8, title: "Héllo \"world\"\n", tags: ["a", "", "ünï"], done: true,
    score: -0.5, ratio: 1.25, note: "n", missing: nil, mood: .busy,
    inner: Sample.Inner(label: "x", weights: [1, 2.5]),
    inners: [Sample.Inner(label: "p", weights: []), Sample.Inner(label: "q", weights: [3])],
    nested: [[1, 2], [], [3]], table: ["k": 1])
}

@Test func roundTripsEveryKindOfField() throws {
  let value = sample()
  let bytes = try FieldEncoder().encode(value)
  #expect(try FieldDecoder().decode(Sample.self, from: bytes) == value)
}

@Test func rendersAsJSONWithoutTheTypes() throws {
  struct Small: Codable {
    var id: Int
    var title: String
    var tags: [String]
    var ok: Bool
    var gone: String?
  }
  let bytes = try FieldEncoder().encode(Small(id: -3, title: "a\"b", tags: ["x"], ok: false, gone: nil))
  #expect(try FieldRenderer.json(bytes) == #"{"id":-3,"title":"a\"b","tags":["x"],"ok":false}"#)
}

/// Bytes that are not UTF-8 render as readers decode them, U+FFFD for each ill-formed sequence,
/// so two different strings can render alike: the notes say where, for a string and for a key.
@Test func renderingNotesStringsThatAreNotUTF8() throws {
  // {"a": "x\xFF", "b\xFE": "ok", "c": ["\xC3"]}
  let bytes: [UInt8] = [8, 2, 0x61, 6, 2, 0x78, 0xFF, 3, 0x62, 0xFE, 6, 2, 0x6F, 0x6B, 2, 0x63, 7, 6, 1, 0xC3, 9, 0]
  var notes: [String] = []
  #expect(
    try FieldRenderer.json(bytes, notes: &notes) == "{\"a\":\"x\u{FFFD}\",\"b\u{FFFD}\":\"ok\",\"c\":[\"\u{FFFD}\"]}")
  #expect(
    notes == [
      "the string at byte 3 is not UTF-8: its ill-formed bytes are shown as U+FFFD",
      "the key at byte 7 is not UTF-8: its ill-formed bytes are shown as U+FFFD",
      "the string at byte 17 is not UTF-8: its ill-formed bytes are shown as U+FFFD",
    ])
  var none: [String] = []
  _ = try FieldRenderer.json(FieldEncoder().encode(["ü": "ß ✓"]), notes: &none)
  #expect(none.isEmpty)
}

/// A double that is NaN or infinite renders as a string (JSON has no such number), which read
/// like a string field holding the same text with no word (a review of the events, Dec 7): a
/// note says which is which.
@Test func renderingNotesNumbersThatJSONCannotHold() throws {
  struct Reading: Codable {
    var a: Double
    var b: Double
    var c: String
    var d: Double
  }
  let bytes = try FieldEncoder().encode(Reading(a: .nan, b: -.infinity, c: "nan", d: 1.5))
  var notes: [String] = []
  #expect(try FieldRenderer.json(bytes, notes: &notes) == #"{"a":"nan","b":"-inf","c":"nan","d":1.5}"#)
  // The object's tag, then each key's length and byte, then the value's tag.
  #expect(
    notes == [
      #"the number at byte 3 is NaN: shown as the string "nan""#,
      #"the number at byte 14 is infinite: shown as the string "-inf""#,
    ], "\(notes) in \(bytes)")
}

@Test func emptyValuesAndTopLevelPrimitives() throws {
  struct Empty: Codable, Equatable {}
  #expect(try FieldDecoder().decode(Empty.self, from: FieldEncoder().encode(Empty())) == Empty())
  #expect(try FieldDecoder().decode(String.self, from: FieldEncoder().encode("solo")) == "solo")
  #expect(try FieldDecoder().decode([Int].self, from: FieldEncoder().encode([Int]())) == [])
  #expect(try FieldDecoder().decode(Int64.self, from: FieldEncoder().encode(Int64.min)) == .min)
}

@Test func integerOutOfRangeIsAnError() throws {
  struct Wide: Codable { var value: Int }
  struct Narrow: Codable { var value: UInt8 }
  let bytes = try FieldEncoder().encode(Wide(value: 300))
  #expect(throws: DecodingError.self) { try FieldDecoder().decode(Narrow.self, from: bytes) }
}

/// A value of the wrong kind is located at its tag's byte: the error named the byte after it
/// (a review of the events' encoding, Dec 7).
@Test func aTypeMismatchNamesTheTagsByte() throws {
  struct Written: Codable { var title: String }
  struct Read: Codable { var title: Int }
  let bytes = try FieldEncoder().encode(Written(title: "x"))
  // The object's tag, the key's length and bytes, then the value's tag.
  let tagAt = 1 + 1 + "title".utf8.count
  try #require(bytes[tagAt] == FieldTag.string.rawValue, "\(bytes)")
  do {
    _ = try FieldDecoder().decode(Read.self, from: bytes)
    Issue.record("a string decoded as an Int")
  } catch let DecodingError.typeMismatch(_, context) {
    #expect(context.debugDescription.hasSuffix("found a string at byte \(tagAt)"), "\(context.debugDescription)")
  }
  // A list read by hand-written decoding (as Notebook reads a note's tags), which peeked at the
  // tag: it was named a byte early once the scalar case was mended (the review of the day's change).
  struct Listed: FieldCodable {
    var title: [String]
    func encodeFields(into writer: inout FieldWriter) { writer.write(title, for: "title") }
    init(fields reader: inout FieldReader) throws { title = try reader.read([String].self, for: "title") }
  }
  do {
    _ = try FieldDecoder().decodeFields(Listed.self, from: bytes)
    Issue.record("a string decoded as a list")
  } catch let DecodingError.typeMismatch(_, context) {
    #expect(context.debugDescription.hasSuffix("found a string at byte \(tagAt)"), "\(context.debugDescription)")
  }
}

@Test func missingFieldIsAnError() throws {
  struct Old: Codable { var a: Int }
  struct New: Codable {
    var a: Int
    var b: Int
  }
  let bytes = try FieldEncoder().encode(Old(a: 1))
  #expect(throws: DecodingError.self) { try FieldDecoder().decode(New.self, from: bytes) }
}

/// Every truncation and every single-byte corruption must throw or decode, never trap or hang.
@Test func truncatedAndCorruptedInputNeverTraps() throws {
  let bytes = try FieldEncoder().encode(sample())
  for cut in 0..<bytes.count {
    let prefix = Array(bytes[..<cut])
    #expect(throws: (any Error).self) { try FieldDecoder().decode(Sample.self, from: prefix) }
    #expect(throws: FieldFormatError.self) { try FieldRenderer.json(prefix) }
  }
  for index in bytes.indices {
    for flip: UInt8 in [0x01, 0x80, 0xFF] {
      var damaged = bytes
      damaged[index] ^= flip
      _ = try? FieldDecoder().decode(Sample.self, from: damaged)
      _ = try? FieldRenderer.json(damaged)
    }
  }
}

@Test func deepNestingIsRejected() {
  let bytes = [UInt8](repeating: FieldTag.array.rawValue, count: 10_000)
  #expect(throws: FieldFormatError.self) { try FieldRenderer.json(bytes) }
  #expect(throws: DecodingError.self) { try FieldDecoder().decode([[Int]].self, from: bytes) }
}

@Test func identifiersPrintAndParseAsThirtyTwoHexDigits() throws {
  let id = Identifier(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)
  #expect(id.description == "0123456789abcdeffedcba9876543210")
  #expect(Identifier("0123456789ABCDEFfedcba9876543210") == id)
  #expect(Identifier(high: 0, low: 1).description == "00000000000000000000000000000001")
  for bad in ["", "0123", "0123456789abcdeffedcba98765432100", "g123456789abcdeffedcba9876543210"] {
    #expect(Identifier(bad) == nil, "\(bad)")
  }
  let seed: UInt64 = 0x1D5
  print("identifiersPrintAndParseAsThirtyTwoHexDigits seed \(seed)")
  var random = SeededGenerator(seed: seed)
  for _ in 0..<100 {
    let id = Identifier(high: random.next(), low: random.next())
    #expect(Identifier(id.description) == id)
    #expect(try FieldDecoder().decode(Identifier.self, from: FieldEncoder().encode(id)) == id)
  }
}

/// Synthesized Codable for enums with payloads uses nested keyed containers, the one path where
/// the encoder must close containers it cannot see finish.
@Test func enumsWithPayloadsAndOptionalElementsRoundTrip() throws {
  enum Shape: Codable, Equatable {
    case circle(radius: Double)
    case polygon(points: [[Int]], name: String?)
    case empty
  }
  struct Drawing: Codable, Equatable {
    var shapes: [Shape]
    var maybe: [String?]
    var after: Int
  }
  let drawing = Drawing(
    shapes: [
      .circle(radius: 2), .polygon(points: [[0, 0], [1, 2]], name: nil), .empty, .polygon(points: [], name: "p"),
    ],
    maybe: ["a", nil, "c"], after: 42)
  let bytes = try FieldEncoder().encode(drawing)
  #expect(try FieldDecoder().decode(Drawing.self, from: bytes) == drawing)
  #expect(try FieldRenderer.json(bytes).contains(#""maybe":["a",null,"c"],"after":42"#))
}

/// Writing into a nested container after its parent moved on is a Codable misuse the encoder
/// reports instead of writing garbled bytes.
@Test func writingIntoAFinishedContainerThrows() {
  struct Misuse: Encodable {
    enum Keys: String, CodingKey { case inner, later, value }
    func encode(to encoder: any Encoder) throws {
      var outer = encoder.container(keyedBy: Keys.self)
      var inner = outer.nestedContainer(keyedBy: Keys.self, forKey: .inner)
      try inner.encode(1, forKey: .value)
      try outer.encode(2, forKey: .later)
      try inner.encode(3, forKey: .value)
    }
  }
  #expect(throws: EncodingError.self) { try FieldEncoder().encode(Misuse()) }
}

/// A value's `Codable` form written by its own `encode(to:)`, bypassing the encoder's own handling
/// of sets and dictionaries: the shape they must keep.
private struct OwnEncoding<Value: Encodable>: Encodable {
  var value: Value
  func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}

/// A key `Dictionary` encodes through its `CodingKeyRepresentable` conformance.
private struct Code: Hashable, Comparable, Codable, CodingKeyRepresentable {
  var raw: String
  var codingKey: any CodingKey { NamedKey(stringValue: raw) }
  init(raw: String) { self.raw = raw }
  init?<T: CodingKey>(codingKey: T) { raw = codingKey.stringValue }
  static func < (a: Code, b: Code) -> Bool { a.raw < b.raw }
}

/// Sets and dictionaries iterate in an order that depends on the process's hash seed and on their
/// capacity: two equal ones built differently (here, one with room for many more) usually iterate
/// differently. The encoder writes them sorted, so equal values give equal bytes, in the shape
/// their own encoding has (one entry: the same bytes), and they decode back equal.
@Test func setsAndDictionariesEncodeInOneOrder() throws {
  func twoWays<C: Equatable>(_ make: (Int) -> C) -> (C, C) { (make(0), make(4_096)) }
  let words = (0..<200).map { "word\($0 * 7919 % 1000)" }
  let sets = twoWays { room -> Set<String> in
    var set = Set<String>(minimumCapacity: room)
    for word in words { set.insert(word) }
    return set
  }
  let byName = twoWays { room -> [String: Int] in
    var table = [String: Int](minimumCapacity: room)
    for (index, word) in words.enumerated() { table[word] = index }
    return table
  }
  let byNumber = twoWays { room -> [Int: String] in
    var table = [Int: String](minimumCapacity: room)
    for (index, word) in words.enumerated() { table[index * 31] = word }
    return table
  }
  let byCode = twoWays { room -> [Code: Int] in
    var table = [Code: Int](minimumCapacity: room)
    for (index, word) in words.enumerated() { table[Code(raw: word)] = index }
    return table
  }
  let byValue = twoWays { room -> [Double: String] in  // keys written as values
    var table = [Double: String](minimumCapacity: room)
    for (index, word) in words.enumerated() { table[Double(index) / 3] = word }
    return table
  }
  // The premise: built two ways, they iterate differently.
  #expect(Array(sets.0) != Array(sets.1) && Array(byName.0.keys) != Array(byName.1.keys))
  func check<C: Codable & Equatable>(_ pair: (C, C), _ label: String) throws {
    let bytes = try FieldEncoder().encode(pair.0)
    #expect(try FieldEncoder().encode(pair.1) == bytes, "\(label)")
    #expect(try CanonicalEncoding.encode(pair.1) == CanonicalEncoding.encode(pair.0), "\(label)")
    #expect(try FieldDecoder().decode(C.self, from: bytes) == pair.0, "\(label)")
  }
  try check(sets, "Set<String>")
  try check(byName, "[String: Int]")
  try check(byNumber, "[Int: String]")
  try check(byCode, "[Code: Int]")
  try check(byValue, "[Double: String]")
  // Sorted: the set's elements in order.
  let json = try FieldRenderer.json(FieldEncoder().encode(sets.0))
  #expect(json == "[" + Set(words).sorted().map { "\"\($0)\"" }.joined(separator: ",") + "]")
  // One entry: the bytes of their own encoding.
  #expect(try FieldEncoder().encode(["a": 1]) == FieldEncoder().encode(OwnEncoding(value: ["a": 1])))
  #expect(try FieldEncoder().encode([7: "a"]) == FieldEncoder().encode(OwnEncoding(value: [7: "a"])))
  #expect(
    try FieldEncoder().encode([Code(raw: "k"): 1]) == FieldEncoder().encode(OwnEncoding(value: [Code(raw: "k"): 1])))
  #expect(try FieldEncoder().encode([0.5: "a"]) == FieldEncoder().encode(OwnEncoding(value: [0.5: "a"])))
  #expect(try FieldEncoder().encode(Set(["x"])) == FieldEncoder().encode(OwnEncoding(value: Set(["x"]))))
  #expect(try FieldEncoder().encode([String: Int]()) == FieldEncoder().encode(OwnEncoding(value: [String: Int]())))
}

/// The keys a keyed container lists: what a type that decodes by walking `allKeys` (a
/// dictionary, an open set of fields) sees.
private struct ListedKeys: Decodable {
  typealias Key = NamedKey
  var keys: [String]
  var values: [Int]
  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: Key.self)
    keys = container.allKeys.map(\.stringValue)
    values = try container.allKeys.map { try container.decode(Int.self, forKey: $0) }
  }
}

/// FORMAT.md: a key's first entry wins wherever it is read. `allKeys` lists a repeated key once,
/// where its first entry stands, so a type that walks the keys reads each once (and the first
/// entry's value), never the same key twice.
@Test func allKeysListsARepeatedKeyOnce() throws {
  func entry(_ key: String, _ value: Int) -> [UInt8] {
    [UInt8(key.utf8.count + 1)] + Array(key.utf8) + [FieldTag.int.rawValue, UInt8(value * 2)]
  }
  let bytes: [UInt8] =
    [FieldTag.object.rawValue] + entry("a", 1) + entry("b", 2) + entry("a", 3) + entry("c", 4) + entry("b", 5)
    + entry("a", 6) + [0]
  let listed = try FieldDecoder().decode(ListedKeys.self, from: bytes)
  #expect(listed.keys == ["a", "b", "c"])
  #expect(listed.values == [1, 2, 4])
  // A dictionary reads the first entries too (its keys once each).
  #expect(try FieldDecoder().decode([String: Int].self, from: bytes) == ["a": 1, "b": 2, "c": 4])
}

/// Objects of more than `FieldKeyedDecoder.scannedEntries` entries find a key by looking it up
/// rather than by scanning the entries: the same answers either way. A key's first entry wins,
/// keys are told apart by their bytes (two Unicode forms of one name are two keys), and a key
/// the object lacks is missing.
@Test(arguments: [2, 40]) func keysAreFoundAlikeInSmallAndLargeObjects(padding: Int) throws {
  struct Picked: Decodable {
    var values: [String: Int] = [:]
    var missing: Bool
    init(from decoder: any Decoder) throws {
      let container = try decoder.container(keyedBy: NamedKey.self)
      for name in ["a", "e\u{301}", "\u{E9}", "p1", "z"] {
        values[Array(name.unicodeScalars).map { String($0.value, radix: 16) }.joined(separator: "+")] =
          try container.decode(Int.self, forKey: NamedKey(stringValue: name))
      }
      missing = !container.contains(NamedKey(stringValue: "absent"))
    }
  }
  func entry(_ key: String, _ value: Int) -> [UInt8] {
    [UInt8(key.utf8.count + 1)] + Array(key.utf8) + [FieldTag.int.rawValue, UInt8(value * 2)]
  }
  let padded = (0..<padding).flatMap { entry("p\($0)", 10 + $0) }
  let bytes: [UInt8] =
    [FieldTag.object.rawValue] + entry("a", 1) + padded + entry("e\u{301}", 2) + entry("a", 3) + entry("\u{E9}", 4)
    + entry("z", 5) + entry("e\u{301}", 6) + [0]
  #expect((padding + 6 > FieldKeyedDecoder<NamedKey>.scannedEntries) == (padding > 2))
  let picked = try FieldDecoder().decode(Picked.self, from: bytes)
  #expect(picked.values == ["61": 1, "65+301": 2, "e9": 4, "70+31": 11, "7a": 5])
  #expect(picked.missing)
  let listed = try FieldDecoder().decode(ListedKeys.self, from: bytes)
  #expect(listed.keys == ["a"] + (0..<padding).map { "p\($0)" } + ["e\u{301}", "\u{E9}", "z"])
}

/// A set or dictionary of floating-point values holding NaN encodes alike whatever order it
/// iterates in (its hash seed, its capacity, the order of its inserts): `<` places no NaN, so a
/// sort by it left a NaN and the values after it in the order they came. The values go in IEEE
/// 754's total order: numbers as `<` has them (the bytes of a set without NaN are unchanged),
/// then the NaNs.
@Test func floatingPointSetsAndDictionariesWithNaNEncodeInOneOrder() throws {
  var random = SeededRandom(seed: 3)
  let values: [Double] = [.nan, 1, 2, 3, -1, 0.5, .infinity, -.infinity, 1e300, -0.0, .leastNonzeroMagnitude]
  func encodings<C: Encodable>(_ make: (Int, [Double]) -> C) throws -> Set<[UInt8]> {
    var seen: Set<[UInt8]> = []
    for room in [0, 8, 64, 1_000, 5_000] {
      for _ in 0..<4 {
        let value = make(room, values.shuffled(using: &random))
        seen.insert(try FieldEncoder().encode(value) + [0xFF] + CanonicalEncoding.encode(value))
      }
    }
    return seen
  }
  let doubles = try encodings { room, values -> Set<Double> in
    var set = Set<Double>(minimumCapacity: room)
    for value in values { set.insert(value) }
    return set
  }
  let floats = try encodings { room, values -> Set<Float> in
    var set = Set<Float>(minimumCapacity: room)
    // Narrowed, 1e300 would be a second infinity and the least double a second zero.
    for value in values where !value.isFinite || value == 0 || (1e-30...1e30).contains(value.magnitude) {
      set.insert(Float(value))
    }
    return set
  }
  let keys = try encodings { room, values -> [Double: Int] in
    var table = [Double: Int](minimumCapacity: room)
    for value in values { table[value] = value.isNaN ? -1 : Int(value.sign == .minus ? -1 : 1) }
    return table
  }
  #expect(doubles.count == 1 && floats.count == 1 && keys.count == 1)
  let set = Set(values)
  #expect(
    try FieldRenderer.json(FieldEncoder().encode(set))
      == #"["-inf",-1.0,-0.0,5e-324,0.5,1.0,2.0,3.0,1e+300,"inf","nan"]"#)
  let numbers = Set(values.filter { !$0.isNaN })
  #expect(try FieldEncoder().encode(numbers) == FieldEncoder().encode(numbers.sorted()))
}

/// Bytes that stop inside an array, before its end tag, are an error: they were taken for the
/// whole array (an array of fewer elements, or an empty one), a silent wrong value.
@Test func anArrayCutBeforeItsEndIsAnError() throws {
  func everyPrefixThrows<T: Codable & Equatable>(_ value: T) throws {
    let bytes = try FieldEncoder().encode(value)
    #expect(try FieldDecoder().decode(T.self, from: bytes) == value)
    for cut in 0..<bytes.count {
      #expect(throws: DecodingError.self, "\(T.self) cut at \(cut) of \(bytes.count)") {
        try FieldDecoder().decode(T.self, from: Array(bytes[..<cut]))
      }
    }
  }
  try everyPrefixThrows([1, 2, 3])
  try everyPrefixThrows([Int]())
  try everyPrefixThrows([[1], [], [2, 3]])
  try everyPrefixThrows([Int?.none, 4, nil])
  try everyPrefixThrows(["a", "bc"])
}

/// A number read as a `Float` that is beyond its range is an error, as an integer too wide for
/// its type is, not infinity; within the range it is rounded, and infinities and NaN stay.
@Test func aNumberBeyondFloatRangeIsAnError() throws {
  struct Wide: Codable {
    var value: Double
    var values: [Double]
  }
  struct Narrow: Codable {
    var value: Float
    var values: [Float]
  }
  for huge in [1e300, -1e39, Double(Float.greatestFiniteMagnitude) * 2] {
    #expect(throws: DecodingError.self) { try FieldDecoder().decode(Float.self, from: FieldEncoder().encode(huge)) }
    #expect(throws: DecodingError.self) {
      try FieldDecoder().decode(Narrow.self, from: FieldEncoder().encode(Wide(value: huge, values: [])))
    }
    #expect(throws: DecodingError.self) {
      try FieldDecoder().decode(Narrow.self, from: FieldEncoder().encode(Wide(value: 1, values: [huge])))
    }
  }
  let fine = [Double(Float.greatestFiniteMagnitude), -Double(Float.greatestFiniteMagnitude), 0.1, 1e-50, .infinity]
  for value in fine {
    #expect(try FieldDecoder().decode(Float.self, from: FieldEncoder().encode(value)) == Float(value))
  }
  #expect(try FieldDecoder().decode(Float.self, from: FieldEncoder().encode(Double.nan)).isNaN)
  #expect(try FieldDecoder().decode(Float.self, from: FieldEncoder().encode(Int64.max)) == Float(Int64.max))
}

/// A set or dictionary whose elements or keys are not `Comparable` has no order but its hash
/// order, which changes from process to process: with two or more entries it is refused, naming
/// its type, where it used to be written in that order (equal events then encoded apart, and
/// equal states digested apart). One entry or none has one order, and encodes.
@Test func setsAndDictionariesOfUnorderedElementsAreRefused() throws {
  struct Colour: Hashable, Codable { var name: String }
  struct Palette: Codable {
    var colours: Set<Colour>
    var uses: [Colour: Int]
  }
  let red = Colour(name: "red")
  let blue = Colour(name: "blue")
  for palette in [
    Palette(colours: [red, blue], uses: [:]), Palette(colours: [red], uses: [red: 1, blue: 2]),
  ] {
    for encode in [{ try FieldEncoder().encode(palette) }, { try CanonicalEncoding.encode(palette) }] {
      let error = #expect(throws: EncodingError.self) { _ = try encode() }
      guard case .invalidValue(_, let context) = error else { continue }
      #expect(context.debugDescription.contains("make Colour Comparable"), "\(context.debugDescription)")
    }
  }
  let single = Palette(colours: [red], uses: [blue: 2])
  #expect(try FieldDecoder().decode(Palette.self, from: FieldEncoder().encode(single)).colours == [red])
  #expect(try CanonicalEncoding.encode(single) == CanonicalEncoding.encode(Palette(colours: [red], uses: [blue: 2])))
}

/// A class's `encode(to:)` that writes its superclass's fields through `superEncoder` (keyed,
/// keyed by a key, or unkeyed) gets an error naming what is not supported, as decoding through
/// `superDecoder` does, where the encoder used to stop the process.
@Test func superEncoderIsAnErrorNotATrap() throws {
  class Shape: Codable {
    var sides = 3
  }
  final class Tile: Shape {
    enum Keys: String, CodingKey { case colour, base }
    enum Form { case keyed, keyedForKey, unkeyed }
    let form: Form
    init(_ form: Form) {
      self.form = form
      super.init()
    }
    required init(from decoder: any Decoder) throws { fatalError("not decoded here") }
    override func encode(to encoder: any Encoder) throws {
      switch form {
      case .keyed:
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode("red", forKey: .colour)
        try super.encode(to: container.superEncoder())
      case .keyedForKey:
        var container = encoder.container(keyedBy: Keys.self)
        try super.encode(to: container.superEncoder(forKey: .base))
        try container.encode("red", forKey: .colour)
      case .unkeyed:
        var container = encoder.unkeyedContainer()
        try container.encode("red")
        try super.encode(to: container.superEncoder())
      }
    }
  }
  for form in [Tile.Form.keyed, .keyedForKey, .unkeyed] {
    for encode in [{ try FieldEncoder().encode(Tile(form)) }, { try CanonicalEncoding.encode(Tile(form)) }] {
      let error = #expect(throws: EncodingError.self) { _ = try encode() }
      guard case .invalidValue(_, let context) = error else { continue }
      #expect(context.debugDescription.contains("does not support superEncoder"), "\(context.debugDescription)")
    }
  }
  #expect(try FieldDecoder().decode(Shape.self, from: FieldEncoder().encode(Shape())).sides == 3)

  // Appended to bytes (as an event's payload is), the bytes are left as they were.
  var bytes: [UInt8] = [1, 2, 3]
  #expect(throws: EncodingError.self) { try FieldEncoder().encode(Tile(.keyed), appendingTo: &bytes) }
  #expect(bytes == [1, 2, 3])

  // A hand-written field of it (`FieldWriter.write(encoding:for:)`, whose caller cannot throw)
  // leaves nothing of the field: the object stays well-formed, without it.
  struct Holder: Codable, FieldCodable {
    var id: Int
    var name: String
    init(id: Int, name: String) {
      (self.id, self.name) = (id, name)
    }
    func encodeFields(into writer: inout FieldWriter) {
      writer.write(id, for: "id")
      try? writer.write(encoding: Tile(.keyed), for: "tile")
      writer.write(name, for: "name")
    }
    init(fields reader: inout FieldReader) throws {
      id = try reader.read(Int.self, for: "id")
      name = try reader.read(String.self, for: "name")
    }
  }
  let held = FieldEncoder().encodeFields(Holder(id: 7, name: "n"))
  #expect(try FieldRenderer.json(held) == #"{"id":7,"name":"n"}"#)
}
