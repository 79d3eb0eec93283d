import Foundation
import RewindTestSupport
import Testing

@testable import RewindCLI

/// What the time-travel commands (replay, diff, show, debug) make of awkward targets on a healthy
/// journal: ISO 8601 times in each spelling the standard allows, numbers past every sequence
/// number, and debug commands given one word too many.
@Suite struct TimeTravelArgumentTests {
  static func rewind(_ arguments: [String], input: String? = nil) async throws -> ToolRun {
    try await ToolRun.run("rewind", arguments, input: input)
  }

  /// An offset of hours alone (`+02`, ISO 8601's `±hh`) is that many hours, as `+02:00` and
  /// `+0200` are; a lowercase `t` separates date and time as `T` does (RFC 3339 allows it, and
  /// the parser took a lowercase `z` already). Both were refused as "not ISO 8601".
  @Test func aTimeTakesAnOffsetOfHoursAloneAndALowercaseT() async throws {
    let utc = try #require(ISO8601.parse("2026-01-01T00:00:03.5Z"))
    for spelling in [
      "2026-01-01T02:00:03.5+02", "2026-01-01T02:00:03.5+0200", "2026-01-01T02:00:03.5+02:00",
      "2025-12-31T19:00:03.5-05", "2026-01-01t00:00:03.5z", "2026-01-01t00:00:03.5Z",
    ] {
      #expect(ISO8601.parse(spelling) == utc, "\(spelling)")
    }
    #expect(ISO8601.parse("2026-01-01+01") == ISO8601.parse("2025-12-31T23:00:00Z"))
    // Still refused: an offset cut after its colon or of one digit, and hours out of range.
    for text in [
      "2026-01-01T00:00:00+02:", "2026-01-01T00:00:00+2", "2026-01-01T00:00:00+24", "2026-01-01T00:00:00+020",
    ] {
      #expect(ISO8601.parse(text) == nil, "\(text)")
    }
    // On the command line, as a script on a machine two hours east of UTC writes it.
    let dir = TemporaryDirectory("cli-time-offset")
    defer { withExtendedLifetime(dir) {} }
    let journal = try await ArgumentTests.journal(in: dir)
    let reference = try await Self.rewind(["replay", journal, "--at", "2026-01-01T00:01:00Z"])
    #expect(reference.status == 0, "\(reference.err)")
    for at in ["2026-01-01T02:01:00+02", "2026-01-01t00:01:00Z"] {
      let run = try await Self.rewind(["replay", journal, "--at", at])
      #expect(run.status == 0, "--at \(at): \(run.err)")
      #expect(run.out == reference.out, "--at \(at)")
    }
    let since = try await Self.rewind(["log", journal, "--since", "2026-01-01T02:01:00+02", "--limit", "1"])
    let sinceUTC = try await Self.rewind(["log", journal, "--since", "2026-01-01T00:01:00Z", "--limit", "1"])
    #expect(since.status == 0, "\(since.err)")
    #expect(since.out == sinceUTC.out)
  }
}
