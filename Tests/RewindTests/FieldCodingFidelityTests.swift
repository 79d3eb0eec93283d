import Foundation
import RewindTestSupport
import Testing

@testable import Rewind

/// What Swift's `Codable` lets an app's event or record type write either round-trips exactly
/// through the field encoding or is refused when encoding, with an error saying why: never
/// written in a form that decodes to another value, or that no decoder reads.

/// `value` encoded and decoded again.
private func roundTrip<T: Codable>(_ value: T) throws -> T {
  try FieldDecoder().decode(T.self, from: FieldEncoder().encode(value))
}

/// The debug description of what `body` throws, or nil if it throws nothing.
private func failure(_ body: () throws -> Any) -> String? {
  do {
    _ = try body()
    return nil
  } catch let error as EncodingError {
    guard case .invalidValue(_, let context) = error else { return "\(error)" }
    return context.debugDescription
  } catch {
    return "\(error)"
  }
}

private indirect enum Expression: Codable, Equatable {
  case number(Int)
  case sum(Expression, Expression)
  case negated(_ inner: Expression)
  case named(name: String, Expression?)
  case nothing
}

private enum Letter: String, Codable {
  case a
  case b = "bee"
}
private enum Sign: Int, Codable {
  case plus = 1
  case minus = -1
}

private struct Tree: Codable, Equatable {
  var value: Int
  var children: [Tree]
}

/// Synthesized `Codable` of enums with payloads (nested keyed containers, `_0` keys for unlabelled
/// values), of raw-value enums, and of recursive types: each round-trips, in the shape JSON has.
@Test func enumsWithPayloadsRawValuesAndRecursiveTypesRoundTrip() throws {
  let expressions: [Expression] = [
    .number(.min), .sum(.number(1), .negated(.number(2))), .named(name: "x", nil), .named(name: "", .nothing), .nothing,
  ]
  let bytes = try FieldEncoder().encode(expressions)
  #expect(try FieldDecoder().decode([Expression].self, from: bytes) == expressions)
  #expect(
    try FieldRenderer.json(bytes)
      == #"[{"number":{"_0":-9223372036854775808}},{"sum":{"_0":{"number":{"_0":1}},"_1":{"negated":{"_0":"#
      + #"{"number":{"_0":2}}}}}},{"named":{"name":"x"}},{"named":{"name":"","_1":{"nothing":{}}}},{"nothing":{}}]"#)
  #expect(try roundTrip([Letter.a, .b]) == [.a, .b])
  #expect(try FieldRenderer.json(FieldEncoder().encode([Letter.a, .b])) == #"["a","bee"]"#)
  #expect(try roundTrip([Sign.plus, .minus]) == [.plus, .minus])
  let tree = Tree(
    value: 1, children: [Tree(value: 2, children: []), Tree(value: 3, children: [Tree(value: 4, children: [])])])
  #expect(try roundTrip(tree) == tree)
  // A payload enum read from bytes naming its case twice (hostile bytes): the first entry, once.
  let twice: [UInt8] =
    [8, 7] + Array("number".utf8) + [8, 3, 0x5F, 0x30, 3, 2, 0] + [7] + Array("number".utf8) + [8, 0]
    + [0]
  #expect(try FieldDecoder().decode(Expression.self, from: twice) == .number(1))
}

/// `Int??` holding `.some(nil)` is written as null, as `JSONEncoder` writes it, and reads back as
/// nil: Codable's `Optional` has one null for both (RELIABILITY.md, "Known limits"). Optionals
/// inside arrays keep their places.
@Test func nestedOptionalsAndOptionalElements() throws {
  struct Holder: Codable, Equatable {
    var twice: Int??
    var elements: [Int?]
    var twiceElements: [Int??]
    var absent: Int?
  }
  let holder = Holder(twice: .some(nil), elements: [nil, 1, nil], twiceElements: [.some(nil), nil, 1], absent: nil)
  let back = try roundTrip(holder)
  let json = try JSONDecoder().decode(Holder.self, from: JSONEncoder().encode(holder))
  #expect(back == json)
  #expect(back.twice == .none && back.elements == [nil, 1, nil] && back.twiceElements == [nil, nil, 1])
  #expect(
    try FieldRenderer.json(FieldEncoder().encode(holder))
      == #"{"twice":null,"elements":[null,1,null],"twiceElements":[null,null,1]}"#)
}

