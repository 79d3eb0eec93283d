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
  /// as `damage` says; with the last sequence number read intact before the damage. With
  /// `plantAt`, a notebook titled "forbidden" is created at that step (`NotebookJournal.write`).
  static func damaged(_ damage: Damage, plantAt: Int? = nil) async throws -> (
    journal: NotebookJournal, intact: TemporaryDirectory, last: UInt64
  ) {
    var options = JournalOptions(durability: .none)
    options.segmentTargetBytes = 4096
    options.indexIntervalBytes = damage == .atTheEnd ? 256 : 1 << 20
    let journal = try await NotebookJournal.write(commands: 120, seed: 81, plantAt: plantAt, options: options)
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

  /// At or past the damage, or a command that needs the journal's end: exit 3, the damage located.
  @Test(arguments: Damage.allCases)
  func aTargetAtOrPastTheDamageReportsIt(damage: Damage) async throws {
    let (journal, _, last) = try await Self.damaged(damage)
    let end = String(journal.lastSequence)
    for arguments in [
      ["replay"], ["replay", "--to", String(last + 1)], ["replay", "--to", end], ["replay", "--to", "99999"],
      ["diff", "3", String(last + 1)], ["snapshot"],
    ] {
      let run = try await ToolRun.run("rewind", [arguments[0], journal.path] + arguments.dropFirst())
      #expect(run.status == 3, "\(arguments): \(run.out)\(run.err)")
      #expect(run.err.contains(journal.path) && run.err.contains("byte offset"), "located: \(arguments): \(run.err)")
      #expect(!run.out.contains("digest"), "\(arguments): \(run.out)")
    }
  }
}

