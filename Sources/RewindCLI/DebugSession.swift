import Foundation
import Rewind
import RewindJournal

/// One `rewind debug` session: a position in a journal's history, a mark and watched entities.
final class DebugSession {
  private let machine: any ModelSession
  private let model: String
  private let directory: String
  private let output: RewindTool.Output
  private let interactive: Bool
  private var mark: UInt64?
  /// Watched records: by id, in `collection` when one was named (else the first that holds it).
  private var watched: [(id: String, collection: String?, last: String?)] = []
  /// Set when `refresh` found the journal shorter than what the session has read, or cut and
  /// written again: its states may show records that are gone, so it serves no more of them.
  private var shortened: ClosedRange<UInt64>?

  init(
    _ machine: any ModelSession, model: String, directory: String, output: RewindTool.Output, interactive: Bool
  ) {
    self.machine = machine
    self.model = model
    self.directory = directory
    self.output = output
    self.interactive = interactive
  }

  /// Reads and runs commands until `quit` or the end of input. From a script, the exit code is 2
  /// after a failing command (a usage error), 3 after one that could not read the journal, and 3
  /// when damage hides the journal's end (the session served only the records before it).
  func run(readLine: () -> String?) -> RewindTool.ExitCode {
    var failed = false
    var unreadable = false
    // A session over part of the journal says so, and a script's exit code tells it (unless a
    // `refresh` read the end after a repair).
    if let hidden = machine.endHiddenBy {
      output.err(visible("rewind debug: " + hiddenEnd(hidden)) + "\n")
    }
    if interactive {
      say("rewind debug: \(model) in \(directory), sequences 0...\(machine.lastSequence); `help` lists commands")
    }
    while true {
      if interactive { output.out("rewind@\(machine.position)> ") }
      guard let line = readLine() else { break }
      let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
      guard let command = words.first, !command.hasPrefix("#") else { continue }
      if Self.quits.contains(command) && words.count == 1 { break }
      if shortened != nil && command != "help" && command != "?" {
        failed = true
        unreadable = true
        output.err(
          visible(
            "error: \(command): not done: the journal got shorter under this session (see above); quit and start "
              + "`rewind debug \(shellWord(directory))` again")
            + "\n")
        continue
      }
      do {
        try perform(command, Array(words.dropFirst()))
      } catch let error as ReplayError {
        // As `replay` and the other commands say it: the model, and how to see the record.
        failed = true
        unreadable = true
        let named = UnreadableByModel(model: model, directory: directory, underlying: error)
        output.err(visible("error: \(Self.shown(command)): \(named)") + "\n")
      } catch let error as JournalError where error.code == .shortened {
        failed = true
        unreadable = true
        shortened = error.sequences ?? machine.lastSequence...machine.lastSequence
        output.err(visible("error: \(command): " + cutShort) + "\n")
      } catch {
        failed = true
        if !(error is UsageError) { unreadable = true }
        output.err(visible("error: \(Self.shown(command)): \(error)") + "\n")
      }
    }
    if interactive { output.out("\n") }
    if machine.endHiddenBy != nil { (failed, unreadable) = (true, true) }
    guard failed && !interactive else { return .success }
    return unreadable ? .unreadable : .usage
  }

  /// The words that end the session, alone on their line.
  private static let quits: Set<String> = ["quit", "exit", "q"]
  /// The commands' whole names (not their one-letter aliases), for "did you mean …?".
  static let commandWords = [
    "help", "quit", "exit", "step", "next", "back", "goto", "where", "event", "find", "print", "query", "check",
    "mark", "diff", "watch", "unwatch", "blame", "prepare", "refresh",
  ]

  /// A command word as an error line names it: whole up to 64 characters, else its first 60 and
  /// how long it was (an unknown word of megabytes, pasted by mistake, is not echoed whole).
  static func shown(_ command: String) -> String {
    command.count <= 64 ? command : "\(command.prefix(60))… (\(command.utf8.count) bytes)"
  }

