import Foundation
import Rewind
import RewindJournal

enum SnapshotCommand: RewindCommand {
  static let name = "snapshot"
  static let summary = "write a snapshot of the journal's last state"
  static let help = """
    Usage: rewind snapshot DIR [--keep K] [--model NAME]

    Replays the journal in DIR (from the newest usable snapshot) and writes the state after its
    last record to DIR/snapshots/, atomically; with --keep K (1 to 1000000: the one written is
    always kept), then removes all but the newest K usable snapshots at or before it (a damaged
    file, another journal's, other model code's or one of another history counts for nothing:
    left when newer than the oldest kept, removed with the rest when older; one past the
    journal's end, a sign of records lost, is left for `rewind verify` to report, with a note).
    When the newest usable snapshot already holds the last state, nothing is written, and the
    line says "already on disk, nothing written".
    Snapshots only ever save time: replay checks each one and skips any that is corrupt,
    foreign, written by other model code, or of another history (its last record is not the one
    the journal holds at its number: the journal was cut there and written again) (`rewind
    replay` and `verify` list them).
    May run while a writer appends.
    Exit 1 when the replay finds a checkpoint of this model code whose digest differs from the
    state it rebuilt (nothing is written: a snapshot would carry that state past the checkpoint
    that shows it); 2 for bad arguments (--keep 0 among them: nothing is written or removed); 3
    when the journal cannot be read to its last record (damage, located).

    Examples:
      rewind snapshot /tmp/j
      rewind snapshot /tmp/j --keep 4

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
    let args = try Arguments(arguments, options: ["model", "keep"], flags: [])
    let directory = try args.directory()
    let keep = args.value("keep") == nil ? nil : try args.integer("keep", default: 0, range: 1...1_000_000)
    // The whole history is read: damage that hides the end is reported before anything else.
    try JournalBounds(directory: directory).requireEnd()
    let model = try context.registration(for: directory, named: args.value("model"))
    let progress = ProgressLine("replaying", context: context)
    defer { progress.finish() }  // an error then starts a line of its own
    let written: (sequence: UInt64, digest: StateDigest, written: Bool)?
    do {
      written = try replaying(model, directory) { try model.snapshot(directory, progress.callback) }
    } catch let diverged as Snapshots.DivergedState {
      progress.finish()
      output.err(
        visible("rewind snapshot: \(diverged); `rewind verify \(shellWord(directory))` checks the whole journal") + "\n"
      )
      return .findings
    }
    progress.finish()
    guard let written else {
      output.out(visible("the journal \(directory) is empty: no snapshot written") + "\n")
      return .success
    }
    if written.written {
      output.out("snapshot of \(model.name) at sequence \(written.sequence), digest \(written.digest)\n")
    } else {
      output.out(
        "snapshot of \(model.name) at sequence \(written.sequence), digest \(written.digest): already on disk, "
          + "nothing written\n")
    }
    if let keep {
      // Among the snapshots at or before the one written: one past the journal's end (records
      // lost) would otherwise count among the newest and push out the one just written.
      let store = SnapshotStore(journal: directory)
      let removed = try store.prune(keeping: keep, through: written.sequence, fingerprint: model.fingerprint)
      if !removed.isEmpty { output.out("pruned snapshots at \(removed.map(String.init).joined(separator: ", "))\n") }
      // A writer appending meanwhile may have written a later snapshot of its own: only one past
      // the end as read after the listing is a sign of records lost.
      let (_, end, past) = store.pastTheEnd(lastSequence: written.sequence)
      for past in past {
        output.err(
          visible(
            "note: snapshots/\(SnapshotStore.fileName(past)) is past the journal's end, \(end): --keep "
              + "leaves it; records were lost after it was written (`rewind verify \(shellWord(directory))` reports it, and the "
              + "next writer moves it aside)") + "\n")
      }
    }
    return .success
  }
}