private enum Colour: String, Codable, CodingKeyRepresentable, Hashable { case red, green }
private enum Rank: Int, Codable, CodingKeyRepresentable, Hashable, Comparable {
  case one = 1
  case ten = 10
  static func < (a: Rank, b: Rank) -> Bool { a.rawValue < b.rawValue }
}

/// Dictionaries keyed by extreme `Int`s, by keys written as values (`UInt64`, `Int8`), by
/// `CodingKeyRepresentable` enums, nested and empty: each round-trips. Enum keys that are not
/// `Comparable` are refused from two entries on (entry 137), with one the bytes are the same.
@Test func dictionariesOfEveryKeyKindRoundTrip() throws {
  let byInt: [Int: String] = [.min: "min", -1: "m", 0: "z", .max: "max"]
  #expect(try roundTrip(byInt) == byInt)
  #expect(
    try FieldRenderer.json(FieldEncoder().encode(byInt))
      == #"{"-9223372036854775808":"min","-1":"m","0":"z","9223372036854775807":"max"}"#)
  let byUInt: [UInt64: String] = [.max: "max", 0: "z"]
  #expect(try roundTrip(byUInt) == byUInt)
  #expect(try FieldRenderer.json(FieldEncoder().encode(byUInt)) == #"[0,"z",18446744073709551615,"max"]"#)
  let bySmall: [Int8: Int8] = [-128: 127, 0: 1]
  #expect(try roundTrip(bySmall) == bySmall)
  let nested: [String: [Int: [String: Int]]] = ["x": [1: ["a": 1], 2: [:]], "": [:]]
  #expect(try roundTrip(nested) == nested)
  let byRank: [Rank: Int] = [.ten: 10, .one: 1]
  #expect(try roundTrip(byRank) == byRank)
  #expect(try FieldRenderer.json(FieldEncoder().encode(byRank)) == #"{"1":1,"10":10}"#)
  #expect(try roundTrip([Colour.red: 1]) == [.red: 1])
  #expect(
    failure { try FieldEncoder().encode([Colour.red: 1, .green: 2]) }?.contains("make Colour Comparable") == true)
}

/// Integer and floating-point extremes keep their values and their bits (`-0.0`, NaN payloads);
/// `Int128`, which the format has no tag for, is refused when encoding.
@Test func numericExtremesKeepTheirBits() throws {
  struct Numbers: Codable, Equatable {
    var a = Int64.min
    var b = UInt64.max
    var c = Int8.min
    var d = UInt8.max
    var e = Int.min
    var f = UInt.max
    var g = Float.greatestFiniteMagnitude
    var h = Float.leastNonzeroMagnitude
    var i = -Float.infinity
    var j = Double.leastNonzeroMagnitude
    var k = -0.0
    var l: Float = -0.0
  }
  let numbers = Numbers()
  let back = try roundTrip(numbers)
  #expect(back == numbers)
  #expect(back.k.sign == .minus && back.l.sign == .minus)
  let doubles = [Double(nan: 0x1234, signaling: false), -Double.nan, Double.signalingNaN, .infinity]
  #expect(try roundTrip(doubles).map(\.bitPattern) == doubles.map(\.bitPattern))
  let floats = [Float(nan: 0x12, signaling: false), -Float.nan]
  #expect(try roundTrip(floats).map(\.bitPattern) == floats.map(\.bitPattern))
  #expect(failure { try FieldEncoder().encode([Int128.max]) } != nil)
  #expect(failure { try FieldEncoder().encode([UInt128.max]) } != nil)
}

