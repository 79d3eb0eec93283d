import Foundation
import RewindJournal
import RewindTestSupport
import Testing

/// `rewind verify --model NAME` with a name no model is registered under: a usage error before
/// the journal is read, whatever state the journal is in.
@Suite struct VerifyModelTests {
  /// It walked the whole journal and printed its verdict before naming the bad model (exit 2).
  @Test func anUnknownModelIsRefusedBeforeTheWalk() async throws {
    let dir = TemporaryDirectory("cli-verify-model")
    let demo = try await ToolRun.run("rewind", ["demo", dir.path, "--events", "50", "--seed", "1"])
    #expect(demo.status == 0, "\(demo.err)")
    let run = try await ToolRun.run("rewind", ["verify", dir.path, "--model", "zz"])
    #expect(run.status == 2, "\(run.out)\(run.err)")
    #expect(run.out.isEmpty, "\(run.out)")
    #expect(run.err == "rewind verify: unknown model 'zz'; registered models: workspace\n")
    // A known one still verifies, with the frames' line and the verdict last.
    let known = try await ToolRun.run("rewind", ["verify", dir.path, "--model", "workspace"])
    #expect(known.status == 0, "\(known.out)\(known.err)")
    #expect(known.out.contains("frames: sound, "), "\(known.out)")
    #expect(known.out.split(separator: "\n").last?.hasPrefix("sound: ") == true, "\(known.out)")
  }

  /// On a damaged journal it exited 1 for the damage and never mentioned the bad model.
  @Test func anUnknownModelIsNamedOnADamagedJournalToo() async throws {
    let dir = TemporaryDirectory("cli-verify-model")
    let demo = try await ToolRun.run("rewind", ["demo", dir.path, "--events", "400", "--seed", "9"])
    #expect(demo.status == 0, "\(demo.err)")
    let segment = try #require(Files.list(dir.path).first { $0.hasSuffix(".lz4") })
    try Files.flipMiddleByte(of: dir.appending(segment), with: 0x5A)
    let damaged = try await ToolRun.run("rewind", ["verify", dir.path])
    #expect(damaged.status == 1, "\(damaged.out)")
    let run = try await ToolRun.run("rewind", ["verify", dir.path, "--model", "zz"])
    #expect(run.status == 2, "\(run.out)\(run.err)")
    #expect(run.err.contains("unknown model 'zz'"), "\(run.err)")
  }
}
