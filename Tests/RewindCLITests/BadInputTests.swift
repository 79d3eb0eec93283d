import Foundation
import RewindTestSupport
import Testing

/// Damage seen through the audit commands, and the tool without a command. `EveryCommandTests`
/// runs every command against each kind of bad input.
@Suite struct BadInputTests {
  static func rewind(_ arguments: [String]) async throws -> RewindCommandTests.Run {
    try await RewindCommandTests.rewind(arguments)
  }

  /// A small seeded Notebook journal in `dir/journal`; returns its only segment's path.
  static func journal(in dir: TemporaryDirectory) async throws -> String {
    let run = try await rewind([
      "demo", dir.appending("journal"), "--events", "400", "--seed", "9", "--durability", "none",
    ])
    try #require(run.status == 0, "\(run.err)")
    let segments = Files.list(dir.appending("journal")).filter { $0.hasSuffix(".lz4") }
    try #require(segments.count == 1)
    return dir.appending("journal/" + segments[0])
  }

  @Test func aCorruptedFrameIsLocated() async throws {
    let dir = TemporaryDirectory("cli-corrupt")
    let segment = try await Self.journal(in: dir)
    try Files.flipMiddleByte(of: segment, with: 0x5A)
    let log = try await Self.rewind(["log", dir.appending("journal")])
    #expect(log.status == 3)
    #expect(log.err.contains("byte offset"), "\(log.err)")
    #expect(log.err.contains("rewind repair"), "\(log.err)")
    #expect(log.out.hasPrefix("1  "), "the intact events before the damage are shown")
    let verify = try await Self.rewind(["verify", dir.appending("journal")])
    #expect(verify.status == 1)
    #expect(verify.out.contains("problem: "))
  }

  /// Garbage named like a later segment: verify reported records missing up to its name and
  /// repair refused, calling it intact. Now verify reports the file, and repair moves it alone.
  /// The plan (without --yes) creates no LOCK and says it may change.
  @Test func aGarbageFileNamedLikeASegmentIsRepaired() async throws {
    let dir = TemporaryDirectory("cli-stray")
    _ = try await Self.journal(in: dir)
    let journal = dir.appending("journal")
    let before = try await Self.rewind(["log", journal, "--json"]).out
    try Files.write(Array(String(repeating: "garbage", count: 10).utf8), to: journal + "/00000000000000099999.lz4")
    try FileManager.default.removeItem(atPath: journal + "/LOCK")
    let verify = try await Self.rewind(["verify", journal])
    #expect(verify.status == 1)
    #expect(verify.out.contains("a stray file"), "\(verify.out)")
    #expect(!verify.out.contains("missing"), "\(verify.out)")
    let plan = try await Self.rewind(["repair", journal])
    #expect(plan.status == 1, "\(plan.out)\(plan.err)")
    #expect(plan.out.contains("will move 70 bytes of 00000000000000099999.lz4"), "\(plan.out)")
    #expect(plan.out.contains("may change if a writer appends meanwhile"), "\(plan.out)")
    #expect(!Files.list(journal).contains("LOCK"), "a plan creates nothing")
    let repair = try await Self.rewind(["repair", journal, "--yes"])
    #expect(repair.status == 0, "\(repair.out)\(repair.err)")
    #expect(Files.list(journal + "/quarantine") == ["00000000000000099999.lz4"])
    let log = try await Self.rewind(["log", journal, "--json"])
    #expect(log.status == 0, "\(log.err)")
    #expect(log.out == before, "every event reads as before")
  }

  @Test func aTruncatedSegmentReadsUpToItsLastWholeFrame() async throws {
    let dir = TemporaryDirectory("cli-truncated")
    let segment = try await Self.journal(in: dir)
    let bytes = try Files.read(segment)
    try Files.write(Array(bytes.prefix(bytes.count * 2 / 3)), to: segment)
    let log = try await Self.rewind(["log", dir.appending("journal"), "--json"])
    #expect(log.status == 0, "\(log.err)")
    let count = log.out.split(separator: "\n").count
    #expect(count > 0 && count < 400)
    let verify = try await Self.rewind(["verify", dir.appending("journal")])
    #expect(verify.status == 0)
    #expect(verify.out.contains("note: unfinished last frame"))
    let show = try await Self.rewind(["show", dir.appending("journal"), "\(count + 1)"])
    #expect(show.status == 2)
    #expect(show.err.contains("out of range"))
  }

  @Test func preallocatedZerosAfterTheLastFrameAreNotDamage() async throws {
    // What a writer killed while it held preallocated space leaves behind.
    let dir = TemporaryDirectory("cli-zeros")
    let segment = try await Self.journal(in: dir)
    let whole = try await Self.rewind(["log", dir.appending("journal"), "--json"])
    try Files.write(try Files.read(segment) + [UInt8](repeating: 0, count: 100_000), to: segment)
    let log = try await Self.rewind(["log", dir.appending("journal"), "--json"])
    #expect(log.status == 0, "\(log.err)")
    #expect(log.out == whole.out, "every event, and nothing of the zeros")
    let verify = try await Self.rewind(["verify", dir.appending("journal")])
    #expect(verify.status == 0, "\(verify.out)")
    #expect(verify.out.contains("note: 100000 zero bytes of preallocated space"), "\(verify.out)")
    #expect(!verify.out.contains("unfinished") && !verify.out.contains("problem"), "\(verify.out)")
  }

  @Test func anUnknownCommandOrNone() async throws {
    let unknown = try await Self.rewind(["explode", "/tmp"])
    #expect(unknown.status == 2)
    #expect(unknown.err.contains("unknown command 'explode'; run rewind --help"))
    let none = try await Self.rewind([])
    #expect(none.status == 2)
    #expect(none.err.contains("Usage: rewind COMMAND"))
    let help = try await Self.rewind(["--help"])
    #expect(help.status == 0)
    for command in ["demo", "log", "show", "stats", "export", "tail", "verify", "repair"] {
      #expect(help.out.contains("\n  \(command) "), "\(command) is listed")
    }
  }
}
