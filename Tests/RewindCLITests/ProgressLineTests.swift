import RewindTestSupport
import Testing

@testable import RewindCLI

/// The progress line on a terminal (found by the review of the audit commands, Dec 6): its
/// percentage multiplied the sequence number by 100 in 64 bits, so a journal whose sequence
/// numbers pass `UInt64.max / 100` (its first segment may be named for any) trapped `export`,
/// `verify` and `stats` with an arithmetic overflow whenever standard error was a terminal.
@Suite struct ProgressLineTests {
  static func line(erasing: Bool = true) -> (ProgressLine, Locked<[String]>) {
    let written = Locked<[String]>([])
    let output = RewindTool.Output(out: { _ in }, err: { text in written.withLock { $0.append(text) } })
    let context = RewindTool.Context(
      output: output, models: [], stderrIsTerminal: true, stdoutIsTerminal: false, terminalErasesLines: erasing)
    return (ProgressLine("exporting", context: context), written)
  }

  /// Where the terminal cannot erase (`TERM=dumb`), a line shorter than the one before is padded
  /// with spaces over it, and `finish` clears the last with spaces: no escape is written.
  @Test func aTerminalThatCannotEraseGetsSpaces() {
    let (progress, written) = Self.line(erasing: false)
    progress.update(500, of: 1000)
    progress.update(10, of: 10)
    progress.update(10, of: 10)
    progress.finish()
    progress.finish()
    let long = "exporting 50% (sequence 500 of 1000)"
    let short = "exporting 100% (sequence 10 of 10)"
    #expect(
      written.withLock { $0 } == [
        "\r" + long,
        "\r" + short + String(repeating: " ", count: long.count - short.count),
        "\r" + String(repeating: " ", count: short.count) + "\r",
      ])
  }

  /// `TERM` names a terminal that erases with `ESC [ K` unless it is unset, empty or `dumb`.
  @Test func whichTerminalsErase() {
    #expect(RewindTool.erasesLines(term: "xterm-256color"))
    #expect(RewindTool.erasesLines(term: "linux"))
    #expect(!RewindTool.erasesLines(term: "dumb"))
    #expect(!RewindTool.erasesLines(term: ""))
    #expect(!RewindTool.erasesLines(term: nil))
  }

  /// What an interrupt's message clears with, not knowing the line shown: the widest export
  /// progress line, of two 20-digit sequence numbers.
  @Test func theWidestLineIsClearedWhereNothingErases() {
    let widest = "exporting 100% (sequence \(UInt64.max) of \(UInt64.max))"
    #expect(ProgressLine.widest(label: "exporting") == widest.count)
    #expect(ProgressLine.clearing(3, erases: false) == "\r   \r")
    #expect(ProgressLine.clearing(3, erases: true) == "\r\u{1B}[K")
  }

  @Test func sequencesPastAHundredthOfTheRangeShowTheirPercentage() {
    let (progress, written) = Self.line()
    let total = UInt64.max - 1
    progress.update(total / 2, of: total)
    progress.update(total, of: total)
    progress.update(UInt64(4_611_686_018_427_387_904), of: UInt64(4_611_686_018_427_387_905))
    progress.finish()
    #expect(
      written.withLock { $0 } == [
        "\rexporting 50% (sequence \(total / 2) of \(total))\u{1B}[K",
        "\rexporting 100% (sequence \(total) of \(total))\u{1B}[K",
        "\rexporting 99% (sequence 4611686018427387904 of 4611686018427387905)\u{1B}[K",
        "\r\u{1B}[K",
      ])
  }

  /// Small numbers, as before: one line per percentage, none when nothing is known of the total.
  @Test func smallSequencesAsBefore() {
    let (progress, written) = Self.line()
    progress.update(1, of: 0)
    progress.update(1, of: 3)
    progress.update(2, of: 3)
    progress.update(2, of: 3)
    progress.update(7, of: 3)
    #expect(
      written.withLock { $0 } == [
        "\rexporting 33% (sequence 1 of 3)\u{1B}[K",
        "\rexporting 66% (sequence 2 of 3)\u{1B}[K",
        "\rexporting 100% (sequence 7 of 3)\u{1B}[K",
      ])
  }
}