extension ReplayBeforeDamageCommandTests {
  /// A snapshot whose record lies in the second of two damaged frames of the last segment, past
  /// the last index entry before them: `replay --to` at it and past it exited 3 (the cursor from the index entry
  /// checked the damaged frame on its way), and the text summary at it failed where `--json`
  /// printed the state (the review of the time-travel commands, Dec 6; entry 306's "Left"). The
  /// frame is stepped over by its header now: both are served from the snapshot, as the intact
  /// journal serves them; before the snapshot, the damage is still met.
  @Test func aSnapshotJustAfterADamagedFrameIsStartedFrom() async throws {
    var options = JournalOptions(durability: .none)
    options.indexIntervalBytes = 1 << 20
    let journal = try await NotebookJournal.write(commands: 120, seed: 82, options: options)
    let copy = TemporaryDirectory("cli-intact")
    let intact = copy.appending("journal")
    try FileManager.default.copyItem(atPath: journal.path, toPath: intact)
    let segment = journal.path + "/" + (try #require(Files.list(journal.path).filter { $0.hasSuffix(".lz4") }.last))
    var bytes = try Files.read(segment)
    let frames = segmentFrames(in: bytes)
    try #require(frames.count > 6)
    // Two frames in a row, the snapshot at the last record of the second.
    let damaged = frames[frames.count / 2]
    let snapshot = frames[frames.count / 2 + 1].sequences.upperBound
    for directory in [journal.path, intact] {
      _ = try SnapshotStore(journal: directory).write(journal.states[Int(snapshot)], at: snapshot)
    }
    bytes[damaged.middleOfData] ^= 0x5A
    bytes[frames[frames.count / 2 + 1].middleOfData] ^= 0x5A
    try Files.write(bytes, to: segment)
    for target in [snapshot, snapshot + 2, journal.lastSequence] {
      for json in [false, true] {
        let arguments = ["replay", "--to", String(target)] + (json ? ["--json"] : [])
        let run = try await ToolRun.run("rewind", [arguments[0], journal.path] + arguments.dropFirst())
        #expect(run.status == 0, "\(arguments): \(run.err)")
        let whole = try await ToolRun.run("rewind", [arguments[0], intact] + arguments.dropFirst())
        let digest = "\(try StateDigest.of(journal.states[Int(target)]))"
        #expect(
          run.out.contains(json ? #""digest":"\#(digest)""# : "digest       \(digest)"), "\(arguments): \(run.out)")
        #expect(whole.out.contains(json ? #""digest":"\#(digest)""# : "digest       \(digest)"), "\(arguments)")
        if !json {
          #expect(run.out.contains("started from the snapshot at sequence \(snapshot)"), "\(run.out)")
        }
      }
    }
    // The snapshot's own record is in a damaged frame, and another damaged frame lies before it:
    // its time cannot be read, and the first damage on the way to it is named (it was called
    // the record's own frame: the review of the day's change, Dec 6).
    let atSnapshot = try await ToolRun.run("rewind", ["replay", journal.path, "--to", String(snapshot)])
    #expect(
      atSnapshot.out.contains(
        "sequence     \(snapshot) of ? (damage at or before it, from sequence \(damaged.sequences.lowerBound), "),
      "\(atSnapshot.out)")
    #expect(
      atSnapshot.out.contains("time         ? (damage before its record, not read past: frame checksum mismatch, "),
      "\(atSnapshot.out)")
    #expect(atSnapshot.out.contains("byte offset \(damaged.offset); the state is the snapshot's)"), "\(atSnapshot.out)")
    // With only the snapshot's own frame damaged, the time line says that frame is damaged.
    let alone = TemporaryDirectory("cli-own-frame")
    let own = alone.appending("journal")
    try FileManager.default.copyItem(atPath: intact, toPath: own)
    let ownSegment = own + "/" + (segment.split(separator: "/").last.map(String.init) ?? "")
    var ownBytes = try Files.read(ownSegment)
    ownBytes[frames[frames.count / 2 + 1].middleOfData] ^= 0x5A
    try Files.write(ownBytes, to: ownSegment)
    let atOwn = try await ToolRun.run("rewind", ["replay", own, "--to", String(snapshot)])
    #expect(atOwn.status == 0, "\(atOwn.err)")
    #expect(
      atOwn.out.contains("time         ? (its record's frame is damaged: frame checksum mismatch, "), "\(atOwn.out)")
    #expect(
      atOwn.out.contains("byte offset \(frames[frames.count / 2 + 1].offset); the state is the snapshot's)"),
      "\(atOwn.out)")
    // Before the snapshot the damaged records are needed: the damage, located.
    let before = try await ToolRun.run(
      "rewind", ["replay", journal.path, "--to", String(damaged.sequences.lowerBound)])
    #expect(before.status == 3, "\(before.out)")
    #expect(before.err.contains("byte offset \(damaged.offset)"), "\(before.err)")
    // `verify` reports the two damaged frames, and the snapshot after them as what it is: a
    // file inside the journal, not one written past its end (which would mean records lost
    // at the end; the review of the day's change, Dec 6, entry 315's "Left").
    let verify = try await ToolRun.run("rewind", ["verify", journal.path])
    #expect(verify.status == 1, "\(verify.out)\(verify.err)")
    #expect(
      verify.out.contains("damaged: 2 problems; intact up to sequence \(damaged.sequences.lowerBound - 1)."),
      "\(verify.out)")
    #expect(!verify.out.contains("snapshots/"), "\(verify.out)")
  }
}

/// `blame`, `bisect` and `debug` of a journal whose end damage hides: they refused it before
/// reading anything, though an auditor needs exactly them there. They now serve the records
/// before the damage, as `log` and `replay --to` do, and say where the damage is (exit 3).
@Suite struct AuditBeforeDamageCommandTests {
  typealias Damage = ReplayBeforeDamageCommandTests.Damage

  /// `rewind log --json` of a journal, each line with its sequence number.
  static func logLines(_ directory: String) async throws -> [(seq: UInt64, line: String)] {
    let log = try await ToolRun.run("rewind", ["log", directory, "--json"])
    #expect(log.status == 0, "\(log.err)")
    return log.out.split(separator: "\n").map(String.init).compactMap { line in
      guard let match = line.firstMatch(of: /"seq":(\d+)/), let seq = UInt64(match.1) else { return nil }
      return (seq, line)
    }
  }

  /// A record id that events touch both before and after sequence `last` (by its 32 hex digits on
  /// their `log` lines).
  static func entityTouchedAcross(_ last: UInt64, in lines: [(seq: UInt64, line: String)]) throws -> String {
    func ids(_ lines: some Sequence<(seq: UInt64, line: String)>) -> Set<String> {
      Set(lines.flatMap { $0.line.matches(of: /[0-9a-f]{32}/).map { String($0.output) } })
    }
    let across = ids(lines.filter { $0.seq <= last }).intersection(ids(lines.filter { $0.seq > last }))
    return try #require(across.sorted().first, "an id touched on both sides of the damage")
  }

