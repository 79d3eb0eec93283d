import Foundation
import RewindCLI
import RewindJournal
import RewindTestSupport
import Testing

/// An auditor's damaged journal: what is intact comes out, then the damage, located, with what
/// was read before it. `log`, `export` and `tail` used to exit 3 before printing anything when the
/// damage hid the journal's end (committed records the index names gone), even for a selection
/// wholly before it.
@Suite struct DamagedJournalCommandTests {
  /// Damage as a disk does it, to a Notebook journal of several small segments.
  enum Damage: String, CaseIterable, CustomTestStringConvertible {
    /// The last segment cut short inside a frame before a batch the index names: records gone
    /// at the end, hiding it.
    case atTheEnd
    /// A byte flipped in the data frame at the middle of a sealed segment in the middle.
    case flipped
    /// That sealed segment cut short inside that frame.
    case truncatedSealed
    var testDescription: String { rawValue }
  }

  /// The journal damaged as `damage` says, the last sequence number read intact before the
  /// damage, and the records the damage holds (nil: every record after `intact`).
  static func damaged(_ damage: Damage) async throws -> (
    journal: NotebookJournal, intact: UInt64, lost: ClosedRange<UInt64>?
  ) {
    let journal: NotebookJournal
    var lost: ClosedRange<UInt64>?
    if damage == .atTheEnd {
      journal = try await IndexedLossCommandTests.damaged(.cutShort).journal
    } else {
      var options = JournalOptions(durability: .none)
      options.segmentTargetBytes = 4096
      options.indexIntervalBytes = 256
      journal = try await NotebookJournal.write(commands: 120, seed: 81, options: options)
      let segments = Files.list(journal.path).filter { $0.hasSuffix(".lz4") }.sorted()
      try #require(segments.count > 3)
      let path = journal.directory.appending(segments[2])
      var bytes = try Files.read(path)
      let frames = segmentFrames(in: bytes)
      let frame = frames[frames.count / 2]
      let inside = frame.middleOfData
      let first = frame.header.firstSequence
      if damage == .flipped {
        bytes[inside] ^= 0x5A
        try Files.write(bytes, to: path)
        lost = frame.sequences
      } else {
        try Files.write(Array(bytes[..<inside]), to: path)
        let next = try #require(UInt64(segments[3].prefix(20)))
        lost = first...(next - 1)
      }
    }
    // What a reader gets before the damage, as the library reads it.
    let (intact, stoppedBy) = try intactPrefix(of: journal.path)
    let error = try #require(stoppedBy, "the journal reads whole")
    #expect(error.code == .corrupt || error.code == .sequenceBreak, "\(error)")
    try #require(intact > 20 && intact < journal.lastSequence)
    if let lost { try #require(lost.lowerBound == intact + 1) }
    return (journal, intact, lost)
  }

  static func sequences(_ run: ToolRun) -> [UInt64] {
    run.out.split(separator: "\n").compactMap { line in
      if line.hasPrefix("{") {
        let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        return (object?["seq"] as? NSNumber)?.uint64Value
      }
      return line.split(separator: " ").first.flatMap { UInt64($0) }
    }
  }

  /// Every record the damage does not hold comes out, in order: before it, and after it when
  /// the damage names its records (or a later segment starts after them); the damage is located
  /// where it is met, with the records not read, and the last message says what came out.
  @Test(arguments: Damage.allCases)
  func logAndExportShowEveryIntactRecordThenTheDamage(damage: Damage) async throws {
    let (journal, intact, lost) = try await Self.damaged(damage)
    for arguments in [["log", journal.path], ["log", journal.path, "--json"], ["export", journal.path, "--jsonl"]] {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 3, "\(arguments): \(run.err)")
      let expected = Array(1...journal.lastSequence).filter { sequence in
        lost.map { !$0.contains(sequence) } ?? (sequence <= intact)
      }
      #expect(Self.sequences(run) == expected, "\(arguments): every intact record, in order")
      #expect(run.err.hasPrefix("rewind \(arguments[0]): "), "\(run.err)")
      #expect(run.err.contains("byte offset"), "where: \(run.err)")
      if let lost {
        let named = lost.count == 1 ? "sequence \(lost.lowerBound)" : "sequences \(lost.lowerBound)-\(lost.upperBound)"
        #expect(run.err.contains("\(named) not read, reading on from sequence \(lost.upperBound + 1)\n"), "\(run.err)")
        #expect(run.err.contains("every other event of the selection was written out"), "\(run.err)")
      } else {
        #expect(run.err.contains("sequences from \(intact + 1) at least"), "which records: \(run.err)")
        #expect(run.err.contains("The records through sequence \(intact) read intact"), "\(run.err)")
        #expect(run.err.contains("nothing past the damage was read"), "\(run.err)")
      }
    }
    // A --limit that ends the output after the damage was read past: the last message says the
    // limit cut it, not that every other event was written out.
    if let lost {
      let expected = Array(1...journal.lastSequence).filter { !lost.contains($0) }
      let limit = expected.count - 1
      if expected[limit - 1] > lost.upperBound {
        let run = try await ToolRun.run("rewind", ["log", journal.path, "--limit", String(limit)])
        #expect(run.status == 3, "\(run.err)")
        #expect(Self.sequences(run) == Array(expected.prefix(limit)))
        #expect(run.err.contains("through sequence \(expected[limit - 1]), up to --limit \(limit), were"), "\(run.err)")
        #expect(!run.err.contains("every other event of the selection was written out"), "\(run.err)")
      }
    }
    // A selection that starts where the damage does: nothing of it read before it.
    let late = try await ToolRun.run("rewind", ["log", journal.path, "--from", String(intact + 1)])
    #expect(late.status == 3, "\(late.out)\(late.err)")
    if let lost {
      #expect(Self.sequences(late) == Array((lost.upperBound + 1)...journal.lastSequence), "\(late.out)")
    } else {
      #expect(late.out.isEmpty)
      #expect(late.err.contains("No record of the selection was read before the damage"), "\(late.err)")
      // A selection that starts past every record read intact, where the damage hides whether
      // any was written: the damage, not an empty listing (which exited 0, saying nothing).
      for from in [journal.lastSequence, journal.lastSequence + 50] {
        for arguments in [["log", journal.path], ["export", journal.path, "--jsonl"]] {
          let past = try await ToolRun.run("rewind", arguments + ["--from", String(from)])
          #expect(past.status == 3, "\(arguments) --from \(from): \(past.out)\(past.err)")
          #expect(past.out.isEmpty, "\(arguments) --from \(from)")
          #expect(past.err.contains("byte offset"), "\(arguments) --from \(from): \(past.err)")
          #expect(
            past.err.contains("No record of the selection was read before the damage"),
            "\(arguments) --from \(from): \(past.err)")
        }
      }
    }
  }

  /// A selection wholly before the damage is whole: exit 0, as for any journal.
  @Test(arguments: Damage.allCases)
  func aSelectionBeforeTheDamageIsWhole(damage: Damage) async throws {
    let (journal, intact, _) = try await Self.damaged(damage)
    let to = String(intact - 5)
    for arguments in [
      ["log", journal.path, "--to", to], ["export", journal.path, "--jsonl", "--from", "3", "--to", to],
      ["log", journal.path, "--to", to, "--type", "note.*"], ["tail", journal.path, "-n", "4", "--to", to],
    ] {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 0, "\(arguments): \(run.err)")
      #expect(run.err.isEmpty, "\(arguments): \(run.err)")
      #expect(Self.sequences(run).last ?? 0 <= intact - 5, "\(arguments)")
      #expect(!Self.sequences(run).isEmpty, "\(arguments)")
    }
  }

  /// `tail` of a journal whose end the damage hides shows the last events before it, then the
  /// damage (it cannot follow: there is no end to follow from).
  @Test(arguments: [[], ["-f"]])
  func tailShowsTheLastIntactEventsThenTheDamage(follow: [String]) async throws {
    let (journal, intact, _) = try await Self.damaged(.atTheEnd)
    let run = try await ToolRun.run("rewind", ["tail", journal.path, "-n", "3"] + follow)
    #expect(run.status == 3, "\(run.err)")
    #expect(Self.sequences(run) == Array((intact - 2)...intact), "\(run.out)")
    #expect(run.err.contains("the last events of the selection up to there were written out"), "\(run.err)")
  }

  /// A stray file named like a segment between a missing segment and an intact one: the reader
  /// called it a stray and said nothing committed was damaged, hiding the records missing before
  /// the intact segment that `verify` reports. The gap is reported up to that segment now, the
  /// stray named beside it.
  @Test func aStrayFileBeforeAnIntactSegmentHidesNoGap() async throws {
    let (journal, segments) = try await Self.segmented()
    let gone = try #require(UInt64(segments[2].prefix(20)))
    let next = try #require(UInt64(segments[3].prefix(20)))
    try FileManager.default.removeItem(atPath: journal.directory.appending(segments[2]))
    try FileManager.default.removeItem(atPath: journal.directory.appending(Layout.indexName))
    let stray = Layout.segmentName(firstSequence: gone + 3)
    try Files.write(Array("junk\n".utf8), to: journal.directory.appending(stray))
    let log = try await ToolRun.run("rewind", ["log", journal.path])
    #expect(log.status == 3, "\(log.err)")
    #expect(log.err.contains("sequences \(gone)-\(next - 1)"), "\(log.err)")
    #expect(log.err.contains("(\(stray) between them holds no committed record)"), "\(log.err)")
    #expect(log.err.contains("Committed records are missing before intact segments"), "\(log.err)")
    #expect(!log.err.contains("Nothing committed is damaged"), "\(log.err)")
    #expect(Self.sequences(log) == Array(1..<gone) + Array(next...journal.lastSequence))
  }

  /// `show` of an intact event after the damage: it read its command's neighbours from far back
  /// (the journal's start, in windows of 4096 records), through the damage, and showed nothing.
  /// Now an event whose neighbours read is shown whole (exit 0); one next to the damage is shown,
  /// then the damage, saying its command's extent was left out (exit 3).
  @Test func showShowsAnIntactEventAfterTheDamage() async throws {
    let (journal, intact, _) = try await Self.damaged(.flipped)
    let far = try await ToolRun.run("rewind", ["show", journal.path, String(journal.lastSequence - 2)])
    #expect(far.status == 0, "\(far.err)")
    #expect(far.out.hasPrefix("event \(journal.lastSequence - 2) in "), "\(far.out)")
    #expect(far.out.contains("  command   "), "\(far.out)")
    // The first event after the damaged frame, which held one record.
    let next = intact + 2
    for json in [false, true] {
      let run = try await ToolRun.run("rewind", ["show", journal.path, String(next)] + (json ? ["--json"] : []))
      #expect(run.status == 3, "\(run.out)\(run.err)")
      #expect(run.out.hasPrefix(json ? #"{"seq":\#(next),"# : "event \(next) in "), "\(run.out)")
      #expect(!run.out.contains(json ? "commandEvents" : "  command   "), "\(run.out)")
      #expect(run.err.contains("byte offset"), "\(run.err)")
      #expect(run.err.contains("Event \(next) read intact and was shown"), "\(run.err)")
    }
  }

  /// `show` of an event in the last segment after a damaged frame, with no index entry between
  /// them: the cursor made for it, which checks the frames it skips there, met the damage and
  /// `show` printed nothing (exit 3), though `log` lists the event. Now it reads past the damage
  /// as `log` does: each event of the frames after the next one is shown whole (one command a
  /// frame under `none`), and one the damaged frame holds is the located damage.
  @Test func showReadsPastDamageBeforeTheEventInTheLastSegment() async throws {
    var options = JournalOptions(durability: .none)
    options.indexIntervalBytes = 1 << 20
    let journal = try await NotebookJournal.write(commands: 40, seed: 5, options: options)
    let segments = Files.list(journal.path).filter { $0.hasSuffix(".lz4") }.sorted()
    try #require(segments.count == 1)
    let path = journal.directory.appending(segments[0])
    var bytes = try Files.read(path)
    let frames = segmentFrames(in: bytes)
    try #require(frames.count > 10)
    let damaged = frames[2]
    bytes[damaged.middleOfData] ^= 0x5A
    try Files.write(bytes, to: path)
    // The frame right after the damage: its command could reach back into the damaged frame.
    for frame in frames[4...] {
      let (first, last) = (frame.header.firstSequence, frame.header.lastSequence)
      let run = try await ToolRun.run("rewind", ["show", journal.path, String(last), "--json"])
      #expect(run.status == 0, "\(last): \(run.err)")
      #expect(run.out.hasPrefix(#"{"seq":\#(last),"#), "\(run.out)")
      #expect(run.out.contains(#""commandEvents":[\#(first),\#(last)]"#), "\(first)-\(last): \(run.out)")
    }
    let held = try await ToolRun.run("rewind", ["show", journal.path, String(damaged.header.firstSequence)])
    #expect(held.status == 3 && held.out.isEmpty, "\(held.out)")
    #expect(held.err.contains("\(segments[0]), byte offset \(damaged.offset)"), "\(held.err)")
  }

  /// `log --from` and `export --from` after a damaged frame in the last segment: the cursor made
  /// for the start checks the frames it skips there, met the damage, and the read past it was
  /// reported (exit 3), though the selection holds none of its records. It is whole now (exit 0),
  /// as a selection that ends before the damage is; one that starts inside it still reports it.
  @Test func aSelectionThatStartsAfterTheDamageIsWhole() async throws {
    let (journal, name, frames, frame) = try await Self.lastSegmentDamaged { $0.middleOfData }
    let after = frame.header.lastSequence + 1
    try #require(frames.contains { $0.header.firstSequence == after })
    for arguments in [["log", journal.path], ["export", journal.path, "--jsonl"]] {
      let run = try await ToolRun.run("rewind", arguments + ["--from", String(after)])
      #expect(run.status == 0 && run.err.isEmpty, "\(arguments): \(run.err)")
      #expect(Self.sequences(run) == Array(after...journal.lastSequence), "\(arguments)")
      let inside = try await ToolRun.run("rewind", arguments + ["--from", String(frame.header.firstSequence)])
      #expect(inside.status == 3 && inside.err.contains("\(name), byte offset \(frame.offset)"), "\(inside.err)")
      #expect(Self.sequences(inside) == Array(after...journal.lastSequence), "\(arguments)")
    }
  }

  /// `tail` whose last events reach back over damage read nothing: it read windows with a
  /// cursor that stopped at the damage. It reads past it now, as `log` does: the last events the
  /// damage does not hold, the damage located once (also when two windows meet it), exit 3.
  @Test(arguments: [Damage.flipped, .truncatedSealed])
  func tailReadsPastDamageAmongTheLastEvents(damage: Damage) async throws {
    let (journal, _, lost) = try await Self.damaged(damage)
    let lostRecords = try #require(lost)
    let intact = Array(1...journal.lastSequence).filter { !lostRecords.contains($0) }
    // The last events after the damage are whole; more reach back over it.
    let after = intact.filter { $0 > lostRecords.upperBound }.count
    let whole = try await ToolRun.run("rewind", ["tail", journal.path, "-n", String(after)])
    #expect(whole.status == 0, "\(whole.err)")
    #expect(Self.sequences(whole) == Array(intact.suffix(after)))
    for count in [after + 5, 1000] {
      let run = try await ToolRun.run("rewind", ["tail", journal.path, "-n", String(count)])
      #expect(run.status == 3, "\(run.err)")
      #expect(Self.sequences(run) == Array(intact.suffix(count)), "-n \(count): \(run.out)")
      #expect(run.err.components(separatedBy: "not read, reading on from sequence").count == 2, "\(run.err)")
      #expect(run.err.contains("the last other events of the selection were written out"), "\(run.err)")
    }
    // A range that ends inside the damage: the events before it, the damage said once, and no
    // read on promised past the range's end.
    let inside = try await ToolRun.run(
      "rewind", ["tail", journal.path, "-n", "5", "--to", String(lostRecords.upperBound)])
    #expect(inside.status == 3, "\(inside.err)")
    #expect(Self.sequences(inside) == Array((lostRecords.lowerBound - 5)...(lostRecords.lowerBound - 1)))
    #expect(inside.err.components(separatedBy: "not read, and the selection ends at").count == 2, "\(inside.err)")
  }
}

