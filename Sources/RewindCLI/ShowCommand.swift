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
    event cannot be read (damage holds it: its segment, byte offset and sequences are named).
    Damage elsewhere is read past, as `rewind log` reads it, and a segment missing between intact
    ones read around: an event before or after it is shown (after it, the touched records are
    inferred when no model can replay through it). The command's events are read from the
    event's own frame, where a manager writes them all; a command that reaches the frame's first
    or last record is looked for in the frame next to it too (an app may append a command's
    events in parts). When damage holds the records there (a frame of one command next to a
    damaged one, as under --durability none), the event is shown without its command's extent,
    then the damage (exit 3).

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
    // An unknown model is a usage error whatever the record turns out to be (`Touched` looks one up
    // only for a Rewind event other than a checkpoint's), as for `verify`.
    if let name = args.value("model") { _ = try context.registration(named: name) }
    let reader = try openJournal(directory)
    guard let (record, command) = try Self.eventAndItsCommand(sequence, in: reader, directory: directory) else {
      throw outOfRange(String(sequence), last: try reader.lastSequence())
    }
    let event = AuditedEvent(record)
    // The frame that holds the event holds its command's events (DESIGN.md, 3), read with it;
    // only when reading the records before the event in it fails (the journal changed since) is
    // the event shown without them, then that error (exit 3).
    var damage: JournalError?
    var commandEvents: ClosedRange<UInt64>?
    switch command {
    case .success(let range): commandEvents = range
    case .failure(let error): damage = error
    case nil: break
    }
    let touched = try Touched(event, directory: directory, model: args.value("model"), context: context)
    let output = context.output
    if args.flag("json") {
      var line = String(event.json.dropLast())
      if let command = commandEvents {
        line += #","commandEvents":[\#(command.lowerBound),\#(command.upperBound)]"#
      }
      output.out(line + #","touched":\#(touched.json)}"# + "\n")
      if let damage { throw CommandCutOff(error: damage, sequence: sequence) }
      return .success
    }
    // The directory, name, origin and problem are made `visible`; the fields are JSON, already safe.
    var lines = [visible("event \(sequence) in \(directory)"), "  time      \(isoTime(record.timestamp))"]
    if let header = event.header {
      lines.append(visible("  name      \(header.name) (schema version \(header.version))"))
      lines.append(visible("  origin    \(header.origin.name)"))
      if let command = commandEvents {
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
      errorSentence(error) + "Event \(sequence) read intact and was shown; which other events its command "
        + "recorded cannot be told past the damage, so they were left out"
    }
  }

  /// Record `sequence`, read past damage elsewhere as `rewind log` reads (around a missing
  /// segment too), and the sequence numbers of its command's events: contiguous, around it. Nil
  /// when the journal does not reach `sequence`; the command nil for a record that names none, and
  /// the damage that cuts them off when it holds records that could be the command's.
  /// - Throws: the damage that holds record `sequence`, located.
  static func eventAndItsCommand(_ sequence: UInt64, in reader: JournalReader, directory: String) throws
    -> (record: JournalRecord, command: Result<ClosedRange<UInt64>, JournalError>?)?
  {
    var holding: JournalError?
    var records = try PastDamage(reader: reader, directory: directory, through: sequence) {
      try reader.records(from: sequence, readingAroundMissingSegments: true)
    }
    // A read past damage goes on where it can (right after the damage), before `sequence` too.
    var record: JournalRecord?
    repeat {
      record = try records.next { error, resume in if resume > sequence { holding = error } }
    } while (record?.sequence ?? .max) < sequence
    guard let record, record.sequence == sequence else {
      if let holding { throw holding }
      return nil
    }
    guard let id = (try? EventRecord.header(of: record.payload))?.commandID else { return (record, nil) }
    let frame = records.cursor?.lastBatch?.header
    do {
      return (record, .success(try commandRange(of: id, around: sequence, in: frame, reader: reader)))
    } catch let error as JournalError where error.isDamage || error.code == .shortened {
      return (record, .failure(error))
    }
  }

  /// The sequence numbers of command `id`'s events, contiguous, around `sequence`, which `frame`
  /// holds. A command's events all lie in one frame where a manager wrote them (DESIGN.md, 3), so
  /// that frame, read again, tells them whatever damage lies outside it. A journal written
  /// otherwise can spread a command over several frames (appends of its events in parts): where
  /// the command reaches the frame's first or last record, the frames before or after it are read
  /// too, in windows growing to 4096 records, so that the cost follows the command's length.
  /// - Throws: the damage that holds a record next to the command's known events (that record
  ///   could be the command's), located.
  static func commandRange(
    of id: Identifier, around sequence: UInt64, in frame: BatchHeader?, reader: JournalReader
  ) throws -> ClosedRange<UInt64> {
    func same(_ record: JournalRecord) -> Bool { (try? EventRecord.header(of: record.payload))?.commandID == id }
    let frameStart = frame?.firstSequence ?? sequence
    let frameEnd = frame?.lastSequence ?? sequence
    var first = sequence
    var last = sequence
    // Back, from the record before the event: first within its frame, then beyond when the
    // command's run reaches the frame's start.
    var windowEnd = sequence  // exclusive
    var window: UInt64 = 16
    backward: while first == windowEnd && windowEnd > 1 {
      defer { window = min(window * 2, 4096) }
      let start = windowEnd > frameStart ? frameStart : windowEnd > window ? windowEnd - window : 1
      let read = try Self.read(start..<windowEnd, reader: reader)
      for wanted in (start..<windowEnd).reversed() {
        guard let record = read.records[wanted] else { throw read.cut(at: wanted) }
        guard same(record) else { break backward }
        first = wanted
      }
      windowEnd = start
    }
    // Forward, likewise.
    var next = sequence + 1
    window = 16
    forward: while last == next - 1 && next < .max {
      defer { window = min(window * 2, 4096) }
      let end = next <= frameEnd ? min(frameEnd, .max - 1) + 1 : next + min(window, .max - next)
      let read = try Self.read(next..<end, reader: reader)
      for wanted in next..<end {
        guard let record = read.records[wanted] else {
          // Past the journal's end: the command ends with it.
          if !read.metDamage && read.records.keys.allSatisfy({ $0 < wanted }) { break forward }
          throw read.cut(at: wanted)
        }
        guard same(record) else { break forward }
        last = wanted
      }
      next = end
    }
    return first...last
  }

  /// The records of `range` that read, by sequence number, past damage elsewhere (as `rewind log`
  /// reads), the damage read past among them with where the read went on after each, and the
  /// damage that ended the read, if any.
  struct Read {
    var records: [UInt64: JournalRecord] = [:]
    var passed: [(error: JournalError, resume: UInt64)] = []
    var stoppedBy: JournalError?
    var directory: String

    /// Whether damage was met, read past or not.
    var metDamage: Bool { !passed.isEmpty || stoppedBy != nil }

    /// The error for record `sequence` missing from what was read: the damage read past that held
    /// it (the first the read went on after), else the one that ended the read.
    func cut(at sequence: UInt64) -> JournalError {
      passed.first { $0.resume > sequence }?.error ?? stoppedBy
        ?? JournalError(
          .shortened, "record \(sequence) no longer reads as it did", directory: directory,
          sequences: sequence...sequence)
    }
  }

  /// Reads `range` (`Read`).
  static func read(_ range: Range<UInt64>, reader: JournalReader) throws -> Read {
    var read = Read(directory: reader.directory)
    guard !range.isEmpty else { return read }
    var records = try PastDamage(reader: reader, directory: reader.directory, through: range.upperBound - 1) {
      try reader.records(from: range.lowerBound, readingAroundMissingSegments: true)
    }
    // Damage before the range, which a cursor skipping to its start met, cuts nothing off.
    records.from = range.lowerBound
    do {
      while let next = try records.next(readingOn: { read.passed.append(($0, $1)) }), next.sequence < range.upperBound {
        if next.sequence >= range.lowerBound { read.records[next.sequence] = next }
      }
    } catch let error as JournalError where error.isDamage {
      read.stoppedBy = error
    }
    return read
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