  /// blame: every event before the damage that touched the entity, each with the record after it,
  /// as blame of the intact journal shows them; then the damage, located, and exit 3.
  @Test(arguments: Damage.allCases)
  func blameShowsTheEventsBeforeTheDamage(damage: Damage) async throws {
    let (journal, copy, last) = try await ReplayBeforeDamageCommandTests.damaged(damage)
    let intact = copy.appending("journal")
    let id = try Self.entityTouchedAcross(last, in: try await Self.logLines(intact))
    for entity in [id, "settings"] {
      let whole = try await ToolRun.run("rewind", ["blame", intact, entity, "--json"])
      #expect(whole.status == 0, "\(whole.err)")
      let expected = whole.out.split(separator: "\n").filter { line in
        line.firstMatch(of: /"seq":(\d+)/).flatMap { UInt64($0.1) }.map { $0 <= last } ?? false
      }
      let run = try await ToolRun.run("rewind", ["blame", journal.path, entity, "--json"])
      #expect(run.status == 3, "\(entity): \(run.err)")
      #expect(!expected.isEmpty && run.out.split(separator: "\n") == expected, "\(entity): \(run.out)")
      #expect(run.err.contains(journal.path) && run.err.contains("byte offset"), "located: \(run.err)")
      #expect(run.err.contains("through sequence \(last), the last before the damage"), "\(run.err)")
      #expect(!run.err.contains(String(UInt64.max)) && !run.out.contains(String(UInt64.max)))
    }
    let text = try await ToolRun.run("rewind", ["blame", journal.path, id])
    #expect(text.status == 3)
    #expect(text.out.hasPrefix("\(id) in "), "\(text.out)")
    #expect(text.out.contains("before the damage that hides the journal's end\n"), "\(text.out)")
    // An entity no event before the damage touched: not a usage error, the rest was not read.
    let none = try await ToolRun.run("rewind", ["blame", journal.path, String(repeating: "ab", count: 16)])
    #expect(none.status == 3 && none.err.contains("no event among them touched") && none.err.contains("byte offset"))
  }

