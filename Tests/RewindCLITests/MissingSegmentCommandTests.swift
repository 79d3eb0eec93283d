import Foundation
import Notebook
import Rewind
import RewindCLI
import RewindJournal
import RewindTestSupport
import Testing

/// `replay`, `diff` and `show` of a journal with a segment the index names deleted between
/// intact ones: they refused it as they opened it (their first record, and the time of a record,
/// read with cursors that refuse such a journal), though replay and the time machine under them
/// serve the records before the gap (entry 193). Targets before the gap are now served as from
/// the intact journal; one at or past it exits 3, naming the segment, the sequences it held and
/// the last record read intact.
@Suite struct MissingSegmentCommandTests {
  /// The damaged journal, the path of an intact copy of it, the missing segment's name, its first
  /// sequence number, the last before it, and the directory that holds the copy (removed when
  /// it is released: the caller keeps it to its end).
  static func journals() async throws -> (
    journal: NotebookJournal, intact: String, file: String, first: UInt64, before: UInt64, scratch: TemporaryDirectory
  ) {
    let scratch = TemporaryDirectory("cli-gap-intact")
    let intact = scratch.appending("journal")
    let (journal, file, _) = try await IndexedLossCommandTests.damaged(.middleSegment, intactCopy: intact)
    let first = try #require(UInt64(file.prefix(20)))
    try #require(first > 12 && first + 10 < journal.lastSequence)
    return (journal, intact, file, first, first - 1, scratch)
  }

  /// `rewind ARGUMENTS[0] DIR ARGUMENTS[1...]`.
  static func run(_ arguments: [String], _ directory: String) async throws -> ToolRun {
    try await ToolRun.run("rewind", [arguments[0], directory] + arguments.dropFirst())
  }

  /// Before the gap: exit 0 and what the intact journal gives, but for replay's "of", which says
  /// the end is hidden instead of naming a last sequence the replay cannot reach.
  @Test func replayDiffAndShowServeTheRecordsBeforeTheGap() async throws {
    let (journal, intact, _, _, before, scratch) = try await Self.journals()
    defer { withExtendedLifetime(scratch) {} }
    let ten = isoTime(journal.timestamps[9])
    for arguments in [
      ["replay", "--to", "10"], ["replay", "--to", String(before)], ["replay", "--at", ten],
      ["replay", "--to", String(before), "--json"], ["diff", "3", String(before)],
      ["diff", String(before), "0", "--json"], ["show", "10"], ["show", "10", "--json"], ["show", "3"],
    ] {
      let run = try await Self.run(arguments, journal.path)
      #expect(run.status == 0, "\(arguments): \(run.out)\(run.err)")
      #expect(run.err.isEmpty, "\(arguments): \(run.err)")
      let whole = try await Self.run(arguments, intact)
      try #require(whole.status == 0, "\(arguments): \(whole.err)")
      // Show names the directory on its first line; replay's summary, the journal's end.
      let expected = whole.out.replacingOccurrences(of: intact, with: journal.path)
      guard arguments[0] == "replay", !arguments.contains("--json") else {
        #expect(run.out == expected, "\(arguments)")
        continue
      }
      let lines = run.out.split(separator: "\n", omittingEmptySubsequences: false)
      let wholeLines = expected.split(separator: "\n", omittingEmptySubsequences: false)
      let sequence = arguments.contains(ten) ? 10 : UInt64(arguments[2]) ?? 0
      #expect(lines.count == wholeLines.count, "\(arguments): \(run.out)")
      for (line, wholeLine) in zip(lines, wholeLines) where !wholeLine.hasPrefix("sequence ") {
        #expect(line == wholeLine, "\(arguments)")
      }
      #expect(lines.contains("sequence     \(sequence) of ? (damage after it hides the end)"), "\(run.out)")
      #expect(run.out.contains("digest       \(try StateDigest.of(journal.states[Int(sequence)]))"), "\(run.out)")
    }
    // `goto TIME` in debug checks the time against the journal's first record's, as replay does.
    let debug = try await ToolRun.run("rewind", ["debug", journal.path], input: "goto \(ten)\n")
    #expect(debug.out.hasPrefix("at 10 of \(before): #10 "), "\(debug.out)\(debug.err)")
    #expect(!debug.err.contains("error: "), "\(debug.err)")
    let json = try await Self.run(["replay", "--to", String(before), "--json"], journal.path)
    #expect(json.out.contains(#""seq":\#(before),"digest":"\#(try StateDigest.of(journal.states[Int(before)]))""#))
  }

