import Foundation
import RewindTestSupport
import Testing

@testable import RewindCLI

/// How every command reads its arguments: where `--help` asks for help, options given twice, and
/// negative numbers where a sequence number or a count is expected.
@Suite struct ArgumentTests {
  static func rewind(_ arguments: [String], input: String? = nil) async throws -> ToolRun {
    try await ToolRun.run("rewind", arguments, input: input)
  }

  /// A small seeded Notebook journal (`rewind demo --events 400 --seed 9`) in `dir/journal`.
  static func journal(in dir: TemporaryDirectory) async throws -> String {
    _ = try await BadInputTests.journal(in: dir)
    return dir.appending("journal")
  }

  @Test func helpIsAskedOnlyWhereAFlagCouldStand() async throws {
    let dir = TemporaryDirectory("cli-args-help")
    defer { withExtendedLifetime(dir) {} }
    let journal = try await Self.journal(in: dir)
    // As an option's value, --help and -h are the text searched for.
    for (option, value) in [("--type", "--help"), ("--origin", "-h"), ("--type", "-h")] {
      let run = try await Self.rewind(["log", journal, option, value])
      #expect(run.status == 2, "\(option) \(value): \(run.out)")
      #expect(!run.out.contains("Usage:"), "\(option) \(value)")
      #expect(run.err.contains("no event in \(journal) matches"), "\(run.err)")
    }
    let count = try await Self.rewind(["tail", journal, "-n", "--help"])
    #expect(count.status == 2)
    #expect(count.err.contains("-n needs a whole number in 0...9223372036854775807, not '--help'"), "\(count.err)")
    let quoted = try await Self.rewind(["log", journal, "--", "--help"])
    #expect(quoted.status == 2)
    #expect(quoted.err.contains("unexpected argument '--help'"), "\(quoted.err)")
    // Where a flag could stand, it asks for help, also after other options or a bad one.
    for arguments in [
      ["log", journal, "--limit", "2", "--help"], ["log", journal, "-h"], ["log", "--help"],
      ["log", journal, "--frobnicate", "--help"], ["diff", journal, "1", "--help", "2"],
    ] {
      let run = try await Self.rewind(arguments)
      #expect(run.status == 0, "\(arguments): \(run.err)")
      #expect(run.out.hasPrefix("Usage: rewind \(arguments[0]) DIR"), "\(arguments): \(run.out)")
    }
  }

  @Test func anOptionGivenTwiceIsAnError() async throws {
    let dir = TemporaryDirectory("cli-args-twice")
    defer { withExtendedLifetime(dir) {} }
    let journal = try await Self.journal(in: dir)
    let cases: [(arguments: [String], message: String)] = [
      (["log", journal, "--since", "2026-01-01", "--since", "2026-01-02"], "--since given twice"),
      (["log", journal, "--from", "5", "--to", "9", "--from", "7"], "--from given twice ('5' and '7')"),
      (["log", journal, "--type=note.created", "--type", "note.deleted"], "--type given twice"),
      (["log", journal, "--limit", "1", "--limit", "2"], "--limit given twice"),
      (["export", journal, "--jsonl", "--to", "5", "--to", "6"], "--to given twice"),
      (["tail", journal, "-n", "3", "-n", "4"], "-n given twice"),
      (["tail", journal, "-n", "3", "--lines", "4"], "-n and --lines are one option, given twice"),
      (["show", journal, "3", "--model", "notebook", "--model", "notebook"], "--model given twice"),
      (["replay", journal, "--to", "5", "--to", "6"], "--to given twice"),
      (["bisect", journal, "--invariant", "a", "--invariant", "b"], "--invariant given twice"),
      (["snapshot", journal, "--keep", "1", "--keep", "2"], "--keep given twice"),
      (["demo", dir.appending("demo"), "--seed", "1", "--seed", "2"], "--seed given twice"),
    ]
    for (arguments, message) in cases {
      let run = try await Self.rewind(arguments)
      #expect(run.status == 2, "\(arguments)")
      #expect(run.err.contains(message), "\(arguments): \(run.err)")
      #expect(run.out.isEmpty, "\(arguments): nothing runs")
    }
    // A flag given twice says the same thing twice.
    let flags = try await Self.rewind(["log", journal, "--limit", "1", "--json", "--json"])
    #expect(flags.status == 0, "\(flags.err)")
    #expect(flags.out.hasPrefix(#"{"seq":1,"#))
  }