/// Foundation's types with their own `Codable` forms round-trip through theirs.
@Test func foundationTypesRoundTrip() throws {
  struct Record: Codable, Equatable {
    var decimal = Decimal(string: "-12345678901234567890.123456789")!
    var date = Date(timeIntervalSinceReferenceDate: 123.456)
    var data = Data([0, 1, 255])
    var empty = Data()
    var url = URL(string: "https://example.com/a?b=c#d")!
    var relative = URL(string: "x/y", relativeTo: URL(string: "https://example.com/base/"))!
    var uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
  }
  let record = Record()
  let back = try roundTrip(record)
  #expect(back == record)
  #expect(back.relative.absoluteString == "https://example.com/base/x/y")
}

/// Strings keep their scalars byte for byte: two that Swift calls equal (NFC and NFD) stay
/// apart, as values, as dictionary keys and as set elements; NUL and the empty string too.
@Test func stringsKeepTheirScalars() throws {
  let composed = "caf\u{E9}"
  let decomposed = "cafe\u{301}"
  #expect(composed == decomposed)
  let strings = [composed, decomposed, "", "a\u{0}b", "\u{0}"]
  let back = try roundTrip(strings)
  #expect(back.map { Array($0.utf8) } == strings.map { Array($0.utf8) })
  let keyed = try roundTrip([decomposed: 1, "": 2, "\u{0}": 3])
  let keys: [[UInt8]] = keyed.keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
  #expect(keys == [[], [0], Array(decomposed.utf8)])
  #expect(try roundTrip(Set([decomposed])).map { Array($0.utf8) } == [Array(decomposed.utf8)])
}

/// An old type reads a newer value's bytes: fields it does not know are skipped, whatever their
/// shape, and `allKeys` and `contains` see them.
@Test func anOldTypeReadsANewerValue() throws {
  struct New: Codable {
    var a: Int
    var added: [String: [Expression]]
    var b: String
  }
  struct Old: Codable, Equatable {
    var b: String
    var a: Int
  }
  let bytes = try FieldEncoder().encode(New(a: 1, added: ["k": [.nothing, .number(2)]], b: "x"))
  #expect(try FieldDecoder().decode(Old.self, from: bytes) == Old(b: "x", a: 1))
  struct Keys: Decodable {
    typealias Key = NamedKey
    var all: [String]
    var hasAdded: Bool
    var hasOther: Bool
    init(from decoder: any Decoder) throws {
      let container = try decoder.container(keyedBy: Key.self)
      all = container.allKeys.map(\.stringValue)
      hasAdded = container.contains(Key(stringValue: "added"))
      hasOther = container.contains(Key(stringValue: "other"))
    }
  }
  let keys = try FieldDecoder().decode(Keys.self, from: bytes)
  #expect(keys.all == ["a", "added", "b"] && keys.hasAdded && !keys.hasOther)
}

/// A list nested `count` deep through `next`.
private struct Chain: Codable, Equatable {
  var n: Int
  var next: Link?

  /// Indirection for the recursion, encoded as the chain it holds.
  final class Link: Codable, Equatable {
    let chain: Chain
    init(_ chain: Chain) { self.chain = chain }
    static func == (a: Link, b: Link) -> Bool { a.chain == b.chain }
    func encode(to encoder: any Encoder) throws { try chain.encode(to: encoder) }
    init(from decoder: any Decoder) throws { chain = try Chain(from: decoder) }
  }

  init(n: Int, next: Link?) { (self.n, self.next) = (n, next) }
  init(count: Int) {
    self.init(n: 0, next: nil)
    for n in 1..<count { self = Chain(n: n, next: Link(self)) }
  }
}

/// Arrays nested `levels` deep through `nestedUnkeyedContainer`, the innermost holding `1` or
/// nothing.
private struct NestedArrays: Encodable {
  var levels: Int
  var holdsValue: Bool
  func encode(to encoder: any Encoder) throws {
    var container = encoder.unkeyedContainer()
    for _ in 0..<levels { container = container.nestedUnkeyedContainer() }
    if holdsValue { try container.encode(1) }
  }
}

