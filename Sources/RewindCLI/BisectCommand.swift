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
    The event shown need not be the one that broke the invariant: when its command recorded
    more, a line names them (in JSON "commandEvents": [FIRST, LAST], as `rewind show` gives it).
    Exit 1 with the sequence number and its event when the invariant fails (a finding), 0 when
    it holds, 2 for an unknown invariant (the known ones are listed) or a bad option, 3 when the
    journal cannot be read (damage part way, located) or the model cannot replay it. The event is
    shown as replay applied it, upcast to its current schema version when it was written in an
    older one, which the end of its line says ("... (upcast to v2)"; in JSON "upcastTo": 2 after
    "version": 1).
    When damage hides the journal's end (a frame that fails its checksum among the last records
    written, past the sparse index's last entry; committed records gone),
    bisect searches the records before it, through the last one read intact: a failure there is
    reported as above (exit 1), with a note on stderr that the history after the damage was not
    examined; an invariant that holds through that record is said to hold through it, and the
    damage that hides the rest is located on stderr (segment, byte offset, sequences), exit 3. In
    JSON, "lastSequence" is then that record's and "endHidden" is true. A failure at that last
    record itself is said but not claimed: its command's later events, if any, lie in the damage,
    so whether the state there is one after a whole command cannot be told (exit 3; in JSON
    "firstFailure" is null and "failsWhereDamageCutsTheCommand" true: with "endHidden", a null
    "firstFailure" means the invariant holds through "lastSequence" only without that key).

    Examples:
      rewind bisect /tmp/j --invariant "notes belong to notebooks"
      rewind bisect /tmp/j --invariant "notes belong to notebooks" --linear --json

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
    let args = try Arguments(arguments, options: ["model", "invariant"], flags: ["json", "linear"])
    let directory = try args.directory()
    // A missing directory or a file is named plainly before the model is looked for.
    _ = try openJournal(directory)
    let model = try context.registration(for: directory, named: args.value("model"))
    let known = model.invariantNames.isEmpty ? "none" : model.invariantNames.map { "'\($0)'" }.joined(separator: ", ")
    guard let name = args.value("invariant") else {
      throw UsageError("missing --invariant NAME; model \(model.name) knows: \(known)")
    }
    guard model.invariantNames.contains(name) else {
      throw UsageError("unknown invariant '\(name)' for model \(model.name); known invariants: \(known)")
    }
    // What the session checks, and so what the report names, ends at the journal's last
    // sequence number as the session read it: a writer may have appended since the start. While
    // damage hides the end, at the last one read intact before it.
    let session = try model.open(directory, .oneShot)
    let progress = ProgressLine("bisect: replaying", context: context)
    defer { progress.finish() }  // an error then starts a line of its own
    session.progress = progress.callback
    let found = try replaying(model, directory) { try session.bisect(name, linear: args.flag("linear")) }
    progress.finish()
    session.progress = nil
    let hidden = session.endHiddenBy
    // A failure at the last record read before damage that hides the end: its command's later
    // events, if it has any, lie in the damage, so the state there may be one inside a command,
    // which no reader saw. Said, not claimed as the first failure.
    let cutOff = hidden != nil && found == session.lastSequence && found != 0
    let failing = cutOff ? nil : found
    let event = try failing.flatMap { try session.event(at: $0) }
    // The answer is its command's last event, which need not be the one that broke the invariant:
    // its command's other events are named too (as `show` finds them; left out if they cannot be
    // read, the journal changed since).
    let command = failing.flatMap { failing in
      try? ShowCommand.eventAndItsCommand(failing, in: openJournal(directory), directory: directory)?.command?.get()
    }
    if args.flag("json") {
      output.out(
        #"{"invariant":\#(StateInspector.json(name)),"lastSequence":\#(session.lastSequence),"#
          + #""firstFailure":\#(failing.map(String.init) ?? "null"),"event":\#(event.map(eventJSON) ?? "null")"#
          + (command.map { #","commandEvents":[\#($0.lowerBound),\#($0.upperBound)]"# } ?? "")
          + (cutOff ? #","failsWhereDamageCutsTheCommand":true"# : "")
          + (hidden == nil ? "" : #","endHidden":true"#) + "}\n")
    } else if cutOff {
      output.out(
        visible(
          "invariant '\(name)' fails at sequence \(session.lastSequence), the last record read before damage that "
            + "hides the journal's end; whether its command ends there cannot be told (its later events, if any, lie "
            + "in the damage), so this may be a state inside a command, which no reader saw, and is not claimed as "
            + "the first failure") + "\n")
    } else if let failing {
      output.out(visible("invariant '\(name)' first fails at sequence \(failing)") + "\n")
      if let event {
        output.out(
          "  \(envelopeLine(event))\n    event \(StateInspector.json(event.event))\n")
        if let command, command.count > 1 {
          output.out(
            "  the last of its command's events \(command.lowerBound)-\(command.upperBound) (\(command.count) in all): "
              + "states are checked after whole commands, so any of them may break it (rewind show DIR N shows each)\n")
        }
        if !args.flag("linear") {
          output.out("  bisect assumes a broken invariant stays broken; --linear checks every command\n")
        }
      } else if failing == 0 {
        output.out("  it fails on the empty state, before any record\n")
      }
    } else if hidden != nil {
      output.out(
        visible(
          args.flag("linear")
            ? "invariant '\(name)' holds after every command through sequence \(session.lastSequence), the last "
              + "before damage that hides the journal's end"
            : "invariant '\(name)' holds at sequence \(session.lastSequence), the last before damage that hides the "
              + "journal's end (bisect assumes a broken invariant stays broken; --linear checks every command)") + "\n")
    } else {
      output.out(
        visible(
          args.flag("linear")
            ? "invariant '\(name)' holds after every command through sequence \(session.lastSequence)"
            : "invariant '\(name)' holds at the last sequence number, \(session.lastSequence) "
              + "(bisect assumes a broken invariant stays broken; --linear checks every command)") + "\n")
    }
    if let hidden {
      guard !cutOff else {
        throw EndHidden(
          error: hidden, readThrough: session.lastSequence,
          written: "the invariant fails after the last of them, but whether its command ended there cannot be told")
      }
      guard failing != nil else {
        throw EndHidden(
          error: hidden, readThrough: session.lastSequence,
          written: "the invariant holds through it, and the history after the damage was not examined")
      }
      let damage = EndHidden(
        error: hidden, readThrough: session.lastSequence,
        written: "the first failure among them is reported above; the history after the damage was not examined")
      output.err(visible("note: \(damage)") + "\n")
    }
    return failing == nil ? .success : .findings
  }
}
