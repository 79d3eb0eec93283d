import Foundation
import RewindTestSupport
import Testing

/// How `rewind` reads its command line as a whole: no command, `help` with too much, and the
/// dashes before an option's name.
@Suite struct ToolUsageTests {
  /// With no arguments the overview went to standard output with exit 2: a usage error, but not
  /// where usage errors go.
  @Test func noCommandIsAUsageErrorOnStandardError() async throws {
    let none = try await ToolRun.run("rewind", [])
    #expect(none.status == 2)
    #expect(none.out.isEmpty, "\(none.out)")
    #expect(none.err.contains("Usage: rewind COMMAND"))
    let help = try await ToolRun.run("rewind", ["help"])
    #expect(help.status == 0)
    #expect(help.out.contains("Usage: rewind COMMAND"))
  }

  /// `rewind help log extra` printed the overview with exit 0.
  @Test func helpTakesOneCommand() async throws {
    let run = try await ToolRun.run("rewind", ["help", "log", "extra"])
    #expect(run.status == 2, "\(run.out)")
    #expect(run.out.isEmpty)
    #expect(run.err == "rewind help: unexpected argument 'extra'; rewind help COMMAND shows one command's help\n")
  }

  /// `rewind --help extra` printed the overview with exit 0. In the command's place, `--help` and
  /// `-h` are `help`: what follows is a command's name, and anything more is a usage error.
  /// (After a command, `--help` where a flag could stand wins over any other argument: see
  /// `ArgumentTests.helpIsAskedOnlyWhereAFlagCouldStand`.)
  @Test func helpInTheCommandsPlaceTakesOneCommand() async throws {
    for flag in ["--help", "-h"] {
      let extra = try await ToolRun.run("rewind", [flag, "extra"])
      #expect(extra.status == 2, "\(flag): \(extra.out)")
      #expect(extra.out.isEmpty, "\(flag): \(extra.out)")
      #expect(extra.err == "rewind extra: unknown command 'extra'; run rewind --help for the list\n", "\(extra.err)")
      let more = try await ToolRun.run("rewind", [flag, "log", "extra"])
      #expect(more.status == 2, "\(flag): \(more.out)")
      #expect(
        more.err == "rewind \(flag): unexpected argument 'extra'; rewind help COMMAND shows one command's help\n",
        "\(more.err)")
      let log = try await ToolRun.run("rewind", [flag, "log"])
      #expect(log.status == 0, "\(flag): \(log.err)")
      #expect(log.out.hasPrefix("Usage: rewind log DIR"), "\(flag): \(log.out)")
      let alone = try await ToolRun.run("rewind", [flag])
      #expect(alone.status == 0 && alone.out.contains("Usage: rewind COMMAND"), "\(flag): \(alone.out)")
    }
  }

  /// Help about help is the overview. `rewind help --help` was rewritten to `--help --help`,
  /// which was rewritten to itself: the command never returned.
  @Test func helpAboutHelpIsTheOverview() async throws {
    for first in ["help", "--help", "-h"] {
      for second in ["help", "--help", "-h"] {
        let run = try await ToolRun.run("rewind", [first, second])
        #expect(run.status == 0, "\(first) \(second): \(run.err)")
        #expect(run.out.contains("Usage: rewind COMMAND"), "\(first) \(second): \(run.out)")
      }
    }
  }

  /// `rewind log` on a directory that is not a journal said "not a Rewind journal (manifest.json)
  /// in journal DIR", then advice for a directory with segments, which it has not. Every command
  /// that reads a journal says the same plain line (`verify` too).
  @Test func aDirectoryThatIsNotAJournalIsNamedPlainly() async throws {
    let dir = TemporaryDirectory("cli-not-a-journal")
    try Files.write(Array("shopping list".utf8), to: dir.appending("notes.txt"))
    for command in ["log", "verify", "stats", "tail"] {
      let run = try await ToolRun.run("rewind", [command, dir.path])
      #expect(run.status == 3, "\(command): \(run.out)")
      #expect(
        run.err
          == "rewind \(command): \(dir.path) is not a Rewind journal: it holds no manifest.json and no segment. "
          + "Check the path (rewind COMMAND DIR takes a journal directory).\n", "\(command): \(run.err)")
    }
  }

  /// Any number of dashes was taken: `-from 5`, `---from 5`.
  @Test func anOptionTakesExactlyTwoDashesALetterOne() async throws {
    let dir = TemporaryDirectory("cli-dashes")
    let journal = dir.appending("journal")
    let demo = try await ToolRun.run("rewind", ["demo", journal, "--events", "20", "--seed", "1"])
    #expect(demo.status == 0, "\(demo.err)")
    let cases: [([String], String)] = [
      (["log", journal, "-from", "5"], "rewind log: unknown option -from; did you mean --from?\n"),
      (["log", journal, "---from", "5"], "rewind log: unknown option ---from\n"),
      (["log", journal, "-json"], "rewind log: unknown option -json; did you mean --json?\n"),
      (["tail", journal, "-from", "5"], "rewind tail: unknown option -from; did you mean --from?\n"),
      // A whole option's name after one dash, starting with a one-letter option's letter: export
      // read `-output` as `-o utput` and wrote the export to a file of that name, exit 0 (found by
      // the review of the arguments, Dec 6).
      (["export", journal, "--jsonl", "-output"], "rewind export: unknown option -output; did you mean --output?\n"),
      (
        ["export", journal, "--jsonl", "-origin", "user"],
        "rewind export: unknown option -origin; did you mean --origin?\n"
      ),
    ]
    for (arguments, message) in cases {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 2, "\(arguments): \(run.out)")
      #expect(run.err == message, "\(arguments)")
    }
    // The documented short forms stand.
    for arguments in [["tail", journal, "-n", "2"], ["tail", journal, "-n2"], ["log", journal, "--limit=2"]] {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 0, "\(arguments): \(run.err)")
      #expect(run.out.split(separator: "\n").count == 2, "\(arguments): \(run.out)")
    }
  }
}
