public import Rewind

/// Identifies a notebook, for ever; never derived from its title.
public struct NotebookID: EntityIdentifier {
  public var raw: Identifier
  public init(_ raw: Identifier) { self.raw = raw }
}

/// Identifies a note, for ever; never derived from its title.
public struct NoteID: EntityIdentifier {
  public var raw: Identifier
  public init(_ raw: Identifier) { self.raw = raw }
}

/// Identifies a reading-list item, for ever; two items may share a title.
public struct ReadingItemID: EntityIdentifier {
  public var raw: Identifier
  public init(_ raw: Identifier) { self.raw = raw }
}

/// A tag: trimmed and lowercased, so `" Swift"` and `"swift"` are one tag.
public struct NoteTag: Hashable, Comparable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
  public let name: String

  public init(_ name: String) {
    // Most tags are printable ASCII without capitals already (every tag decoded from a journal
    // was made by this initializer): those are their own trimmed, lowercased form.
    let normal = name.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && !(0x41...0x5A).contains($0) }
    self.name = normal ? name : name.trimmed.lowercased()
  }
  public init(stringLiteral value: String) { self.init(value) }

  public var isEmpty: Bool { name.isEmpty }
  public static func < (a: NoteTag, b: NoteTag) -> Bool { a.name < b.name }
  public var description: String { name }
  public init(from decoder: any Decoder) throws { self.init(try decoder.singleValueContainer().decode(String.self)) }
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(name)
  }
}

extension String {
  /// Without leading and trailing white space (Unicode's definition).
  var trimmed: String {
    // Most titles start and end with a printable ASCII character, and are then their own trimmed
    // form: checked on the first and last UTF-8 bytes (a byte under 0x80 is a whole scalar),
    // without searching the scalars from both ends (about 250 instructions per `createNote`).
    // The bytes are read in place: `utf8.last` steps back over the view's index (about 75).
    let plain = utf8.withContiguousStorageIfAvailable { bytes in
      guard let first = bytes.first, let last = bytes.last else { return false }
      return first > 0x20 && first < 0x80 && last > 0x20 && last < 0x80
    }
    if plain == true { return self }
    let scalars = unicodeScalars
    guard let first = scalars.firstIndex(where: { !$0.isWhiteSpace }),
      let last = scalars.lastIndex(where: { !$0.isWhiteSpace })
    else { return "" }
    if first == scalars.startIndex && scalars.index(after: last) == scalars.endIndex { return self }
    return String(scalars[first...last])
  }
}

extension Unicode.Scalar {
  /// `properties.isWhitespace` (Unicode's White_Space), without its table lookup for ASCII:
  /// tab, line feed, vertical tab, form feed, carriage return and space.
  var isWhiteSpace: Bool {
    isASCII ? value == 0x20 || (0x09...0x0D).contains(value) : properties.isWhitespace
  }
}