/// Objects nested `levels` deep through `nestedContainer(keyedBy:forKey:)`, the innermost empty.
private struct NestedObjects: Encodable {
  enum Key: CodingKey { case inner }
  var levels: Int
  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: Key.self)
    for _ in 0..<levels { container = container.nestedContainer(keyedBy: Key.self, forKey: .inner) }
  }
}

/// A value inside more than 63 arrays and objects is refused when encoding, as decoders refuse
/// it (FORMAT.md): a list of 64 links, whose last link's fields sit 64 deep, was written and then
/// read by no decoder (a journaled event replay could not decode), and so were containers nested
/// past the limit with `nestedContainer`, which checked no depth. Within the limit nothing changes.
@Test func aValueNestedPastTheLimitIsRefusedWhenEncoding() throws {
  let deepest = Chain(count: 63)
  #expect(try roundTrip(deepest) == deepest)
  #expect(failure { try FieldEncoder().encode(Chain(count: 64)) } == "nesting deeper than 64")
  #expect(failure { try CanonicalEncoding.encode(Chain(count: 64)) } == "nesting deeper than 64")
  var appended: [UInt8] = [1, 2]
  #expect(throws: EncodingError.self) { try FieldEncoder().encode(Chain(count: 64), appendingTo: &appended) }
  #expect(appended == [1, 2])
  // 64 arrays nested read, the innermost empty; a value in the innermost does not.
  for (levels, holdsValue) in [(62, true), (63, false)] {
    let bytes = try FieldEncoder().encode(NestedArrays(levels: levels, holdsValue: holdsValue))
    _ = try FieldRenderer.json(bytes)
  }
  for (levels, holdsValue) in [(63, true), (64, false), (100, true)] {
    #expect(
      failure { try FieldEncoder().encode(NestedArrays(levels: levels, holdsValue: holdsValue)) }
        == "nesting deeper than 64", "\(levels)")
  }
  _ = try FieldRenderer.json(FieldEncoder().encode(NestedObjects(levels: 63)))
  #expect(failure { try FieldEncoder().encode(NestedObjects(levels: 64)) } == "nesting deeper than 64")
}

/// A value whose `encode(to:)` writes two single values.
private struct TwoSingleValues: Encodable {
  func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(1)
    try container.encode(2)
  }
}

/// A value whose `encode(to:)` forwards to two identifiers' (which the field encoder writes as
/// 16 bytes, past the containers' own checks), or writes a keyed container and then forwards
/// to one.
private struct TwoIdentifiers: Encodable {
  var keyedFirst = false
  enum Key: CodingKey { case a }
  func encode(to encoder: any Encoder) throws {
    if keyedFirst {
      var keyed = encoder.container(keyedBy: Key.self)
      try keyed.encode(1, forKey: .a)
    } else {
      try Identifier(high: 1, low: 2).encode(to: encoder)
    }
    try Identifier(high: 3, low: 4).encode(to: encoder)
  }
}

/// A value whose `encode(to:)` takes a keyed and then an unkeyed container from its encoder.
private struct KeyedThenUnkeyed: Encodable {
  enum Key: CodingKey { case a }
  func encode(to encoder: any Encoder) throws {
    var keyed = encoder.container(keyedBy: Key.self)
    try keyed.encode(1, forKey: .a)
    var unkeyed = encoder.unkeyedContainer()
    try unkeyed.encode(2)
  }
}

/// A value whose `encode(to:)` writes a single value and then takes a keyed container.
private struct SingleThenKeyed: Encodable {
  enum Key: CodingKey { case a }
  func encode(to encoder: any Encoder) throws {
    var single = encoder.singleValueContainer()
    try single.encode(1)
    var keyed = encoder.container(keyedBy: Key.self)
    try keyed.encode(2, forKey: .a)
  }
}

