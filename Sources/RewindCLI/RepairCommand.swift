import Foundation
import Rewind
import RewindJournal

enum RepairCommand: RewindCommand {
  static let name = "repair"
  static let summary = "move everything from the first damaged frame on into quarantine/"
  static let help = """
    Usage: rewind repair DIR [--yes]

    Moves everything from the first damaged frame on into DIR/quarantine/ (nothing is deleted),
    after saying exactly what it will move: which segment, from which byte offset, how many bytes,
    and the sequence number the journal will then end at. Snapshot files past that end stand for
    records the repair takes away: they move into DIR/quarantine/ too. A loss that left no bytes
    (committed records turned to zeros, or a segment cut short) has nothing to move: the plan says
    so, and the repair only drops the index that names the lost records. Zeros ending a sealed
    segment whose successor starts right after its last record hold no record (verify: "no records
    are missing, but readers stop here"): they are cut off that segment, and every segment stays;
    bytes that are no batch ending such a segment hold none either, and are moved into
    DIR/quarantine/ alone, every segment staying. A segment header damaged in a few bits, over
    batches that hold and that the index names, is written again from the manifest's journal id and
    the file's name, its damaged 44 bytes kept as DIR/quarantine/NAME.header, the segment staying
    (verify says when it can be). At a terminal it asks before moving; otherwise it only shows the
    plan unless --yes is given. The plan only reads (it takes no lock and creates nothing, so it
    can be shown while a writer has the journal open, and may change if that writer appends
    meanwhile); the repair itself refuses while a writer has the journal open. A file named like a
    segment that holds nothing committed (no valid header, no valid batch, no index entry naming
    it) is moved aside alone. When every segment belongs to one journal and the manifest names
    another, it refuses (exit 3) and names the segments' journal: the manifest is then the likelier
    damage, and moving every segment aside would empty the journal. It refuses too (exit 3, nothing
    moved) when the damage starts with records no segment holds before segments that are intact
    (the first segment missing, or one in the middle): it would move those intact segments aside.
    Restore the missing segment from a backup.

    Exit 0 when there was nothing to repair or the repair is done; 1 when a plan was shown but not
    carried out; 3 when the journal cannot be opened, or the repair could not finish: what it
    could not do is named (an index it could not remove: the moves are done, snapshots past the
    new end too, and running it again once the cause is fixed removes the index).

    Examples:
      rewind repair /tmp/notes
      rewind repair /tmp/notes --yes

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
    let args = try Arguments(arguments, options: [], flags: ["yes"])
    let directory = try args.directory()
    // Reading first: a directory that is not a journal is refused before anything is written there.
    _ = try openJournal(directory)
    let plan = try Journal.repair(directory: directory, dryRun: true, options: readingAnyLimits(JournalOptions()))
    guard plan.damage != nil else {
      output.out("nothing to repair: the journal is sound (last sequence \(plan.lastSequence))\n")
      return .success
    }
    // In the order the repair acts: headers written first, then what moves.
    for entry in plan.headersRewritten { output.out(visible(headerLine(entry, planned: true)) + "\n") }
    if let line = nothingLeft(plan) { output.out(line) }
    for entry in plan.zerosCut { output.out(visible("will " + zerosLine(entry)) + "\n") }
    for entry in plan.moved {
      var line = "will move \(entry.length) bytes of \(entry.segment) from byte offset \(entry.offset)"
      if let sequences = entry.sequences { line += " (sequences \(sequences.lowerBound)-\(sequences.upperBound))" }
      output.out(visible(line + ": \(entry.reason)") + "\n")
    }
    // Snapshots past the new end stand for records the repair takes away: they go too.
    let pastEnd = SnapshotStore(journal: directory).sequences().filter { $0 > plan.lastSequence }
    for sequence in pastEnd {
      output.out("will move snapshots/\(SnapshotStore.fileName(sequence)): a snapshot past the repaired end\n")
    }
    output.out("the journal would then end at sequence \(plan.lastSequence)\n")
    // The plan was made read-only, without the lock (it creates nothing and works beside a writer).
    output.out(
      "(a plan, made without the writer's lock: it may change if a writer appends meanwhile; the repair itself "
        + "refuses while a writer has the journal open)\n")
    // With nothing to move, the repair only drops the index (and cuts zeros): say that, not "move".
    let action =
      plan.moved.isEmpty && pastEnd.isEmpty ? "carry out the repair" : "move them into \(directory)/quarantine"
    var confirmed = args.flag("yes")
    if !confirmed {
      guard isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 else {
        output.out(visible("not at a terminal: run again with --yes to \(action)") + "\n")
        return .findings
      }
      output.out(visible("\(action)? [y/N] "))
      let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
      confirmed = answer == "y" || answer == "yes"
      guard confirmed else {
        output.out("nothing moved\n")
        return .findings
      }
    }
    let done = try carryOut(directory, output: output)
    output.out("repaired: the journal ends at sequence \(done.lastSequence)\n")
    return .success
  }

  /// `options` with the largest limits: a batch written with larger limits than the default is
  /// committed data, which the repair must not take for damage and move aside.
  static func readingAnyLimits(_ options: JournalOptions) -> JournalOptions {
    var options = options
    options.limits = .largest
    return options
  }

  /// Moves the damaged part aside (`Journal.repair`), then the snapshots past the new end, and
  /// says what moved. A repair that stops with `.staleIndex` has moved everything but could not
  /// remove the index: the snapshots past the end the journal now has are set aside before that
  /// error is thrown, not at the second run it asks for. They stand for records the repair took
  /// away, and once a writer numbers new records over them they would pass every check.
  /// - Parameter options: the file operations the journal is repaired with (its limits are
  ///   replaced by the largest, as for every command).
  /// - Throws: `JournalError` from the repair, or naming a snapshot that could not be moved.
  static func carryOut(_ directory: String, options: JournalOptions = JournalOptions(), output: RewindTool.Output)
    throws -> RepairReport
  {
    let options = readingAnyLimits(options)
    let snapshots = SnapshotStore(journal: directory)
    let done: RepairReport
    do {
      done = try Journal.repair(directory: directory, options: options)
    } catch let error as JournalError where error.code == .staleIndex {
      // The end the journal now has is the one a plan made now finds, the one the second run
      // would set snapshots aside after (the stale index is damage to it, not more records).
      // Should that plan or a move fail, the second run the error asks for still does it.
      if let now = try? Journal.repair(directory: directory, dryRun: true, options: options),
        let moved = try? snapshots.setAside(after: now.lastSequence)
      {
        for entry in moved { output.out(visible("\(entry)") + "\n") }
      }
      throw error
    }
    for entry in done.headersRewritten { output.out(visible(headerLine(entry, planned: false)) + "\n") }
    if let line = nothingLeft(done) { output.out(line) }
    for entry in done.zerosCut { output.out(visible(zerosLine(entry)) + "\n") }
    for entry in done.moved { output.out(visible("\(entry)") + "\n") }
    for entry in try snapshots.setAside(after: done.lastSequence) { output.out(visible("\(entry)") + "\n") }
    return done
  }

  /// The line for a segment header written again (`RepairReport.headersRewritten`), planned or
  /// done: where the damaged bytes go, or went.
  static func headerLine(_ entry: QuarantinedBytes, planned: Bool) -> String {
    (planned ? "will write" : "wrote") + " the segment header of \(entry.segment) again (the segment and its "
      + "records stay; its damaged \(entry.length) bytes kept in \(entry.movedTo)): \(entry.reason)"
  }

  /// The line for zeros cut off a sealed segment (`RepairReport.zerosCut`), planned or done.
  static func zerosLine(_ entry: QuarantinedBytes) -> String {
    "cut \(entry.length) bytes of zeros off \(entry.segment) from byte offset \(entry.offset) "
      + "(they hold no record; the segment and every one after it stay): \(entry.reason)"
  }

  /// The line for a loss that left no bytes to set aside (committed frames turned to zeros, or
  /// the segment cut short): the damaged segment has no entry among the moved bytes.
  static func nothingLeft(_ report: RepairReport) -> String? {
    guard let damage = report.damage, !report.moved.contains(where: { $0.segment == damage.file }) else { return nil }
    if damage.zerosOnly || damage.headerRebuildable { return nil }  // the lines of `zerosCut` or of headers say it
    // The file and the message quote the journal, as verify's problems do: shown through `visible`.
    return visible(
      "nothing to move of \(damage.file) from byte offset \(damage.offset), no bytes are left there: "
        + "\(damage.message) (the index that names them goes; the next writer rebuilds it)") + "\n"
  }
}
