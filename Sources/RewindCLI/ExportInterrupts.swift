import Foundation

/// `export --output`'s answer to SIGINT (Ctrl-C), SIGTERM and SIGHUP, through `Interrupts`: the
/// temporary file is removed, FILE is left as it was, one line says so, and the process ends by
/// the signal. The temporary file's creation and its rename over FILE run as `Interrupts` steps
/// (`FileIO.replaceFile`'s `step`), so the handler finds exactly one of no temporary file yet,
/// one being written (removed), or FILE replaced (kept: the export is whole, only the
/// directory's sync is cut short).
enum ExportInterrupts {
  /// How far the export being written has got.
  enum Stage: Sendable {
    case starting
    case writing(temporary: String)
    case replaced
  }

  /// Handles the signals from now until `end()`, for the export to `file`.
  static func watch(_ file: ExportFile, output: RewindTool.Output) {
    Interrupts.watch(
      ExportCommand.name, output: output, progressWidth: ProgressLine.widest(label: ExportCommand.progressLabel)
    ) { cleanUp(file, at: .starting) }
  }

  /// Runs one of `replaceFile`'s steps under the handler's lock, and notes `stage` when it
  /// returns: no signal is handled between the two.
  static func step(_ stage: Stage, of file: ExportFile, _ run: () throws -> Void) throws {
    try Interrupts.step(run) { cleanUp(file, at: stage) }
  }

  /// The export is over (written, or failed and cleaned up): a signal now ends the process with
  /// its status and nothing more to do.
  static func end() { Interrupts.end() }

  /// Removes what the export to `file` has made by `stage` (its temporary file, never FILE) and
  /// says what is left.
  static func cleanUp(_ file: ExportFile, at stage: Stage) -> String {
    switch stage {
    case .starting:
      return file.untouched
    case .writing(let temporary):
      unlink(temporary)
      return file.untouched + ", its temporary file removed"
    case .replaced:
      return "the export was written to \(file.path), but its directory was not synced"
    }
  }
}