  /// bisect: a break before the damage is found as in the intact journal (exit 1, with a note that
  /// the rest was not examined); an invariant that holds through the last intact record is said
  /// to hold there, and the damage hiding the rest is located (exit 3).
  @Test(arguments: Damage.allCases)
  func bisectSearchesBeforeTheDamage(damage: Damage) async throws {
    let (journal, _, last) = try await ReplayBeforeDamageCommandTests.damaged(damage, plantAt: 10)
    let planted = try #require(journal.planted)
    try #require(planted < last)
    for linear in [false, true] {
      let flag = linear ? ["--linear"] : []
      // The test tool registers the invariant (TimeTravelCommandTests).
      let failing = try await ToolRun.run(
        TimeTravelCommandTests.tool, ["bisect", journal.path, "--invariant", "no notebook is titled forbidden"] + flag)
      #expect(failing.status == 1, "\(failing.err)")
      #expect(
        failing.out.hasPrefix("invariant 'no notebook is titled forbidden' first fails at sequence \(planted)\n"),
        "\(failing.out)")
      #expect(failing.err.contains("note: ") && failing.err.contains("byte offset"), "\(failing.err)")
      #expect(failing.err.contains("the history after the damage was not examined"), "\(failing.err)")
      let holds = try await ToolRun.run(
        "rewind", ["bisect", journal.path, "--invariant", "notes belong to notebooks"] + flag)
      #expect(holds.status == 3, "\(holds.out)\(holds.err)")
      #expect(
        holds.out.contains("holds") && holds.out.contains("sequence \(last), the last before damage"), "\(holds.out)")
      #expect(holds.err.contains(journal.path) && holds.err.contains("byte offset"), "\(holds.err)")
      #expect(holds.err.contains("the invariant holds through it"), "\(holds.err)")
      let json = try await ToolRun.run(
        "rewind", ["bisect", journal.path, "--invariant", "notes belong to notebooks", "--json"] + flag)
      #expect(json.status == 3)
      #expect(
        json.out.contains(#""lastSequence":\#(last),"firstFailure":null"#) && json.out.contains(#""endHidden":true"#))
    }
  }

  /// bisect and debug's `check` called the state after the last record read before damage that
  /// hides the end the first failure (exit 1), though that record's command may go on in the
  /// damage (an app may append a command's events in parts; helper-213, Dec 7: a break inside a
  /// command of six events, repaired by its last, reported "first fails at 187"). The failure
  /// there is said and not claimed, exit 3.
  @Test func aFailureAtTheLastRecordBeforeTheDamageIsNotClaimed() async throws {
    let directory = TemporaryDirectory()
    let path = directory.path
    try await Self.notebooks(["one", "two", "three", "forbidden", "five", "six", "seven"], in: path).close()
    let forbidden: UInt64 = 4
    let frame = try Self.damageFrame(startingAt: forbidden + 1, in: path)
    let invariant = "no notebook is titled forbidden"
    for flags in [[], ["--linear"]] {
      let run = try await ToolRun.run(TimeTravelCommandTests.tool, ["bisect", path, "--invariant", invariant] + flags)
      #expect(run.status == 3, "\(flags): \(run.out)\(run.err)")
      #expect(
        run.out.hasPrefix(
          "invariant '\(invariant)' fails at sequence \(forbidden), the last record read before damage that hides "
            + "the journal's end; whether its command ends there cannot be told"), "\(flags): \(run.out)")
      #expect(!run.out.contains("first fails"), "\(flags): \(run.out)")
      #expect(run.err.contains("byte offset \(frame.offset)"), "\(flags): \(run.err)")
      let json = try await ToolRun.run(
        TimeTravelCommandTests.tool, ["bisect", path, "--invariant", invariant, "--json"] + flags)
      #expect(json.status == 3)
      #expect(
        json.out.contains(#""lastSequence":\#(forbidden),"firstFailure":null"#)
          && json.out.contains(#""failsWhereDamageCutsTheCommand":true,"endHidden":true"#), "\(json.out)")
    }
    let debug = try await ToolRun.run(
      TimeTravelCommandTests.tool, ["debug", path],
      input: "goto \(forbidden)\ncheck \(invariant)\ngoto 3\ncheck \(invariant)\n")
    #expect(
      debug.out.contains(
        "'\(invariant)' fails at sequence \(forbidden), the last record read before the damage that hides the "
          + "journal's end; whether its command ends there cannot be told"), "\(debug.out)")
    #expect(debug.out.contains("'\(invariant)' holds at sequence 3\n"), "\(debug.out)")
    // replay to that record says so too; to the one before, whose command ends there, nothing.
    let replayed = try await ToolRun.run(TimeTravelCommandTests.tool, ["replay", path, "--to", String(forbidden)])
    #expect(replayed.status == 0)
    #expect(
      replayed.err.hasPrefix("note: whether sequence \(forbidden) ends its command ")
        && replayed.err.contains("cannot be told: ") && replayed.err.contains("byte offset \(frame.offset)"),
      "\(replayed.err)")
    let before = try await ToolRun.run(TimeTravelCommandTests.tool, ["replay", path, "--to", String(forbidden - 1)])
    #expect(before.status == 0 && before.err.isEmpty, "\(before.err)")
  }

  /// A manager (durability `none`, one index entry a segment) that has created a notebook of each
  /// title, one command each.
  static func notebooks(_ titles: [String], in path: String) async throws -> NotebookManager {
    var options = JournalOptions(durability: .none)
    options.indexIntervalBytes = 1 << 20
    let manager = try NotebookManager(directory: path, options: options)
    for title in titles { _ = try await manager.createNotebook(title: title) }
    return manager
  }

  /// Flips a byte in the middle of the frame of the last segment whose first record is
  /// `sequence`; returns that frame.
  @discardableResult
  static func damageFrame(startingAt sequence: UInt64, in path: String) throws -> SegmentFrame {
    let name = try #require(Files.list(path).filter { $0.hasSuffix(".lz4") }.last)
    var bytes = try Files.read(path + "/" + name)
    let frame = try #require(segmentFrames(in: bytes).first { $0.header.firstSequence == sequence })
    bytes[frame.middleOfData] ^= 0x5A
    try Files.write(bytes, to: path + "/" + name)
    return frame
  }

  /// Damage right before a replay's target, which a snapshot lets replay pass over, says nothing
  /// of where the target's command ends (the record after it is intact, another command's), and
  /// a checkpoint record at the end changes no state (the review of entry 364, helper-214).
  @Test func damageBeforeTheTargetLeavesItsCommandsEndTold() async throws {
    let directory = TemporaryDirectory()
    let path = directory.path
    let manager = try await Self.notebooks(["one", "two", "three", "four", "five", "six", "seven"], in: path)
    try #require(try Snapshots.take(Workspace.self, directory: path)?.sequence == 7)
    for title in ["eight", "nine"] { _ = try await manager.createNotebook(title: title) }
    manager.close()
    try Self.damageFrame(startingAt: 7, in: path)
    let replayed = try await ToolRun.run(TimeTravelCommandTests.tool, ["replay", path, "--to", "8"])
    #expect(replayed.status == 0, "\(replayed.err)")
    #expect(replayed.out.contains("started from the snapshot at sequence 7"), "\(replayed.out)")
    #expect(!replayed.err.contains("cannot be told"), "\(replayed.err)")

    // A checkpoint's records last before the damage: the state there is the one after the
    // command before them, which `check` judges plainly, as bisect claims it.
    let checkpointed = TemporaryDirectory()
    let other = try await Self.notebooks(["one", "forbidden"], in: checkpointed.path)
    _ = try await other.recordCheckpoint()  // the mark at 3, its digest at 4
    for title in ["five", "six", "seven"] { _ = try await other.createNotebook(title: title) }
    other.close()
    try Self.damageFrame(startingAt: 5, in: checkpointed.path)
    let invariant = "no notebook is titled forbidden"
    let debug = try await ToolRun.run(
      TimeTravelCommandTests.tool, ["debug", checkpointed.path], input: "goto 4\ncheck \(invariant)\n")
    #expect(debug.err.hasPrefix("rewind debug: damage hides the journal's end: "), "\(debug.err)")
    #expect(debug.out.contains("'\(invariant)' fails at sequence 4\n"), "\(debug.out)")
    let atTheDigest = try await ToolRun.run(TimeTravelCommandTests.tool, ["replay", checkpointed.path, "--to", "4"])
    #expect(atTheDigest.status == 0 && !atTheDigest.err.contains("cannot be told"), "\(atTheDigest.err)")
    let bisect = try await ToolRun.run(
      TimeTravelCommandTests.tool, ["bisect", checkpointed.path, "--invariant", invariant])
    #expect(bisect.status == 1 && bisect.out.hasPrefix("invariant '\(invariant)' first fails at sequence 2\n"))
  }

  /// debug: a session over the records before the damage, which its first line locates; a move
  /// past them is refused with a message, never a state short of it or a sentinel number.
  @Test(arguments: Damage.allCases)
  func debugServesTheRecordsBeforeTheDamage(damage: Damage) async throws {
    let (journal, _, last) = try await ReplayBeforeDamageCommandTests.damaged(damage)
    let script = [
      "goto \(last)", "print", "step", "goto end", "goto \(last + 1)", "goto 99999", "back 2", "step 5", "where",
      "blame nosuch",
    ]
    let run = try await ToolRun.run("rewind", ["debug", journal.path], input: script.joined(separator: "\n") + "\n")
    #expect(run.status == 3, "\(run.err)")
    let err = run.err.split(separator: "\n").map(String.init)
    #expect(err.first?.hasPrefix("rewind debug: damage hides the journal's end: ") == true, "\(run.err)")
    #expect(err.first?.contains("byte offset") == true && err.first?.contains(journal.path) == true)
    #expect(err.first?.contains("at sequence \(last), the last record read intact") == true, "\(run.err)")
    #expect(err.count == 5, "the start line, one per refused goto, and blame's: \(run.err)")
    #expect(err.dropFirst().dropLast().allSatisfy { $0.contains("is past the end of this session") }, "\(run.err)")
    // Records after the damage may touch it: blame says its answer is of the records before it.
    #expect(
      err.last
        == "error: blame: no event ever touched 'nosuch' (the records before the damage that hides the journal's end)",
      "\(run.err)")
    let out = run.out.split(separator: "\n").map(String.init)
    #expect(out.first?.hasPrefix("at \(last) of \(last): ") == true, "\(run.out)")
    #expect(run.out.contains("at \(last): digest \(try StateDigest.of(journal.states[Int(last)]))"), "\(run.out)")
    #expect(run.out.contains("nothing after it can be read"), "\(run.out)")
    #expect(run.out.contains("stopped at sequence \(last), the last record before the damage"), "\(run.out)")
    #expect(out.last?.hasPrefix("at \(last) of \(last): ") == true, "\(run.out)")
    #expect(!run.out.contains(String(UInt64.max)) && !run.err.contains(String(UInt64.max)))
  }

  /// Damage that hides no end (a frame flipped in a sealed segment in the middle, which later
  /// segments and index entries follow), as the README says: `blame` and `bisect` stop at it,
  /// exit 3, located, with nothing shown; `debug` starts with no line about a hidden end, and a
  /// move that must replay through the damage fails, located, the session staying where it was.
  /// The first record damaged: `replay --to 0` and `diff 0 0` exited 3 naming it, though the
  /// empty state needs no record (the bounds read the first record's time for every target, not
  /// only for `--at`). They serve it now; `--at`, which needs that time, and a target past the
  /// damage still exit 3, located.
  @Test func theEmptyStateNeedsNoRecordIntact() async throws {
    let journal = try await NotebookJournal.write(commands: 20, seed: 82, options: JournalOptions(durability: .none))
    let name = Layout.segmentName(firstSequence: 1)
    let path = journal.directory.appending(name)
    var bytes = try Files.read(path)
    let first = try #require(segmentFrames(in: bytes).first)
    bytes[first.middleOfData] ^= 0x5A
    try Files.write(bytes, to: path)
    let replay = try await ToolRun.run("rewind", ["replay", journal.path, "--to", "0"])
    #expect(replay.status == 0 && replay.out.contains("sequence     0 of "), "\(replay.out)\(replay.err)")
    let diff = try await ToolRun.run("rewind", ["diff", journal.path, "0", "0"])
    #expect(diff.status == 0 && diff.out.hasPrefix("no changes from 0 to 0"), "\(diff.out)\(diff.err)")
    for arguments in [["replay", journal.path, "--at", "2023-11-14T22:13:30Z"], ["diff", journal.path, "0", "1"]] {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 3 && run.err.contains("(\(name), byte offset \(first.offset)"), "\(arguments): \(run.err)")
    }
  }

  @Test func damageThatHidesNoEndStopsBlameBisectAndDebugMoves() async throws {
    let (journal, intact, _) = try await DamagedJournalCommandTests.damaged(.flipped)
    let first = try await ToolRun.run("rewind", ["log", journal.path, "--to", "1", "--json"])
    let notebook = try #require(first.out.firstMatch(of: /"id":"([0-9a-f]{32})"/)?.1, "\(first.out)")
    let blame = try await ToolRun.run("rewind", ["blame", journal.path, String(notebook)])
    #expect(blame.status == 3, "\(blame.err)")
    #expect(blame.out.isEmpty, "nothing shown: \(blame.out)")
    #expect(blame.err.contains("byte offset") && !blame.err.contains("read intact"), "\(blame.err)")
    let bisect = try await ToolRun.run("rewind", ["bisect", journal.path, "--invariant", "notes belong to notebooks"])
    #expect(bisect.status == 3 && bisect.out.isEmpty, "\(bisect.out)\(bisect.err)")
    #expect(bisect.err.contains("byte offset") && !bisect.err.contains("holds through"), "\(bisect.err)")
    let script = ["goto \(intact)", "goto \(journal.lastSequence)", "where"]
    let debug = try await ToolRun.run("rewind", ["debug", journal.path], input: script.joined(separator: "\n") + "\n")
    #expect(debug.status == 3, "\(debug.err)")
    #expect(!debug.err.contains("hides the journal's end"), "\(debug.err)")
    let err = debug.err.split(separator: "\n")
    #expect(err.count == 1 && err[0].hasPrefix("error: goto: ") && err[0].contains("byte offset"), "\(debug.err)")
    let out = debug.out.split(separator: "\n")
    #expect(out.first?.hasPrefix("at \(intact) of \(journal.lastSequence): ") == true, "\(debug.out)")
    #expect(out.last?.hasPrefix("at \(intact) of \(journal.lastSequence): ") == true, "\(debug.out)")
  }
}
