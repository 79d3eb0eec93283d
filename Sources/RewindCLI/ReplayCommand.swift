import Foundation
import Rewind
import RewindJournal

enum ReplayCommand: RewindCommand {
  static let name = "replay"
  static let summary = "rebuild the state at a sequence number or time"
  static let help = """
    Usage: rewind replay DIR [--to SEQ | --at TIME] [--json] [--model NAME]

    Rebuilds the registered model's state from the journal in DIR, through sequence SEQ, through
    the last record stamped at or before TIME (ISO 8601; if the clock was set back, the last record
    before the first one stamped after TIME), or through the last record. Starts from the newest
    usable snapshot; snapshots it skips are listed with why. A target inside a command of several
    events (not its last) gives a state no reader saw: a note on stderr names the command's last
    sequence, where the whole command's state is (or, when the record right after the target
    lies in damage, says that where its command ends cannot be told). Prints a summary (records
    per collection, digest); with --json, one JSON object holding the whole state, every
    collection and record, fields sorted by name and records by id.

    Only the records up to the target need to be intact: when damage hides the journal's end (a
    frame that fails its checksum, committed records gone, a segment missing between intact
    ones), a target before it is replayed as usual (the summary's "of" then says the end is
    hidden), and one at or past it (or the end) exits 3, naming the damage's segment, byte
    offset and sequences, and the last record read intact before it; unless a usable snapshot
    lies after the damaged records, at or before the target: replay starts from it, passing over
    damaged frames whose batch headers hold (the end stays hidden: replay to the end exits 3).
    (`rewind debug` on a journal whose end such damage hides ends its session before it.)

    A checkpoint the replay passes (written by this model code) whose digest differs from the
    state rebuilt there is reported on stderr, naming the first such sequence: the state is
    still printed, as this model code rebuilds it, and the exit status is 1.

    Exit 0; 1 when a checkpoint diverges (above); 2 for a bad option (a --to past the journal's
    end or not a whole number, an --at before its first record or after its last, an unknown
    --model); 3 when the journal cannot be read (no such directory, not a journal, the damage
    above) or the model cannot replay it.

    Examples:
      rewind replay /tmp/j
      rewind replay /tmp/j --to 1200 --json | jq '.state.notes.records | length'
      rewind replay /tmp/j --at 2026-01-01T01:00:00Z

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
    let args = try Arguments(arguments, options: ["to", "at", "model"], flags: ["json"])
    let directory = try args.directory()
    let bounds = try JournalBounds(directory: directory)
    let target = try bounds.target(args)
    let model = try context.registration(for: directory, named: args.value("model"))
    let progress = ProgressLine("replaying", context: context)
    defer { progress.finish() }  // an error then starts a line of its own
    let replayed = try namingTheLastIntactRecord({
      "`rewind replay \(shellWord(directory)) --to \($0)` rebuilds the state there"
    }) {
      try replaying(model, directory) { try model.replay(directory, target, progress.callback) }
    }
    progress.finish()
    let report = replayed.report
    if args.flag("json") {
      output.out(
        #"{"model":\#(StateInspector.json(model.name)),"seq":\#(report.lastSequence),"#
          + #""digest":"\#(try replayed.digest())","state":\#(try replayed.json())}"# + "\n")
    } else {
      var lines = [
        "model        \(model.name)",
        // A writer may have appended after the bounds were read, and replay to the end read on.
        "sequence     \(report.lastSequence) of "
          + (bounds.lastSequence.map { "\(max(report.lastSequence, $0))" } ?? hiddenEnd(bounds, report)),
        "time         " + (try targetTime(bounds, report)),
        "snapshot     "
          + (report.snapshotSequence.map { "started from the snapshot at sequence \($0)" } ?? "none used"),
        "applied      \(counted(report.recordsApplied, "record")), \(counted(report.checkpointsVerified, "checkpoint")) verified",
        "digest       \(try replayed.digest())",
        "collections",
      ].map(visible)
      // Each name made `visible` once, and padded as it is shown.
      let width = visibleWidth(replayed.collections.map(\.name)) + 2
      for collection in replayed.collections {
        lines.append("  " + visible(collection.name, paddedTo: width) + "\(collection.count)")
      }
      output.out(lines.joined(separator: "\n") + "\n")
    }
    for problem in report.skippedSnapshots { output.err(visible("note: \(problem)") + "\n") }
    if let inside = insideACommand(report.lastSequence, directory) { output.err(visible("note: \(inside)") + "\n") }
    // The state printed is this model code's; a checkpoint that disagrees says the journal was
    // written by code that rebuilt another (or its records changed since): a finding, as for
    // `snapshot` and `verify`, not a warning a script would miss.
    if let divergence = report.firstDivergence {
      output.err(
        visible("rewind replay: \(divergence); `rewind verify \(shellWord(directory))` checks the whole journal") + "\n"
      )
      return .findings
    }
    return .success
  }

  /// A note when `sequence` is an event of a command other than its last: readers see a command's
  /// events together (TheFunnel.md), so that state is one no reader saw; or when the record
  /// right after it lies in damage, which leaves that untold (the replay read what it needed; the
  /// note is not worth a failure). Nil at a command's end, for a record that is no event or a
  /// checkpoint (which changes no state), and when the journal cannot be read there for another
  /// reason (damage before the command, or after events of it read past `sequence`).
  private static func insideACommand(_ sequence: UInt64, _ directory: String) -> String? {
    guard sequence > 0, let reader = try? openJournal(directory), let record = try? reader.record(sequence),
      let header = try? EventRecord.header(of: record.payload), !Checkpoint.recordNames.contains(header.name)
    else { return nil }
    let id = header.commandID
    let events: ClosedRange<UInt64>
    do {
      events = try ShowCommand.commandRange(of: id, around: sequence, in: nil, reader: reader)
    } catch let error as JournalError where error.isDamage || error.code == .shortened {
      guard error.sequences?.lowerBound == sequence + 1 else { return nil }
      return "whether sequence \(sequence) ends its command \(id) cannot be told: " + errorSentence(error)
        + "If the command goes on in the damage, no reader saw this state (readers see a command's events together)"
    } catch {
      return nil
    }
    guard events.upperBound > sequence else { return nil }
    return "sequence \(sequence) is inside command \(id), whose events are sequences "
      + "\(events.lowerBound)-\(events.upperBound): no reader saw this state (readers see a command's events "
      + "together); `rewind replay \(shellWord(directory)) --to \(events.upperBound)` rebuilds the state after the whole command"
  }

  /// The summary's "of" when damage hides the end: after the target, or before it (a replay from
  /// a snapshot past a damaged frame that hides the end reads none of it).
  private static func hiddenEnd(_ bounds: JournalBounds, _ report: ReplayReport) -> String {
    guard let first = bounds.hiddenBy?.sequences?.lowerBound, first <= report.lastSequence else {
      return "? (damage after it hides the end)"
    }
    return "? (damage at or before it, from sequence \(first), hides the end)"
  }

  /// The time of the target's record for the summary. Replay started from a snapshot at the
  /// target reads no record: when that record's frame is damaged, the state is still the
  /// snapshot's (`--json` prints it), so the summary says so instead of failing.
  private static func targetTime(_ bounds: JournalBounds, _ report: ReplayReport) throws -> String {
    do {
      return try bounds.timestamp(of: report.lastSequence).map(isoTime) ?? "- (the empty state)"
    } catch let error as JournalError where error.isDamage && report.snapshotSequence == report.lastSequence {
      // The cursor to the record reports the first damage on its way, which may lie before it.
      let place = "\(error.file ?? "?"), byte offset \(error.offset.map { String($0) } ?? "?")"
      let whose =
        error.sequences?.contains(report.lastSequence) == true
        ? "its record's frame is damaged" : "damage before its record, not read past"
      return "? (\(whose): \(error.message), \(place); the state is the snapshot's)"
    }
  }
}
