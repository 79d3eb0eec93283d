import Foundation
import Rewind
import RewindJournal

enum ExportCommand: RewindCommand {
  static let name = "export"
  static let summary = "every event as JSON lines, for jq and other tools"
  static let help = """
    Usage: rewind export DIR --jsonl [--from SEQ] [--to SEQ]

    Writes every event (or those in the sequence range, inclusive) to standard output, one JSON
    object per line, in order: {"seq":..,"time":..,"name":..,"version":..,"origin":..,"command":..,"payload":{..}}
    with the event's fields rendered without the app's types, as `rewind log --json` does. A
    record that is not a Rewind event, or an event whose fields do not decode, also has "problem"
    (what is wrong) and its bytes as "payload" (text, or hexadecimal); its envelope's fields are
    null only when the envelope does not decode either. Shows progress on standard error when it
    is a terminal and standard output is not.

    Exit 0; 2 for a bad option or a --from past the journal's end (a --to past it reads to the
    end); 3 when the journal cannot be read.

    Examples:
      rewind export /tmp/notes --jsonl > events.jsonl
      rewind export /tmp/notes --jsonl | jq -c 'select(.origin == "sync") | .payload.id'

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let args = try Arguments(arguments, options: ["from", "to"], flags: ["jsonl"])
    let directory = try args.directory()
    guard args.flag("jsonl") else { throw UsageError("name the format: --jsonl (JSON lines) is the one there is") }
    let filter = try EventFilter(args)
    let reader = try openJournal(directory)
    let last = try reader.lastSequence()
    let cursor = try filter.cursor(reader)
    let output = BufferedOutput(context.output)
    defer { output.flush() }
    let progress = ProgressLine("exporting", context: context, streaming: true)
    defer { progress.finish() }  // an error then starts a line of its own
    let total = min(last, filter.to)
    while let record = try cursor.next() {
      if filter.isPast(record) { break }
      output.write(AuditedEvent(record).json + "\n")
      progress.update(record.sequence, of: total)
    }
    output.flush()
    progress.finish()
    return .success
  }
}