  /// Refuses words after a command that takes none (`mark 5000` must not mark here instead).
  private func noArguments(_ rest: [String], _ command: String) throws {
    guard rest.isEmpty else {
      throw UsageError("usage: \(command) (it takes no arguments), not '\(rest.joined(separator: " "))'")
    }
  }

  /// Writes one line of output, made `visible`: ids, names and values come from the journal or
  /// the user, and a control character in them must not reach the terminal.
  private func say(_ line: String) { say(shown: visible(line)) }

  /// Writes one line already safe to show: text made `visible` and JSON (whose escapes are its
  /// own; passing it through `visible` would double its backslashes).
  private func say(shown line: String) { output.out(line + "\n") }

  /// What happened when the journal got shorter under the session, and what to do.
  private var cutShort: String {
    let gone =
      shortened.map {
        $0.lowerBound == $0.upperBound
          ? "sequence \($0.lowerBound) is" : "sequences \($0.lowerBound)-\($0.upperBound) are"
      }
      ?? "records are"
    let numbers = shortened.map { $0.lowerBound == $0.upperBound } == true ? "its number" : "their numbers"
    return "the journal \(directory) got shorter under this session: \(gone) gone, which this session had read "
      + "(moved aside by `rewind repair`, perhaps with other records written under \(numbers) since, or the "
      + "directory replaced), "
      + "so the states it holds may show what is gone and it shows no more. Quit and start `rewind debug \(shellWord(directory))` "
      + "again to see what the journal holds now; `rewind verify \(shellWord(directory))` reports on it"
  }

  /// Where the damage that hides the journal's end is, and where the session ends.
  private func hiddenEnd(_ damage: JournalError) -> String {
    "damage hides the journal's end: \(errorMessage(damage)). This session ends before it, at sequence "
      + "\(machine.lastSequence), the last record read intact; nothing after it can be shown"
  }

  /// Said after the session's range while damage hides the journal's end: the range ends there.
  private var beforeDamage: String {
    machine.endHiddenBy == nil ? "" : " (the records before the damage that hides the journal's end)"
  }

  /// Refuses a move past the last record before the damage that hides the journal's end, naming
  /// the damage's place (the line at the start gave the whole report).
  private func refusePastDamage(_ target: String) throws {
    guard let damage = machine.endHiddenBy else { return }
    let place = [
      damage.file, damage.offset.map { "byte offset \($0)" },
      damage.sequences.map {
        $0.lowerBound == $0.upperBound ? "sequence \($0.lowerBound)" : "sequences \($0.lowerBound)-\($0.upperBound)"
      },
    ].compactMap { $0 }.joined(separator: ", ")
    throw SessionEnd(
      description: "\(target) is past the end of this session, sequence \(machine.lastSequence), the last record "
        + "before the damage that hides the journal's end (\(place); reported at the start)")
  }

  /// A move the damage that hides the journal's end leaves nowhere to go (exit 3).
  private struct SessionEnd: Error, CustomStringConvertible {
    var description: String
  }

