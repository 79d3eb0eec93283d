import Foundation
import Rewind
import RewindJournal

enum VerifyCommand: RewindCommand {
  static let name = "verify"
  static let summary = "check every byte of a journal; exit 1 if damaged"
  static let help = """
    Usage: rewind verify DIR [--model NAME]

    Checks every segment header, batch header and frame checksum, decodes every LZ4 frame and
    checks record framing and sequence continuity. Then, for a registered model, replays the
    journal against its recorded checkpoint digests (naming the first diverging sequence number)
    and against each snapshot's state, and checks that every cache equals its recomputation (a
    record the model cannot read, such as a newer schema version, an unknown event or one that
    is no event, is a problem there); when no registered model knows most of the event names
    among the journal's first 1,000 records, decodes every event's envelope and fields without
    the app's types instead. Exit 0 when sound; exit 1 with a report that locates every problem
    (segment, byte offset, sequence range). Derived data that the next writer rebuilds by itself is
    a note, not a problem, and leaves the exit status alone: a missing or damaged index, or
    segments the index names nowhere (each with its sequence range). Records the index names and
    the disk no longer holds (a deleted segment, a segment cut short) are a problem. The last line
    of a damaged journal says what to do: `rewind repair`; or, when every segment names one journal
    and only the manifest names another (repair refuses that), the journal id to put back in it;
    or, when the first problem is records missing before intact segments (the first segment
    missing, or one in the middle; repair refuses that too), to restore them from a backup. An
    index entry that fails its checksum, or that disagrees with the batch it names (its offset,
    sequence or timestamp column; a wrong timestamp column can make `log --since` skip records
    until the index file is deleted and rebuilt), is a note too.

    When the frames are sound, a line `frames: sound, ...` says so (of the frames alone), then
    replay or decoding is checked, through the last sequence number of that line: records a live
    writer appends meanwhile are left to the next verify. The last line is the verdict on the whole
    journal: `sound:` (exit 0), `not sound:` (the frames are sound, replay or decoding did not
    pass: the problems are above; exit 1) or `damaged:` (exit 1). An unknown --model is a usage
    error (exit 2) before anything is read; a directory that is not there or holds no journal
    exits 3.

    Snapshot files are checked without a model: one that cannot be read, is cut short, has a bad
    checksum, an unknown format, a state that does not hash to its digest or another journal's id
    is a note (replay skips it; snapshots are never the only copy of anything). A snapshot after
    the journal's last sequence (its last frame read whole, after any damage) is a problem: its
    records were made durable before it was written, so records were lost. With a model, a snapshot
    whose state is not the one replay rebuilds at its sequence number is a problem too: replay and
    time travel would start from it; delete it. Verify moves nothing; the next writer sets a
    snapshot past the journal's end aside.

    Examples:
      rewind verify /tmp/j
      rewind verify /tmp/j --model workspace

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
    let args = try Arguments(arguments, options: ["model"], flags: [])
    let directory = try args.directory()
    // An unknown --model is a usage error before the walk, not after it (or never, when the
    // journal turns out damaged).
    let model = try args.value("model").map { name throws(UsageError) in try context.registration(named: name) }
    let reader = try openJournal(directory)
    let progress = ProgressLine("verifying", context: context)
    defer { progress.finish() }  // an error then starts a line of its own
    // Damage may hide the end; then no progress is shown rather than failing before the check.
    let expected = (try? reader.lastSequence()) ?? 0
    let report = try reader.verify { progress.update($0, of: expected) }
    progress.finish()
    // Problems quote the journal's files and the directory typed: each line is made `visible`.
    for problem in report.problems { output.out(visible("problem: \(problem)") + "\n") }
    if let tail = report.unfinishedTail {
      output.out(
        visible(
          "note: unfinished last frame (a write in progress, or a torn tail the next writer moves aside): \(tail)")
          + "\n")
    }
    if report.preallocatedBytes > 0 {
      output.out(
        "note: \(report.preallocatedBytes) zero bytes of preallocated space end the last segment "
          + "(written ahead by a live writer, or left by one that stopped; not damage)\n")
    }
    for note in report.notes { output.out(visible("note: \(note)") + "\n") }
    for unindexed in report.unindexed { output.out(visible("note: \(unindexed)") + "\n") }
    // Snapshots are checked as files (no model needed): a bad one only costs replay time, but one
    // past the journal's end shows committed records were lost, as its records were made durable
    // before it was written (`SnapshotStore.write`). The journal's end is its last batch read,
    // past damage too: a snapshot after damaged frames lies inside it, and replay starts from it.
    var lostRecords = 0
    // A `snapshots` that is a link or a file is not the journal's folder: nothing in it is read
    // (`SnapshotStore.sequences`), and writing a snapshot there fails. Said, not passed over.
    let folder = directory + "/" + SnapshotStore.folderName
    if (try? FileManager.default.attributesOfItem(atPath: folder)) != nil, !PosixFileIO().isRealDirectory(folder) {
      output.out(
        visible(
          "note: \(SnapshotStore.folderName) is a symbolic link or a file, not a directory of the journal's own: no "
            + "snapshot is read from it, and none can be written") + "\n")
    }
    for problem in SnapshotStore(journal: directory).fileProblems(lastSequence: report.lastSequenceRead) {
      let file = "snapshots/\(problem.file)"
      if case .beyondJournal(let last) = problem.reason {
        lostRecords += 1
        output.out(
          visible(
            "problem: \(file): records up to \(problem.sequence) were made durable before this snapshot was "
              + "written; the journal ends at \(last)") + "\n")
      } else {
        output.out(Self.skippedSnapshotNote(problem))
      }
    }
    let advice =
      if let id = report.segmentsJournalID {
        // Repair refuses this journal (`badManifest`): the one file is likelier wrong than all.
        onlyTheManifestDisagrees(id)
      } else if report.problems.first?.missingBeforeIntactSegments == true {
        // Repair refuses this journal too: it would move the intact segments after the gap aside.
        "Records are missing before intact segments: restore the segment that held them from a backup. "
          + "`rewind repair` refuses such a journal and moves nothing."
      } else if report.isSound {
        "Records after sequence \(report.lastSequence) were lost: restore the journal from a backup if there "
          + "is one. The next writer moves such snapshots aside (`rewind repair` leaves a sound journal alone)."
      } else if report.problems.contains(where: { $0.zerosOnly || $0.holdsNoRecord || $0.headerRebuildable }),
        report.problems.allSatisfy({ $0.zerosOnly || $0.holdsNoRecord || $0.strayFile || $0.headerRebuildable })
      {
        // Damage that repair takes out keeping every segment and every record.
        "`rewind repair \(shellWord(directory))` "
          + [
            report.problems.contains(where: \.headerRebuildable)
              ? "writes the damaged segment \(report.problems.count(where: \.headerRebuildable) == 1 ? "header" : "headers") again"
              : nil,
            report.problems.contains(where: { $0.zerosOnly || $0.holdsNoRecord })
              ? [
                report.problems.contains(where: \.holdsNoRecord) ? "moves the bytes that are no batch aside" : nil,
                report.problems.contains(where: \.zerosOnly) ? "cuts the zeros" : nil,
              ].compactMap { $0 }.joined(separator: " and ") + ", which hold no record" : nil,
          ].compactMap { $0 }.joined(separator: ", and ") + ", keeping every segment"
          + (report.problems.contains(where: \.strayFile) ? ", and moves the stray files aside." : ".")
      } else {
        "`rewind repair \(shellWord(directory))` moves the damaged part aside."
      }
    let whole = report.isSound && lostRecords == 0
    let frames =
      "\(counted(report.records, "record")) in \(counted(report.batches, "frame")), \(counted(report.segments, "segment")), "
      + "last sequence \(report.lastSequence)"
    output.out(
      whole
        ? "frames: sound, \(frames)\n"
        : visible(
          "damaged: \(counted(report.problems.count + lostRecords, "problem")); intact up to sequence \(report.lastSequence). \(advice)"
        )
          + "\n"
    )
    guard whole else { return .findings }
    // With a model, replay decodes every event into its type; without one, the fields are decoded
    // as the audit commands render them.
    // The frames' line above judges the frames alone; the last line judges the whole journal.
    // Both bounded by the end the frames' walk read: a live writer's later records are judged by
    // the next verify, not by half of this one.
    let replayed = try verifyReplay(directory, model: model, through: report.lastSequence, context: context)
    let sound = try replayed ?? verifyDecoding(reader, through: report.lastSequence, context: context)
    let checker = replayed == nil ? "event decoding" : "replay"
    output.out(
      sound
        ? "sound: \(frames); frames and \(checker) checked\n"
        : "not sound: the frames are sound through sequence \(report.lastSequence), but \(checker) did not pass: "
          + "see the problems above\n")
    return sound ? .success : .findings
  }

  /// The note for a snapshot file every reader skips: it only costs replay time.
  static func skippedSnapshotNote(_ problem: SnapshotProblem) -> String {
    visible("note: snapshots/\(problem.file) \(problem.reason); replay skips it (a snapshot is only a shortcut)") + "\n"
  }
}