  /// Sequence numbers are `UInt64`: every option that takes one takes any of them, digits alone.
  /// A --to past the journal's end reads to its end however far past it is; a --from past it,
  /// or a value that is no such number (too large, signed, not digits), is a usage error.
  @Test func aSequenceOptionTakesAnyUInt64() async throws {
    let dir = TemporaryDirectory("cli-args-uint64")
    defer { withExtendedLifetime(dir) {} }
    let journal = try await Self.journal(in: dir)
    let whole = try await Self.rewind(["export", journal, "--jsonl"])
    let lastLines = try await Self.rewind(["tail", journal, "-n", "3"])
    for to in ["400", "401", "9223372036854775807", "9223372036854775808", "18446744073709551615"] {
      let export = try await Self.rewind(["export", journal, "--jsonl", "--to", to])
      #expect(export.status == 0, "export --to \(to): \(export.err)")
      #expect(export.out == whole.out, "export --to \(to) reads to the end")
      let log = try await Self.rewind(["log", journal, "--from", "399", "--to", to])
      #expect(log.status == 0, "log --to \(to): \(log.err)")
      #expect(log.out.split(separator: "\n").count == 2, "log --to \(to): \(log.out)")
      let tail = try await Self.rewind(["tail", journal, "-n", "3", "--to", to])
      #expect(tail.status == 0, "tail --to \(to): \(tail.err)")
      #expect(tail.out == lastLines.out, "tail --to \(to)")
    }
    let max = "18446744073709551615"
    let cases: [(arguments: [String], message: String)] = [
      (
        ["export", journal, "--jsonl", "--to", "18446744073709551616"],
        "--to needs a whole number in 1...\(max), not '18446744073709551616'"
      ),
      (["export", journal, "--jsonl", "--to", "ten"], "--to needs a whole number in 1...\(max), not 'ten'"),
      (["log", journal, "--to", "+5"], "--to needs a whole number in 1...\(max), not '+5'"),
      (["log", journal, "--from", ""], "--from needs a whole number in 1...\(max), not ''"),
      (
        ["export", journal, "--jsonl", "--from", "9223372036854775808"],
        "--from 9223372036854775808 is out of range: the journal ends at sequence 400"
      ),
      (["tail", journal, "--from", max], "--from \(max) is out of range: the journal ends at sequence 400"),
      (["replay", journal, "--to", "+5"], "--to '+5' is not a whole number; give one in 0...400"),
      (["replay", journal, "--to", max], "--to \(max) is beyond the journal's last sequence number 400"),
      (["diff", journal, "1", "18446744073709551616"], "B 18446744073709551616 is beyond the journal's last sequence"),
    ]
    for (arguments, message) in cases {
      let run = try await Self.rewind(arguments)
      #expect(run.status == 2, "\(arguments)")
      #expect(run.err.contains(message), "\(arguments): \(run.err)")
      #expect(run.out.isEmpty, "\(arguments): nothing runs")
    }
    let debug = try await Self.rewind(["debug", journal], input: "goto +5\nstep +1\n")
    #expect(debug.status == 2)
    #expect(
      debug.err == "error: goto: '+5' is neither a sequence number nor an ISO 8601 time\n"
        + "error: step: expected a count of records, a whole number from 0, not '+1'\n", "\(debug.err)")
  }

  /// An argument that is not valid UTF-8 (a path named in another encoding) reached the commands
  /// with U+FFFD in place of its bad bytes, so `log` looked for another path and said it did not
  /// exist. It is a usage error now, saying so.
  @Test func anArgumentThatIsNotUTF8IsAUsageError() async throws {
    let rewind = try #require(ChildProcess.builtProduct("rewind"), "rewind must be built with the tests")
    let dir = TemporaryDirectory("cli-args-not-utf8")
    let run = try await ToolRun.run(
      "/bin/sh", ["-c", #"exec "$0" log "$1/bad$(printf '\377')name""#, rewind, dir.path])
    #expect(run.status == 2, "\(run.out)\(run.err)")
    #expect(run.err.contains("argument 2 ('\(dir.path)/bad\\xFFname')"), "\(run.err)")
    #expect(run.err.hasSuffix("whose name is valid UTF-8\n"), "\(run.err)")
    #expect(run.err.contains("is not valid UTF-8"), "\(run.err)")
    #expect(!run.err.contains("does not exist"), "\(run.err)")
    #expect(run.out.isEmpty)
  }

  @Test func aNegativeNumberIsOutOfRangeNotAnOption() async throws {
    let dir = TemporaryDirectory("cli-args-negative")
    defer { withExtendedLifetime(dir) {} }
    let journal = try await Self.journal(in: dir)
    let cases: [(arguments: [String], message: String)] = [
      (["diff", journal, "-1", "5"], "A -1 is out of range: sequence numbers start at 0"),
      (["diff", journal, "5", "-3"], "B -3 is out of range"),
      (["show", journal, "-1"], "the sequence number must be a whole number from 1, not '-1'"),
      (["replay", journal, "--to", "-1"], "--to -1 is out of range"),
      (["export", journal, "--jsonl", "--from", "-2"], "--from needs a whole number in 1..."),
      (["log", journal, "--to", "-2"], "--to needs a whole number in 1..."),
      (["tail", journal, "-n", "-1"], "-n needs a whole number in 0..."),
      (["tail", journal, "-5"], "the count is -n N (or --lines N): -n 5, not -5"),
      (["blame", journal, "-1"], "no event in \(journal) ever touched an entity '-1'"),
    ]
    for (arguments, message) in cases {
      let run = try await Self.rewind(arguments)
      #expect(run.status == 2, "\(arguments)")
      #expect(run.err.contains(message), "\(arguments): \(run.err)")
      #expect(!run.err.contains("unknown option"), "\(arguments)")
    }
    // Only a word starting with `-` can be a mistyped count: a directory named a letter and
    // digits (j1, h1) or digits alone is a path like any other.
    for name in ["j1", "h12", "123"] {
      try FileManager.default.copyItem(atPath: journal, toPath: dir.appending(name))
      let run = try await ToolRun.run("rewind", ["tail", name, "-n", "3"], in: dir.path)
      #expect(run.status == 0, "tail \(name): \(run.err)")
      #expect(run.out.split(separator: "\n").count == 3, "tail \(name)")
    }
    // A one-letter option takes its value attached (-n2), as head and tail do; a sign is no digit.
    let attached = try await Self.rewind(["tail", journal, "-n2"])
    #expect(attached.status == 0, "\(attached.err)")
    #expect(attached.out == (try await Self.rewind(["tail", journal, "-n", "2"])).out)
    #expect(attached.out.split(separator: "\n").count == 2)
    let signed = try await Self.rewind(["show", journal, "+5"])
    #expect(signed.status == 2)
    #expect(signed.err.contains("the sequence number must be a whole number from 1, not '+5'"), "\(signed.err)")
    let debug = try await Self.rewind(["debug", journal], input: "goto -1\nstep -2\nback -1\nevent -1\ndiff -1 2\n")
    #expect(debug.status == 2)
    let errors = debug.err.split(separator: "\n").map(String.init)
    #expect(
      errors == [
        "error: goto: sequence -1 is out of range: sequence numbers start at 0; give one in 0...400",
        "error: step: expected a count of records, a whole number from 0, not '-2'",
        "error: back: expected a count of records, a whole number from 0, not '-1'",
        "error: event: expected a sequence number in 1...400, not '-1'",
        "error: diff: expected two sequence numbers in 0...400",
      ], "\(debug.err)")
  }
}

