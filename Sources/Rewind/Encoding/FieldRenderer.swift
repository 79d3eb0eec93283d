/// Renders field-encoded bytes as JSON text without knowing the types that wrote them: the audit
/// view of an event payload. Objects keep their stored field order; non-finite doubles render as
/// strings (`"nan"`, `"inf"`, `"-inf"`), which JSON cannot express as numbers. Of two entries of
/// an object with equal keys only the first is shown: the one a reader reads (FORMAT.md).
public enum FieldRenderer {
  /// The JSON rendering of the one value in `bytes`.
  /// - Throws: `FieldFormatError` locating the first malformed byte.
  public static func json(_ bytes: [UInt8]) throws(FieldFormatError) -> String {
    var notes: [String] = []
    return try json(bytes, from: 0, notes: &notes)
  }

  /// The JSON rendering of the one value in `bytes`; `notes` gets what it does not show as
  /// stored, one sentence each, locating it by its offset in `bytes`: an entry left out because
  /// an earlier one of its object has its key, a string or key whose bytes are not UTF-8 (shown
  /// with U+FFFD for each ill-formed sequence, as readers read it, so that two such strings can
  /// show alike).
  /// - Throws: `FieldFormatError` locating the first malformed byte.
  public static func json(_ bytes: [UInt8], notes: inout [String]) throws(FieldFormatError) -> String {
    try json(bytes, from: 0, notes: &notes)
  }

  static func json(_ bytes: [UInt8], from offset: Int) throws(FieldFormatError) -> String {
    var notes: [String] = []
    return try json(bytes, from: offset, notes: &notes)
  }

  static func json(_ bytes: [UInt8], from offset: Int, notes: inout [String]) throws(FieldFormatError) -> String {
    var reader = FieldBytesReader(bytes, position: offset)
    var output = Output(limit: .max)
    try render(&reader, into: &output, depth: 0, notes: &notes)
    guard reader.isAtEnd else {
      throw FieldFormatError("\(bytes.count - reader.position) bytes after the value", at: reader.position)
    }
    return output.text
  }

  /// The start of the JSON rendering of the one value in `bytes`: the whole of it while it holds
  /// at most `limit` bytes of UTF-8, else the text rendered until it passed them (`cut`), a
  /// string or key in it cut short too. A line that shows the first characters of an event's
  /// fields needs no more, and a payload of a few hundred megabytes (which a small frame can
  /// decompress to) renders to several times that. The rest of the bytes is read as the whole
  /// rendering reads it, without keeping text: the same errors and `notes` come.
  /// - Throws: `FieldFormatError` locating the first malformed byte.
  package static func json(_ bytes: [UInt8], notes: inout [String], atMost limit: Int) throws(FieldFormatError) -> (
    text: String, cut: Bool
  ) {
    var reader = FieldBytesReader(bytes, position: 0)
    var output = Output(limit: limit)
    try render(&reader, into: &output, depth: 0, notes: &notes)
    guard reader.isAtEnd else {
      throw FieldFormatError("\(bytes.count - reader.position) bytes after the value", at: reader.position)
    }
    return (output.text, output.isCut)
  }

  /// Rendered text, kept up to `limit` bytes of UTF-8: past them it is cut and appends nothing more.
  private struct Output {
    var text = ""
    let limit: Int
    var isCut = false

    init(limit: Int) {
      self.limit = limit
      isCut = limit < 0
    }

    mutating func append(_ part: String) {
      guard !isCut else { return }
      text += part
      if text.utf8.count > limit { isCut = true }
    }
  }

  private static func render(
    _ reader: inout FieldBytesReader, into output: inout Output, depth: Int, notes: inout [String]
  ) throws(FieldFormatError) {
    guard depth < FieldLimits.maximumDepth else {
      throw FieldFormatError("nesting deeper than \(FieldLimits.maximumDepth)", at: reader.position)
    }
    switch try reader.readTag() {
    case .null: output.append("null")
    case .false: output.append("false")
    case .true: output.append("true")
    case .int: output.append(String(try reader.readZigZag()))
    case .uint: output.append(String(try reader.readVarint()))
    case .double:
      let at = reader.position - 1
      let value = Double(bitPattern: try reader.readFixed64())
      if value.isNaN || value.isInfinite {
        // JSON has no such number: a string, said in a note, so that it reads apart from a
        // string field holding the same text.
        let text = value.isNaN ? "nan" : value < 0 ? "-inf" : "inf"
        output.append("\"\(text)\"")
        notes.append("the number at byte \(at) is \(value.isNaN ? "NaN" : "infinite"): shown as the string \"\(text)\"")
      } else {
        output.append(String(describing: value))
      }
    case .string:
      let at = reader.position - 1
      let (start, count) = try reader.readStringBounds()
      appendString(reader.bytes[start..<start + count], of: "string", at: at, to: &output, notes: &notes)
    case .identifier: output.append("\"\(try reader.readIdentifier())\"")
    case .array:
      output.append("[")
      var first = true
      while try reader.peekByte() != FieldTag.end.rawValue {
        if !first { output.append(",") }
        first = false
        try render(&reader, into: &output, depth: depth + 1, notes: &notes)
      }
      reader.position += 1
      output.append("]")
    case .object:
      output.append("{")
      var first = true
      var keys: Set<ArraySlice<UInt8>> = []  // compared by their bytes, as readers compare them
      while try reader.peekByte() != 0 {
        let entry = reader.position
        let (keyStart, keyCount) = try reader.readStringBounds(lengthBias: 1)
        let key = reader.bytes[keyStart..<keyStart + keyCount]
        guard keys.insert(key).inserted else {
          // Still checked as any value is, but not shown: a reader reads the first.
          var ignored = Output(limit: -1)
          var ignoredNotes: [String] = []
          try render(&reader, into: &ignored, depth: depth + 1, notes: &ignoredNotes)
          var quoted = ""
          appendQuoted(String(decoding: key, as: UTF8.self), to: &quoted)
          notes.append("the entry at byte \(entry) repeats the key \(quoted) and is not shown: the first is read")
          continue
        }
        if !first { output.append(",") }
        first = false
        appendString(key, of: "key", at: entry, to: &output, notes: &notes)
        output.append(":")
        try render(&reader, into: &output, depth: depth + 1, notes: &notes)
      }
      reader.position += 1
      output.append("}")
    case .end: throw FieldFormatError("array end where a value was expected", at: reader.position - 1)
    }
  }

