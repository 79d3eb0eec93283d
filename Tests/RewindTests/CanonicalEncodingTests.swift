import RewindTestSupport
import Testing

@testable import Rewind

/// Canonicalizing copies objects whose keys are in order as they come and sorts the others in
/// place: the result must be what sorting every object's entries (stably) gives.
@Suite struct CanonicalEncodingTests {
  /// A value to write in the field encoding with its object keys in any order (repeats allowed).
  indirect enum Value {
    case int(Int64)
    case double(Double)
    case string(String)
    case array([Value])
    case object([(String, Value)])

    /// Its bytes, with every object's entries as given or sorted by key (a stable sort, as the
    /// canonical encoding's), and -0.0 as given or as 0.0.
    /// Its bytes, as `write(into:canonical:)` writes them.
    func bytes(canonical: Bool) -> [UInt8] {
      var writer = FieldBytesWriter()
      write(into: &writer, canonical: canonical)
      return writer.bytes
    }

    func write(into writer: inout FieldBytesWriter, canonical: Bool) {
      switch self {
      case .int(let value):
        writer.append(.int)
        writer.appendZigZag(value)
      case .double(let value):
        writer.append(.double)
        writer.appendFixed64(canonical && value == 0 ? 0 : value.bitPattern)
      case .string(let value):
        writer.append(.string)
        writer.appendString(value)
      case .array(let values):
        writer.append(.array)
        for value in values { value.write(into: &writer, canonical: canonical) }
        writer.append(.end)
      case .object(let entries):
        writer.append(.object)
        let ordered =
          canonical ? entries.sorted { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) } : entries
        for (key, value) in ordered {
          writer.appendString(key, lengthBias: 1)
          value.write(into: &writer, canonical: canonical)
        }
        writer.append(0)
      }
    }

    static func random(_ random: inout SeededRandom, depth: Int) -> Value {
      let keys = ["a", "b", "ab", "ba", "abc", "z", "é", ""]
      switch random.next() % (depth > 3 ? 3 : 5) {
      case 0: return .int(Int64(truncatingIfNeeded: random.next()))
      case 1: return .double(random.next() % 4 == 0 ? -0.0 : Double(random.next() % 1000) / 7)
      case 2: return .string("s\(random.next() % 100)")
      case 3: return .array((0..<Int(random.next() % 4)).map { _ in Value.random(&random, depth: depth + 1) })
      default:
        // Now and then an object of many entries (sorted otherwise than a record's few fields).
        let count = random.next() % 8 == 0 ? 16 + Int(random.next() % 24) : Int(random.next() % 6)
        var entries = (0..<count).map { _ in
          (keys[Int(random.next() % UInt64(keys.count))], Value.random(&random, depth: depth + 1))
        }
        // Often in order already (the fast path), sometimes in order but for the last key.
        switch random.next() % 3 {
        case 0: entries.sort { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
        case 1 where entries.count > 1:
          let last = entries.removeLast()
          entries.sort { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
          entries.append(last)
        default: break
        }
        return .object(entries)
      }
    }
  }

  /// Objects whose keys come in order, out of order, out of order only at the end, or repeated,
  /// nested in objects and arrays: canonicalizing gives every object sorted (stably) by key, and
  /// -0.0 as 0.0; canonical bytes stay as they are.
  @Test func canonicalizingSortsEveryObjectStably() throws {
    var random = SeededRandom(seed: 0xCA70)
    for _ in 0..<2_000 {
      let value = Value.random(&random, depth: 0)
      let canonical = try CanonicalEncoding.canonicalize(value.bytes(canonical: false))
      #expect(canonical == value.bytes(canonical: true))
      #expect(try CanonicalEncoding.canonicalize(canonical) == canonical)
    }
  }

  /// The canonical encoder sorts each object as it finishes it, in one pass: its bytes must be
  /// those of the plain encoding canonicalized afterwards, for objects filled through `Codable`
  /// containers in any order.
  @Test func theCanonicalEncoderWritesWhatCanonicalizingGives() throws {
    var random = SeededRandom(seed: 0xCA71)
    for _ in 0..<2_000 {
      let value = Value.random(&random, depth: 0)
      #expect(try CanonicalEncoding.encode(value) == value.bytes(canonical: true))
      #expect(try CanonicalEncoding.encode(value) == CanonicalEncoding.canonicalize(FieldEncoder().encode(value)))
    }
  }

  /// The same for records written by their hand-written fields out of order, with a nested object,
  /// an array of objects, -0.0, and a value written through its `Encodable` form: each object is
  /// sorted as it ends, inner ones first, and the encoding of the same records without sorting is
  /// unchanged.
  @Test func handWrittenFieldsAreSortedAsEachObjectEnds() throws {
    var random = SeededRandom(seed: 0xCA72)
    let records = (0..<300).map { _ in Shuffled.random(&random) }
    // Written as a store writes its records (`FieldCodableTreeValues`).
    let array = FieldCodableTreeValues(
      tree: try #require(RecordTree(sortedKeys: Array(records.indices), values: records)))
    let plain = try FieldEncoder().encode(array)
    #expect(try CanonicalEncoding.encode(array) == CanonicalEncoding.canonicalize(plain))
    #expect(try CanonicalEncoding.encode(array) != plain)
    // Without the canonical encoder, the fields stay in the order written.
    #expect(try firstObjectKeys(plain) == ["zeta", "alpha", "mid", "extra"])
    #expect(try firstObjectKeys(CanonicalEncoding.encode(array)) == ["alpha", "extra", "mid", "zeta"])
  }

  /// The keys of the first object in the array `bytes` holds, in stored order.
  func firstObjectKeys(_ bytes: [UInt8]) throws -> [String] {
    var reader = FieldBytesReader(bytes)
    #expect(try reader.readTag() == .array)
    #expect(try reader.readTag() == .object)
    var keys: [String] = []
    while try reader.peekByte() != 0 {
      keys.append(try reader.readString(lengthBias: 1))
      try reader.skipValue()
    }
    return keys
  }

  /// Objects nested to the limit, their keys in order or not: the canonical encoder throws the
  /// nesting error, as the field encoder does (entry 195) and as canonicalizing bytes nested that
  /// deep does, and neither traps nor returns bytes no decoder reads.
  @Test(arguments: [false, true])
  func nestingPastTheLimitThrows(outOfOrder: Bool) throws {
    #expect(throws: EncodingError.self) { try CanonicalEncoding.encode(Nest(levels: 63, outOfOrder: outOfOrder)) }
    #expect(throws: EncodingError.self) { try FieldEncoder().encode(Nest(levels: 63, outOfOrder: outOfOrder)) }
    // The same bytes by hand: the deepest nesting the encoder writes, in one more object.
    let deepest = try FieldEncoder().encode(Nest(levels: 62, outOfOrder: outOfOrder))
    #expect(throws: FieldFormatError.self) {
      try CanonicalEncoding.canonicalize([FieldTag.object.rawValue, 2, UInt8(ascii: "c")] + deepest + [0])
    }
    let within = try CanonicalEncoding.encode(Nest(levels: 40, outOfOrder: outOfOrder))
    #expect(
      try within == CanonicalEncoding.canonicalize(FieldEncoder().encode(Nest(levels: 40, outOfOrder: outOfOrder))))
  }