extension DamagedJournalCommandTests {
  /// Two damaged frames one right after the other, in a sealed segment: the read on after the
  /// first starts at the second, which fails too. `log` and `export` then went on at the next
  /// segment, leaving out the intact records between the second frame and that segment (said
  /// only as "not read", the second place never located). Now each damaged place is read past
  /// in turn: every intact record comes out, in order, and both places are located.
  @Test func adjacentDamagedFramesAreEachReadPast() async throws {
    let (journal, segments) = try await Self.segmented()
    let path = journal.directory.appending(segments[2])
    var bytes = try Files.read(path)
    let frames = segmentFrames(in: bytes)
    try #require(frames.count > 4)
    var lost: [UInt64] = []
    for frame in frames[1...2] {
      bytes[frame.middleOfData] ^= 0x5A
      lost += Array(frame.sequences)
    }
    try Files.write(bytes, to: path)
    let expected = Array(1...journal.lastSequence).filter { !lost.contains($0) }
    for arguments in [["log", journal.path], ["export", journal.path, "--jsonl"]] {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 3, "\(arguments): \(run.err)")
      #expect(Self.sequences(run) == expected, "\(arguments): every intact record, in order")
      #expect(run.err.components(separatedBy: "not read, reading on from sequence").count == 3, "\(run.err)")
      #expect(run.err.contains("The journal is damaged in 2 places"), "\(run.err)")
    }
    let tail = try await ToolRun.run("rewind", ["tail", journal.path, "-n", "1000"])
    #expect(tail.status == 3, "\(tail.err)")
    #expect(Self.sequences(tail) == expected, "tail: every intact record, in order")
  }
}

