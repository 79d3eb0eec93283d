import Foundation
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

/// Records the index names and the disk no longer holds (a deleted segment, last or in the
/// middle; a last segment cut short before an indexed batch) are damage to every command: the
/// readers used to exit 0 showing fewer events, as if those records had never been committed.
@Suite struct IndexedLossCommandTests {
  enum Loss: String, CaseIterable, CustomTestStringConvertible {
    case lastSegment, middleSegment, cutShort
    var testDescription: String { rawValue }
  }

  /// A Notebook journal of several small segments with dense index entries, damaged as `loss`
  /// says: the journal, the file concerned, and its last sequence number before the damage.
  /// With `firstSegment`, the first segment is deleted instead of the one `loss` names; with
  /// `intactCopy`, the journal is copied there (a directory that does not exist yet) first.
  static func damaged(_ loss: Loss, firstSegment: Bool = false, intactCopy: String? = nil) async throws -> (
    journal: NotebookJournal, file: String, last: UInt64
  ) {
    var options = JournalOptions(durability: .none)
    options.segmentTargetBytes = 4096
    options.indexIntervalBytes = 256
    let journal = try await NotebookJournal.write(commands: 120, seed: 81, options: options)
    let segments = Files.list(journal.path).filter { $0.hasSuffix(".lz4") }
    try #require(segments.count > 3)
    let file = firstSegment ? segments[0] : loss == .middleSegment ? segments[1] : try #require(segments.last)
    let path = journal.directory.appending(file)
    if let intactCopy { try FileManager.default.copyItem(atPath: journal.path, toPath: intactCopy) }
    switch loss {
    case .lastSegment, .middleSegment: try FileManager.default.removeItem(atPath: path)
    case .cutShort:
      let bytes = try Files.read(path)
      let frames = segmentFrames(in: bytes)
      try #require(frames.count > 2)
      try Files.write(Array(bytes[..<frames[1].offset]), to: path)
    }
    return (journal, file, journal.lastSequence)
  }

  @Test(arguments: EveryCommandTests.commands, Loss.allCases)
  func everyCommandReportsTheLoss(command: [String], loss: Loss) async throws {
    let (journal, file, last) = try await Self.damaged(loss)
    // Commands that read to the end of the journal: show the last event, diff up to it.
    let reaching = command.map { $0 == "3" ? "LAST" : $0 }
    let run = try await EveryCommandTests.run(reaching, journal.path, last: Int(last))
    switch command[0] {
    case "verify":
      #expect(run.status == 1, "\(run.out)\(run.err)")
      #expect(run.out.contains("problem: \(file)"), "\(run.out)")
      #expect(run.out.contains("`rewind repair"), "\(run.out)")
    case "repair" where loss == .middleSegment:
      #expect(run.status == 3, "refused: the segments after the gap are intact. \(run.out)\(run.err)")
    case "repair":
      #expect(run.status == 1, "a plan, carried out only with --yes: \(run.out)\(run.err)")
    case "stats":
      #expect(run.status == 1, "\(run.out)\(run.err)")
      #expect(run.out.contains("damaged      "), "\(run.out)")
    case "show" where loss == .middleSegment:
      // The last event lies after the gap, read around it as `log` reads it: shown, its touched
      // records inferred (no model replays through the gap), as after a damaged frame.
      #expect(run.status == 0, "\(run.out)\(run.err)")
      #expect(run.out.hasPrefix("event \(last) in "), "\(run.out)")
      #expect(run.out.contains("segment \(file) is missing, but the index names it"), "\(run.out)")
    case "tail" where loss == .middleSegment:
      // Its last events lie after the gap, read around it (entry 160): whole, as a selection
      // after other damage is.
      #expect(run.status == 0, "\(run.out)\(run.err)")
      #expect(DamagedJournalCommandTests.sequences(run) == Array((last - 9)...last), "\(run.out)")
    default:
      let says =
        loss == .cutShort
        ? "\(file), byte offset" : "segment \(file) is missing, but the index names it"
      EveryCommandTests.expectError(run, command, status: 3, containing: [says, "committed records", "rewind verify"])
    }
  }

