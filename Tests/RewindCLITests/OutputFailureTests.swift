import Foundation
import RewindTestSupport
import Testing

@testable import RewindCLI

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

  /// `rewind log DIR >&-`: the runtime takes the free descriptor 1 for its own before any
  /// command runs, and writing there failed with "Invalid argument" (EINVAL from libdispatch's
  /// epoll descriptor). One message now says standard output is closed, with exit 3; and a
  /// closed standard error takes no message at all (it was written into the runtime's descriptor).
  @Test func aClosedStandardOutputIsSaidSo() async throws {
    let dir = TemporaryDirectory("cli-output-closed")
    let journal = try await Self.journal(in: dir)
    let rewind = try #require(ChildProcess.builtProduct("rewind"))
    for arguments in [["log", journal], ["export", journal, "--jsonl"], ["stats", journal]] {
      let script = #""$0" "$@" >&-"#
      let run = try await ToolRun.run("/bin/sh", ["-c", script, rewind] + arguments)
      #expect(run.status == 3, "\(arguments): \(run.err)")
      #expect(run.err == "rewind: cannot write to standard output: it is closed\n", "\(arguments): \(run.err)")
    }
    // Both closed: nothing to say it on, and the outcome is the same.
    let both = try await ToolRun.run("/bin/sh", ["-c", #""$0" log "$1" >&- 2>&-; echo $?"#, rewind, journal])
    #expect(both.out == "3\n", "\(both.out)\(both.err)")
    // Standard error still takes its messages when only standard output is closed.
    let quiet = try await ToolRun.run(
      "/bin/sh", ["-c", #""$0" log "$1" --to 1 --type none.such >&-"#, rewind, journal])
    #expect(quiet.status == 2, "a usage error, on standard error: \(quiet.err)")
    #expect(quiet.err.hasPrefix("rewind log: no event in"), "\(quiet.err)")
  }

  /// Standard output closed is found at the first write, not as the process starts: a command
  /// with nothing to write (an empty journal, `tail -n 0`) succeeds with nothing said, as a GNU
  /// tool's closing of standard output with nothing pending does. Decided after review: the
  /// runtime holds descriptor 1 (close-on-exec) before any command runs, and every descriptor the
  /// tool opens is close-on-exec, so the first write finds it closed as a check at start would.
  @Test func nothingToWriteToAClosedStandardOutputSucceeds() async throws {
    let dir = TemporaryDirectory("cli-output-closed-empty")
    let empty = dir.appending("empty")
    let demo = try await ToolRun.run("rewind", ["demo", empty, "--events", "0", "--seed", "1"])
    try #require(demo.status == 0, "\(demo.err)")
    let journal = try await Self.journal(in: dir)
    let rewind = try #require(ChildProcess.builtProduct("rewind"))
    for arguments in [["log", empty], ["tail", empty], ["tail", journal, "-n", "0"]] {
      let run = try await ToolRun.run("/bin/sh", ["-c", #""$0" "$@" >&-"#, rewind] + arguments)
      #expect(run.status == 0, "\(arguments): \(run.err)")
      #expect(run.err.isEmpty, "\(arguments): \(run.err)")
    }
  }

  /// Told apart by the close-on-exec flag, which no descriptor inherited across exec has.
  @Test func aDescriptorOpenedInTheProcessIsNoStandardStream() throws {
    var ends: [Int32] = [0, 0]
    try #require(pipe(&ends) == 0)
    defer { for end in ends { close(end) } }
    #expect(!RewindTool.Output.closedAtStart(ends[1]), "inherited: no close-on-exec")
    _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
    #expect(RewindTool.Output.closedAtStart(ends[1]), "opened by the runtime: close-on-exec")
    #expect(RewindTool.Output.closedAtStart(-1))
  }

  @Test func aFullStandardErrorDoesNotChangeTheOutcome() async throws {
    let run = try await ToolRun.run("rewind", ["log", "/nonexistent/journal"], standardError: "/dev/full")
    #expect(run.status == 3)
    #expect(run.out.isEmpty)
  }
}
