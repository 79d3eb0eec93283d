import Foundation
import Rewind

/// Progress of a long operation on standard error, only when it is a terminal: one line,
/// `LABEL P% (sequence N of M)`, rewritten in place when the percentage changes, and cleared by
/// `finish()`. When standard error is not a terminal it writes nothing at all. Commands also call
/// `finish()` in a `defer`: an error that ends them must not trail the line (`finish()` is
/// idempotent). On a terminal that cannot erase (`TERM` unset, empty or `dumb`:
/// `RewindTool.erasesLines(term:)`), the line is padded with spaces over the longer one before
/// it, and cleared with spaces, instead of the escape that erases the rest of a line.
package final class ProgressLine: @unchecked Sendable {
  // `@unchecked`: used only from the thread running the command (replay calls back on it).
  private let output: RewindTool.Output
  private let enabled: Bool
  private let erases: Bool
  private let label: String
  private var shown = false
  private var last: (percent: Int, total: UInt64)?
  /// The characters of the line shown, which the next one pads over where nothing erases.
  private var width = 0

  /// - Parameter streaming: the command writes its results to standard output as it goes; then
  ///   progress is shown only when standard output is not the terminal too.
  init(_ label: String, context: RewindTool.Context, streaming: Bool = false) {
    self.label = label
    output = context.output
    enabled = context.stderrIsTerminal && !(streaming && context.stdoutIsTerminal)
    erases = context.terminalErasesLines
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
    // ASCII: as many characters as columns.
    let text = "\(label) \(percent)% (sequence \(done) of \(total))"
    output.err("\r" + text + (erases ? Self.eraseToEnd : String(repeating: " ", count: max(0, width - text.count))))
    width = text.count
    shown = true
  }

  /// Clears the line.
  func finish() {
    if shown { output.err(Self.clearing(width, erases: erases)) }
    shown = false
    last = nil
    width = 0
  }

  /// The escape that erases from the cursor to the end of the line (`EL`, `ESC [ K`).
  private static let eraseToEnd = "\u{1B}[K"

  /// What clears a line of `width` characters and leaves the cursor at its start: a carriage
  /// return and the escape, or where nothing erases, spaces over it and a carriage return again.
  package static func clearing(_ width: Int, erases: Bool) -> String {
    erases ? "\r" + eraseToEnd : "\r" + String(repeating: " ", count: width) + "\r"
  }

  /// The widest line a progress labelled `label` can show: 100% of two sequence numbers of 20
  /// digits (what an interrupt's message clears when it cannot know the line shown).
  static func widest(label: String) -> Int {
    "\(label) 100% (sequence  of )".count + 2 * String(UInt64.max).count
  }
}
