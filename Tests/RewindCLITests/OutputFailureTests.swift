import Foundation
import RewindTestSupport
import Testing

/// Standard output that cannot take what a command writes: a full disk (/dev/full) is an error
/// message and exit 3; a reader that closed the pipe early (`rewind log DIR | head -1`) ends the
/// command quietly, whether SIGPIPE is left to kill it or is ignored and the write fails EPIPE.
@Suite struct OutputFailureTests {
  /// A seeded journal whose `log --json` is several times a pipe's capacity.
  static func journal(in dir: TemporaryDirectory) async throws -> String {
    let path = dir.appending("journal")
    let demo = try await ToolRun.run(
      "rewind", ["demo", path, "--events", "2000", "--seed", "1", "--durability", "none"])
    try #require(demo.status == 0, "\(demo.err)")
    return path
  }

  @Test func aFullDiskIsAnErrorNotACrash() async throws {
    let dir = TemporaryDirectory("cli-output-full")
    let journal = try await Self.journal(in: dir)
    for arguments in [["log", journal, "--json"], ["export", journal, "--jsonl"], ["stats", journal]] {
      let run = try await ToolRun.run("rewind", arguments, standardOutput: "/dev/full")
      #expect(run.status == 3, "\(arguments): \(run.err)")
      #expect(
        run.err == "rewind: cannot write to standard output: No space left on device\n", "\(arguments): \(run.err)")
    }
  }

  @Test(arguments: [false, true])
  func aClosedPipeEndsTheCommandQuietly(ignoringSIGPIPE: Bool) async throws {
    let dir = TemporaryDirectory("cli-output-pipe")
    let journal = try await Self.journal(in: dir)
    let rewind = try #require(ChildProcess.builtProduct("rewind"))
    // The shell runs `rewind log` into `head -n 1` and records rewind's own status and stderr.
    let script =
      (ignoringSIGPIPE ? "trap '' PIPE; " : "")
      + #"("$0" log "$1" --json 2>"$2/err"; echo $? >"$2/status") | head -n 1"#
    let run = try await ToolRun.run("/bin/sh", ["-c", script, rewind, journal, dir.path])
    #expect(run.status == 0, "\(run.err)")
    #expect(run.out.hasPrefix(#"{"seq":1,"#), "\(run.out)")
    #expect(run.out.split(separator: "\n").count == 1, "\(run.out)")
    let status = String(decoding: try Files.read(dir.appending("status")), as: UTF8.self)
    #expect(status == "141\n", "as if SIGPIPE ended it")
    let err = String(decoding: try Files.read(dir.appending("err")), as: UTF8.self)
    #expect(err.isEmpty, "\(err)")
  }

  @Test func aFullStandardErrorDoesNotChangeTheOutcome() async throws {
    let run = try await ToolRun.run("rewind", ["log", "/nonexistent/journal"], standardError: "/dev/full")
    #expect(run.status == 3)
    #expect(run.out.isEmpty)
  }
}
