import Foundation
import Testing

/// The harness that runs the `rewind` tool for these suites.
@Suite struct ToolRunTests {
  /// A command that fails before it reads its input (here, a journal that does not exist) must
  /// not take the test process with it. Given through a pipe, input larger than the pipe's buffer
  /// was written until the child exited, and the next write raised SIGPIPE in this process: the
  /// whole test run ended mid-line, with no failure reported (CI, Dec 2). Any input could, when
  /// the child exited before the first write.
  @Test func aToolThatExitsWithoutReadingItsInputLeavesTheTestsRunning() async throws {
    let input = String(repeating: "print\n", count: 100_000)  // 600 KB: more than a pipe holds
    let run = try await ToolRun.run("rewind", ["debug", "/nonexistent/journal"], input: input)
    #expect(run.status == 3, "\(run.out)\(run.err)")
    #expect(run.err.contains("/nonexistent/journal"), "\(run.err)")
  }
}