  private func perform(_ command: String, _ rest: [String]) throws {
    switch command {
    case "help", "?":
      try noArguments(rest, command)
      output.out(DebugCommand.commands)
    case _ where Self.quits.contains(command): try noArguments(rest, command)
    case "step", "s", "next": try step(try count(rest), forward: true)
    case "back", "b": try step(try count(rest), forward: false)
    case "goto", "g": try goto(rest)
    case "where":
      try noArguments(rest, command)
      try showPosition()
    case "event": try showEvent(rest)
    case "find": try find(rest)
    case "print", "p": try print(rest)
    case "query": try query(rest)
    case "check": try check(rest)
    case "mark":
      try noArguments(rest, command)
      mark = machine.position
      say("marked sequence \(machine.position)")
    case "diff": try diff(rest)
    case "watch":
      let (collection, typed) = try collectionAndID(rest, "watch [COLLECTION] ID")
      let id = key(typed, in: collection)
      if !watched.contains(where: { $0.collection == collection && RecordKey.same($0.id, id) }) {
        watched.append((id, collection, nil))
      }
      showWatches(force: true)
      if collection == nil { noteOtherCollections(holding: id, command: "watch") }
    case "unwatch":
      let (collection, typed) = try collectionAndID(rest, "unwatch [COLLECTION] ID")
      // The watch made as typed (with that collection, or none); without one, else any of the id.
      let exact = watched.firstIndex { RecordKey.same($0.id, typed) && $0.collection == collection }
      let any = collection == nil ? watched.firstIndex { RecordKey.same($0.id, typed) } : nil
      guard let index = exact ?? any else { throw UsageError("'\(rest.joined(separator: " "))' is not watched") }
      let removed = watched.remove(at: index)
      say("no longer watching \(removed.collection.map { $0 + " " } ?? "")\(removed.id)")
    case "blame": try blame(rest)
    case "prepare":
      let limit = try Self.keyframeLimit(rest)
      let coverage = try machine.prepare(memoryLimit: limit)
      output.out(Self.describe(coverage, lastSequence: machine.lastSequence, limit: limit))
    case "refresh":
      try noArguments(rest, command)
      try machine.refresh()
      say("the journal ends at sequence \(machine.lastSequence)")
    default:
      let near = Arguments.nearest(to: command, among: Self.commandWords).map { "did you mean \($0)? " } ?? ""
      throw UsageError("unknown command; \(near)`help` lists the commands")
    }
  }

  // MARK: Moving

  /// The count of records a move asks, and how it was typed: digits no `UInt64` holds are a
  /// whole number too, more records than any journal holds (a move to the edge), as `goto` takes
  /// them past every record.
  private func count(_ rest: [String]) throws -> (value: UInt64, typed: String) {
    guard let text = rest.first else { return (1, "1") }
    guard rest.count == 1, Arguments.sequenceNumber(text) != nil || Arguments.isPastEverySequenceNumber(text) else {
      // Every word after the command: `step 3 4` is refused for the 4, not the 3.
      throw UsageError("expected a count of records, a whole number from 0, not '\(rest.joined(separator: " "))'")
    }
    return Arguments.sequenceNumber(text).map { ($0, String($0)) } ?? (.max, text)
  }

  /// The key of the record (or value collection) a typed id names at this position, in
  /// `collection` if given: as typed, or as the lowercase digits of an identifier typed in
  /// capitals (see `RecordKey`).
  private func key(_ typed: String, in collection: String? = nil) -> String {
    machine.recordJSON(typed, in: collection)?.key ?? RecordKey.identifier(typed) ?? typed
  }

  /// `ID` or `COLLECTION ID`, with the collection one the model has.
  private func collectionAndID(_ rest: [String], _ usage: String) throws -> (collection: String?, id: String) {
    switch rest.count {
    case 1: return (nil, rest[0])
    case 2:
      let names = machine.collections().map(\.name)
      guard names.contains(rest[0]) else {
        throw UsageError("no collection '\(rest[0])' (collections: \(list(names))); usage: \(usage)")
      }
      return (rest[0], rest[1])
    default: throw UsageError("usage: \(usage)")
    }
  }

  /// After a record shown by id alone: names the other collections that hold a record of that id
  /// here (records of two collections may have ids of one text: an `Int` 42 and a `String` "42",
  /// or two collections numbering their records alike), and how to show theirs.
  private func noteOtherCollections(holding id: String, command: String) {
    let holding = machine.collections(holding: id)
    guard holding.count > 1, let shown = machine.recordJSON(id, in: nil)?.store else { return }
    let others = holding.filter { $0 != shown }
    say(
      shown: others.count == 1
        ? "note: \(others[0]) holds a record of id \(id) too (\(command) \(others[0]) \(id) for it)"
        : "note: \(others.joined(separator: ", ")) hold records of id \(id) too (\(command) COLLECTION \(id) "
          + "for one)")
  }

  /// The most bytes `prepare`'s keyframes may take when no limit is given: a quarter of the
  /// memory this process may use, the machine's or its control group's limit (they take about
  /// 1.5 KB per event of the Notebook history, and the heap holds somewhat more than their trees:
  /// the records' strings and the grouping dictionaries). In whole megabytes, so that messages
  /// say it plainly.
  static var defaultKeyframeLimit: Int {
    Int(clamping: AvailableMemory.bytes / 4 / 1_000_000 * 1_000_000)
  }