/// "did you mean …?" for a near miss: an unknown command, a long option the command does not
/// take, a debug command. Only a single nearest name is offered, within two edits (one for short
/// names), so a guess never points at one of two names as near as each other.
@Suite struct NearMissTests {
  @Test func theNearestNameIsOfferedOnlyWhenItIsClearlyNearest() {
    let commands = ["log", "verify", "replay", "repair", "diff", "blame", "bisect", "export", "stats", "tail"]
    for (typed, expected) in [
      ("verfy", "verify"), ("lgo", "log"), ("replya", "replay"), ("exprot", "export"), ("stat", "stats"),
      ("blam", "blame"), ("bsect", "bisect"),
      // Too far, or nothing like any: no guess.
      ("vrfy", nil), ("frobnicate", nil), ("", nil),
      // Neighbours swapped are one edit, so each is nearer to one name than to its look-alike.
      ("repaly", "replay"), ("reapir", "repair"), ("rpelay", "replay"),
      ("xog", "log"), ("dif", "diff"),
    ] as [(String, String?)] {
      #expect(Arguments.nearest(to: typed, among: commands) == expected, "\(typed)")
    }
    // Two candidates one edit away each: no guess rather than one picked by order.
    #expect(Arguments.nearest(to: "cat", among: ["bat", "cap"]) == nil)
    #expect(Arguments.nearest(to: "cat", among: ["cap", "bat"]) == nil)
    // A name typed exactly is no near miss of itself.
    #expect(Arguments.nearest(to: "log", among: ["log"]) == nil)
  }

