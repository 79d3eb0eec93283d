/// A SHA-256 over the canonical encoding of a model's state (see `CanonicalEncoding`).
///
/// Equal states have equal digests in every process and on every machine: the encoding sorts
/// records by id and object fields by name, and no hash seed or dictionary order enters it.
/// Equal means equal bytes: two states that differ only in the Unicode form of a string (`é`
/// composed, or `e` and a combining accent) are `==`, since Swift compares strings by canonical
/// equivalence, yet each string is written as it is, so their digests differ.
public struct StateDigest: Hashable, Sendable, CustomStringConvertible {
  /// The 32 bytes of the hash.
  public let bytes: [UInt8]

  init(bytes: [UInt8]) {
    precondition(bytes.count == 32, "a state digest is 32 bytes")
    self.bytes = bytes
  }

  /// Parses 64 hex digits; nil for anything else.
  public init?(hex: String) {
    let digits = Array(hex.utf8)
    guard digits.count == 64 else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(32)
    for index in stride(from: 0, to: 64, by: 2) {
      guard let high = StateDigest.nibble(digits[index]), let low = StateDigest.nibble(digits[index + 1]) else {
        return nil
      }
      bytes.append(high << 4 | low)
    }
    self.bytes = bytes
  }

  /// 64 lowercase hex digits.
  public var description: String {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(64)
    for byte in bytes {
      text.append(digits[Int(byte >> 4)])
      text.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: text, as: UTF8.self)
  }

  /// The digest of `state`.
  /// - Throws: `EncodingError` if the state does not encode.
  public static func of<M: SnapshotModel>(_ state: M) throws -> StateDigest {
    StateDigest(bytes: SHA256.hash(try CanonicalEncoding.encode(state)))
  }

  /// One digest over several models' digests, each under its name; the order of `parts` does not
  /// matter (they are sorted by name first).
  /// - Precondition: names are distinct.
  public static func combining(_ parts: [(name: String, digest: StateDigest)]) -> StateDigest {
    let sorted = parts.sorted { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
    var writer = FieldBytesWriter()
    writer.appendString("rewind.combined")
    var previous: String?
    for part in sorted {
      precondition(part.name != previous, "model \(part.name) combined twice")
      previous = part.name
      writer.appendString(part.name)
      writer.bytes.append(contentsOf: part.digest.bytes)
    }
    return StateDigest(bytes: SHA256.hash(writer.bytes))
  }

  private static func nibble(_ digit: UInt8) -> UInt8? {
    switch digit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
    default: nil
    }
  }
}