  /// The limit `prepare [SIZE]` gives the keyframes, in bytes: SIZE is a whole number from 1,
  /// of megabytes, or of kilo-, mega- or gigabytes with K, M or G after it (1,000, 1,000,000 or
  /// 1,000,000,000 bytes; in either case).
  static func keyframeLimit(_ rest: [String]) throws -> Int {
    guard let text = rest.first else { return defaultKeyframeLimit }
    let units: [String: UInt64] = ["K": 1_000, "M": 1_000_000, "G": 1_000_000_000]
    let unit = text.last.flatMap { units[$0.uppercased()] }
    let digits = unit == nil ? Substring(text) : text.dropLast()
    let count = Arguments.sequenceNumber(digits)
    guard rest.count == 1, count.map({ $0 >= 1 }) ?? Arguments.isPastEverySequenceNumber(digits) else {
      throw UsageError(
        "usage: prepare [SIZE]: the most the keyframes may take, a whole number from 1 of megabytes, or of "
          + "kilo-, mega- or gigabytes with K, M or G after it (without it, a quarter of the memory this process may use, "
          + "\(size(defaultKeyframeLimit))), not '\(rest.joined(separator: " "))'")
    }
    // A whole number, maybe too large for bytes this process can count (digits no `UInt64` holds too).
    let (bytes, overflow) = (count ?? .max).multipliedReportingOverflow(by: unit ?? 1_000_000)
    guard count != nil, !overflow, bytes <= UInt64(Int.max) else {
      throw UsageError(
        "usage: prepare [SIZE]: \(text) is more than this process can count in bytes (at most "
          + "\(UInt64(Int.max) / 1_000_000) megabytes)")
    }
    return Int(bytes)
  }

  /// `bytes` in the largest of GB, MB and KB that divides it, or in bytes.
  static func size(_ bytes: Int) -> String {
    for (unit, name) in [(1_000_000_000, "GB"), (1_000_000, "MB"), (1_000, "KB")] where bytes % unit == 0 {
      return "\(bytes / unit) \(name)"
    }
    return "\(bytes) bytes"
  }

  /// What `prepare` says it did: how far the keyframes reach, and what a move costs now.
  static func describe(_ coverage: KeyframeCoverage, lastSequence: UInt64, limit: Int) -> String {
    let spacing = coverage.spacing
    guard coverage.stoppedByLimit else {
      return "keyframes every \(spacing) records over sequences 0...\(lastSequence): "
        + "a move now replays fewer than \(spacing)\n"
    }
    return "keyframes every \(spacing) records over sequences 0...\(coverage.through) of \(lastSequence), where they "
      + "reached the limit of \(size(limit)): a move to \(coverage.through + spacing - 1) or before now "
      + "replays fewer than \(spacing), a later one starts from the nearest keyframe or a snapshot "
      + "(`prepare SIZE` with a larger limit lays more)\n"
  }

  private func single(_ rest: [String], _ usage: String) throws -> String {
    guard rest.count == 1 else { throw UsageError("usage: \(usage)") }
    return rest[0]
  }