  /// With a segment missing before intact ones, the counts read from records cover the part
  /// before the gap, while segments, frames and bytes cover every file: stats says which is which,
  /// in text and in JSON ("partial"), instead of mixing them unmarked.
  @Test(arguments: [false, true])
  func statsSaysWhichCountsCoverOnlyTheIntactPart(first: Bool) async throws {
    let (journal, _, _) = try await Self.damaged(.middleSegment, firstSegment: first)
    let json = try await ToolRun.run("rewind", ["stats", journal.path, "--json"])
    #expect(json.status == 1, "\(json.out)\(json.err)")
    let object = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
    let events = try #require(object["events"] as? Int)
    #expect(events < Int(journal.lastSequence), "\(json.out)")
    #expect(
      object["partial"] as? [String] == [
        "events", "commandsWithEvents", "notRewindEvents", "first", "last", "earliest", "latest",
        "stampedBeforePrevious",
        "checkpoints", "unfinishedCheckpoints", "byName", "byOrigin",
      ], "\(json.out)")
    let text = try await ToolRun.run("rewind", ["stats", journal.path])
    #expect(text.status == 1, "\(text.out)\(text.err)")
    for marked in [
      "events       \(events) (sequences \(events == 0 ? "-" : "1-\(events)"); intact part), recorded by ",
      "average; every segment file, past the damage too)\n", "decoded (every segment file)\n",
      "\nby name (intact part)\n", "\nby origin (intact part)\n",
      "cover the intact part, up to sequence \(events); segments, frames and bytes every segment file.",
    ] {
      #expect(text.out.contains(marked), "\(marked)\n\(text.out)")
    }
  }

  /// Repair quarantines what follows the loss and removes the index: every reader then opens
  /// the journal again, without the error.
  @Test(arguments: [Loss.lastSegment, .cutShort])
  func afterRepairTheReadersOpenTheJournal(loss: Loss) async throws {
    let (journal, _, _) = try await Self.damaged(loss)
    let repair = try await ToolRun.run("rewind", ["repair", journal.path, "--yes"])
    #expect(repair.status == 0, "\(repair.out)\(repair.err)")
    for command in [["log"], ["stats"], ["export", "@", "--jsonl"], ["tail"], ["replay"], ["verify"]] {
      let run = try await EveryCommandTests.run(command, journal.path)
      #expect(run.status == 0, "\(command): \(run.out)\(run.err)")
    }
  }

  /// A segment missing before intact ones (the first, or one in the middle) is a gap only a
  /// backup fills. Repair used to move every segment after it aside (all of them, when the first
  /// was missing: an empty journal), as verify's and every reader's advice said it would; it now
  /// refuses (exit 3) moving nothing, and that advice sends the user to a backup instead.
  @Test(arguments: [false, true])
  func repairRefusesASegmentMissingBeforeIntactOnes(first: Bool) async throws {
    let (journal, _, _) = try await Self.damaged(.middleSegment, firstSegment: first)
    let before = Files.list(journal.path)

    let verify = try await ToolRun.run("rewind", ["verify", journal.path])
    #expect(verify.status == 1, "\(verify.out)\(verify.err)")
    let advice = try #require(verify.out.split(separator: "\n").last.map(String.init))
    #expect(advice.contains("from a backup"), "\(verify.out)")
    #expect(!advice.contains("moves the damaged part aside"), "repair refuses this journal: \(advice)")

    for arguments in [["repair", journal.path], ["repair", journal.path, "--yes"]] {
      let repair = try await ToolRun.run("rewind", arguments)
      #expect(repair.status == 3, "\(arguments): \(repair.out)\(repair.err)")
      #expect(repair.err.contains("Nothing was moved"), "\(repair.err)")
      #expect(repair.err.contains("from a backup"), "\(repair.err)")
    }
    #expect(Files.list(journal.path) == before, "nothing may be moved")

    let log = try await ToolRun.run("rewind", ["log", journal.path])
    #expect(log.status == 3, "\(log.out)\(log.err)")
    #expect(log.err.contains("from a backup"), "\(log.err)")
    #expect(!log.err.contains("moves the damaged part aside"), "\(log.err)")
  }

  /// Repair refuses a journal whose manifest alone disagrees with every segment; verify's advice
  /// says so, naming the id to put back, instead of sending the user to that repair.
  @Test func verifyAdvisesWhatRepairWillDoWhenOnlyTheManifestDisagrees() async throws {
    let dir = try RewindCommandTests.journal()
    let own = try JournalReader(directory: dir.path).id
    let other = String(repeating: "ab", count: 16)
    let manifest = dir.appending("manifest.json")
    try Files.write(Array("{\n  \"format\" : 1,\n  \"journalID\" : \"\(other)\"\n}\n".utf8), to: manifest)

    let verify = try await ToolRun.run("rewind", ["verify", dir.path])
    #expect(verify.status == 1, "\(verify.out)\(verify.err)")
    let advice = try #require(verify.out.split(separator: "\n").last.map(String.init))
    #expect(advice.hasPrefix("damaged: "), "\(verify.out)")
    #expect(advice.contains("set the manifest's journalID to \(own)"), "\(advice)")
    #expect(!advice.contains("moves the damaged part aside"), "repair refuses this journal: \(advice)")

    let repair = try await ToolRun.run("rewind", ["repair", dir.path, "--yes"])
    #expect(repair.status == 3, "\(repair.out)\(repair.err)")
    #expect(repair.err.contains("set the manifest's journalID to \(own)"), "\(repair.err)")

    // The reading commands give verify's advice, not the repair that refuses.
    for command in [["log"], ["export", "@", "--jsonl"], ["tail"]] {
      let run = try await EveryCommandTests.run(command, dir.path)
      #expect(run.status == 3, "\(command): \(run.out)\(run.err)")
      #expect(run.err.contains("belongs to another journal"), "\(command): \(run.err)")
      #expect(run.err.contains("set the manifest's journalID to \(own)"), "\(command): \(run.err)")
      #expect(!run.err.contains("moves the damaged part aside"), "\(command): \(run.err)")
      // The advice ends a sentence; what follows it starts the next (it once read "\(own)..").
      #expect(!run.err.contains("\(own).."), "\(command): \(run.err)")
    }

    // Following the advice makes the journal whole.
    try Files.write(Array("{\n  \"format\" : 1,\n  \"journalID\" : \"\(own)\"\n}\n".utf8), to: manifest)
    #expect(try await ToolRun.run("rewind", ["verify", dir.path]).status == 0)
  }

  /// `debug` on a journal with a segment missing in the middle: its first line offers a session
  /// through the record before the gap, and serves it (every `goto` there failed, entry 193); a
  /// move into the gap is refused, located.
  @Test func debugServesTheRecordsBeforeAMissingSegment() async throws {
    let (journal, file, _) = try await Self.damaged(.middleSegment)
    let first = try #require(UInt64(file.prefix(20)))
    let before = first - 1
    let script = ["goto 3", "goto \(before)", "print", "goto \(first)"]
    let run = try await ToolRun.run("rewind", ["debug", journal.path], input: script.joined(separator: "\n") + "\n")
    #expect(run.status == 3, "\(run.out)\(run.err)")
    let err = run.err.split(separator: "\n").map(String.init)
    #expect(err.first?.contains("segment \(file) is missing, but the index names it") == true, "\(run.err)")
    #expect(err.first?.contains("at sequence \(before), the last record read intact") == true, "\(run.err)")
    #expect(err.count == 2 && err[1].contains("is past the end of this session"), "\(run.err)")
    let out = run.out.split(separator: "\n").map(String.init)
    #expect(out.first?.hasPrefix("at 3 of \(before): #3 ") == true, "\(run.out)")
    #expect(out.contains { $0.hasPrefix("at \(before) of \(before): #\(before) ") }, "\(run.out)")
    #expect(run.out.contains("at \(before): digest \(try StateDigest.of(journal.states[Int(before)]))"), "\(run.out)")
  }
}