  /// Appends `bytes`, a string or key (`what`) at `offset`, as a JSON string literal, noting in
  /// `notes` when they are not UTF-8: they are shown as readers decode them, each ill-formed
  /// sequence as U+FFFD. Past `output`'s limit, only as much of it as the limit leaves room for
  /// (no closing quote: it goes on), or none; the note comes either way.
  private static func appendString(
    _ bytes: ArraySlice<UInt8>, of what: String, at offset: Int, to output: inout Output, notes: inout [String]
  ) {
    let room = output.isCut ? 0 : output.limit - output.text.utf8.count
    if bytes.count <= room, let text = String(validating: bytes, as: UTF8.self) {
      var quoted = ""
      appendQuoted(text, to: &quoted)
      output.append(quoted)
      return
    }
    // Checked as a whole (its copy freed at once: a scalar at a time is many times slower).
    let isUTF8 = String(validating: bytes, as: UTF8.self) != nil
    if !output.isCut {
      var quoted = ""
      appendQuoted(String(decoding: bytes.prefix(max(0, room)), as: UTF8.self), to: &quoted)
      output.append(bytes.count <= room ? quoted : String(quoted.dropLast()))
      if bytes.count > room { output.isCut = true }
    }
    if !isUTF8 { notes.append("the \(what) at byte \(offset) is not UTF-8: its ill-formed bytes are shown as U+FFFD") }
  }

  /// Whether a terminal acts on `scalar` rather than showing it, may show its neighbours out of
  /// order, or shows nothing for it: C0 (tab and line breaks too), DEL, C1, the line and
  /// paragraph separators (U+2028, U+2029: some terminals break the line), the bidirectional
  /// controls: the marks (U+061C, U+200E, U+200F, which can move the digits beside them),
  /// embeddings and overrides (U+202A–202E) and isolates (U+2066–2069); and the invisible ones,
  /// so that two names differing only by them do not look the same: the soft hyphen (U+00AD),
  /// the Mongolian vowel separator (U+180E), the zero width space (U+200B), the word joiner and
  /// invisible operators (U+2060–2064) and the zero width no-break space, or byte order mark
  /// (U+FEFF). The zero width non-joiner and joiner (U+200C, U+200D) are kept: scripts such as
  /// Persian and the Indic ones spell words with them, and emoji sequences join with U+200D.
  /// The one list of them: the JSON escaper below and the `rewind` tool's text output
  /// (`visible`) escape exactly these.
  package static func isTerminalControl(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F, 0x00AD, 0x061C, 0x180E, 0x200B, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E,
      0x2060...0x2064, 0x2066...0x2069, 0xFEFF:
      true
    default: false
    }
  }

  /// Appends `string` as a JSON string literal (the one JSON string escaper of the package).
  /// Escapes what JSON requires (C0, quote, backslash) and also every other `isTerminalControl`
  /// scalar (DEL, C1, the line and paragraph separators, the bidirectional controls, the
  /// invisible ones such as U+200B), as `\u001b`:
  /// a journal's strings are untrusted, and JSON printed to a terminal must not drive it or
  /// reorder what it shows. Any JSON reader decodes the same string.
  package static func appendQuoted(_ string: String, to output: inout String) {
    output += "\""
    for scalar in string.unicodeScalars {
      switch scalar {
      case "\"": output += "\\\""
      case "\\": output += "\\\\"
      case "\n": output += "\\n"
      case "\r": output += "\\r"
      case "\t": output += "\\t"
      case let control where isTerminalControl(control):
        let hex = String(control.value, radix: 16)
        output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: output.unicodeScalars.append(scalar)
      }
    }
    output += "\""
  }
}
