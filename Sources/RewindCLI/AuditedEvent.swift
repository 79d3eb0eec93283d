import Rewind
import RewindJournal

/// A journal record as the audit commands show it, without the app's types: the envelope Rewind
/// writes at the front of every payload (name, schema version, origin, command) and the event's
/// fields rendered as JSON. A record that is not a Rewind event shows its bytes instead, and so
/// does an event whose fields do not decode (with its envelope).
struct AuditedEvent {
  var sequence: UInt64
  var timestamp: Int64
  var header: EventRecord.Header?
  /// The event's fields as a JSON object; the raw payload as a JSON string (UTF-8 text, or
  /// hexadecimal) when it is not a Rewind event; the fields' bytes in hexadecimal when only they
  /// do not decode.
  var payload: String
  /// How a raw `payload` string is written: "text" (its bytes are UTF-8) or "hex"; nil when the
  /// payload is the fields as JSON. Without it, the bytes `de ad` and the text "dead" would read
  /// the same.
  var payloadEncoding: String?
  /// Why the payload (or, with a `header`, the fields) could not be read, if it could not; or,
  /// for fields that render, what `payload` does not show as stored (`FieldRenderer`'s notes).
  var problem: String?
  var bytes: Int
  /// Whether `payload` is only the start of what it would be (`lineWidth`): not JSON.
  var isCut = false

  /// - Parameter lineWidth: for a line that shows the first `lineWidth` characters of `payload`
  ///   (`line(width:)`), it is rendered only as far as that takes (`isCut` then), the rest of the
  ///   payload read for what the whole rendering would report: a payload of hundreds of
  ///   megabytes, which a small frame can decompress to, renders to several times that. Nil: the
  ///   whole payload, for JSON and `show`.
  init(_ record: JournalRecord, lineWidth: Int? = nil) {
    sequence = record.sequence
    timestamp = record.timestamp
    bytes = record.payload.count
    do {
      let header = try EventRecord.header(of: record.payload)
      self.header = header
      // The envelope stands on its own: an event whose fields are damaged is still this event.
      let fields = Array(record.payload[header.bodyOffset...])
      // Its name and origin are shown as text: ill-formed bytes there are said, as in the fields.
      // Only a text that holds U+FFFD can have had them: the payload is parsed again for those
      // alone, not for every event an export writes.
      let replaced = { (text: String) in text.utf8.contains(0xEF) && text.contains("\u{FFFD}") }
      let envelope =
        replaced(header.name) || replaced(header.origin.name)
        ? EventRecord.textsNotUTF8(in: record.payload).map {
          "the event's \($0) is not UTF-8: its ill-formed bytes are shown as U+FFFD"
        } : []
      do {
        var notes: [String] = []
        if let lineWidth {
          // Characters of many bytes (emoji sequences, letters with combining marks) can leave
          // fewer than the line shows, or one cut in two: rendered again with more room.
          var limit = renderingBudget(width: lineWidth)
          repeat {
            notes = []
            (payload, isCut) = try FieldRenderer.json(fields, notes: &notes, atMost: limit)
            limit = limit.multipliedReportingOverflow(by: 4).partialValue
          } while isCut && payload.count <= lineWidth + 2 && limit > 0
        } else {
          payload = try FieldRenderer.json(fields, notes: &notes)
        }
        // The fields' notes locate what they say by its byte in the fields (as `show` prints
        // them); replay's errors count from the payload's first and say so.
        if !notes.isEmpty { notes.append(Self.fieldBytes) }
        if !(envelope + notes).isEmpty { problem = (envelope + notes).joined(separator: "; ") }
      } catch {
        problem = (envelope + ["its fields do not decode (\(error); \(Self.fieldBytes))"]).joined(separator: "; ")
        (payload, isCut) = Self.hexString(fields[...], lineWidth: lineWidth)
        payloadEncoding = "hex"
      }
    } catch {
      header = nil
      problem = "not a Rewind event (\(error))"
      // Text or hex as the whole payload is (the check's copy is freed at once; a scalar at a
      // time is many times slower).
      let isText = String(validating: record.payload, as: UTF8.self) != nil
      if isText {
        (payload, isCut) = Self.textString(record.payload, lineWidth: lineWidth)
        payloadEncoding = "text"
      } else {
        (payload, isCut) = Self.hexString(record.payload[...], lineWidth: lineWidth)
        payloadEncoding = "hex"
      }
    }
  }

  /// How the fields' notes and errors count bytes.
  static let fieldBytes = "bytes are counted from its fields' first"

  /// `bytes`, UTF-8, as a JSON string, or (for a line of `lineWidth` characters) as much of it as
  /// shows more characters than that, ending at a character's end (cut).
  private static func textString(_ bytes: [UInt8], lineWidth: Int?) -> (String, Bool) {
    guard let lineWidth else { return (jsonString(String(decoding: bytes, as: UTF8.self)), false) }
    var room = renderingBudget(width: lineWidth)
    while room < bytes.count {
      // Back to a scalar's first byte: no character is cut in two bytes.
      var end = room
      while end > 0, bytes[end] & 0xC0 == 0x80 { end -= 1 }
      let text = String(decoding: bytes[..<end], as: UTF8.self)
      // One character fewer: the last may be the start of a longer one.
      if text.count > lineWidth + 2 { return (jsonString(text), true) }
      room = room.multipliedReportingOverflow(by: 4).partialValue
      if room <= 0 { break }
    }
    return (jsonString(String(decoding: bytes, as: UTF8.self)), false)
  }

