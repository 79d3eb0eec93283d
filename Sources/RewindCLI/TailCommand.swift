import Dispatch
import Foundation
import Rewind
import RewindJournal

enum TailCommand: RewindCommand {
  static let name = "tail"
  static let summary = "the last events; with -f, each new one as it is committed"
  static let help = """
    Usage: rewind tail DIR [-n N] [-f] [--from SEQ] [--to SEQ] [--since TIME] [--until TIME]
                           [--type NAME] [--origin ORIGIN] [--entity ID] [--full] [--json]

    Shows the last N events (-n N, -nN or --lines N, one option given once; default 10) as
    `rewind log` does, oldest first, each event's fields cut at 160 characters unless --full is
    given; --json as `rewind log --json`. N is digits alone: -n +N (tail(1)'s "from the N-th")
    is a usage error; --from N reads from sequence N. With -f (--follow), then waits and shows
    each new event as a writer commits it, one line at a time, until interrupted or its output is
    closed: Ctrl-C (or SIGTERM, SIGHUP) ends it by the signal, each line shown already written
    (status 128 + its number: 130 for Ctrl-C, and a script that ran it stops), and a pipe whose
    reader leaves (| head -1) ends it at once with status 141, even while no event comes. Takes
    no lock: a writer may be appending meanwhile.

    The selection options of `rewind log` narrow both: -n N counts the last N events that match,
    and -f shows only new events that match.

      --from, --to       sequence numbers, inclusive: the last N events of this range
      --since, --until   ISO 8601 times, inclusive, as `rewind log` reads them
      --type NAME        events with this name (note.created), or a prefix ending in * (note.*)
      --origin ORIGIN    events from this origin (user, sync, automation, import, ...)
      --entity ID        events whose fields mention this identifier (32 hex digits), as
                         `rewind log` finds it: in capitals or not

    --to and --until end the selection, so -f (which shows what comes after the journal's end)
    refuses them; a --since after the last event (or in an empty journal) it takes as a time to
    wait for, showing the events from then on as they come, and a --from of the next sequence
    number to be written (the last one plus 1; 1 in an empty journal) as the first event to come:
    -f --from LAST+1 shows only new events. Exit 0; 2 for a bad option or a selection outside the
    journal (a --from past its end, with -f past the next sequence number; --from 1 in an empty
    journal without -f; without -f, a --since after its last event or a selection no event
    matches); 3 when the journal cannot be read. When damage hides the journal's end (committed
    records gone there), the last events before it are shown, then the error locates it (exit 3),
    also with -f, which has no end to follow from. Damage among the last events is read past as
    `rewind log` does (a frame past the index's last entry that fails its checksum too, whose batch
    header names its records: the events after it are the journal's last): the last events it does
    not hold are shown, and standard error locates it with the sequences not read (exit 3, without
    following), unless --since and --until leave out every record of that frame, as its batch
    header stamps them: it is then no part of the selection (not so for damage that hides the end,
    after which nothing is read). Damage that cannot be read past ends the last events when they
    reach back over it, as damage that hides the end does: those before it are shown, then the
    error (exit 3).

    Examples:
      rewind tail /tmp/notes -n 3
      rewind tail /tmp/notes -n 5 --type 'note.*' --origin sync
      rewind tail /tmp/notes -f --json | jq -c .name
      rewind tail /tmp/notes -f --entity a29091f1c4eab8dccb96c6e05cf03f5b

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let args = try Arguments(
      arguments, options: EventFilter.options.union(["n", "lines"]), flags: ["f", "follow", "json", "full"])
    if let count = args.positionals.first(where: Arguments.isNegativeNumber) {
      throw UsageError("the count is -n N (or --lines N): -n \(count.dropFirst()), not \(count)")
    }
    let directory = try args.directory()
    if let short = args.value("n"), let long = args.value("lines") {
      throw UsageError("-n and --lines are one option, given twice ('\(short)' and '\(long)'); give it once")
    }
    let countName = args.value("lines") == nil ? "n" : "lines"
    if let text = args.value(countName), text.hasPrefix("+"), let from = Arguments.sequenceNumber(text.dropFirst()) {
      // GNU tail's -n +N starts at line N; here -n counts the last events.
      throw UsageError(
        "\(Arguments.spelled(countName)) counts the last events: a whole number in 0...\(Int.max), not '\(text)'; "
          + "--from \(max(from, 1)) reads from sequence \(max(from, 1))")
    }
    let count = try args.integer(countName, default: 10, range: 0...Int.max)
    let follow = args.flag("f") || args.flag("follow")
    var filter = try EventFilter(args)
    if follow, let end = ["to", "until"].first(where: { args.value($0) != nil }) {
      throw UsageError(
        "--\(end) ends the selection, and \(args.flag("f") ? "-f" : "--follow") shows the events after the journal's "
          + "end; give one or the other")
    }
    let json = args.flag("json")
    let width = args.flag("full") ? nil : 160
    filter.lineWidth = json ? nil : width
    let reader = try openJournal(directory)
    // Ctrl-C (SIGINT, SIGTERM, SIGHUP) ends -f by the signal, its action left as the process was
    // given it: there is nothing to clean up (a reader holds no lock, and each line followed is
    // written as it comes, not buffered), and whoever waits sees an interrupt, not an end (a
    // script's loop stops). An ignored SIGINT (a background job's) stays ignored.
    // Damage that hides the end (committed records the index names gone, a damaged frame after
    // its last entry): the last events are those before it, shown before the damage is reported,
    // and there is no end to follow from.
    // A segment missing before intact ones does not hide it: the windows read around it.
    var hidden: JournalError?
    let last: UInt64
    switch try reader.readableEnd(readingAroundMissingSegments: true) {
    case .success(let end): last = end
    case .failure(let error):
      // Damage that names no records (a segment whose header is damaged, or a file named like
      // one that is none) ends them where a read up to it ends.
      let first = try error.sequences?.lowerBound ?? reader.intactEnd().last + 1
      if let (end, stop) = try Self.end(pastDamageFrom: max(first, 1), in: reader, directory: directory) {
        // A damaged frame the index does not reach, whose batch header names its records, hides
        // the end from the index alone: the records after it are the journal's last, read as
        // `log` reads them (the windows read past the frame, and say so); damage after them
        // that cannot be read past hides the end there.
        (last, hidden) = (end, filter.to <= end ? nil : stop)
      } else {
        guard first > 1 else { throw error }
        // A selection that ends before the damage is whole.
        (last, hidden) = (first - 1, filter.to < first ? nil : error)
      }
    }
    if let hidden, filter.from > last { throw DamageMet(error: hidden, readThrough: last, from: filter.from) }
    let render = { (event: AuditedEvent) -> String in (json ? event.json : event.line(width: width)) + "\n" }
    // Damage read past among the last events is said before them (they are shown together).
    var passed: [JournalError] = []
    let readingOn = { (damage: JournalError, resume: UInt64) in
      context.output.err(
        "rewind tail: " + visible(DamageMet.readOnMessage(damage, from: resume, through: min(filter.to, last))) + "\n")
    }
    let events: [AuditedEvent]
    // Damage before the last events that cannot be read past: it ends them, as `hidden` does.
    var stopped: (error: JournalError, readThrough: UInt64)?
    // A narrowed selection must match an event, also under `-n 0`, which shows none: the last
    // one is looked for (helper-215: `-n 0 --origin import` exited 0 where `-n 1` exits 2).
    let narrowed = filter.isNarrowed(anyRecordRead: last > 0) && !follow
    do {
      events = try filter.lastEvents(
        in: reader, directory: directory, through: last, count: narrowed ? max(count, 1) : count,
        following: follow && hidden == nil, passed: &passed, stopped: &stopped, readingOn: readingOn)
    } catch let error as JournalError where error.isDamage {
      throw DamageMet(error: error, readThrough: 0, from: .max, lastOnly: true, passed: passed)
    }
    if events.isEmpty && narrowed && hidden == nil && stopped == nil && passed.isEmpty {
      throw filter.nothingMatches(directory)
    }
    let output = BufferedOutput(context.output)
    for event in events.suffix(count) { output.write(render(event)) }
    output.flush()
    if let (error, readThrough) = stopped {
      throw DamageMet(error: error, readThrough: readThrough, from: filter.from, lastOnly: true, passed: passed)
    }
    if let hidden {
      throw DamageMet(error: hidden, readThrough: last, from: filter.from, lastOnly: true, passed: passed)
    }
    if let damage = passed.last {
      throw DamageMet(
        error: damage, readThrough: last, from: filter.from, lastOnly: true, passed: passed, readToTheEnd: true)
    }
    guard follow else { return .success }
    // Idle, it writes nothing: notice a reader that leaves (`rewind tail -f J | head -1`) meanwhile.
    context.output.endWhenReaderLeaves?()

    // A segment missing before the end lies before `last + 1`: never reached, as for the windows.
    let following = reader.follow(from: last + 1, pollInterval: .milliseconds(50), readingAroundMissingSegments: true)
    for try await record in following {
      let event = AuditedEvent(record, lineWidth: filter.rendering)
      if filter.matches(record, event) { context.output.out(render(event)) }
    }
    return .success
  }

  /// The journal's last record past damage that hides its end from `readableEnd` (a frame past
  /// the index's last entry that fails its checksum, whose batch header names its records), read
  /// past as `rewind log` reads it, and the damage that ended that read, if any; nil when no
  /// record after the damage can be read (records gone at the end: a segment cut short).
  private static func end(
    pastDamageFrom first: UInt64, in reader: JournalReader, directory: String
  ) throws -> (last: UInt64, stop: JournalError?)? {
    var records = try PastDamage(reader: reader, directory: directory, through: .max) {
      try reader.records(from: first, readingAroundMissingSegments: true)
    }
    var last: UInt64?
    var stop: JournalError?
    do {
      while let record = try records.next(readingOn: { _, _ in }) { last = record.sequence }
    } catch let error as JournalError where error.isDamage {
      stop = error
    }
    guard let last, !records.passed.isEmpty else { return nil }
    return (last, stop)
  }
}
