/// A 128-bit identifier for commands and records, made by an injected `IdentifierSource` so that
/// replay never has to invent one. Encoded as 32 lowercase hex digits.
public struct Identifier: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
  public var high: UInt64
  public var low: UInt64

  public init(high: UInt64, low: UInt64) {
    self.high = high
    self.low = low
  }

  /// The identifier stored at `raw` as the field encoding stores it: two little-endian 64-bit
  /// words, high first. For the in-place reads (a record's command id, an identifier field), whose
  /// callers have checked that 16 bytes are there; the checked read is
  /// `FieldBytesReader.readIdentifier()`.
  @inline(__always)
  init(littleEndianWordsAt raw: UnsafeRawPointer) {
    self.init(
      high: UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)),
      low: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
  }

  /// Parses 32 hex digits (either case); nil for anything else.
  public init?(_ text: String) {
    var high: UInt64 = 0
    var low: UInt64 = 0
    var count = 0
    for digit in text.utf8 {
      let value: UInt8
      switch digit {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): value = digit &- UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): value = digit &- UInt8(ascii: "a") &+ 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): value = digit &- UInt8(ascii: "A") &+ 10
      default: return nil
      }
      if count < 16 { high = high << 4 | UInt64(value) } else { low = low << 4 | UInt64(value) }
      count += 1
      if count > 32 { return nil }
    }
    guard count == 32 else { return nil }
    self.init(high: high, low: low)
  }

  /// The keys a record id typed by a person is looked up under, in order: as typed, then, for an
  /// identifier typed otherwise (in capitals), its `description`, the 32 lowercase digits stores
  /// key it by. Never empty; the last is the canonical spelling. An app whose keys are not
  /// identifiers, or are spelled otherwise, loses nothing: the typed text comes first.
  package static func spellings(of typed: String) -> [String] {
    guard let canonical = Identifier(typed)?.description, canonical != typed else { return [typed] }
    return [typed, canonical]
  }

  /// 32 lowercase hex digits, high half first.
  public var description: String {
    String(unsafeUninitializedCapacity: 32) { buffer in
      let digits: StaticString = "0123456789abcdef"
      for index in 0..<32 {
        let half = index < 16 ? high : low
        let shift = UInt64(60 - (index % 16) * 4)
        buffer[index] = digits.utf8Start[Int((half >> shift) & 0xF)]
      }
      return 32
    }
  }

  /// High half first: the order of the 128-bit numbers. Compared as one `UInt128` (a compare and a
  /// subtract with borrow) rather than as a tuple (two compares, each made a flag, and a select):
  /// every step of a store's tree search is one of these.
  @inlinable @inline(__always) public static func < (a: Identifier, b: Identifier) -> Bool {
    UInt128(a.high) &<< 64 | UInt128(a.low) < UInt128(b.high) &<< 64 | UInt128(b.low)
  }

  /// Field coders store the 16 bytes (tag `identifier`); other coders a 32-hex-digit string.
  public init(from decoder: any Decoder) throws {
    if let field = decoder as? FieldValueDecoder {
      var value = FieldValueReader(reader: FieldBytesReader(field.bytes, position: field.position))
      self = try value.identifier()
      return
    }
    let container = try decoder.singleValueContainer()
    let text = try container.decode(String.self)
    guard let parsed = Identifier(text) else {
      throw DecodingError.dataCorruptedError(in: container, debugDescription: "\"\(text)\" is not 32 hex digits")
    }
    self = parsed
  }

  public func encode(to encoder: any Encoder) throws {
    if let field = encoder as? FieldValueEncoder {
      field.state.close(downTo: field.depth)
      // As a single-value container checks: a value that wrote something here already (a
      // container, or another identifier) would otherwise be followed by a second value.
      guard field.state.writer.count == field.start else { throw FieldEncoderState.secondValue(at: field.start) }
      field.state.write(self)
      return
    }
    var container = encoder.singleValueContainer()
    try container.encode(description)
  }
}

/// A typed identity for one kind of record (`NoteID`, `NotebookID`, …): an `Identifier` that the
/// type system keeps apart from the others. Conforming types declare `raw` and `init(_:)`; ordering,
/// text and coding (as the bare identifier) come from here.
public protocol EntityIdentifier: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
  var raw: Identifier { get }
  init(_ raw: Identifier)
}

extension EntityIdentifier {
  /// Always inlined, as `Identifier`'s: a store's tree search compares ids at every step, and the
  /// last comparison of a leaf's search was otherwise left a call.
  @inlinable @inline(__always) public static func < (a: Self, b: Self) -> Bool { a.raw < b.raw }
  public var description: String { raw.description }
  public init(from decoder: any Decoder) throws {
    self.init(try decoder.singleValueContainer().decode(Identifier.self))
  }
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(raw)
  }
}
