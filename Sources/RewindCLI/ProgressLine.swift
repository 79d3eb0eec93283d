import Foundation
import Rewind

/// Progress on standard error, only when it is a terminal: one line, rewritten in place.
final class ProgressLine: @unchecked Sendable {
  // `@unchecked`: used only from the thread running the command (replay calls back on it).
  private let output: RewindTool.Output
  private let enabled: Bool
  private let label: String
  private var shown = false

  init(_ label: String, context: RewindTool.Context) {
    self.label = label
    output = context.output
    enabled = context.stderrIsTerminal
  }

  /// The callback for `Replay.run`, or nil when progress is not shown.
  var callback: ((ReplayProgress) -> Void)? {
    guard enabled else { return nil }
    return { [self] progress in
      let percent = progress.target == 0 ? 100 : Int(progress.sequence * 100 / max(1, progress.target))
      output.err("\r\(label) \(percent)% (sequence \(progress.sequence) of \(progress.target))\u{1B}[K")
      shown = true
    }
  }

  /// Clears the line.
  func finish() {
    if shown { output.err("\r\u{1B}[K") }
    shown = false
  }
}