  @Test func theEditDistanceCountsSwapsOfNeighboursAsOneEdit() {
    func distance(_ a: String, _ b: String, bound: Int = 10) -> Int {
      Arguments.editDistance(Array(a.unicodeScalars), Array(b.unicodeScalars), atMost: bound)
    }
    #expect(distance("kitten", "sitting") == 3)
    #expect(distance("ab", "ba") == 1)
    #expect(distance("", "abc") == 3)
    #expect(distance("abc", "") == 3)
    #expect(distance("same", "same") == 0)
    #expect(distance("é", "e") == 1)
    // Past the bound it says only that: bound + 1.
    #expect(distance("kitten", "sitting", bound: 2) == 3)
    #expect(distance("abcdef", "uvwxyz", bound: 1) == 2)
    // Every pair, under every bound: the distance, or bound + 1 past it.
    let words = ["", "a", "ab", "ba", "abc", "acb", "bca", "tail", "tial", "stats", "state", "verify"]
    for a in words {
      for b in words {
        let full = distance(a, b)
        for bound in 0...3 { #expect(distance(a, b, bound: bound) == min(full, bound + 1), "\(a) \(b) \(bound)") }
      }
    }
  }

  @Test func theCommandLineOffersTheNearestName() async throws {
    let unknown = try await ToolRun.run("rewind", ["verfy", "/nonexistent"])
    #expect(unknown.status == 2)
    #expect(
      unknown.err == "rewind verfy: unknown command 'verfy'; did you mean verify? run rewind --help for the list\n",
      "\(unknown.err)")
    let option = try await ToolRun.run("rewind", ["log", "/nonexistent", "--jsno"])
    #expect(option.status == 2)
    #expect(option.err.contains("unknown option --jsno; did you mean --json?"), "\(option.err)")
    let far = try await ToolRun.run("rewind", ["log", "/nonexistent", "--colour"])
    #expect(far.err.contains("unknown option --colour\n"), "\(far.err)")
    let dir = TemporaryDirectory("cli-near-miss")
    let journal = try await ArgumentTests.journal(in: dir)
    let debug = try await ToolRun.run("rewind", ["debug", journal], input: "stpe\n")
    #expect(
      debug.err.contains("error: stpe: unknown command; did you mean step? `help` lists the commands"), "\(debug.err)")
    // Every whole name offered is one the session takes: its help lists it.
    for word in DebugSession.commandWords {
      #expect(DebugCommand.commands.contains(word), "\(word)")
    }
  }
}
