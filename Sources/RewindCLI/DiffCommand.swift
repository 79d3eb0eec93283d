import Foundation
import Rewind
import RewindJournal

enum DiffCommand: RewindCommand {
  static let name = "diff"
  static let summary = "record-level changes between two sequence numbers"
  static let help = """
    Usage: rewind diff DIR A B [--json] [--model NAME]

    The changes from the state after sequence A to the state after sequence B, per collection:
    records inserted (+), updated (~, the fields that changed, before and after) and removed (-),
    each list in id order. Collections that did not change are left out. With --json, one JSON
    object, with whole records before and after.

    Exit 0; 2 for a bad option or an A or B outside the journal; 3 when the journal cannot be
    read or the model cannot replay it. Only the records up to A and B need to be intact: with
    damage after them (even damage that hides the journal's end, or a segment missing between
    intact ones) the diff is the same; with damage at or before either, exit 3 naming it and the
    last record read intact before it, unless a usable snapshot after the damaged records lies at
    or before it (then read from the snapshot, as `rewind replay --help` says).

    Examples:
      rewind diff /tmp/j 100 200
      rewind diff /tmp/j 0 1200 --json | jq '.collections[].name'

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
    let args = try Arguments(arguments, options: ["model"], flags: ["json"])
    let positionals = try args.positionals(
      exactly: 3, needs: "the journal directory and two sequence numbers: rewind diff DIR A B")
    let directory = positionals[0]
    let bounds = try JournalBounds(directory: directory)
    let from = try bounds.sequence(positionals[1], what: "A")
    let to = try bounds.sequence(positionals[2], what: "B")
    let model = try context.registration(for: directory, named: args.value("model"))
    let session = try replaying(model, directory) { try model.open(directory, .oneShot) }
    let progress = ProgressLine("diff: replaying", context: context)
    defer { progress.finish() }  // an error then starts a line of its own
    session.progress = progress.callback
    let diff = try namingTheLastIntactRecord({ "A and B through \($0) are compared as in the whole journal" }) {
      try replaying(model, directory) { try session.diff(from: from, to: to) }
    }
    progress.finish()
    output.out(args.flag("json") ? json(diff) + "\n" : text(diff))
    return .success
  }

  static func json(_ diff: StateDiff) -> String {
    func changes(_ list: [RecordChange]) -> String {
      "["
        + list.map { change in
          var fields = [#""id":\#(StateInspector.json(change.id))"#]
          if let before = change.before { fields.append(#""before":\#(StateInspector.json(before))"#) }
          if let after = change.after { fields.append(#""after":\#(StateInspector.json(after))"#) }
          return "{" + fields.joined(separator: ",") + "}"
        }.joined(separator: ",") + "]"
    }
    let collections = diff.collections.map { collection in
      #"{"name":\#(StateInspector.json(collection.name)),"inserted":\#(changes(collection.inserted)),"#
        + #""updated":\#(changes(collection.updated)),"removed":\#(changes(collection.removed))}"#
    }
    return #"{"from":\#(diff.from),"to":\#(diff.to),"collections":[\#(collections.joined(separator: ","))]}"#
  }

  static func text(_ diff: StateDiff) -> String {
    guard !diff.collections.isEmpty else { return "no changes from \(diff.from) to \(diff.to)\n" }
    // Collection names and ids come from the journal: they are made `visible`. Values are JSON,
    // whose escapes already keep them safe.
    var lines: [String] = []
    for collection in diff.collections {
      lines.append(
        visible(
          "\(collection.name): \(collection.inserted.count) inserted, \(collection.updated.count) updated, "
            + "\(collection.removed.count) removed (from \(diff.from) to \(diff.to))"))
      let label = { (id: String) in visible(id.isEmpty ? collection.name : id) }
      for change in collection.inserted {
        lines.append("  + \(label(change.id)) \(change.after.map(StateInspector.json) ?? "")")
      }
      for change in collection.updated {
        lines.append("  ~ \(label(change.id))")
        // The fields that changed, when both versions are JSON objects; else the two whole.
        let changed = change.before.flatMap { before in
          change.after.flatMap { StateInspector.changedFields(before: before, after: $0) }
        }
        lines.append("      before \(changed?.before ?? change.before.map(StateInspector.json) ?? "")")
        lines.append("      after  \(changed?.after ?? change.after.map(StateInspector.json) ?? "")")
      }
      for change in collection.removed {
        lines.append("  - \(label(change.id)) \(change.before.map(StateInspector.json) ?? "")")
      }
    }
    return lines.joined(separator: "\n") + "\n"
  }
}
