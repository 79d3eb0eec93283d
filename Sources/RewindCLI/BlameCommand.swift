import Foundation
import Rewind
import RewindJournal

enum BlameCommand: RewindCommand {
  static let name = "blame"
  static let summary = "every event that touched an entity, with the record after each"
  static let help = """
    Usage: rewind blame DIR ENTITY [--collection NAME] [--json] [--model NAME]

    Every event that touched the record with id ENTITY (32 hex digits, in capitals or not, in
    whichever collection holds it), or the value collection named ENTITY, oldest first, each with
    the record after it ("removed" once it is gone). When records of two collections have ids of
    that text, those of the collection the first event touched are shown, and a note after them (on
    standard error with --json) names the others; --collection NAME shows those of NAME (a
    collection `rewind replay DIR` lists). With --json, one JSON object per event per line. An
    event is shown as replay applied it: one written in an older schema version, upcast to the
    current one, says so at the end of its line ("... v1 origin user command ID (upcast to v2)"; in
    JSON "upcastTo": 2 after "version": 1, which is the version written, as `rewind log` shows it).
    The examples read a journal written by `rewind demo /tmp/j --seed 1`.

    Exit 0; 2 for a bad option, a collection the model does not have, or an id no event ever
    touched (in that collection); 3 when the journal cannot be read
    (blame reads the whole history: damage part way, located) or the model cannot replay it.
    When damage hides the journal's end (a frame that fails its checksum among the last records
    written, past the sparse index's last entry; committed records gone),
    blame reads the records before it: it shows every event among them that touched ENTITY, then
    says on stderr where the damage is (segment, byte offset, sequences) and through which
    sequence it read, and exits 3: events after the damage, if any, are not shown.

    Examples:
      rewind blame /tmp/j a29091f1c4eab8dccb96c6e05cf03f5b
      rewind blame /tmp/j settings --json
      rewind blame /tmp/j a29091f1c4eab8dccb96c6e05cf03f5b --collection notebooks

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
    let args = try Arguments(arguments, options: ["model", "collection"], flags: ["json"])
    let positionals = try args.positionals(
      exactly: 2,
      needs: "the journal directory and an entity (a record id or a value collection's name): rewind blame DIR ENTITY")
    let (directory, entity) = (positionals[0], positionals[1])
    // A missing directory or a file is named plainly before the model is looked for.
    _ = try openJournal(directory)
    let model = try context.registration(for: directory, named: args.value("model"))
    let session = try replaying(model, directory) { try model.open(directory, .oneShot) }
    let progress = ProgressLine("blame: replaying", context: context)
    defer { progress.finish() }  // an error then starts a line of its own
    session.progress = progress.callback
    let collection = args.value("collection")
    if let collection {
      let names = session.collections().map(\.name)
      guard names.contains(collection) else {
        throw UsageError(
          "the model has no collection '\(visible(collection))'; its collections: \(names.joined(separator: ", "))")
      }
    }
    let (entries, others) = try replaying(model, directory) { try session.blame(entity, in: collection) }
    progress.finish()
    // Damage hides the end: the records before it were read, and the answer is about them alone.
    let hidden = session.endHiddenBy.map { error in
      { (written: String) in EndHidden(error: error, readThrough: session.lastSequence, written: written) }
    }
    // The id as the stores spell it (an identifier typed in capitals is shown in lowercase).
    guard let store = entries.first?.store, let id = entries.first?.id else {
      let place = collection.map { " in \($0)" } ?? ""
      if let hidden {
        throw hidden(
          "no event among them touched an entity '\(entity)'\(place); events after the damage were not read")
      }
      throw UsageError(
        "no event in \(directory) ever touched an entity '\(entity)'\(place); give a record id as 32 hex digits "
          + "(as `rewind replay \(shellWord(directory)) --json` shows them) or a value collection's name")
    }
    if !args.flag("json") {
      let before = hidden == nil ? "" : " before the damage that hides the journal's end"
      output.out(visible("\(id) in \(store): \(counted(entries.count, "event"))\(before)") + "\n")
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
    // Said after the events (on standard error with --json, whose lines are all events).
    let why = collection == nil ? "the first touched (--collection NAME shows another's)" : "as --collection asked"
    if let note = otherStoresNote(others, listed: store, id: id, why: why) {
      if args.flag("json") {
        output.err(visible("rewind blame: " + note) + "\n")
      } else {
        output.out(visible(note) + "\n")
      }
    }
    if let hidden {
      throw hidden(
        "every event among them that touched \(id) is shown above; events after the damage were not read")
    }
    return .success
  }

  /// What a blame says of the other stores whose records of the id's text events touched too
  /// (nil when no other store was touched): it lists the store the first event touched, or, by
  /// `why`, the one chosen.
  static func otherStoresNote(_ others: [String], listed store: String, id: String, why: String = "the first touched")
    -> String?
  {
    guard !others.isEmpty else { return nil }
    return "note: records of id \(id) in \(others.joined(separator: ", ")) were touched too; the events above are "
      + "those of \(store), \(why)"
  }
}
