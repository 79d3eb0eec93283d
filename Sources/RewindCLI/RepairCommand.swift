import Foundation
import Rewind
import RewindJournal

enum RepairCommand: RewindCommand {
  static let name = "repair"
  static let summary = "move everything from the first damaged frame on into quarantine/"
  static let help = """
    Usage: rewind repair DIR [--yes]

    Moves everything from the first damaged frame on into DIR/quarantine/ (nothing is deleted),
    after saying exactly what it will move. Without --yes it only shows the plan.

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
    let args = try Arguments(arguments, options: [], flags: ["yes"])
    let directory = try args.directory()
    let plan = try Journal.repair(directory: directory, dryRun: true)
    if plan.moved.isEmpty {
      output.out("nothing to repair: the journal is sound (last sequence \(plan.lastSequence))\n")
      return .success
    }
    for entry in plan.moved {
      output.out(
        "will move \(entry.length) bytes of \(entry.segment) from byte offset \(entry.offset): \(entry.reason)\n")
    }
    guard args.flag("yes") else {
      output.out("run again with --yes to move them; the journal would then end at sequence \(plan.lastSequence)\n")
      return .findings
    }
    let done = try Journal.repair(directory: directory)
    for entry in done.moved { output.out("\(entry)\n") }
    output.out("repaired: the journal ends at sequence \(done.lastSequence)\n")
    return .success
  }
}
