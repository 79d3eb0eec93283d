import Foundation
import RewindTestSupport
import Testing

@testable import RewindCLI

/// Three answers of the event-selection options that a brute-force check of `log`, `export` and
/// `tail` against their exports found off (helper-215, Dec 7).
@Suite struct SelectionEdgeTests {
  static func rewind(_ arguments: [String]) async throws -> ToolRun {
    try await ToolRun.run("rewind", arguments)
  }

  /// A seeded journal of five events, and the time of its last (nine fraction digits).
  static func journal() async throws -> (TemporaryDirectory, String, String) {
    let dir = TemporaryDirectory("cli-selection-edges")
    let path = dir.appending("journal")
    let demo = try await rewind(["demo", path, "--events", "5", "--seed", "1", "--durability", "none"])
    try #require(demo.status == 0, "\(demo.err)")
    let last = try await rewind(["log", path, "--from", "5", "--json"])
    let time = try #require(last.out.firstMatch(of: /"time":"([^"]+)"/)?.1, "\(last.out)")
    try #require(time.count == "2026-01-01T00:00:00.000000000Z".count)
    return (dir, path, String(time))
  }

  /// A fraction past nanoseconds was cut to the nanosecond it falls in, which a lower bound must
  /// not be: `--since T.xxxxxxxxx1` selected the event stamped T.xxxxxxxxx, before it.
  @Test func aSinceFinerThanANanosecondStartsAtTheNext() async throws {
    let (dir, path, time) = try await Self.journal()
    defer { withExtendedLifetime(dir) {} }
    let finer = time.dropLast() + "1Z"
    for command in [["log", path], ["export", path, "--jsonl"], ["tail", path, "-n", "5"]] {
      let after = try await Self.rewind(command + ["--since", String(finer)])
      #expect(after.status == 2 && after.out.isEmpty, "\(command): \(after.out)\(after.err)")
      #expect(
        after.err.contains("--since \(finer) is out of range: the last event (5) is at \(time)"),
        "\(command): \(after.err)")
      // Zeros past the ninth digit are the same nanosecond; an upper bound keeps the one it is in.
      let same = try await Self.rewind(command + ["--since", time.dropLast() + "000Z", "--until", String(finer)])
      #expect(same.status == 0 && same.out.split(separator: "\n").count == 1, "\(command): \(same.out)\(same.err)")
    }
    // Two equal times finer than a nanosecond select none a record can be stamped with: said so.
    let fine = time.dropLast() + "9Z"
    let equal = try await Self.rewind(["log", path, "--since", String(fine), "--until", String(fine)])
    #expect(equal.status == 2, "\(equal.err)")
    #expect(
      equal.err.contains(
        "--since \(fine) and --until \(fine) select no time a record can be stamped with (records are stamped to "
          + "the nanosecond, and a finer --since starts at the next one: "), "\(equal.err)")
    // Nor does a --since typed before the --until, within one nanosecond (helper-220).
    let (one, two) = (time.dropLast() + "1Z", time.dropLast() + "2Z")
    let within = try await Self.rewind(["log", path, "--since", String(one), "--until", String(two)])
    #expect(
      within.status == 2 && within.err.contains("--since \(one) and --until \(two) select no time a record can be"),
      "\(within.err)")
    #expect(ISO8601.parseWithin("2026-01-01T00:00:00.0000000001Z", roundingUp: true)?.time == 1_767_225_600_000_000_001)
    #expect(ISO8601.parseWithin("2026-01-01T00:00:00.0000000001Z")?.time == 1_767_225_600_000_000_000)
    #expect(ISO8601.parseWithin("2026-01-01T00:00:00.9999999990Z", roundingUp: true)?.time == 1_767_225_600_999_999_999)
    // Rounded up into the next second, and past the last nanosecond an Int64 holds.
    #expect(ISO8601.parseWithin("2026-01-01T00:00:00.9999999991Z", roundingUp: true)?.time == 1_767_225_601_000_000_000)
    #expect(ISO8601.parseWithin("2262-04-11T23:47:16.8547758071Z", roundingUp: true)?.outside == 1)
    #expect(ISO8601.parseWithin("2262-04-11T23:47:16.8547758071Z")?.outside == 0)
  }

  /// `tail -n 0` with a selection no event matches exited 0, where `-n 1` exits 2 and the help
  /// promises 2 for "a selection no event matches".
  @Test func tailOfNoEventsStillNeedsASelectionThatMatches() async throws {
    let (dir, path, _) = try await Self.journal()
    defer { withExtendedLifetime(dir) {} }
    for count in ["0", "1"] {
      let none = try await Self.rewind(["tail", path, "-n", count, "--origin", "import"])
      #expect(none.status == 2 && none.err.contains("no event in"), "-n \(count): \(none.err)")
    }
    for options in [[String](), ["--origin", "user"]] {
      let empty = try await Self.rewind(["tail", path, "-n", "0"] + options)
      #expect(empty.status == 0 && empty.out.isEmpty && empty.err.isEmpty, "\(options): \(empty.out)\(empty.err)")
    }
  }

  /// A `--since` clamped to the first nanosecond an Int64 holds was quoted as that time
  /// (1677-09-21T00:12:43.145224192Z), not as typed.
  @Test func anOutOfRangeSinceIsQuotedAsTyped() async throws {
    let dir = TemporaryDirectory("cli-selection-empty")
    let path = dir.appending("journal")
    try #require(try await Self.rewind(["demo", path, "--events", "0"]).status == 0)
    let run = try await Self.rewind(["log", path, "--since", "1600-01-01"])
    #expect(run.status == 2)
    #expect(run.err.contains("--since 1600-01-01 is out of range: the journal is empty"), "\(run.err)")
  }
}
