import Foundation
import Rewind
import RewindJournal

enum ExportCommand: RewindCommand {
  static let name = "export"
  static let summary = "every event, or those log's options select, as JSON lines for jq"
  static let help = """
    Usage: rewind export DIR --jsonl [--from SEQ] [--to SEQ] [--since TIME] [--until TIME]
                                     [--type NAME] [--origin ORIGIN] [--entity ID]

    Writes every event, or those the options select, to standard output, one JSON object per
    line, in order: {"seq":..,"time":..,"name":..,"version":..,"origin":..,"command":..,"payload":{..}}
    with the event's fields rendered without the app's types, as `rewind log --json` does. The
    options select as `rewind log`'s do (see `rewind log --help`), so an export prints the same
    lines as `rewind log --json` with the same options. A record that is not a Rewind event, or
    an event whose fields do not decode, also has "problem" (what is wrong) and its bytes as
    "payload", with "payloadEncoding" saying how: "text" (UTF-8) or "hex"; its envelope's fields
    are null only when the envelope does not decode either. An event whose fields are shown
    otherwise than stored has "problem" saying how: of two entries with one key, only the first,
    the one replay reads; a string or key that is not UTF-8, with U+FFFD for its ill-formed
    bytes, as replay reads it (so two such strings can show alike). Shows progress on standard
    error when it is a terminal and standard output is not.

    Exit 0; 2 for a bad option or a selection outside the journal (a --from past its end, a
    --since after its last event, an entity no event mentions; a --to or --until past it reads
    to the end); 3 when the journal cannot be read. On damage, as `rewind log`: every event it
    does not hold is written, up to damage that cannot be read past, and standard error
    locates the damage and names the sequences not read, with exit 3. Standard output
    redirected to a file then holds the intact events, every line of them whole, so it can pass
    for a whole export: check the exit status (in a pipeline, set -o pipefail). A selection
    that ends before the damage is whole.

    Examples:
      rewind export /tmp/notes --jsonl > events.jsonl
      rewind export /tmp/notes --jsonl | jq -c 'select(.origin == "sync") | .payload.id'
      rewind export /tmp/notes --jsonl --type 'note.*' --origin sync > synced-notes.jsonl

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let args = try Arguments(arguments, options: EventFilter.options, flags: ["jsonl"])
    let directory = try args.directory()
    guard args.flag("jsonl") else { throw UsageError("name the format: --jsonl (JSON lines) is the one there is") }
    let filter = try EventFilter(args)
    let reader = try openJournal(directory)
    // Damage may hide the end; then no progress is shown, and the read reports the damage.
    let total = min(try readableEnd(reader) ?? 0, filter.to)
    let output = BufferedOutput(context.output)
    defer { output.flush() }
    let progress = ProgressLine("exporting", context: context, streaming: true)
    defer { progress.finish() }  // an error then starts a line of its own
    // Progress follows every record read, matching or not.
    let read: (JournalRecord) -> Void = { progress.update($0.sequence, of: total) }
    let readingOn = { (damage: JournalError, resume: UInt64) in
      output.flush()
      progress.finish()
      context.output.err("rewind export: " + visible(DamageMet.readOnMessage(damage, from: resume)) + "\n")
    }
    try filter.forEachEvent(in: reader, directory: directory, reading: read, readingOn: readingOn) { _, event in
      output.write(event.json + "\n")
    }
    output.flush()
    progress.finish()
    return .success
  }
}
