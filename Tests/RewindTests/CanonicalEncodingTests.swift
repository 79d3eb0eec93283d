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
        var entries = (0..<Int(random.next() % 6)).map { _ in
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
      var given = FieldBytesWriter()
      value.write(into: &given, canonical: false)
      var expected = FieldBytesWriter()
      value.write(into: &expected, canonical: true)
      let canonical = try CanonicalEncoding.canonicalize(given.bytes)
      #expect(canonical == expected.bytes)
      #expect(try CanonicalEncoding.canonicalize(canonical) == canonical)
    }
  }
}
