import Foundation
import Notebook
import Rewind
import RewindCLI
import RewindJournal
import RewindTestSupport
import Testing

/// `rewind debug` fed scripts on standard input at the edges: every command given bad
/// arguments answers with one error line naming it and the session goes on; the end of input
/// ends it; the same script gives the same output.
@Suite struct DebugScriptEdgeTests {
  static func rewind(_ arguments: [String], input: String) async throws -> ToolRun {
    try await ToolRun.run("notebook-rewind", arguments, input: input)
  }

  /// Each line a command with arguments it cannot use.
  static let badLines = [
    "step -1", "step x", "step 1.5", "step 1 2", "back -1", "back abc", "back 2 x",
    "goto", "goto -5", "goto x", "goto 1 2", "goto 99999999999999999999", "goto 1e3", "goto 1999-01-01T00:00:00Z",
    "event x", "event 0", "event -1", "event 99999999", "event 1 2",
    "find", "find name", "find entity", "find foo bar", "find name no.such", "find entity nothing",
    "print a b", "print nosuch", "query nosuch", "check nosuch",
    "diff", "diff 1", "diff a b", "diff 1 999999", "diff -1 2", "diff 1 2 3",
    "watch", "watch a b", "unwatch x", "unwatch",
    "blame", "blame nosuch", "blame a b",
    "prepare 0", "prepare -1", "prepare x", "prepare 99999999999999G", "prepare 1.5G", "prepare 1 2",
    "frobnicate", "STEP",
    // Commands that take no arguments refused them silently (`mark 5000` marked here, `quit now`
    // ended the session): found by the review of `rewind debug`, Dec 6.
    "mark 5000", "where 300", "refresh 99", "help me", "quit now", "exit 1", "goto -0",
    "prepare 9223372036855",
  ]

  @Test func everyCommandWithBadArgumentsSaysSoAndTheSessionGoesOn() async throws {
    let journal = try await NotebookJournal.write(commands: 20, seed: 21)
    let last = journal.lastSequence
    let script = (Self.badLines.flatMap { [$0, "where"] } + ["goto 3"]).joined(separator: "\n")  // no final newline
    let run = try await Self.rewind(["debug", journal.path], input: script)
    let errors = run.err.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    #expect(errors.count == Self.badLines.count, "\(run.err)")
    for (line, error) in zip(Self.badLines, errors) {
      let command = String(line.split(separator: " ")[0])
      #expect(error.hasPrefix("error: \(command): "), "\(line): \(error)")
      #expect(error.count > "error: \(command): ".count + 10, "\(line): \(error)")
    }
    // After every failing command, `where` says the session still stands at 0.
    let out = run.out.split(separator: "\n").map(String.init)
    #expect(out.filter { $0 == "at 0 of \(last): the empty state" }.count == Self.badLines.count, "\(run.out)")
    #expect(out.last?.hasPrefix("at 3 of \(last): #3 ") == true, "\(run.out)")
    #expect(run.status == 2)
    let again = try await Self.rewind(["debug", journal.path], input: script)
    #expect(again.out == run.out && again.err == run.err && again.status == run.status)
  }

  /// What the review of `rewind debug` (Dec 6) found said wrong: a command given words it takes
  /// none of says so; `goto -0` is out of range as `goto -1` is; a size too large for bytes says
  /// so, not that it is no whole number; an unknown word of thousands of characters is not echoed
  /// whole.
  @Test func refusalsSayWhatIsWrong() async throws {
    let journal = try await NotebookJournal.write(commands: 5, seed: 23)
    let long = String(repeating: "x", count: 5_000)
    let script = ["mark 5000", "quit now", "goto -0", "goto -99999999999999999999", "prepare 9223372036855", long]
    let run = try await Self.rewind(["debug", journal.path], input: script.joined(separator: "\n") + "\n")
    let err = run.err.split(separator: "\n").map(String.init)
    #expect(err.count == script.count, "\(run.err)")
    guard err.count == script.count else { return }
    #expect(err[0] == "error: mark: usage: mark (it takes no arguments), not '5000'")
    #expect(err[1] == "error: quit: usage: quit (it takes no arguments), not 'now'")
    let range = "is out of range: sequence numbers start at 0; give one in 0...\(journal.lastSequence)"
    #expect(err[2] == "error: goto: sequence -0 \(range)")
    #expect(err[3] == "error: goto: sequence -99999999999999999999 \(range)")
    #expect(
      err[4]
        == "error: prepare: usage: prepare [SIZE]: 9223372036855 is more than this process can count in bytes (at "
        + "most 9223372036854 megabytes)")
    #expect(err[5] == "error: \(long.prefix(60))… (5000 bytes): unknown command; `help` lists the commands")
    #expect(run.status == 2)
  }

  /// A count too large for any sequence number is a whole number still: `step` goes to the end
  /// and `back` to the start, saying how far of what was asked, as for `UInt64.max`.
  @Test func aCountPastEveryNumberMovesToTheEdge() async throws {
    let journal = try await NotebookJournal.write(commands: 5, seed: 22)
    let last = journal.lastSequence
    let huge = "99999999999999999999"
    let run = try await Self.rewind(["debug", journal.path], input: "step \(huge)\nback \(huge)\n")
    #expect(run.err.isEmpty && run.status == 0, "\(run.err)")
    let out = run.out.split(separator: "\n").map(String.init)
    #expect(out.count == 4, "\(run.out)")
    #expect(out.first?.hasPrefix("at \(last) of \(last): ") == true, "\(run.out)")
    #expect(
      out.dropFirst().first == "stopped at the journal's end, sequence \(last): \(last) of the \(huge) records asked")
    #expect(out.dropFirst(2).first == "at 0 of \(last): the empty state")
    #expect(out.last == "stopped at the start, sequence 0: \(last) of the \(huge) records asked")
  }

  /// A segment missing in the middle hides the journal's end: `find name` finds the records
  /// before it, as every other move reaches them, and says there is none when it finds none
  /// before the damage.
  @Test func findNameServesTheRecordsBeforeAMissingSegment() async throws {
    let (journal, _, _, _, before, scratch) = try await MissingSegmentCommandTests.journals()
    defer { withExtendedLifetime(scratch) {} }
    let run = try await Self.rewind(
      ["debug", journal.path],
      input: "find name notebook.created\nfind name note.created\ngoto \(before - 1)\n"
        + "find name no.such\nwhere\n")
    let out = run.out.split(separator: "\n").map(String.init)
    #expect(out.first?.hasPrefix("at 1 of \(before): #1 ") == true, "\(run.out)\(run.err)")
    #expect(out.dropFirst().first?.hasPrefix("at ") == true, "\(run.out)")
    #expect(out.last?.hasPrefix("at \(before - 1) of \(before)") == true, "\(run.out)")
    let errors = run.err.split(separator: "\n").map(String.init)
    #expect(errors.count == 2, "\(run.err)")
    #expect(
      errors.last
        == "error: find: no record after sequence \(before - 1) is named no.such (the records before the damage that "
        + "hides the journal's end)", "\(run.err)")
    #expect(run.status == 3)
  }
}