  /// Objects nested `levels` deep, the innermost holding two keys in or out of order.
  struct Nest: Encodable {
    var levels: Int
    var outOfOrder: Bool
    enum Keys: String, CodingKey { case a, b, c }

    func encode(to encoder: any Encoder) throws {
      var container = encoder.container(keyedBy: Keys.self)
      if levels > 0 {
        try container.encode(Nest(levels: levels - 1, outOfOrder: outOfOrder), forKey: .c)
      } else {
        try container.encode(1, forKey: outOfOrder ? .b : .a)
        try container.encode(2, forKey: outOfOrder ? .a : .b)
      }
    }
  }

  /// A record that writes its fields out of key order, nesting objects that do too.
  struct Shuffled: Codable, FieldCodable {
    struct Inner: Codable, FieldCodable {
      var b: Double
      var a: String

      func encodeFields(into writer: inout FieldWriter) {
        writer.write(b, for: "b")
        writer.write(a, for: "a")
      }
      init(b: Double, a: String) { (self.b, self.a) = (b, a) }
      init(fields reader: inout FieldReader) throws {
        a = try reader.read(String.self, for: "a")
        b = try reader.read(Double.self, for: "b")
      }
    }

    var zeta: Int
    var alpha: Inner
    var mid: [Inner]
    var extra: Value

    static func random(_ random: inout SeededRandom) -> Shuffled {
      func inner() -> Inner {
        Inner(b: random.next() % 3 == 0 ? -0.0 : Double(random.next() % 100), a: "a\(random.next() % 10)")
      }
      return Shuffled(
        zeta: Int(truncatingIfNeeded: random.next()), alpha: inner(),
        mid: (0..<Int(random.next() % 3)).map { _ in inner() },
        extra: Value.random(&random, depth: 1))
    }

    init(zeta: Int, alpha: Inner, mid: [Inner], extra: Value) {
      (self.zeta, self.alpha, self.mid, self.extra) = (zeta, alpha, mid, extra)
    }

    func encodeFields(into writer: inout FieldWriter) {
      writer.write(zeta, for: "zeta")
      writer.write(alpha, for: "alpha")
      writer.write(mid, for: "mid")
      try? writer.write(encoding: extra, for: "extra")
    }

    /// Only written in these tests.
    init(fields reader: inout FieldReader) throws {
      throw DecodingError.valueNotFound(Self.self, .init(codingPath: [], debugDescription: "written only"))
    }
  }
}

/// `Value` through `Codable` containers, its objects' entries in the order given (repeats too).
extension CanonicalEncodingTests.Value: Codable {
  typealias Key = NamedKey

  init(from decoder: any Decoder) throws {
    throw DecodingError.valueNotFound(Self.self, .init(codingPath: [], debugDescription: "written only"))
  }

  func encode(to encoder: any Encoder) throws {
    switch self {
    case .int(let value):
      var container = encoder.singleValueContainer()
      try container.encode(value)
    case .double(let value):
      var container = encoder.singleValueContainer()
      try container.encode(value)
    case .string(let value):
      var container = encoder.singleValueContainer()
      try container.encode(value)
    case .array(let values):
      var container = encoder.unkeyedContainer()
      for value in values { try container.encode(value) }
    case .object(let entries):
      var container = encoder.container(keyedBy: Key.self)
      for (key, value) in entries { try container.encode(value, forKey: Key(stringValue: key)) }
    }
  }
}
