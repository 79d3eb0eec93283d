/// The type tags of Rewind's field encoding, the self-describing binary form of event payloads.
///
/// A value is one tag byte followed by its body:
///
/// | tag | body |
/// |---|---|
/// | `null` | nothing |
/// | `false`, `true` | nothing |
/// | `int` | a signed integer, zigzag then LEB128 varint |
/// | `uint` | an unsigned integer, LEB128 varint |
/// | `double` | 8 bytes, IEEE 754 bit pattern, little-endian |
/// | `string` | varint byte count, then UTF-8 |
/// | `array` | values, then the `end` tag |
/// | `object` | entries `varint(keyByteCount + 1), key UTF-8, value`, then a single `0` byte |
/// | `identifier` | 16 bytes: an `Identifier`'s high then low half, each little-endian |
///
/// Because every value names its type and every field its name, a tool without the app's types can
/// render any payload field by field (see `FieldRenderer`).
enum FieldTag: UInt8 {
  case null = 0
  case `false` = 1
  case `true` = 2
  case int = 3
  case uint = 4
  case double = 5
  case string = 6
  case array = 7
  case object = 8
  /// Closes an array.
  case end = 9
  /// A 128-bit `Identifier`; rendered as its 32 hex digits.
  case identifier = 10
}

/// Bounds that protect decoders from hostile or corrupt input.
enum FieldLimits {
  /// Deepest nesting of arrays and objects a decoder follows.
  static let maximumDepth = 64
}
