import Foundation
import Rewind

/// Progress of a long operation on standard error, only when it is a terminal: one line,
/// `LABEL P% (sequence N of M)`, rewritten in place when the percentage changes, and cleared by
/// `finish()`. When standard error is not a terminal it writes nothing at all. Commands also call
/// `finish()` in a `defer`: an error that ends them must not trail the line (`finish()` is
/// idempotent).
final class ProgressLine: @unchecked Sendable {
  // `@unchecked`: used only from the thread running the command (replay calls back on it).
  private let output: RewindTool.Output
  private let enabled: Bool
  private let label: String
  private var shown = false
  private var last: (percent: Int, total: UInt64)?

  /// - Parameter streaming: the command writes its results to standard output as it goes; then
  ///   progress is shown only when standard output is not the terminal too.
  init(_ label: String, context: RewindTool.Context, streaming: Bool = false) {
    self.label = label
    output = context.output
    enabled = context.stderrIsTerminal && !(streaming && context.stdoutIsTerminal)
  }

  /// The callback for `Replay.run`, the time machine and the registration's replays, or nil when
  /// progress is not shown.
  var callback: ((ReplayProgress) -> Void)? {
    guard enabled else { return nil }
    return { [self] progress in update(progress.sequence, of: progress.target) }
  }

  /// Shows that `done` of `total` sequence numbers are through (nothing when `total` is 0: unknown).
  func update(_ done: UInt64, of total: UInt64) {
    guard enabled, total > 0 else { return }
    // In full width: a sequence number past `UInt64.max / 100` (a journal's first segment may be
    // named for any) times 100 overflows 64 bits.
    let percent = Int(total.dividingFullWidth(min(done, total).multipliedFullWidth(by: 100)).quotient)
    guard last?.percent != percent || last?.total != total else { return }
    last = (percent, total)
    output.err("\r\(label) \(percent)% (sequence \(done) of \(total))\u{1B}[K")
    shown = true
  }

  /// Clears the line.
  func finish() {
    if shown { output.err("\r\u{1B}[K") }
    shown = false
    last = nil
  }
}