/// A value whose `encode(to:)` takes a keyed container, then writes a single value.
private struct KeyedThenSingle: Encodable {
  enum Key: CodingKey { case a }
  func encode(to encoder: any Encoder) throws {
    var keyed = encoder.container(keyedBy: Key.self)
    try keyed.encode(1, forKey: .a)
    var single = encoder.singleValueContainer()
    try single.encode(2)
  }
}

/// A value in a field followed by another.
private struct Holder<Value: Encodable>: Encodable {
  var x: Value
  var y = 5
}

/// Codable allows one value per encoder (`JSONEncoder` stops the process otherwise). The field
/// encoder wrote each value it was given after the other: two values where one stands, bytes no
/// decoder reads, or that read as another object (`{"x": 1, "y": 5}` plus a keyed container read as
/// `{"x": 1}` with a key of garbage). It now refuses them, naming the byte the value starts at; a
/// value that takes the same kind of container twice (a class and its superclass sharing one
/// encoder) is one value, as before.
@Test func aValueThatWritesTwoValuesIsRefused() throws {
  let expected =
    "a value's encode(to:) wrote more than one value (at byte 3): use one container per value, and a "
    + "single-value container once"
  #expect(failure { try FieldEncoder().encode(Holder(x: TwoSingleValues())) } == expected)
  #expect(failure { try FieldEncoder().encode(Holder(x: KeyedThenUnkeyed())) } == expected)
  #expect(failure { try FieldEncoder().encode(Holder(x: SingleThenKeyed())) } == expected)
  #expect(failure { try FieldEncoder().encode(Holder(x: KeyedThenSingle())) } == expected)
  #expect(failure { try FieldEncoder().encode(Holder(x: TwoIdentifiers())) } == expected)
  #expect(failure { try FieldEncoder().encode(Holder(x: TwoIdentifiers(keyedFirst: true))) } == expected)
  // One identifier forwarded to is one value.
  #expect(failure { try FieldEncoder().encode(Holder(x: Identifier(high: 1, low: 2))) } == nil)
  #expect(failure { try CanonicalEncoding.encode(Holder(x: SingleThenKeyed())) } == expected)
  var appended: [UInt8] = [7]
  #expect(throws: EncodingError.self) { try FieldEncoder().encode([SingleThenKeyed()], appendingTo: &appended) }
  #expect(appended == [7])

  /// A class that encodes its superclass's fields into the same encoder's keyed container.
  class Base: Encodable {
    enum Key: CodingKey { case base, own }
    func encode(to encoder: any Encoder) throws {
      var container = encoder.container(keyedBy: Key.self)
      try container.encode(1, forKey: .base)
    }
  }
  final class Derived: Base {
    override func encode(to encoder: any Encoder) throws {
      try super.encode(to: encoder)
      var container = encoder.container(keyedBy: Key.self)
      try container.encode(2, forKey: .own)
    }
  }
  #expect(try FieldRenderer.json(FieldEncoder().encode(Holder(x: Derived()))) == #"{"x":{"base":1,"own":2},"y":5}"#)
}

/// A list nested `count` deep whose links are written as optionals through `encode(_:forKey:)`
/// (null after the last), so each is read through `Optional`'s single-value container.
private struct OptionalLinks: Codable, Equatable {
  enum Key: CodingKey { case n, next }
  var n: Int
  /// The next link, if any (an array, to break the recursion of a stored property).
  var rest: [OptionalLinks]

  init(count: Int) {
    self = (1..<count).reduce(OptionalLinks(n: 0, rest: [])) { inner, n in OptionalLinks(n: n, rest: [inner]) }
  }
  private init(n: Int, rest: [OptionalLinks]) { (self.n, self.rest) = (n, rest) }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: Key.self)
    try container.encode(n, forKey: .n)
    try container.encode(rest.first, forKey: .next)
  }
  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: Key.self)
    n = try container.decode(Int.self, forKey: .n)
    rest = try container.decode(OptionalLinks?.self, forKey: .next).map { [$0] } ?? []
  }
}

