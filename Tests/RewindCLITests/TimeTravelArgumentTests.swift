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
    // A leap second ends a UTC day (read as the midnight after it, as POSIX time counts it); in
    // any other minute, second 60 is no time (it was read as the next minute's first second).
    #expect(ISO8601.parse("2016-12-31T23:59:60Z") == ISO8601.parse("2017-01-01T00:00:00Z"))
    #expect(ISO8601.parse("2017-01-01T01:59:60+02:00") == ISO8601.parse("2017-01-01T00:00:00Z"))
    for text in ["2026-01-01T10:00:60Z", "2016-12-31T23:59:60+01:00", "2026-01-01T10:00:61Z"] {
      #expect(ISO8601.parse(text) == nil, "\(text)")
    }
    // Refused with why: the text is ISO 8601, the second is not one a leap second can take.
    #expect(ISO8601.leapSecondHint("2026-01-01T10:00:60Z").contains("last minute of a UTC day"))
    #expect(ISO8601.leapSecondHint("2026-01-01T10:00:61Z").isEmpty)
    #expect(ISO8601.leapSecondHint("yesterday").isEmpty)
    // A minute of 60 is another mistake: no word of leap seconds.
    #expect(ISO8601.parse("2026-01-01T10:60:00Z") == nil)
    #expect(ISO8601.leapSecondHint("2026-01-01T10:60:00Z").isEmpty)
    #expect(ISO8601.leapSecondHint("2026-01-01T10:00:60.5+02:00").contains("last minute of a UTC day"))
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

  /// A run of digits too long for any sequence number is a number past the journal's end, and
  /// is said to be: "is not a whole number" (replay, diff), "must be a whole number" (show) and
  /// "neither a sequence number nor an ISO 8601 time" (debug's goto) told a user who typed one
  /// that it was none.
  @Test func digitsPastEverySequenceNumberArePastTheJournalsEnd() async throws {
    let dir = TemporaryDirectory("cli-time-huge")
    defer { withExtendedLifetime(dir) {} }
    let journal = try await ArgumentTests.journal(in: dir)
    let huge = "99999999999999999999"
    let cases: [(arguments: [String], message: String)] = [
      (
        ["replay", journal, "--to", huge],
        "--to \(huge) is beyond the journal's last sequence number 400 (\(journal)); give one in 0...400"
      ),
      (
        ["diff", journal, "1", huge],
        "B \(huge) is beyond the journal's last sequence number 400 (\(journal)); give one in 0...400"
      ),
      (
        ["diff", journal, huge, "1"],
        "A \(huge) is beyond the journal's last sequence number 400 (\(journal)); give one in 0...400"
      ),
      (["show", journal, huge], "sequence \(huge) is out of range: the journal holds sequences 1-400"),
    ]
    for (arguments, message) in cases {
      let run = try await Self.rewind(arguments)
      #expect(run.status == 2, "\(arguments)")
      #expect(run.err == "rewind \(arguments[0]): \(message)\n", "\(arguments): \(run.err)")
    }
    let debug = try await Self.rewind(["debug", journal], input: "goto \(huge)\n")
    #expect(debug.status == 2)
    #expect(debug.err == "error: goto: sequence \(huge) is beyond the journal's last, 400\n", "\(debug.err)")
  }

  /// A debug command given one word too many names the words it could not read, not the first
  /// of them, which alone would have been fine (`step 3 4` said "not '3'").
  @Test func debugNamesTheWordsItCouldNotRead() async throws {
    let dir = TemporaryDirectory("cli-time-words")
    defer { withExtendedLifetime(dir) {} }
    let journal = try await ArgumentTests.journal(in: dir)
    let debug = try await Self.rewind(["debug", journal], input: "step 3 4\nback 2 x\nevent 5 6\nstep 2\n")
    #expect(debug.status == 2)
    #expect(
      debug.err.split(separator: "\n") == [
        "error: step: expected a count of records, a whole number from 0, not '3 4'",
        "error: back: expected a count of records, a whole number from 0, not '2 x'",
        "error: event: expected a sequence number in 1...400, not '5 6'",
      ], "\(debug.err)")
    // The session went on: the last step moved from 0.
    #expect(debug.out.hasPrefix("at 2 of 400: #2 "), "\(debug.out)")
  }

  /// `event` in an empty journal said "expected a sequence number in 1...0", a range with
  /// nothing in it, and `event` alone "`step` to the first", an event there is not: it says the
  /// journal is empty, as `rewind show` does.
  @Test func debugEventInAnEmptyJournalSaysItIsEmpty() async throws {
    let dir = TemporaryDirectory("cli-time-empty")
    defer { withExtendedLifetime(dir) {} }
    let journal = dir.appending("journal")
    let demo = try await Self.rewind(["demo", journal, "--events", "0"])
    try #require(demo.status == 0, "\(demo.err)")
    let debug = try await Self.rewind(["debug", journal], input: "event 1\nevent\n")
    #expect(debug.status == 2)
    let empty = "error: event: the journal \(journal) is empty: there is no event to show"
    #expect(debug.err.split(separator: "\n").map(String.init) == [empty, empty], "\(debug.err)")
  }
}

/// `replay --to` a sequence inside a command of several events rebuilt a state no reader saw
/// (readers see a command's events together), without a word (the review of the time-travel
/// commands, Dec 6). A note on stderr now names the command and its last sequence; at the
/// command's last event, and for a command of one event, there is none. The exit status and the
/// state printed are unchanged.
@Suite struct ReplayInsideACommandTests {
  @Test func aTargetInsideACommandGetsANote() async throws {
    let dir = TemporaryDirectory("cli-inside-command")
    let journal = try await ArgumentTests.journal(in: dir)
    let log = try await ToolRun.run("rewind", ["log", journal, "--json"])
    try #require(log.status == 0)
    let events = try log.out.split(separator: "\n").map { line in
      let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
      return (seq: try #require(object["seq"] as? Int), command: try #require(object["command"] as? String))
    }
    // The first command of several events, and a command of one.
    let start = try #require(events.indices.dropLast().first { events[$0].command == events[$0 + 1].command })
    let end = try #require(events[start...].lastIndex { $0.command == events[start].command })
    let single = try #require(
      events.indices.first { index in events.filter { $0.command == events[index].command }.count == 1 })
    let command = events[start].command
    for json in [false, true] {
      for index in start..<end {
        let run = try await ToolRun.run(
          "rewind", ["replay", journal, "--to", String(events[index].seq)] + (json ? ["--json"] : []))
        #expect(run.status == 0, "\(run.err)")
        #expect(
          run.err.contains(
            "note: sequence \(events[index].seq) is inside command \(command), whose events are sequences "
              + "\(events[start].seq)-\(events[end].seq): no reader saw this state"),
          "\(run.err)")
        #expect(run.err.contains("--to \(events[end].seq)` rebuilds the state after the whole command"))
      }
      for index in [end, single] {
        let run = try await ToolRun.run(
          "rewind", ["replay", journal, "--to", String(events[index].seq)] + (json ? ["--json"] : []))
        #expect(run.status == 0 && run.err.isEmpty, "\(events[index].seq): \(run.err)")
      }
    }
  }
}