/// Where a segment file is missing (deleted by hand): the index names it, or the numbering of
/// the segments after it implies it.
enum MissingSegment: String, CaseIterable, CustomTestStringConvertible {
  case first, middle, last
  /// One in the middle, with the index file deleted too: only the numbering tells.
  case middleUnindexed
  var testDescription: String { rawValue }
}

extension DamagedJournalCommandTests {
  /// A Notebook journal of several small segments, with an index entry every few batches.
  static func segmented() async throws -> (journal: NotebookJournal, segments: [String]) {
    var options = JournalOptions(durability: .none)
    options.segmentTargetBytes = 4096
    options.indexIntervalBytes = 256
    let journal = try await NotebookJournal.write(commands: 120, seed: 81, options: options)
    let segments = Files.list(journal.path).filter { $0.hasSuffix(".lz4") }.sorted()
    try #require(segments.count > 3)
    return (journal, segments)
  }

  /// `segmented()` with the third batch of its last segment damaged by `damage` (which flips bytes
  /// of the segment, given that batch): the journal, the segment's name, its batches as written,
  /// and the damaged one.
  static func lastSegmentDamaged(at damage: (SegmentFrame) -> Int) async throws -> (
    journal: NotebookJournal, name: String, frames: [SegmentFrame], frame: SegmentFrame
  ) {
    let (journal, segments) = try await segmented()
    let name = try #require(segments.last)
    let path = journal.directory.appending(name)
    var bytes = try Files.read(path)
    let frames = segmentFrames(in: bytes)
    try #require(frames.count > 6, "\(frames.count) batches in the last segment")
    let frame = frames[2]
    bytes[damage(frame)] ^= 0x5A
    try Files.write(bytes, to: path)
    return (journal, name, frames, frame)
  }

