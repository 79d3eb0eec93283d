import Foundation
import Rewind
import RewindJournal

extension VerifyCommand {
  /// The replay part of `verify`: replays the journal through `last` (the end the walk of the
  /// frames read) with the registered model (no snapshots), compares every checkpoint digest
  /// written by this model code with the rebuilt state (a mark without a digest is noted,
  /// harmless; a digest naming no mark is a problem), and checks that every store's cache equals
  /// a recomputation from its records.
  /// - Returns: whether it found nothing wrong; nil when no registered model reads the journal, so
  ///   replay was not checked.
  /// - Parameter chosen: the model `--model` named, resolved before the frames were walked; nil
  ///   to find the one registered model that reads the journal.
  static func verifyReplay(
    _ directory: String, model chosen: ModelRegistration?, through last: UInt64, context: RewindTool.Context
  ) throws -> Bool? {
    let output = context.output
    guard !context.models.isEmpty else {
      output.out("note: replay not checked: this rewind has no registered model (see the README)\n")
      return nil
    }
    let model: ModelRegistration
    if let chosen {
      model = chosen
    } else {
      let journal = try context.readers(of: directory)
      // A model that alone knows most of the journal's event names is its model, though it
      // cannot read a record there (a newer version, an unknown name, one that is no event): its
      // replay names that record as a problem, which skipping the replay with a note would hide.
      let readers = journal.readers.isEmpty && journal.knowing.count == 1 ? journal.knowing : journal.readers
      guard readers.count == 1 else {
        // How much of the journal each model knows: a journal of which one knows half the names
        // (an app of its own sharing one, or a newer version of that model's app) is no model's.
        let knownShare = zip(context.models, journal.known).filter { $0.1 > 0 }.map {
          "\($0.0.name) knows \($0.1) of \(journal.names)"
        }
        let names = context.models.map(\.name).joined(separator: ", ")
        let none =
          knownShare.isEmpty
          ? "knows this journal's events"
          : "knows more than half of this journal's event names (\(knownShare.joined(separator: ", ")))"
        output.out(
          readers.isEmpty
            ? "note: replay not checked: no registered model (\(names)) \(none)\n"
            : "note: replay not checked: several models read this journal; pick one with --model NAME\n")
        return nil
      }
      model = readers[0]
    }
    let progress = ProgressLine("verifying replay", context: context)
    defer { progress.finish() }  // an error then starts a line of its own
    let verification: ReplayVerification
    do {
      verification = try model.verify(directory, last, progress.callback)
      progress.finish()
    } catch let error as ReplayError {
      progress.finish()
      output.out(visible("problem: replay of \(model.name) stops at sequence \(error.sequence): \(error)") + "\n")
      return false
    }
    let report = verification.report
    var sound = true
    if let divergence = report.firstDivergence {
      sound = false
      output.out(
        visible(
          "problem: replay diverges from the recorded checkpoints first at sequence \(divergence.sequence): "
            + "\(divergence)") + "\n")
    }
    if let stray = report.strayCheckpointDigests.first {
      sound = false
      let records =
        report.strayCheckpointDigests.count == 1
        ? "a checkpoint digest record at sequence \(stray) names no checkpoint mark of this model code before it"
        : "\(report.strayCheckpointDigests.count) checkpoint digest records, the first at sequence \(stray), name no "
          + "checkpoint mark of this model code before them"
      output.out(
        "problem: \(records) (a digest follows its mark): the journal is not what its writer wrote\n")
    }
    for divergence in report.snapshotDivergences {
      sound = false
      output.out(visible("problem: \(divergence)") + "\n")
    }
    // Files whose bytes hash to their digest but whose state readers refuse (it does not decode,
    // or encode back): skipped by every reader, as the files noted below are.
    for problem in report.skippedSnapshots { output.out(VerifyCommand.skippedSnapshotNote(problem)) }
    for problem in verification.cacheProblems {
      sound = false
      output.out(visible("problem: cache incoherent after sequence \(report.lastSequence): \(problem)") + "\n")
    }
    var line =
      "replay: \(model.name) rebuilt through sequence \(report.lastSequence), "
      + "\(counted(report.checkpointsVerified, "checkpoint")) and \(counted(report.snapshotsVerified, "snapshot")) verified"
    if report.checkpointsSkipped > 0 {
      line += ", \(report.checkpointsSkipped) written by other model code not compared"
    }
    if let unfinished = report.unfinishedCheckpoints.first {
      line +=
        report.unfinishedCheckpoints.count == 1
        ? ", a checkpoint mark without a digest (at sequence \(unfinished); harmless: the writer stopped before "
          + "appending it, or is still writing)"
        : ", \(report.unfinishedCheckpoints.count) checkpoint marks without a digest (the first at sequence "
          + "\(unfinished); harmless: the writer stopped before appending them, "
          + "or is still writing)"
    }
    line += sound ? ", caches coherent\n" : "\n"
    output.out(line)
    return sound
  }
}
