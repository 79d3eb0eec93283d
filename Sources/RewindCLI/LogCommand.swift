import Foundation
import Rewind
import RewindJournal

enum LogCommand: RewindCommand {
  static let name = "log"
  static let summary = "what happened, event by event, like git log"
  static let help = """
    Usage: rewind log DIR [--from SEQ] [--to SEQ] [--since TIME] [--until TIME] [--type NAME]
                          [--origin ORIGIN] [--entity ID] [--limit N] [--full] [--json]

    Lists events in order: sequence number, time (ISO 8601, UTC), event name and schema
    version, origin, and the event's fields rendered as JSON without the app's types (cut at
    160 characters, or before an escape the cut would split; --full shows them whole), after a
    note in parentheses when they are shown otherwise than stored (of two entries with one key,
    only the first: the one replay reads; a string that is not UTF-8, with U+FFFD for its
    ill-formed bytes; so too an event name or origin that is not UTF-8).
    Works on any journal, also while it is written: it lists the journal as it ended when log
    began, and events appended meanwhile are left out (`rewind tail -f` follows them).
    The name and origin are the journal's text, shown as they are (controls escaped): one that
    holds two spaces and a `{` can pass for the start of the fields. A program that reads the
    events takes --json, where each is a value of its own.

      --from, --to       sequence numbers, inclusive; a --to past the end reads to the end
      --since, --until   ISO 8601 times, inclusive (2026-01-01, 2026-01-01T09:30:00Z,
                         2026-01-01T09:30:00.5+02:00, +0200 or +02; UTC when no zone
                         is given; a date alone is its midnight; --until 9999-12-31 reads
                         to the end; records are stamped to the nanosecond, so a finer
                         --since starts at the next one)
      --type NAME        events with this name (note.created), or a prefix ending in * (note.*)
      --origin ORIGIN    events from this origin (user, sync, automation, import, ...)
      --entity ID        events whose fields mention this identifier (32 hex digits): a value
                         or key of exactly these digits, in capitals or not (typed either way)
      --limit N          at most N events
      --json             one object per event per line: {"seq":..,"time":..,"name":..,
                         "version":..,"origin":..,"command":..,"payload":{..}}

    Exit 0; 2 for a bad option or a selection outside the journal (a --from past its end, a
    --since after its last event, an --until before its first, either of the first two in an
    empty journal, a --type, --origin or --entity that no event has, or options that no event
    matches together); 3 when the journal cannot be read. An empty journal with no selection lists
    nothing, with exit 0. On damage (a frame that fails its checksum, a segment cut short or
    missing, committed records gone), every event of the selection before it is listed first.
    Where the damage names its records (a frame whose batch header holds and continues the
    sequence), a later segment starts after it, or the index names a later intact batch in its
    segment (after a damaged batch header, or one that breaks the sequence: each one it names in
    turn, also after a segment missing before it), a line on standard error names the segment,
    byte offset and the sequences not read, and the listing goes on after them (or, when --to
    ends the selection among them, says so); a last line says every other event was listed
    (exit 3).
    Damage that cannot be read past (records gone at the end, the last segment missing, a damaged
    batch header, or one that breaks the sequence, in the last segment with no later intact batch
    indexed) ends the listing: the error locates it and names the last sequence read intact
    (exit 3). A selection that ends before the damage (--to) is whole: exit 0. So is one whose
    times (--since, --until) leave out every record of a damaged frame, as its batch header (which
    holds) stamps them.
    The examples read a journal written by `rewind demo /tmp/notes --seed 1`.

    Examples:
      rewind log /tmp/notes --limit 5
      rewind log /tmp/notes --type 'note.*' --origin sync --since 2026-01-01T01:00:00Z --json
      rewind log /tmp/notes --entity a29091f1c4eab8dccb96c6e05cf03f5b

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let args = try Arguments(arguments, options: EventFilter.options.union(["limit"]), flags: ["json", "full"])
    let directory = try args.directory()
    var filter = try EventFilter(args)
    let limit = try args.integer("limit", default: Int.max, range: 1...Int.max)
    let json = args.flag("json")
    let width = args.flag("full") ? nil : 160
    filter.lineWidth = json ? nil : width
    let reader = try openJournal(directory)
    let output = BufferedOutput(context.output)
    defer { output.flush() }
    // Damage read past is said where it stands: after the events before it.
    let readingOn = { (damage: JournalError, resume: UInt64) in
      output.flush()
      context.output.err(
        "rewind log: " + visible(DamageMet.readOnMessage(damage, from: resume, through: filter.to)) + "\n")
    }
    try filter.forEachEvent(in: reader, directory: directory, limit: limit, readingOn: readingOn) { _, event in
      output.write((json ? event.json : event.line(width: width)) + "\n")
    }
    output.flush()
    return .success
  }
}

/// Collects output and writes it in large pieces: one system call per 64 KiB, not per line.
final class BufferedOutput {
  private let output: RewindTool.Output
  private var buffer = ""

  init(_ output: RewindTool.Output) { self.output = output }

  func write(_ text: String) {
    buffer += text
    if buffer.utf8.count >= 65_536 { flush() }
  }

  func flush() {
    guard !buffer.isEmpty else { return }
    output.out(buffer)
    buffer = ""
  }
}