  private func goto(_ rest: [String]) throws {
    let target = try single(rest, "goto SEQ|TIME|start|end")
    switch target {
    case "start": try move(to: 0)
    case "end":
      try refusePastDamage("the journal's end")
      try move(to: machine.lastSequence)
    default:
      try RecordKey.refuseAsSequence(target, "goto")
      let digits = Arguments.sequenceNumber(target)
      // Digits no UInt64 holds are a whole number too, past every record's.
      if digits != nil || Arguments.isPastEverySequenceNumber(target) {
        let shown = digits.map(String.init) ?? target
        guard let sequence = digits, sequence <= machine.lastSequence else {
          try refusePastDamage("sequence \(shown)")
          // As for a time: the journal may have grown since the session read its end.
          let last = try openJournal(directory).lastSequence()
          guard let sequence = digits, sequence <= last else {
            let read =
              last > machine.lastSequence
              ? " (this session has read up to sequence \(machine.lastSequence); `refresh` reads the records "
                + "appended since)" : ""
            throw UsageError("sequence \(shown) is beyond the journal's last, \(last)\(read)")
          }
          throw UsageError("sequence \(sequence) is " + pastSession)
        }
        try move(to: sequence)
      } else if target.hasPrefix("-"), target.count > 1, target.dropFirst().allSatisfy({ $0.isASCII && $0.isNumber }) {
        // Also `-0`, and digits no `Int` holds.
        throw UsageError(
          "sequence \(target) is out of range: sequence numbers start at 0; give one in 0...\(machine.lastSequence)")
      } else if ISO8601.parse(target) != nil {
        // Within the journal's first and last record times, as `replay --at` requires.
        let time = try JournalBounds(directory: directory).time(target)
        // The journal may have grown since the session read its end: the state at a time stamped
        // on a record appended since is not the session's last state, so it does not go there.
        // With the end hidden, a time whose state lies at the damage or past it (the lookup may
        // meet the damage itself) is past the session's end.
        let sequence: UInt64
        do {
          sequence = try machine.sequence(atTime: time)
        } catch let error as JournalError where error.isDamage && machine.endHiddenBy != nil {
          try refusePastDamage("time \(target)")
          throw error
        }
        guard sequence <= machine.lastSequence else {
          try refusePastDamage("time \(target)")
          throw UsageError("time \(target) is " + pastSession)
        }
        try move(to: sequence)
      } else {
        throw UsageError("'\(target)' is neither a sequence number nor an ISO 8601 time")
      }
    }
  }

  /// Why `goto` refuses a sequence number or time the journal holds and the session has not read.
  private var pastSession: String {
    "past the last record this session has read (sequence \(machine.lastSequence)); "
      + "`refresh` reads the records appended since"
  }

  /// Moves `count` records forward or back, stopping at the journal's end or at 0 and saying
  /// so; at that edge already, says so instead of showing the same position again.
  private func step(_ asked: (value: UInt64, typed: String), forward: Bool) throws {
    let count = asked.value
    let position = machine.position
    let room = forward ? machine.lastSequence - min(position, machine.lastSequence) : position
    let hidden = forward && machine.endHiddenBy != nil
    let edge =
      !forward
      ? "the start, sequence 0"
      : hidden
        ? "sequence \(machine.lastSequence), the last record before the damage that hides the journal's end"
        : "the journal's end, sequence \(machine.lastSequence)"
    guard room > 0 || count == 0 else {
      say(
        !forward
          ? "at \(edge), the empty state: no event before it"
          : hidden
            ? "at \(edge): nothing after it can be read (the damage is located above)"
            : "at \(edge): no event after it (`refresh` reads records appended since)")
      return
    }
    let moved = min(count, room)
    try move(to: forward ? position + moved : position - moved)
    if moved < count { say("stopped at \(edge): \(moved) of the \(asked.typed) records asked") }
  }

  private func move(to sequence: UInt64) throws {
    try machine.move(to: min(sequence, machine.lastSequence))
    try showPosition()
    showWatches(force: false)
  }

  /// Throws when the record at the position cannot be read (damaged or gone since the machine
  /// passed it): an error, not a checkpoint record, is what the line would otherwise have said.
  private func showPosition() throws {
    let position = machine.position
    if position == 0 {
      say("at 0 of \(machine.lastSequence): the empty state")
    } else if let event = try machine.event(at: position) {
      say(shown: "at \(position) of \(machine.lastSequence): " + envelopeLine(event))
    } else {
      say("at \(position) of \(machine.lastSequence): a checkpoint record")
    }
  }

  private func showWatches(force: Bool) {
    for index in watched.indices {
      let (id, collection) = (watched[index].id, watched[index].collection)
      let now = machine.recordJSON(id, in: collection).map { visible($0.store) + " " + $0.json }
      if force || now != watched[index].last {
        let name = collection.map { $0 + " " } ?? ""
        say(shown: visible("watch \(name)\(id) at \(machine.position): ") + (now ?? "absent"))
      }
      watched[index].last = now
    }
  }