/// A value read through a single-value container (`Optional`'s, a wrapper's) is the value that
/// stands there, at the same depth, as the encoder writes it. The decoder counted it one deeper:
/// a list of 33 links written as optionals, 33 deep, encoded and was journaled, but read as 65
/// deep and failed to decode.
@Test func aValueReadThroughASingleValueContainerIsNotDeeper() throws {
  let deepest = OptionalLinks(count: 63)
  #expect(try FieldRenderer.json(FieldEncoder().encode(deepest)).hasPrefix(#"{"n":62,"next":{"n":61,"#))
  #expect(try roundTrip(deepest) == deepest)
  #expect(try roundTrip(OptionalLinks(count: 33)) == OptionalLinks(count: 33))
  #expect(failure { try FieldEncoder().encode(OptionalLinks(count: 64)) } == "nesting deeper than 64")
}

/// A field missing from a nested object, and an array with fewer elements than its reader reads,
/// say which object or array: the byte its tag is at (the decoder keeps no coding path). A
/// missing field said only its name, which two objects of one event may both have.
@Test func aMissingFieldOrElementSaysWhere() throws {
  struct Inner: Codable { var p: Int }
  struct Old: Codable {
    var first: Inner
    var second: Inner
  }
  struct NewInner: Codable {
    var p: Int
    var q: Int
  }
  struct New: Codable {
    var first: Inner
    var second: NewInner
  }
  /// `Hand` reads `second` by its hand-written fields.
  struct Hand: FieldCodable {
    init(fields reader: inout FieldReader) throws { _ = try reader.read(String.self, for: "q") }
    func encodeFields(into writer: inout FieldWriter) {}
  }
  let bytes = try FieldEncoder().encode(Old(first: Inner(p: 1), second: Inner(p: 2)))
  let second = 1 + 6 + 5 + 1 + 7  // the object's tag, "first", {"p": 1}, the key "second"
  #expect(bytes[second] == FieldTag.object.rawValue)
  #expect(
    decodingFailure { try FieldDecoder().decode(New.self, from: bytes) }
      == "no field \"q\" in the object at byte \(second)"
  )
  #expect(
    decodingFailure { try FieldDecoder().decodeFields(Hand.self, from: bytes, at: second) }
      == "no field \"q\" in the object at byte \(second)")
  let pair = try FieldEncoder().encode(["x": [1]])
  #expect(
    decodingFailure { try FieldDecoder().decode([String: Pair].self, from: pair) }
      == "the array at byte 3 has no more elements (it has 1)")
}

/// Reads two integers from an array.
private struct Pair: Decodable {
  var a: Int
  var b: Int
  init(from decoder: any Decoder) throws {
    var container = try decoder.unkeyedContainer()
    a = try container.decode(Int.self)
    b = try container.decode(Int.self)
  }
}

/// The debug description of the `keyNotFound` or `valueNotFound` error `body` throws, or nil if
/// it throws nothing.
private func decodingFailure(_ body: () throws -> Any) -> String? {
  do {
    _ = try body()
    return nil
  } catch let error as DecodingError {
    switch error {
    case .keyNotFound(_, let context), .valueNotFound(_, let context): return context.debugDescription
    default: return "\(error)"
    }
  } catch {
    return "\(error)"
  }
}

/// The encoder handed to every `encode(to:)` as `any Encoder` fits an existential's inline
/// buffer of three words: one word more and each value's encoding allocates a box for it.
@Test func theValueEncoderFitsAnExistentialInline() {
  #expect(MemoryLayout<FieldValueEncoder>.size <= 3 * MemoryLayout<Int>.size)
  #expect(MemoryLayout<FieldSingleValueEncoder>.size <= 3 * MemoryLayout<Int>.size)
}