  /// `bytes` in hexadecimal as a JSON string, or (for a line of `lineWidth` characters) its
  /// first bytes, more than the line shows (cut).
  private static func hexString(_ bytes: ArraySlice<UInt8>, lineWidth: Int?) -> (String, Bool) {
    let shown = lineWidth.map { bytes.prefix($0 + 8) } ?? bytes
    return (jsonString(hex(Array(shown))), shown.count < bytes.count)
  }

  /// One JSON object: `seq`, `time` (ISO 8601), `name`, `version`, `origin`, `command`, `payload`
  /// (and `payloadEncoding` and `problem` for a record that is not a Rewind event, whose envelope
  /// fields are null, or an event whose fields do not decode; `problem` alone for fields shown
  /// otherwise than stored).
  var json: String {
    var line = #"{"seq":\#(sequence),"time":"\#(isoTime(timestamp))","#
    if let header {
      line += #""name":\#(jsonString(header.name)),"version":\#(header.version),"#
      line += #""origin":\#(jsonString(header.origin.name)),"command":"\#(header.commandID)","#
    } else {
      line += #""name":null,"version":null,"origin":null,"command":null,"#
    }
    line += #""payload":\#(payload)"#
    if let payloadEncoding { line += #","payloadEncoding":"\#(payloadEncoding)""# }
    if let problem { line += #","problem":\#(jsonString(problem))"# }
    return line + "}"
  }

  /// One line for people: sequence, time, name and version, origin, made `visible`, and the
  /// fields as JSON (cut after `width` characters unless `width` is nil, before an escape the cut
  /// would split), whose escapes are JSON's.
  func line(width: Int?) -> String {
    var fields = payload
    if let width, isCut || fields.count > width { fields = String(jsonPrefix(fields, width: width)) + "…" }
    if header != nil, let problem {
      // The notes quote keys as JSON does, escaping what a terminal would act on.
      fields = (payloadEncoding != nil ? "(fields do not decode) " : "(\(problem)) ") + fields
    }
    let name = header.map { "\($0.name) v\($0.version)" } ?? "(not a Rewind event, \(bytes) B)"
    let origin = header.map { " \($0.origin.name)" } ?? ""
    return visible("\(sequence)  \(isoTime(timestamp))  \(name)\(origin)  ") + fields
  }
}

/// The first `width` characters of the JSON text `json`, or fewer when they end inside one of a
/// string's escapes (`\n`, `\u001b`): that escape is left out whole, not shown in part.
package func jsonPrefix(_ json: String, width: Int) -> Substring {
  var index = json.startIndex
  var inString = false
  // Where an escape not yet complete starts, and how many characters it still needs (nil: its
  // letter, after the backslash).
  var escapeStart: String.Index?
  var escapeLeft: Int?
  var taken = 0
  while taken < width, index < json.endIndex {
    // By scalars: a quote and the combining mark after it are one character.
    for scalar in json[index].unicodeScalars {
      if escapeStart != nil {
        let left = escapeLeft.map { $0 - 1 } ?? (scalar == "u" ? 4 : 0)
        (escapeStart, escapeLeft) = left == 0 ? (nil, nil) : (escapeStart, left)
      } else if inString, scalar == "\\" {
        escapeStart = index
      } else if scalar == "\"" {
        inString.toggle()
      }
    }
    json.formIndex(after: &index)
    taken += 1
  }
  return json[..<(escapeStart ?? index)]
}

/// The bytes of UTF-8 to render of a payload whose line shows `width` characters of it: enough
/// for `width` characters of four bytes each, and the escape that may stand at the cut.
func renderingBudget(width: Int) -> Int { 4 * width + 64 }

/// Bytes as lowercase hexadecimal.
func hex(_ bytes: [UInt8]) -> String {
  let digits = Array("0123456789abcdef".utf8)
  var out: [UInt8] = []
  out.reserveCapacity(bytes.count * 2)
  for byte in bytes {
    out.append(digits[Int(byte >> 4)])
    out.append(digits[Int(byte & 0xF)])
  }
  return String(decoding: out, as: UTF8.self)
}

extension AuditedEvent {
  /// Calls `body` with each JSON string literal of the payload (quotes included) and whether it
  /// is an object's key (a `:` follows it), in order, until `body` returns false. An escaped
  /// quote (`\"`) inside a literal does not end it.
  func forEachStringLiteral(_ body: (_ literal: ArraySlice<UInt8>, _ isKey: Bool) -> Bool) {
    let bytes = Array(payload.utf8)
    var index = 0
    while index < bytes.count {
      guard bytes[index] == UInt8(ascii: "\"") else {
        index += 1
        continue
      }
      var end = index + 1
      while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1 }
      guard end < bytes.count else { return }
      let isKey = end + 1 < bytes.count && bytes[end + 1] == UInt8(ascii: ":")
      guard body(bytes[index...end], isKey) else { return }
      index = end + 1
    }
  }

  /// Whether the fields hold the identifier `id` (32 lowercase hex digits, as
  /// `RecordKey.identifier` spells it) as a string of its own, a value or an object's key, in
  /// capitals or not: the ids `show` infers from the fields are the ones `--entity` finds. A
  /// longer string that merely contains the digits does not mention it.
  func mentions(_ id: String) -> Bool {
    let wanted = Array(id.utf8)
    var found = false
    forEachStringLiteral { literal, _ in
      found =
        literal.count == wanted.count + 2
        && zip(literal.dropFirst(), wanted).allSatisfy { byte, expected in
          (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 == expected : byte == expected
        }
      return !found
    }
    return found
  }
}