  private func find(_ rest: [String]) throws {
    guard rest.count == 2, rest[0] == "name" || rest[0] == "entity" else {
      throw UsageError("usage: find name NAME | find entity ID")
    }
    let start = machine.position
    let found: UInt64?
    if rest[0] == "name" {
      found = try nextRecord(named: rest[1], after: start)
    } else {
      found = try machine.nextEvent(touching: rest[1])
    }
    guard let found else {
      throw UsageError(
        rest[0] == "name"
          ? "no record after sequence \(start) is named \(rest[1])\(beforeDamage)"
          : "no event after sequence \(start) touched \(rest[1])\(beforeDamage)")
    }
    try move(to: found)
  }

  /// The sequence number of the first record after `start` (through the session's last) whose
  /// name is `name`, as `rewind log` names records: checkpoint records (`rewind.checkpoint.mark`
  /// and the others), which change no state and are no events to the model, are found too; a
  /// record whose envelope does not decode has no name (`log` shows it as not a Rewind event).
  /// Reads nothing past the session's last record: what a writer appended since, damaged or not,
  /// is not the session's.
  private func nextRecord(named name: String, after start: UInt64) throws -> UInt64? {
    let last = machine.lastSequence
    guard start < last else { return nil }
    // Around a segment missing past the session's end, as the moves read: a cursor that refuses
    // such a journal as it is made would refuse the records before the gap too.
    let records = try openJournal(directory).records(from: start + 1, readingAroundMissingSegments: true)
    while let record = try records.next() {
      // By bytes, as `--type` and `stats` compare names (a composed é and e + U+0301 are two).
      if let header = try? EventRecord.header(of: record.payload), header.name.utf8.elementsEqual(name.utf8) {
        return record.sequence
      }
      if record.sequence >= last { return nil }
    }
    return nil
  }

  // MARK: Looking

  private func showEvent(_ rest: [String]) throws {
    // No range to offer ("1...0") and no first event to step to: say what is there, as `show` does.
    guard machine.lastSequence > 0 else {
      throw UsageError(
        machine.endHiddenBy == nil
          ? "the journal \(directory) is empty: there is no event to show"
          : "no event reads intact before the damage that hides the journal's end (reported at the start)")
    }
    let sequence =
      try rest.first.map { text -> UInt64 in
        try RecordKey.refuseAsSequence(text, "event")
        guard rest.count == 1, let value = Arguments.sequenceNumber(text), value >= 1, value <= machine.lastSequence
        else {
          throw UsageError(
            "expected a sequence number in 1...\(machine.lastSequence)\(beforeDamage), "
              + "not '\(rest.joined(separator: " "))'")
        }
        return value
      } ?? machine.position
    guard sequence > 0 else { throw UsageError("at sequence 0 there is no event; `step` to the first") }
    guard let event = try machine.event(at: sequence) else {
      say("#\(sequence) is a checkpoint record")
      return
    }
    say(shown: envelopeLine(event))
    say(shown: "  " + StateInspector.json(event.event))
  }

  private func print(_ rest: [String]) throws {
    guard let what = rest.first else {
      let collections = machine.collections()
      say("at \(machine.position): digest \(try machine.digest())")
      for collection in collections { say("  \(collection.name) \(collection.count)") }
      return
    }
    let usage = "print [json|COLLECTION|ID|COLLECTION ID]"
    guard rest.count <= 2 else { throw UsageError("usage: \(usage)") }
    if rest.count == 2 {
      let (collection, typed) = try collectionAndID(rest, usage)
      guard let record = machine.recordJSON(key(typed, in: collection), in: collection) else {
        throw UsageError("no record '\(typed)' in \(rest[0]) at sequence \(machine.position)")
      }
      say(shown: visible(record.store) + " " + record.json)
    } else if what == "json" {
      say(shown: try machine.stateJSON())
    } else if let records = machine.collectionJSON(what) {
      say(shown: records)
    } else if let record = machine.recordJSON(key(what), in: nil) {
      say(shown: visible(record.store) + " " + record.json)
      noteOtherCollections(holding: record.key, command: "print")
    } else {
      let names = machine.collections().map(\.name).joined(separator: ", ")
      throw UsageError("no collection or record '\(what)' at sequence \(machine.position) (collections: \(names))")
    }
  }

