import Foundation
import RewindTestSupport
import Testing

/// Counts (`-n`, `--limit`, `--keep`, `--events`) and the demo's seed are decimal digits alone, as
/// sequence numbers are: `Int("+3")` took a sign, so `tail -n +3` showed the last 3 events where
/// GNU tail starts at line 3.
@Suite struct CountArgumentTests {
  @Test func aSignedCountIsAUsageError() async throws {
    let dir = TemporaryDirectory("cli-counts")
    let journal = dir.appending("journal")
    let demo = try await ToolRun.run("rewind", ["demo", journal, "--events", "20", "--seed", "1"])
    #expect(demo.status == 0, "\(demo.err)")
    let max = Int.max
    let cases: [([String], String)] = [
      (
        ["tail", journal, "-n", "+3"],
        "rewind tail: -n counts the last events: a whole number in 0...\(max), not '+3'; --from 3 reads from sequence 3\n"
      ),
      (
        ["tail", journal, "-n+3"],
        "rewind tail: -n counts the last events: a whole number in 0...\(max), not '+3'; --from 3 reads from sequence 3\n"
      ),
      (
        ["tail", journal, "--lines", "+3"],
        "rewind tail: --lines counts the last events: a whole number in 0...\(max), not '+3'; --from 3 reads from sequence 3\n"
      ),
      // `+0` suggested `--from 0`, which --from refuses (the review of the arguments, Dec 6).
      (
        ["tail", journal, "-n", "+0"],
        "rewind tail: -n counts the last events: a whole number in 0...\(max), not '+0'; --from 1 reads from sequence 1\n"
      ),
      (["tail", journal, "-n", "+x"], "rewind tail: -n needs a whole number in 0...\(max), not '+x'\n"),
      (["log", journal, "--limit", "+2"], "rewind log: --limit needs a whole number in 1...\(max), not '+2'\n"),
      (
        ["snapshot", journal, "--keep", "+2"], "rewind snapshot: --keep needs a whole number in 1...1000000, not '+2'\n"
      ),
      (
        ["demo", dir.appending("new"), "--events", "+5"],
        "rewind demo: --events needs a whole number in 0...1000000000, not '+5'\n"
      ),
      (
        ["demo", dir.appending("new"), "--seed", "+5"],
        "rewind demo: --seed needs a whole number in 0...\(UInt64.max), not '+5'\n"
      ),
    ]
    for (arguments, message) in cases {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 2, "\(arguments): \(run.out)\(run.err)")
      #expect(run.err == message, "\(arguments)")
      #expect(run.out.isEmpty, "\(arguments): \(run.out)")
    }
    // tail's help says so: tail(1)'s `-n +N` (from the N-th line on) is refused.
    let help = try await ToolRun.run("rewind", ["tail", "--help"])
    #expect(help.out.contains("N is digits alone: -n +N"), "\(help.out)")
    #expect(help.out.contains("is a usage error; --from N reads from sequence N."), "\(help.out)")
    // Digits alone are still counts.
    let tail = try await ToolRun.run("rewind", ["tail", journal, "-n", "3"])
    #expect(tail.status == 0, "\(tail.err)")
    #expect(tail.out.split(separator: "\n").count == 3, "\(tail.out)")
  }
}
