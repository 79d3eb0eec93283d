import Foundation
import Rewind
import RewindJournal

enum ShowCommand: RewindCommand {
  static let name = "show"
  static let summary = "one event in full: envelope, fields, its command, the records it touched"
  static let help = """
    Usage: rewind show DIR SEQ [--json] [--model NAME]

    Shows the event with sequence number SEQ: its time, name and schema version, origin, the
    command that recorded it (and that command's other events), every field rendered without the
    app's types, and the records it touched.

    When a registered model reads the event (the one named by --model, else the only one that
    reads its name and version), the touched records are found by applying the event to the
    state before it: each key it touched, named as --json's "keys" name it (notes/ID; a value
    collection by its name), inserted, updated, removed or unchanged, with the record's value
    before and after (of an updated record, the fields that changed; --json gives whole
    records), and the grouping-cache keys it changed (notes#TAG); a field that only looks
    like an identifier (a title of 32 hex digits) is then no touched record. Otherwise (another
    app's journal, a rewind without the app's models, a model that cannot replay up to SEQ)
    there is nothing better than the fields: every string of 32 hex digits in them (in capitals
    or not, as --entity and blame take an id) is taken for a record's identifier, as written,
    such a title too, and the output says they are inferred and why.

    With --json, one object: the event as `rewind log --json` shows it, "commandEvents" [FIRST,
    LAST], and "touched": {"from":"model","model":NAME,"records":[{"key","store","id","change",
    "before","after"}],"keys":[..]}, or {"from":"payload","why":..,"records":[{"field","id"}]}, or
    {"from":"checkpoint","records":[]}.

    Exit 0; 2 when SEQ is not a number (a record or command id, 32 hex digits, is not one, even
    without letters) or is outside the journal, or --model names no registered model; 3 when the
    journal cannot be read, also after the event is shown when it reads intact but damage cuts
    off the events around it that tell its command's extent (then left out). A segment missing
    between intact ones is read around, as `rewind log` reads it: an event before or after it is
    shown (after it, the touched records are inferred, as no model can replay through the gap),
    and one it held exits 3, naming the segment and the sequences it held.

    Examples:
      rewind show /tmp/notes 42
      rewind show /tmp/notes 42 --json | jq '.touched.records[] | {store, id, change}'

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let args = try Arguments(arguments, options: ["model"], flags: ["json"])
    let positionals = try args.positionals(
      exactly: 2, needs: "the journal directory and a sequence number: rewind show DIR SEQ")
    let directory = positionals[0]
    let text = positionals[1]
    try RecordKey.refuseAsSequence(text, "SEQ")
    // Digits no UInt64 holds are a whole number too, past every record's.
    guard let sequence = Arguments.sequenceNumber(text), sequence > 0 else {
      if Arguments.isPastEverySequenceNumber(text) {
        throw outOfRange(text, last: try openJournal(directory).lastSequence())
      }
      throw UsageError("the sequence number must be a whole number from 1, not '\(text)'")
    }
    let reader = try openJournal(directory)
    // Around a missing segment (`rewind log` reads so): an event before or after it is shown.
    guard let record = try reader.record(sequence, readingAroundMissingSegments: true) else {
      throw outOfRange(String(sequence), last: try reader.lastSequence())
    }
    let event = AuditedEvent(record)
    // Damage among the records around it (the command's other events) leaves the event itself
    // intact: it is shown, then the damage is reported (exit 3).
    var damage: JournalError?
    var command: ClosedRange<UInt64>?
    do {
      command = try event.header.map { try commandRange(of: $0.commandID, around: sequence, in: reader) }
    } catch let error as JournalError where error.isDamage {
      damage = error
    }
    let touched = try Touched(event, directory: directory, model: args.value("model"), context: context)
    let output = context.output
    if args.flag("json") {
      var line = String(event.json.dropLast())
      if let command { line += #","commandEvents":[\#(command.lowerBound),\#(command.upperBound)]"# }
      output.out(line + #","touched":\#(touched.json)}"# + "\n")
      if let damage { throw CommandCutOff(error: damage, sequence: sequence) }
      return .success
    }
    // The directory, name, origin and problem are made `visible`; the fields are JSON, already safe.
    var lines = [visible("event \(sequence) in \(directory)"), "  time      \(isoTime(record.timestamp))"]
    if let header = event.header {
      lines.append(visible("  name      \(header.name) (schema version \(header.version))"))
      lines.append(visible("  origin    \(header.origin.name)"))
      if let command {
        let others =
          command.count == 1
          ? "its only event" : "events \(command.lowerBound)-\(command.upperBound), \(command.count) in all"
        lines.append("  command   \(header.commandID) (\(others))")
      }
    }
    if let problem = event.problem { lines.append(visible("  note      \(problem)")) }
    lines.append("  bytes     \(event.bytes) (payload, decoded)")
    lines.append("  fields    " + prettyJSON(event.payload, indent: "            "))
    lines += touched.lines(sequence: sequence)
    output.out(lines.joined(separator: "\n") + "\n")
    if let damage { throw CommandCutOff(error: damage, sequence: sequence) }
    return .success
  }

  /// Sequence number `number` (as digits) is not in a journal whose last is `last`.
  static func outOfRange(_ number: String, last: UInt64) -> UsageError {
    UsageError(
      last == 0
        ? "sequence \(number) is out of range: the journal is empty"
        : "sequence \(number) is out of range: the journal holds sequences 1-\(last)")
  }

  /// Damage met reading the events around the one shown, for its command's: the event was shown
  /// without its command's extent ("commandEvents" left out).
  struct CommandCutOff: Error, CustomStringConvertible {
    var error: JournalError
    var sequence: UInt64

    var description: String {
      errorMessage(error) + ". Event \(sequence) read intact and was shown; which other events its command "
        + "recorded cannot be told past the damage, so they were left out"
    }
  }

  /// The sequence numbers of the command's events: contiguous, around `sequence`.
  static func commandRange(of command: Identifier, around sequence: UInt64, in reader: JournalReader) throws
    -> ClosedRange<UInt64>
  {
    // Back in windows growing to 4096 records, each read from where the index places it, while the
    // command's events fill the window: the cost follows the command's length, not the journal's.
    var first = sequence
    var windowEnd = sequence  // exclusive
    // Small first (most commands record a few events), so that damage well before the event,
    // which a wide window would read through, is not met.
    var window: UInt64 = 16
    while first == windowEnd && windowEnd > 1 {
      defer { window = min(window * 2, 4096) }
      let start = windowEnd > window ? windowEnd - window : 1
      let back = try reader.records(from: start, readingAroundMissingSegments: true)
      var run: UInt64?
      while let record = try back.next(), record.sequence < windowEnd {
        let same = (try? EventRecord.header(of: record.payload))?.commandID == command
        run = same ? (run ?? record.sequence) : nil
      }
      if let run { first = run }
      windowEnd = start
    }
    var last = sequence
    let forward = try reader.records(from: sequence + 1, readingAroundMissingSegments: true)
    while let record = try forward.next(), (try? EventRecord.header(of: record.payload))?.commandID == command {
      last = record.sequence
    }
    return first...last
  }

  /// Compact JSON, indented two spaces per level, continuation lines starting with `indent`.
  static func prettyJSON(_ json: String, indent: String) -> String {
    var out = ""
    var depth = 0
    var inString = false
    var escaped = false
    var previous: Character = " "
    for character in json {
      if inString {
        out.append(character)
        if escaped {
          escaped = false
        } else if character == "\\" {
          escaped = true
        } else if character == "\"" {
          inString = false
        }
        previous = character
        continue
      }
      switch character {
      case "\"":
        inString = true
        out.append(character)
      case "{", "[":
        depth += 1
        out.append(character)
        out += "\n" + indent + String(repeating: "  ", count: depth)
      case "}", "]":
        depth -= 1
        if previous == "{" || previous == "[" {
          // Empty: undo the line break.
          while out.last == " " || out.last == "\n" { out.removeLast() }
        } else {
          out += "\n" + indent + String(repeating: "  ", count: depth)
        }
        out.append(character)
      case ",":
        out += ",\n" + indent + String(repeating: "  ", count: depth)
      case ":":
        out += ": "
      default:
        out.append(character)
      }
      previous = character
    }
    return out
  }
}

extension AuditedEvent {
  /// The identifiers in the event's fields, each with the name of the field that holds it (for an
  /// identifier in an array, the array's field), in order of first appearance. An identifier is a
  /// string that reads as one (`RecordKey.identifier`: 32 hex digits, in capitals or not), kept as
  /// written; a field's name is its text, unescaped from the payload's JSON (the caller escapes it
  /// once for its output).
  var namedIdentifiers: [(field: String, id: String)] {
    var found: [(field: String, id: String)] = []
    var seen = Set<String>()
    var lastKey = ""
    forEachStringLiteral { literal, isKey in
      if isKey {
        lastKey = Self.text(ofLiteral: literal)
      } else if literal.count == 34 {
        let id = String(decoding: literal.dropFirst().dropLast(), as: UTF8.self)
        if RecordKey.identifier(id) != nil, seen.insert(id).inserted { found.append((lastKey, id)) }
      }
      return true
    }
    return found
  }

  /// The text a JSON string literal (quotes included) stands for. The payload's literals are
  /// `FieldRenderer`'s and always decode; were one not to, its bytes between the quotes are kept.
  private static func text(ofLiteral literal: ArraySlice<UInt8>) -> String {
    (try? JSONDecoder().decode(String.self, from: Data(literal)))
      ?? String(decoding: literal.dropFirst().dropLast(), as: UTF8.self)
  }
}