  /// The readers that read past damage, each over the journal at `path`: `log`, `export` and
  /// `tail` with room for every event.
  static func readers(_ path: String) -> [[String]] {
    [["log", path], ["export", path, "--jsonl"], ["tail", path, "-n", "1000"]]
  }

  /// A missing segment stopped `log`, `export` and `tail` before their first line: every cursor
  /// was refused as it was made, when the index named it. Now the records of every other segment
  /// come out, in order; the missing segment is named where the read reaches it, with the
  /// sequences it held, and the read goes on at the next segment (none after the last one).
  @Test(arguments: MissingSegment.allCases)
  func aMissingSegmentIsReadAround(missing: MissingSegment) async throws {
    let (journal, segments) = try await Self.segmented()
    let at =
      switch missing {
      case .first: 0
      case .middle, .middleUnindexed: 2
      case .last: segments.count - 1
      }
    let name = segments[at]
    let firstLost = try #require(UInt64(name.prefix(20)))
    let lastLost =
      try at + 1 < segments.count ? #require(UInt64(segments[at + 1].prefix(20))) - 1 : journal.lastSequence
    try FileManager.default.removeItem(atPath: journal.directory.appending(name))
    if missing == .middleUnindexed { try FileManager.default.removeItem(atPath: journal.directory.appending("index")) }
    let expected = Array(1...journal.lastSequence).filter { $0 < firstLost || $0 > lastLost }
    let lost = "sequences \(firstLost)-\(lastLost)"
    for arguments in [["log", journal.path], ["log", journal.path, "--json"], ["export", journal.path, "--jsonl"]] {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 3, "\(arguments): \(run.err)")
      #expect(Self.sequences(run) == expected, "\(arguments): every record of the other segments, in order")
      #expect(run.err.hasPrefix("rewind \(arguments[0]): "), "\(run.err)")
      if missing == .last {
        #expect(run.err.contains("segment \(name) is missing"), "what and where: \(run.err)")
        #expect(run.err.contains("from sequence \(firstLost) on are gone"), "which records: \(run.err)")
        #expect(run.err.contains("The records through sequence \(firstLost - 1) read intact"), "\(run.err)")
      } else {
        if missing != .middleUnindexed {
          #expect(run.err.contains("segment \(name) is missing"), "what and where: \(run.err)")
        }
        #expect(run.err.contains("\(lost) not read, reading on from sequence \(lastLost + 1)\n"), "\(run.err)")
        #expect(run.err.contains("every other event of the selection was written out"), "\(run.err)")
      }
    }
    // `tail` whose last events reach back over the missing segment.
    let tail = try await ToolRun.run("rewind", ["tail", journal.path, "-n", "1000"])
    #expect(tail.status == 3, "\(tail.err)")
    #expect(Self.sequences(tail) == expected, "tail: \(tail.err)")
    if missing != .middleUnindexed { #expect(tail.err.contains("segment \(name) is missing"), "\(tail.err)") }
    // A selection wholly after a segment missing before intact ones is whole.
    if missing != .last {
      let after = try await ToolRun.run("rewind", ["log", journal.path, "--from", String(lastLost + 1)])
      #expect(after.status == 0, "\(after.err)")
      #expect(Self.sequences(after) == Array((lastLost + 1)...journal.lastSequence))
      let last = try await ToolRun.run("rewind", ["tail", journal.path, "-n", "3"])
      #expect(last.status == 0, "\(last.err)")
      #expect(Self.sequences(last) == Array((journal.lastSequence - 2)...journal.lastSequence))
      // And `tail -f` follows from its end, as for a journal damaged before its last events.
      let executable = try #require(ChildProcess.builtProduct("rewind"))
      let follower = try ChildProcess(executable: executable, arguments: ["tail", journal.path, "-f", "-n", "1"])
      #expect(try await follower.waitForLine { $0.hasPrefix("\(journal.lastSequence) ") })
      try await Task.sleep(for: .milliseconds(300))  // several polls
      #expect(follower.isRunning, "following: \(follower.lines)")
      try await follower.kill()
    }
  }

  /// The last segment's header damaged (its checksum fails): the records of every segment
  /// before it are intact. Its error named no sequence numbers, so the intact end read as 0:
  /// `tail` printed nothing, `log` of a selection ending before it exited 3, and `debug`, `blame`
  /// and `bisect` served no record. Now the error numbers its records from the segment's name on.
  @Test func aLastSegmentWithADamagedHeaderHidesOnlyItsOwnRecords() async throws {
    let (journal, segments) = try await Self.segmented()
    let name = try #require(segments.last)
    let first = try #require(Layout.firstSequence(ofSegmentNamed: name))
    let path = journal.directory.appending(name)
    var bytes = try Files.read(path)
    bytes[12] ^= 0x01  // inside the segment header: its checksum fails
    try Files.write(bytes, to: path)

    let tail = try await ToolRun.run("rewind", ["tail", journal.path, "-n", "2"])
    #expect(tail.status == 3, "\(tail.err)")
    #expect(Self.sequences(tail) == [first - 2, first - 1], "the last events before it: \(tail.err)")
    #expect(tail.err.contains(name), "\(tail.err)")
    let before = try await ToolRun.run(
      "rewind", ["log", journal.path, "--from", String(first - 3), "--to", String(first - 1)])
    #expect(before.status == 0, "a selection that ends before the damage is whole: \(before.err)")
    #expect(Self.sequences(before) == Array((first - 3)...(first - 1)))
    let debug = try await ToolRun.run("rewind", ["debug", journal.path], input: "goto \(first - 1)\n")
    #expect(debug.out.hasPrefix("at \(first - 1) of "), "goto reached the last intact record: \(debug.out)")
    #expect(debug.err.contains("at sequence \(first - 1), the last record read intact"), "\(debug.err)")
  }

