import Foundation
import Rewind
import RewindJournal

enum BisectCommand: RewindCommand {
  static let name = "bisect"
  static let summary = "the first sequence number at which a named invariant fails"
  static let help = """
    Usage: rewind bisect DIR --invariant NAME [--linear] [--json] [--model NAME]

    Finds the first sequence number whose state breaks the registered invariant NAME. Only
    states after a whole command count, as readers never see one between its events: the answer
    is the last record of the first command after which the invariant fails. Like git bisect it
    assumes that once broken the invariant stays broken, and probes O(log n) states; --linear
    checks the state after every command instead, and so also finds a break that was repaired
    later (an invariant registered over a store's records is checked, after a command that
    changed only that store and stores the invariant does not read, on the records it changed:
    the same answer, sooner).
    Exit 1 with the sequence number and its event when the invariant fails (a finding), 0 when
    it holds, 2 for an unknown invariant (the known ones are listed) or a bad option, 3 when the
    journal cannot be read (bisect needs the journal's end: damage that hides it is reported
    before anything is replayed, located) or the model cannot replay it. The event is shown as
    replay applied it, upcast to its current schema version when it was written in an older one,
    which its line says ("v1 (upcast to v2)"; in JSON "upcastTo": 2 after "version": 1).

    Examples:
      rewind bisect /tmp/j --invariant "notes belong to notebooks"
      rewind bisect /tmp/j --invariant "notes belong to notebooks" --linear --json

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
    let args = try Arguments(arguments, options: ["model", "invariant"], flags: ["json", "linear"])
    let directory = try args.directory()
    // The whole history is read: damage that hides the end is reported before anything else.
    try JournalBounds(directory: directory).requireEnd()
    let model = try context.registration(for: directory, named: args.value("model"))
    let known = model.invariantNames.isEmpty ? "none" : model.invariantNames.map { "'\($0)'" }.joined(separator: ", ")
    guard let name = args.value("invariant") else {
      throw UsageError("missing --invariant NAME; model \(model.name) knows: \(known)")
    }
    guard model.invariantNames.contains(name) else {
      throw UsageError("unknown invariant '\(name)' for model \(model.name); known invariants: \(known)")
    }
    // What the session checks, and so what the report names, ends at the journal's last
    // sequence number as the session read it: a writer may have appended since the start.
    let session = try model.open(directory)
    let progress = ProgressLine("bisect: replaying", context: context)
    defer { progress.finish() }  // an error then starts a line of its own
    session.progress = progress.callback
    let failing = try replaying(model, directory) { try session.bisect(name, linear: args.flag("linear")) }
    progress.finish()
    session.progress = nil
    let event = try failing.flatMap { try session.event(at: $0) }
    if args.flag("json") {
      output.out(
        #"{"invariant":\#(StateInspector.json(name)),"lastSequence":\#(session.lastSequence),"#
          + #""firstFailure":\#(failing.map(String.init) ?? "null"),"event":\#(event.map(eventJSON) ?? "null")}"#
          + "\n")
    } else if let failing {
      output.out(visible("invariant '\(name)' first fails at sequence \(failing)") + "\n")
      if let event {
        output.out(
          "  \(envelopeLine(event))\n    event \(StateInspector.json(event.event))\n")
      } else if failing == 0 {
        output.out("  it fails on the empty state, before any record\n")
      }
    } else {
      output.out(
        visible(
          args.flag("linear")
            ? "invariant '\(name)' holds after every command through sequence \(session.lastSequence)"
            : "invariant '\(name)' holds at the last sequence number, \(session.lastSequence) "
              + "(bisect assumes a broken invariant stays broken; --linear checks every command)") + "\n")
    }
    return failing == nil ? .success : .findings
  }
}