  /// At or past the gap, or to the end: exit 3 and nothing on standard output, the gap located
  /// (the segment, the sequences it held) with the last record read intact before it.
  @Test func aTargetAtOrPastTheGapReportsIt() async throws {
    let (journal, _, file, first, before, _) = try await Self.journals()
    let end = String(journal.lastSequence)
    let inGap = isoTime(journal.timestamps[Int(first) + 2])
    for arguments in [
      ["replay"], ["replay", "--json"], ["replay", "--to", String(first)], ["replay", "--to", end],
      ["replay", "--to", "99999"], ["replay", "--at", inGap], ["diff", "3", String(first)],
      ["diff", end, "0", "--json"], ["diff", String(first + 1), String(first + 2)],
    ] {
      let run = try await Self.run(arguments, journal.path)
      #expect(run.status == 3, "\(arguments): \(run.out)\(run.err)")
      #expect(run.out.isEmpty, "\(arguments): \(run.out)")
      #expect(run.err.hasPrefix("rewind \(arguments[0]): "), "\(arguments): \(run.err)")
      #expect(run.err.contains("segment \(file) is missing, but the index names it"), "\(arguments): \(run.err)")
      #expect(run.err.contains("sequences \(first)-"), "\(arguments): \(run.err)")
      #expect(
        run.err.contains("The records through sequence \(before), the last before the damage, read intact: "),
        "\(arguments): \(run.err)")
    }
    // A record the gap held: no event to show.
    for sequence in [first, first + 3] {
      let run = try await Self.run(["show", String(sequence)], journal.path)
      #expect(run.status == 3, "\(sequence): \(run.out)\(run.err)")
      #expect(run.out.isEmpty, "\(sequence): \(run.out)")
      #expect(run.err.contains("segment \(file) is missing, but the index names it"), "\(sequence): \(run.err)")
    }
  }

  /// `show` next to the gap, and after it. The last event before the gap and the first after it
  /// are shown as the intact journal shows them, less their command's extent, which the events
  /// the gap held would tell: then exit 3, the gap located. An event after the gap whose
  /// command's events read is shown whole (exit 0), as after a damaged frame, its touched records
  /// inferred, since no model replays through the gap; the reason names the gap.
  @Test func showAroundTheGap() async throws {
    let (journal, intact, file, first, before, scratch) = try await Self.journals()
    defer { withExtendedLifetime(scratch) {} }
    let next = try #require(
      Files.list(journal.path).filter { $0.hasSuffix(".lz4") }.compactMap { UInt64($0.prefix(20)) }.first { $0 > first }
    )
    for sequence in [before, next] {
      let run = try await Self.run(["show", String(sequence)], journal.path)
      #expect(run.status == 3, "\(sequence): \(run.out)\(run.err)")
      #expect(run.err.contains("segment \(file) is missing, but the index names it"), "\(run.err)")
      #expect(run.err.contains("Event \(sequence) read intact and was shown"), "\(run.err)")
      let whole = try await Self.run(["show", String(sequence)], intact)
      let expected = whole.out.replacingOccurrences(of: intact, with: journal.path).split(separator: "\n")
      let lines = run.out.split(separator: "\n")
      #expect(expected.contains { $0.hasPrefix("  command   ") } && !lines.contains { $0.hasPrefix("  command   ") })
      if sequence == before {
        #expect(lines == expected.filter { !$0.hasPrefix("  command   ") }, "\(run.out)")
      } else {
        let head = { (lines: [Substring]) in
          lines.prefix { !$0.hasPrefix("  touched ") }.filter { !$0.hasPrefix("  command   ") }
        }
        #expect(head(lines) == head(expected), "\(run.out)")
      }
    }
    let after = next + 20
    let run = try await Self.run(["show", String(after)], journal.path)
    #expect(run.status == 0, "\(run.out)\(run.err)")
    #expect(run.out.hasPrefix("event \(after) in \(journal.path)\n"), "\(run.out)")
    #expect(run.out.contains("  command   "), "\(run.out)")
    #expect(run.out.contains("  touched   inferred from the identifiers in its fields"), "\(run.out)")
    #expect(run.out.contains("cannot replay up to sequence \(after): segment \(file) is missing"), "\(run.out)")
  }

  /// With several models registered, the one that reads the journal's first events is chosen:
  /// they were read with a cursor that refused the journal as it was made.
  @Test func aModelIsChosenByTheEventsBeforeTheGap() async throws {
    let (journal, _, file, first, before, _) = try await Self.journals()
    let tool = RewindTool(models: [
      ModelRegistration(Workspace.self, name: "workspace"), ModelRegistration(Shelf.self, name: "shelf"),
    ])
    let captured = Captured()
    #expect(
      await tool.run(["replay", journal.path, "--to", String(before)], output: captured.output) == 0, "\(captured.err)")
    #expect(captured.out.hasPrefix("model        workspace\n"), "\(captured.out)")
    #expect(captured.out.contains("digest       \(try StateDigest.of(journal.states[Int(before)]))"), "\(captured.out)")
    let past = Captured()
    #expect(await tool.run(["diff", journal.path, "0", String(first)], output: past.output) == 3, "\(past.err)")
    #expect(past.err.contains("segment \(file) is missing"), "\(past.err)")
  }
}