  /// A segment in the middle with a damaged header: `log`, `export` and `tail` read on at the next
  /// segment, every record but that segment's written out (exit 3). Once its error numbered the
  /// segment's first record, as "from N at least", no read-on point was left and they stopped
  /// there.
  @Test func aMiddleSegmentWithADamagedHeaderIsReadAround() async throws {
    let (journal, segments) = try await Self.segmented()
    let name = segments[1]
    let first = try #require(Layout.firstSequence(ofSegmentNamed: name))
    let next = try #require(Layout.firstSequence(ofSegmentNamed: segments[2]))
    let path = journal.directory.appending(name)
    var bytes = try Files.read(path)
    bytes[12] ^= 0x01  // inside the segment header: its checksum fails
    try Files.write(bytes, to: path)
    let expected = Array(1...journal.lastSequence).filter { $0 < first || $0 >= next }
    for arguments in Self.readers(journal.path) {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 3, "\(arguments): \(run.err)")
      #expect(Self.sequences(run) == expected, "\(arguments): \(run.err)")
      #expect(run.err.contains(name), "\(arguments): \(run.err)")
    }
  }

  /// A file named like a segment past the journal's end that is none (a few bytes of junk): the
  /// session ends at the journal's last record. Its name alone numbered the records before it
  /// (through the one before the name's, which were never written), and before that none.
  @Test func aStrayFileNamedLikeASegmentEndsTheSessionAtTheLastRecord() async throws {
    let (journal, _) = try await Self.segmented()
    let last = journal.lastSequence
    try Files.write(Array("junk\n".utf8), to: journal.directory.appending(Layout.segmentName(firstSequence: last + 6)))
    let debug = try await ToolRun.run("rewind", ["debug", journal.path], input: "goto \(last)\n")
    #expect(debug.out.hasPrefix("at \(last) of \(last): "), "\(debug.out)")
    #expect(debug.err.contains("at sequence \(last), the last record read intact"), "\(debug.err)")
    let tail = try await ToolRun.run("rewind", ["tail", journal.path, "-n", "2"])
    #expect(tail.status == 3, "\(tail.err)")
    #expect(Self.sequences(tail) == [last - 1, last], "\(tail.err)")
    #expect(tail.err.contains("The records through sequence \(last) read intact"), "\(tail.err)")
    #expect(!tail.err.contains("\(last + 1)"), "no record past the end is named: \(tail.err)")
  }

  /// The same stray file, as `log`, `export`, `tail` and `replay` name it: they read the gap
  /// before its name as committed records missing before an intact segment, and advised restoring
  /// them from a backup (repair refusing), where `verify` rightly finds a stray file that repair
  /// moves aside. They name it a stray file now, holding no committed record.
  @Test func aStrayFileNamedLikeASegmentIsNamedSo() async throws {
    let (journal, _) = try await Self.segmented()
    let last = journal.lastSequence
    let stray = Layout.segmentName(firstSequence: last + 6)
    try Files.write(Array("junk\n".utf8), to: journal.directory.appending(stray))
    for arguments in Self.readers(journal.path) + [["replay", journal.path]] {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 3, "\(arguments): \(run.err)")
      #expect(run.err.contains("a stray file named like a segment, holding no committed record"), "\(run.err)")
      #expect(run.err.contains("(\(stray), byte offset 0)"), "\(run.err)")
      #expect(run.err.contains("Nothing committed is damaged"), "\(run.err)")
      #expect(!run.err.contains("backup") && !run.err.contains("missing"), "\(arguments): \(run.err)")
    }
    let verify = try await ToolRun.run("rewind", ["verify", journal.path])
    #expect(verify.status == 1 && verify.out.contains("a stray file named like a segment"), "\(verify.out)")
  }

  /// A copy of the first segment saved under a number inside the journal's range, in a middle
  /// segment's range and in the last one's: `tail`, `show`, `log --from` and `replay --to`, which
  /// seek a segment by its name, read the copy and stopped at it as damage (`tail -n 2` showed
  /// two events from the middle of the journal, exit 3), though `log` read every record. They
  /// pass over it now; `verify` still names it, for `repair` to move aside.
  @Test func readsThatSeekASegmentPassOverACopyNamedInsideTheJournal() async throws {
    let (journal, segments) = try await Self.segmented()
    let firsts = segments.compactMap(Layout.firstSequence(ofSegmentNamed:))
    let last = journal.lastSequence
    try #require(firsts[2] - firsts[1] >= 3 && last - firsts.last! >= 3, "\(firsts), \(last)")
    let inside = firsts[1] + 1
    let inLast = firsts.last! + 1
    let copy = try Files.read(journal.directory.appending(segments[0]))
    for first in [inside, inLast] {
      try Files.write(copy, to: journal.directory.appending(Layout.segmentName(firstSequence: first)))
    }

    let tail = try await ToolRun.run("rewind", ["tail", journal.path, "-n", "2"])
    #expect(tail.status == 0, "\(tail.err)")
    #expect(Self.sequences(tail) == [last - 1, last], "\(tail.out)")
    for from in [inside, inside + 1, inLast + 1] {
      let log = try await ToolRun.run("rewind", ["log", journal.path, "--from", String(from)])
      #expect(log.status == 0, "\(log.err)")
      #expect(Self.sequences(log) == Array(from...last), "from \(from): \(log.err)")
      let show = try await ToolRun.run("rewind", ["show", journal.path, String(from)])
      #expect(show.status == 0, "\(show.err)")
      #expect(show.out.hasPrefix("event \(from) in "), "\(show.out)")
      let replay = try await ToolRun.run("rewind", ["replay", journal.path, "--to", String(from)])
      #expect(replay.status == 0, "\(replay.err)")
    }
    let verify = try await ToolRun.run("rewind", ["verify", journal.path])
    #expect(verify.status == 1, "\(verify.out)")
    #expect(verify.out.components(separatedBy: "a copy of it under another name").count == 3, "\(verify.out)")
  }

  /// Damage in a middle segment (its header, or the segment gone while the index names it) with
  /// a stray file named inside its range: once reads that seek a segment passed over stray files,
  /// the read on from the stray's name (the next file listed) sought the damaged segment again,
  /// and `log`, `export` and `tail` stopped there, leaving every later segment out (the review of
  /// entry 356). The segment after the damage is the next file that is no stray now, as it is
  /// for `verify`.
  @Test(arguments: ["header", "missing"])
  func damageWithAStrayFileInItsRangeIsReadAround(damage: String) async throws {
    let (journal, segments) = try await Self.segmented()
    let firsts = segments.compactMap(Layout.firstSequence(ofSegmentNamed:))
    try #require(firsts[2] - firsts[1] >= 3)
    let path = journal.directory.appending(segments[1])
    if damage == "header" {
      var bytes = try Files.read(path)
      bytes[12] ^= 0x01  // inside the segment header: its checksum fails
      try Files.write(bytes, to: path)
    } else {
      try FileManager.default.removeItem(atPath: path)
    }
    let stray = Layout.segmentName(firstSequence: firsts[1] + 2)
    try Files.write(try Files.read(journal.directory.appending(segments[0])), to: journal.directory.appending(stray))
    let expected = Array(1...journal.lastSequence).filter { $0 < firsts[1] || $0 >= firsts[2] }
    for arguments in Self.readers(journal.path) {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 3, "\(arguments): \(run.err)")
      #expect(Self.sequences(run) == expected, "\(arguments): \(run.err)")
    }
    let from = try await ToolRun.run("rewind", ["log", journal.path, "--from", String(firsts[1] + 3)])
    #expect(Self.sequences(from) == Array(firsts[2]...journal.lastSequence), "\(from.err)")
  }

  /// A segment cut short, and the next one turned to junk that index entries name: `verify`
  /// calls the junk a segment that held committed records. A read that seeks a record in its
  /// range passed over it as a stray (the cursor judged only the entries that match the files),
  /// and `show` named the cut before it, `log --from` read nothing. Both go by every entry whose
  /// checksum holds now, as `verify` does: `show` names the junk, and `log` reads on after it.
  @Test func junkThatTheIndexNamesIsNoStrayToASeek() async throws {
    let (journal, segments) = try await Self.segmented()
    let firsts = segments.compactMap(Layout.firstSequence(ofSegmentNamed:))
    let cut = journal.directory.appending(segments[1])
    let bytes = try Files.read(cut)
    try Files.write(Array(bytes.prefix(bytes.count / 2)), to: cut)
    let junk = journal.directory.appending(segments[2])
    try Files.write([UInt8](repeating: 0x47, count: try Files.read(junk).count), to: junk)
    let show = try await ToolRun.run("rewind", ["show", journal.path, String(firsts[2] + 1)])
    #expect(show.status == 3, "\(show.err)")
    #expect(show.err.contains("(\(segments[2]), byte offset 0)"), "\(show.err)")
    let log = try await ToolRun.run("rewind", ["log", journal.path, "--from", String(firsts[2] + 1)])
    #expect(log.status == 3, "\(log.err)")
    #expect(Self.sequences(log) == Array(firsts[3]...journal.lastSequence), "\(log.err)")
  }

  /// A file named like the segment of sequence 2^64 − 1 and holding a valid header of this
  /// journal: the damage it stands for spans more sequence numbers than `Int` counts, and every
  /// command trapped (SIGILL, exit 132) as its message counted them. Each says where it is now.
  @Test func aSegmentNamedForTheLastSequenceNumberIsReportedNotATrap() async throws {
    let (journal, segments) = try await Self.segmented()
    let first = try #require(segments.first)
    var header = Array(try Files.read(journal.directory.appending(first)).prefix(Layout.segmentHeaderSize))
    withUnsafeBytes(of: UInt64.max.littleEndian) { header.replaceSubrange(32..<40, with: $0) }
    withUnsafeBytes(of: CRC32C.checksum(header[8..<40]).littleEndian) { header.replaceSubrange(40..<44, with: $0) }
    let name = Layout.segmentName(firstSequence: .max)
    try Files.write(header, to: journal.directory.appending(name))
    for arguments in Self.readers(journal.path) + [["verify", journal.path], ["replay", journal.path]] {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 1 || run.status == 3, "\(arguments): status \(run.status), \(run.err)")
      #expect((run.out + run.err).contains(name), "\(arguments): \(run.out)\(run.err)")
    }
    // `stats` counts the damage and leaves locating it to `verify`; event 1 lies before it.
    let stats = try await ToolRun.run("rewind", ["stats", journal.path])
    #expect(stats.status == 1 && stats.out.contains("damaged      1 problem"), "stats: \(stats.status) \(stats.out)")
    let show = try await ToolRun.run("rewind", ["show", journal.path, "1"])
    #expect(show.status == 0, "show: \(show.status) \(show.err)")
    let debug = try await ToolRun.run("rewind", ["debug", journal.path], input: "goto end\n")
    #expect(debug.status == 2 || debug.status == 3, "debug: status \(debug.status), \(debug.err)")
  }

  /// A damaged batch header in the last segment (its frame's extent unknown) stopped `log`,
  /// `export` and `tail` there, hiding the intact frames after it. They read on now from the first
  /// batch the index names past the damage (a writer wrote it there; the header found there must
  /// match it): the records between are named as not read.
  @Test func aDamagedBatchHeaderInTheLastSegmentIsReadPast() async throws {
    // Inside the batch header: its checksum fails.
    let (journal, name, frames, frame) = try await Self.lastSegmentDamaged { $0.offset + 8 }
    for arguments in Self.readers(journal.path) {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 3, "\(arguments): \(run.err)")
      let shown = Self.sequences(run)
      // Every record before the damaged batch, then from a later batch of the segment to the end.
      let before = Array(1..<frame.header.firstSequence)
      #expect(Array(shown.prefix(before.count)) == before, "\(arguments): \(run.err)")
      let resumed = try #require(shown.dropFirst(before.count).first, "\(arguments): nothing after: \(run.err)")
      #expect(resumed > frame.sequences.upperBound, "\(arguments)")
      #expect(frames.contains { $0.header.firstSequence == resumed }, "resumed at a batch's start")
      #expect(Array(shown.dropFirst(before.count)) == Array(resumed...journal.lastSequence), "\(arguments)")
      #expect(run.err.contains("\(name), byte offset \(frame.offset)"), "where: \(run.err)")
      #expect(
        run.err.contains(
          "sequences \(frame.header.firstSequence)-\(resumed - 1) not read, reading on from sequence \(resumed)\n"),
        "\(run.err)")
    }
  }

  /// A journal whose last segment has one index entry and a frame in its middle that fails its
  /// checksum (its batch header holds), so that the frame hides the end from `readableEnd()`:
  /// the journal, the segment's name and the frame; nil (an issue recorded) if it does not.
  static func endHiddenByADamagedFrame() async throws -> (NotebookJournal, String, SegmentFrame)? {
    var options = JournalOptions(durability: .none)
    options.indexIntervalBytes = 1 << 20
    let journal = try await NotebookJournal.write(commands: 120, seed: 82, options: options)
    let name = try #require(Files.list(journal.path).filter { $0.hasSuffix(".lz4") }.last)
    let segment = journal.directory.appending(name)
    var bytes = try Files.read(segment)
    let frames = segmentFrames(in: bytes)
    try #require(frames.count > 6)
    let frame = frames[frames.count / 2]
    bytes[frame.middleOfData] ^= 0x5A
    try Files.write(bytes, to: segment)
    guard case .failure = try JournalReader(directory: journal.path).readableEnd() else {
      Issue.record("the damage does not hide the end; the test needs it to")
      return nil
    }
    return (journal, name, frame)
  }

  /// A frame that fails its checksum in the last segment past the last index entry hides the
  /// end from `readableEnd()`, which does not step over frames, so `--from` went unchecked: past
  /// the end, `log` and `export` listed nothing and exited 0 (the review of Dec 6, entry 315's
  /// "Left"). The cursor that stepped over the frame on the way read to the end: out of range,
  /// as in an intact journal; the last record and the frame's own records are as before.
  @Test func aFromPastTheEndBeyondADamagedFrameIsOutOfRange() async throws {
    guard let (journal, name, frame) = try await Self.endHiddenByADamagedFrame() else { return }
    let last = journal.lastSequence
    for arguments in [["log", journal.path], ["export", journal.path, "--jsonl"]] {
      for from in [last + 1, last + 50] {
        let past = try await ToolRun.run("rewind", arguments + ["--from", String(from)])
        #expect(past.status == 2, "\(arguments) --from \(from): \(past.out)\(past.err)")
        #expect(past.out.isEmpty, "\(arguments) --from \(from)")
        #expect(
          past.err.contains("--from \(from) is out of range: the journal ends at sequence \(last)"),
          "\(arguments) --from \(from): \(past.err)")
      }
      let atTheEnd = try await ToolRun.run("rewind", arguments + ["--from", String(last)])
      #expect(atTheEnd.status == 0 && Self.sequences(atTheEnd) == [last], "\(arguments): \(atTheEnd.err)")
      let inside = try await ToolRun.run("rewind", arguments + ["--from", String(frame.header.lastSequence)])
      #expect(inside.status == 3 && inside.err.contains("\(name), byte offset \(frame.offset)"), "\(inside.err)")
    }
  }

  /// `tail` over a frame that fails its checksum past the last index entry (its batch header
  /// holds, intact frames after it) showed the events before the frame as the last ones and said
  /// nothing past it was read, where `log` reads on (a review of the docs, Dec 7; entry 331's
  /// "Left"). It reads past the frame as `log` does: the journal's last events, the frame located
  /// with the sequences not read (exit 3); a `--from` past the end is out of range (exit 2).
  @Test func tailReadsPastADamagedFrameThatHidesTheEnd() async throws {
    guard let (journal, name, frame) = try await Self.endHiddenByADamagedFrame() else { return }
    let last = journal.lastSequence
    let lost = frame.header.firstSequence...frame.header.lastSequence
    try #require(lost.upperBound + 3 <= last)
    let notRead =
      lost.count == 1
      ? "sequence \(lost.lowerBound) not read" : "sequences \(lost.lowerBound)-\(lost.upperBound) not read"

    let three = try await ToolRun.run("rewind", ["tail", journal.path, "-n", "3"])
    #expect(three.status == 0 && three.err.isEmpty, "the last three lie after the frame: \(three.err)")
    #expect(Self.sequences(three) == Array((last - 2)...last), "\(three.out)")

    let count = Int(last - lost.upperBound) + 2
    let over = try await ToolRun.run("rewind", ["tail", journal.path, "-n", String(count)])
    #expect(over.status == 3, "\(over.err)")
    let expected = Array((1...last).filter { !lost.contains($0) }.suffix(count))
    #expect(Self.sequences(over) == expected, "\(over.out)")
    #expect(over.err.contains("\(name), byte offset \(frame.offset)") && over.err.contains(notRead), "\(over.err)")

    let past = try await ToolRun.run("rewind", ["tail", journal.path, "--from", String(last + 1)])
    #expect(past.status == 2, "\(past.out)\(past.err)")
    #expect(past.err.contains("--from \(last + 1) is out of range"), "\(past.err)")
  }

  /// `tail`'s windows read back over two damaged frames: a window's cursor that met the earlier
  /// frame read on from there and counted records before the window's start as its own, so an
  /// event came out twice and another not at all, and damage outside the last events was
  /// reported (the review of the day's change, Dec 7). Whatever the selection, `tail -n N` now
  /// shows the last N events `log` shows; damage is reported when the events reach back over it.
  /// And a damaged first frame that hides the end is read past too.
  @Test func tailShowsWhatLogShowsOverTwoDamagedFrames() async throws {
    // The reviewer's journal: its last index entry is past both damaged frames.
    let directory = TemporaryDirectory("cli-tail-two-frames")
    let path = directory.appending("journal")
    let demo = try await ToolRun.run(
      "rewind", ["demo", path, "--events", "3000", "--seed", "1", "--durability", "none"])
    try #require(demo.status == 0, "\(demo.err)")
    let name = try #require(Files.list(path).filter { $0.hasSuffix(".lz4") }.sorted().last)
    var bytes = try Files.read(path + "/" + name)
    let frames = segmentFrames(in: bytes)
    let damaged = try [2500, 2600].map { sequence in
      try #require(frames.first { $0.sequences.contains(UInt64(sequence)) })
    }
    for frame in damaged { bytes[frame.middleOfData] ^= 0x5A }
    try Files.write(bytes, to: path + "/" + name)
    let lost = Set(damaged.flatMap { Array($0.sequences) })
    let last = try JournalReader(directory: path).lastSequence()
    // Rare events too: their windows double, and start inside and past the damaged frames.
    for selection in [
      ["-n", "8", "--type", "note.deleted", "--to", "2700"], ["-n", "8", "--type", "reading.itemToggled"],
      ["-n", "8", "--type", "note.*"], ["-n", "5", "--type", "note.created", "--to", "2650"], ["-n", "30"],
      ["-n", "600"], ["-n", "3", "--to", "2499"],
    ] {
      let count = Int(selection[1])!
      let tail = try await ToolRun.run("rewind", ["tail", path] + selection)
      let log = try await ToolRun.run("rewind", ["log", path] + selection.dropFirst(2))
      let expected = Array(Self.sequences(log).suffix(count))
      try #require(!expected.isEmpty, "\(selection): \(log.err)")
      #expect(Self.sequences(tail) == expected, "\(selection): \(tail.err)")
      // Damage after the first event shown, up to the selection's end, may have held a later
      // event of the selection: said (exit 3); damage before it is no part of the last events.
      let end = selection.firstIndex(of: "--to").map { UInt64(selection[$0 + 1])! } ?? last
      let reachesBack = lost.contains { $0 > expected[0] && $0 <= end }
      #expect(tail.status == (reachesBack ? 3 : 0), "\(selection): \(tail.err)")
    }

    // A journal of one index entry whose first frame is damaged: the end it hides is read past.
    let small = try await NotebookJournal.write(commands: 20, seed: 84)
    let only = try #require(Files.list(small.path).filter { $0.hasSuffix(".lz4") }.last)
    var first = try Files.read(small.directory.appending(only))
    let frame = try #require(segmentFrames(in: first).first)
    try #require(frame.header.firstSequence == 1 && frame.header.lastSequence + 3 <= small.lastSequence)
    first[frame.middleOfData] ^= 0x5A
    try Files.write(first, to: small.directory.appending(only))
    let three = try await ToolRun.run("rewind", ["tail", small.path, "-n", "3"])
    #expect(three.status == 0, "\(three.err)")
    #expect(Self.sequences(three) == Array((small.lastSequence - 2)...small.lastSequence), "\(three.out)")
  }

  /// Damage that names no records (a segment whose header is damaged) was said by `tail` whenever
  /// a window reached back over it, though all its records lie before the read went on, and so
  /// before the last events: exit 3, and `-f` did not follow, where `log` of the same events
  /// exits 0 (the review of the latest commits, Dec 7). Swept over counts and selections.
  @Test func tailSaysDamageThatNamesNoRecordsOnlyWhenTheEventsReachBackOverIt() async throws {
    let (journal, segments) = try await Self.segmented()
    let path = journal.directory.appending(segments[1])
    var bytes = try Files.read(path)
    bytes[20] ^= 0x5A
    try Files.write(bytes, to: path)
    let resumed = try #require(UInt64(segments[2].prefix(20)))
    for type in ["note.*", "notebook.*", "note.deleted"] {
      let log = try await ToolRun.run("rewind", ["log", journal.path, "--type", type])
      let all = Self.sequences(log)
      guard all.count > 2 else { continue }
      for count in stride(from: 1, to: min(all.count, 40), by: 3) {
        let tail = try await ToolRun.run("rewind", ["tail", journal.path, "-n", String(count), "--type", type])
        let expected = Array(all.suffix(count))
        #expect(Self.sequences(tail) == expected, "\(type) -n \(count): \(tail.err)")
        #expect(tail.status == (expected[0] < resumed ? 3 : 0), "\(type) -n \(count): \(tail.err)")
      }
    }
  }

  /// A time selection that a damaged frame's records lie outside (its batch header, which holds,
  /// stamps them) reported the frame as read past and exited 3, and `export -o` refused the whole
  /// export, though the selection was whole (the review of the audit commands, entry 305's "Left").
  /// Such a frame is read past in silence now, as one before `--from` is: the output is the intact
  /// journal's, exit 0. A selection whose times reach the frame's still reports it.
  @Test func aTimeSelectionOutsideADamagedFrameIsWhole() async throws {
    let (journal, segments) = try await Self.segmented()
    let copy = TemporaryDirectory("cli-times-intact")
    let intact = copy.appending("journal")
    try FileManager.default.copyItem(atPath: journal.path, toPath: intact)
    let path = journal.directory.appending(segments[2])
    var bytes = try Files.read(path)
    let frames = segmentFrames(in: bytes)
    let frame = frames[frames.count / 2]
    bytes[frame.middleOfData] ^= 0x5A
    try Files.write(bytes, to: path)
    let (first, last) = (frame.header.minTimestamp, frame.header.maxTimestamp)
    let output = TemporaryDirectory("cli-times-export")
    for (n, range) in [["--until", isoTime(first - 1)], ["--since", isoTime(last + 1)]].enumerated() {
      for arguments in [["log"], ["export", "--jsonl"], ["tail", "-n", "5"]] {
        let run = try await ToolRun.run("rewind", [arguments[0], journal.path] + arguments.dropFirst() + range)
        let whole = try await ToolRun.run("rewind", [arguments[0], intact] + arguments.dropFirst() + range)
        #expect(whole.status == 0 && !Self.sequences(whole).isEmpty, "\(arguments) \(range): \(whole.err)")
        #expect(run.status == 0 && run.err.isEmpty, "\(arguments) \(range): \(run.status) \(run.err)")
        #expect(run.out == whole.out, "\(arguments) \(range)")
      }
      let file = output.appending("events-\(n).jsonl")
      let export = try await ToolRun.run("rewind", ["export", journal.path, "--jsonl", "-o", file] + range)
      let whole = try await ToolRun.run("rewind", ["export", intact, "--jsonl"] + range)
      #expect(export.status == 0, "export -o \(range): \(export.err)")
      #expect(String(decoding: try Files.read(file), as: UTF8.self) == whole.out, "export -o \(range)")
    }
    // Times that take one of the frame's records: the damage, located, as before.
    for range in [["--until", isoTime(first)], ["--since", isoTime(last)]] {
      let run = try await ToolRun.run("rewind", ["log", journal.path] + range)
      #expect(run.status == 3, "\(range): \(run.err)")
      #expect(run.err.contains("\(segments[2]), byte offset \(frame.offset)"), "\(range): \(run.err)")
    }
  }
}