/// RELIABILITY.md, "Known limits": a key written twice into one keyed container keeps both
/// entries, and the first is read, where JSON keeps the last.
@Test func aKeyWrittenTwiceReadsTheFirst() throws {
  struct Twice: Encodable {
    enum Key: CodingKey { case id }
    func encode(to encoder: any Encoder) throws {
      var container = encoder.container(keyedBy: Key.self)
      try container.encode(1, forKey: .id)
      var again = encoder.container(keyedBy: Key.self)
      try again.encode(2, forKey: .id)
    }
  }
  struct Read: Decodable { var id: Int }
  #expect(try FieldRenderer.json(FieldEncoder().encode([Twice()])).hasPrefix(#"[{"id":1"#))
  #expect(try FieldDecoder().decode([Read].self, from: FieldEncoder().encode([Twice()])).map(\.id) == [1])
  #expect(try JSONDecoder().decode([Read].self, from: JSONEncoder().encode([Twice()])).map(\.id) == [2])
}

/// A type that, when the value is not an integer, reads itself again through its single-value
/// container, at the same place: a broken `init(from:)` that hostile bytes (a string) would send
/// round for ever. It reads the value as `Optional` and wrappers do, at the same level (entry
/// 195), so only a count of such reads in a row stops it.
private struct ReadsItselfAgain: Decodable {
  var value: Int
  init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    if let value = try? container.decode(Int.self) {
      self.value = value
    } else {
      self = try container.decode(ReadsItselfAgain.self)
    }
  }
}

/// Reads through single-value containers one in another are bounded, as nesting is: the
/// decoder throws instead of the stack overflowing.
@Test func readsThroughSingleValueContainersAreBounded() throws {
  #expect(try FieldDecoder().decode(ReadsItselfAgain.self, from: FieldEncoder().encode(7)).value == 7)
  let error = decodingFailure { try FieldDecoder().decode(ReadsItselfAgain.self, from: FieldEncoder().encode("x")) }
  #expect(error?.contains("more than 64 values read through single-value containers, one in another at byte 0") == true)
  // Optionals of optionals, read through one single-value container after another, read as before.
  let holder = try roundTrip(["a": Int??.some(.some(1))])
  #expect(holder == ["a": .some(.some(1))])
}

/// A value that hands its set, or a dictionary's keys or values, to an unkeyed container's
/// `encode(contentsOf:)`: the protocol's default wrote them in hash order, which changes from one
/// process to the next, so equal values encoded to different bytes (and states digested apart).
private struct ContentsOf: Encodable {
  enum Part { case set, keys, values }
  var part: Part
  var tags: Set<String>
  var counts: [String: Int]
  func encode(to encoder: any Encoder) throws {
    var container = encoder.unkeyedContainer()
    switch part {
    case .set: try container.encode(contentsOf: tags)
    case .keys: try container.encode(contentsOf: counts.keys)
    case .values: try container.encode(contentsOf: counts.values)
    }
  }
}

@Test func aSetOrKeysHandedToEncodeContentsOfAreWrittenSorted() throws {
  let names = (0..<40).map { "tag-\($0 * 7919 % 1000)" }
  let tags = Set(names)
  let counts = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) })
  let sorted = try FieldEncoder().encode(names.sorted())
  #expect(try FieldEncoder().encode(ContentsOf(part: .set, tags: tags, counts: [:])) == sorted)
  #expect(try FieldEncoder().encode(ContentsOf(part: .keys, tags: [], counts: counts)) == sorted)
  // A set built in another order (another hash table) writes the same bytes.
  let rebuilt = Set(names.reversed())
  #expect(
    try CanonicalEncoding.encode(ContentsOf(part: .set, tags: rebuilt, counts: [:]))
      == CanonicalEncoding.encode(ContentsOf(part: .set, tags: tags, counts: [:])))
  // Values have no order of their own to be written in: refused, but alone.
  #expect(
    failure { try FieldEncoder().encode(ContentsOf(part: .values, tags: [], counts: counts)) }?
      .contains("a dictionary's values come in its hash order") == true)
  #expect(
    try FieldEncoder().encode(ContentsOf(part: .values, tags: [], counts: ["a": 1])) == FieldEncoder().encode([1]))
}
