import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

/// An auditor's journal whose end damage hides: `replay --to`, `diff` and the time machine under
/// them refused it for every target, even one wholly before the damage (replay asked the journal
/// for its end first). A target before the damage is served now, as from the journal before it
/// was damaged; one at or past it exits 3 with the damage located.
@Suite struct ReplayBeforeDamageCommandTests {
  enum Damage: String, CaseIterable, CustomTestStringConvertible {
    /// The last segment cut short after its first frame, before batches the index names.
    case atTheEnd
    /// A byte flipped in a frame in the middle of the last segment, after its last index entry.
    case flipped
    var testDescription: String { rawValue }
  }

  /// A Notebook journal of several small segments, an intact copy of it, and the journal damaged
  /// as `damage` says; with the last sequence number read intact before the damage.
  static func damaged(_ damage: Damage) async throws -> (
    journal: NotebookJournal, intact: TemporaryDirectory, last: UInt64
  ) {
    var options = JournalOptions(durability: .none)
    options.segmentTargetBytes = 4096
    options.indexIntervalBytes = damage == .atTheEnd ? 256 : 1 << 20
    let journal = try await NotebookJournal.write(commands: 120, seed: 81, options: options)
    let copy = TemporaryDirectory("cli-intact")
    try FileManager.default.copyItem(atPath: journal.path, toPath: copy.appending("journal"))
    try #require(Files.list(journal.path).filter { $0.hasSuffix(".lz4") }.count > 3)
    try damageLastSegment(in: journal.path, cut: damage == .atTheEnd)
    let reader = try JournalReader(directory: journal.path)
    #expect(throws: JournalError.self, "the damage hides the end") { try reader.lastSequence() }
    let last = try intactPrefix(of: journal.path).last
    try #require(last > 20 && last < journal.lastSequence)
    return (journal, copy, last)
  }

  /// `replay --to N` and `diff A B` before the damage: exit 0, the output the journal gave before
  /// it was damaged (the digest of the live state at N).
  @Test(arguments: Damage.allCases)
  func replayAndDiffBeforeTheDamage(damage: Damage) async throws {
    let (journal, copy, last) = try await Self.damaged(damage)
    let intact = copy.appending("journal")
    for arguments in [
      ["replay", "--to", String(last), "--json"], ["replay", "--to", "7"], ["diff", "3", String(last)],
    ] {
      let run = try await ToolRun.run("rewind", [arguments[0], journal.path] + arguments.dropFirst())
      #expect(run.status == 0, "\(arguments): \(run.err)")
      let whole = try await ToolRun.run("rewind", [arguments[0], intact] + arguments.dropFirst())
      #expect(whole.status == 0, "\(arguments): \(whole.err)")
      if arguments == ["replay", "--to", "7"] {
        // The summary names the journal's end, which only the intact copy shows.
        #expect(run.out.contains("sequence     7 of ? (damage after it hides the end)"), "\(run.out)")
        #expect(run.out.contains("digest       \(try StateDigest.of(journal.states[7]))"), "\(run.out)")
      } else {
        #expect(run.out == whole.out, "\(arguments)")
      }
    }
    let replayed = try await ToolRun.run("rewind", ["replay", journal.path, "--to", String(last), "--json"])
    #expect(replayed.out.contains(#""seq":\#(last),"digest":"\#(try StateDigest.of(journal.states[Int(last)]))""#))
  }

  /// At or past the damage, or a command that reads the whole history: exit 3, the damage located.
  @Test(arguments: Damage.allCases)
  func aTargetAtOrPastTheDamageReportsIt(damage: Damage) async throws {
    let (journal, _, last) = try await Self.damaged(damage)
    let end = String(journal.lastSequence)
    for arguments in [
      ["replay"], ["replay", "--to", String(last + 1)], ["replay", "--to", end], ["replay", "--to", "99999"],
      ["diff", "3", String(last + 1)], ["blame", "settings"], ["bisect", "--invariant", "notes belong to notebooks"],
      ["snapshot"], ["debug"],
    ] {
      let run = try await ToolRun.run("rewind", [arguments[0], journal.path] + arguments.dropFirst())
      #expect(run.status == 3, "\(arguments): \(run.out)\(run.err)")
      #expect(run.err.contains(journal.path) && run.err.contains("byte offset"), "located: \(arguments): \(run.err)")
      #expect(!run.out.contains("digest"), "\(arguments): \(run.out)")
    }
  }
}