  private func query(_ rest: [String]) throws {
    guard let name = named(rest, "queries", machine.queryNames) else { return }
    guard let answer = try machine.query(name) else {
      throw UsageError("unknown query '\(name)'; known: \(list(machine.queryNames))")
    }
    say(shown: answer)
  }

  /// Checks an invariant where readers see states: after a whole command (TheFunnel.md),
  /// as bisect does. Inside a command (its events but the last), that is the state after the
  /// command's last record, which the answer names; the session stays where it is.
  private func check(_ rest: [String]) throws {
    guard let name = named(rest, "invariants", machine.invariantNames) else { return }
    guard machine.invariantNames.contains(name) else {
      throw UsageError("unknown invariant '\(name)'; known: \(list(machine.invariantNames))")
    }
    let position = machine.position
    let end = try machine.commandEnd(from: position)
    guard let holds = try machine.check(name, at: end) else { return }
    let verdict = "'\(name)' \(holds ? "holds" : "fails")"
    if machine.endHiddenBy != nil, end == machine.lastSequence, end > 0, try machine.event(at: end) != nil {
      // The last record read before damage that hides the end: the command's later events, if
      // it has any, lie in the damage. (A checkpoint record there changes no state: the state is
      // the one after the command before it, which ended where the checkpoint began.)
      say(
        "\(verdict) at sequence \(end), the last record read before the damage that hides the journal's end; "
          + "whether its command ends there cannot be told (its later events, if any, lie in the damage), so this "
          + "may be a state inside a command, which no reader saw")
      return
    }
    guard end != position else {
      say("\(verdict) at sequence \(position)")
      return
    }
    say(
      "\(verdict) at sequence \(end), the end of the command sequence \(position) is part of: readers see a "
        + "command's events together, never the state between them (`goto \(end)` stands there)")
  }

  /// The name the words spell, or nil after listing the known ones when there are no words.
  private func named(_ rest: [String], _ kind: String, _ known: [String]) -> String? {
    guard !rest.isEmpty else {
      say("\(kind): \(list(known))")
      return nil
    }
    return rest.joined(separator: " ")
  }

  private func list(_ names: [String]) -> String { names.isEmpty ? "none" : names.joined(separator: ", ") }

  private func diff(_ rest: [String]) throws {
    let from: UInt64
    let to: UInt64
    switch rest.count {
    case 0:
      guard let mark else { throw UsageError("no mark yet: `mark` a position first, or give diff A B") }
      (from, to) = (mark, machine.position)
    case 2:
      for text in rest { try RecordKey.refuseAsSequence(text, "diff") }
      guard let a = Arguments.sequenceNumber(rest[0]), let b = Arguments.sequenceNumber(rest[1]),
        a <= machine.lastSequence, b <= machine.lastSequence
      else { throw UsageError("expected two sequence numbers in 0...\(machine.lastSequence)\(beforeDamage)") }
      (from, to) = (a, b)
    default: throw UsageError("usage: diff [A B]")
    }
    output.out(DiffCommand.text(try machine.diff(from: from, to: to)))
  }

  private func blame(_ rest: [String]) throws {
    let (collection, id) = try collectionAndID(rest, "blame [COLLECTION] ID")
    let (entries, others) = try machine.blame(id, in: collection)
    guard !entries.isEmpty else {
      throw UsageError("no event ever touched '\(id)'\(collection.map { " in " + $0 } ?? "")\(beforeDamage)")
    }
    for entry in entries {
      say(shown: envelopeLine(entry.event))
      say(shown: "    after " + (entry.after.map(StateInspector.json) ?? "removed"))
    }
    let why = collection == nil ? "the first touched (blame COLLECTION ID shows another's)" : "as asked"
    if let note = BlameCommand.otherStoresNote(others, listed: entries[0].store, id: entries[0].id, why: why) {
      say(shown: note)
    }
  }
}
