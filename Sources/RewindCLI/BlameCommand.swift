import Foundation
import Rewind
import RewindJournal

enum BlameCommand: RewindCommand {
  static let name = "blame"
  static let summary = "every event that touched an entity, with the record after each"
  static let help = """
    Usage: rewind blame DIR ENTITY [--json] [--model NAME]

    Every event that touched the record with id ENTITY (32 hex digits, in capitals or not, in
    whichever collection holds it), or the value collection named ENTITY, oldest first, each with
    the record after it ("removed" once it is gone). With --json, one JSON object per event per
    line. An event is shown as replay applied it: one written in an older schema version,
    upcast to the current one, says so after its version ("v1 (upcast to v2)"; in JSON
    "upcastTo": 2 after "version": 1, which is the version written, as `rewind log` shows it).
    The examples read a journal written by `rewind demo /tmp/j --seed 1`.

    Exit 0; 2 for a bad option or an id no event ever touched; 3 when the journal cannot be read
    (blame reads the whole history: damage anywhere, located) or the model cannot replay it.

    Examples:
      rewind blame /tmp/j a29091f1c4eab8dccb96c6e05cf03f5b
      rewind blame /tmp/j settings --json

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
    let args = try Arguments(arguments, options: ["model"], flags: ["json"])
    let positionals = try args.positionals(
      exactly: 2,
      needs: "the journal directory and an entity (a record id or a value collection's name): rewind blame DIR ENTITY")
    let (directory, entity) = (positionals[0], positionals[1])
    // The whole history is read: damage that hides the end is reported before anything else.
    try JournalBounds(directory: directory).requireEnd()
    let model = try context.registration(for: directory, named: args.value("model"))
    let session = try replaying(model, directory) { try model.open(directory) }
    let progress = ProgressLine("blame: replaying", context: context)
    defer { progress.finish() }  // an error then starts a line of its own
    session.progress = progress.callback
    let entries = try replaying(model, directory) { try session.blame(entity) }
    progress.finish()
    // The id as the stores spell it (an identifier typed in capitals is shown in lowercase).
    guard let store = entries.first?.store, let id = entries.first?.id else {
      throw UsageError(
        "no event in \(directory) ever touched an entity '\(entity)'; give a record id as 32 hex digits "
          + "(as `rewind replay \(directory) --json` shows them) or a value collection's name")
    }
    if !args.flag("json") {
      output.out(visible("\(id) in \(store): \(counted(entries.count, "event"))") + "\n")
    }
    for entry in entries {
      let after = entry.after.map(StateInspector.json)
      if args.flag("json") {
        output.out(
          #"{"store":\#(StateInspector.json(store)),"id":\#(StateInspector.json(id)),"#
            + #""event":\#(eventJSON(entry.event)),"after":\#(after ?? "null")}"# + "\n")
      } else {
        output.out(
          "\(envelopeLine(entry.event))\n"
            + "    event \(StateInspector.json(entry.event.event))\n"
            + "    after \(after ?? "removed")\n")
      }
    }
    return .success
  }
}
