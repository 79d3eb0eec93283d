/// A 128-bit identifier for commands and records, made by an injected `IdentifierSource` so that
/// replay never has to invent one. Encoded as 32 lowercase hex digits.
public struct Identifier: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
  public var high: UInt64
  public var low: UInt64

  public init(high: UInt64, low: UInt64) {
    self.high = high
    self.low = low
  }

  /// Parses 32 hex digits (either case); nil for anything else.
  public init?(_ text: String) {
    let digits = Array(text.utf8)
    guard digits.count == 32 else { return nil }
    var halves: [UInt64] = [0, 0]
    for (index, digit) in digits.enumerated() {
      let value: UInt8
      switch digit {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): value = digit - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): value = digit - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): value = digit - UInt8(ascii: "A") + 10
      default: return nil
      }
      halves[index / 16] = halves[index / 16] << 4 | UInt64(value)
    }
    self.init(high: halves[0], low: halves[1])
  }

  public var description: String { Self.hex(high) + Self.hex(low) }

  private static func hex(_ value: UInt64) -> String {
    let text = String(value, radix: 16)
    return String(repeating: "0", count: 16 - text.count) + text
  }

  public static func < (a: Identifier, b: Identifier) -> Bool { (a.high, a.low) < (b.high, b.low) }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    let text = try container.decode(String.self)
    guard let parsed = Identifier(text) else {
      throw DecodingError.dataCorruptedError(in: container, debugDescription: "\"\(text)\" is not 32 hex digits")
    }
    self = parsed
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(description)
  }
}
