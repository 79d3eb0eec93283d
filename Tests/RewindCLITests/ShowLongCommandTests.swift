import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import Notebook
@testable import Rewind

/// `rewind show`'s command range for a command of more events than one look back covers.
@Suite struct ShowLongCommandTests {
  /// It looked back 4,096 events at most: an event at 5000 of a command spanning 100-5000 showed
  /// "events 904-5000, 4097 in all".
  @Test func aLongCommandsRangeStartsAtItsFirstEvent() async throws {
    let dir = TemporaryDirectory("cli-show-long")
    let journal = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    func record(_ sequence: Int, command: UInt64) throws -> NewRecord {
      let book = NotebookID(Identifier(high: 2, low: UInt64(sequence)))
      let event = NotebookCreated(id: book, title: "book \(sequence)")
      return NewRecord(
        timestamp: Int64(sequence),
        payload: try EventRecord.encode(event, origin: .user, commandID: Identifier(high: 1, low: command)))
    }
    // Command 1: events 1-99; command 2: 100-5000, appended in batches; command 3: 5001.
    try journal.appendAndWait(try (1...99).map { try record($0, command: 1) })
    for start in stride(from: 100, through: 5000, by: 700) {
      try journal.appendAndWait(try (start...min(start + 699, 5000)).map { try record($0, command: 2) })
    }
    try journal.appendAndWait([try record(5001, command: 3)])
    journal.close()
    let command = Identifier(high: 1, low: 2)
    for sequence in [100, 4200, 5000] {
      let run = try await ToolRun.run("rewind", ["show", dir.path, "\(sequence)"])
      #expect(run.status == 0, "\(sequence): \(run.err)")
      #expect(run.out.contains("  command   \(command) (events 100-5000, 4901 in all)\n"), "\(sequence): \(run.out)")
      let json = try await ToolRun.run("rewind", ["show", dir.path, "\(sequence)", "--json"])
      #expect(json.out.contains(#""commandEvents":[100,5000]"#), "\(sequence): \(json.out)")
    }
    let last = try await ToolRun.run("rewind", ["show", dir.path, "5001"])
    #expect(last.out.contains("  command   \(Identifier(high: 1, low: 3)) (its only event)\n"), "\(last.out)")
  }

  /// A frame of several commands next to a damaged frame: `show` read the neighbours of any of its
  /// events through the damage, and left every one's command out (exit 3). A manager writes a
  /// command's events into one frame (DESIGN.md, 3), so the frame, read again, tells a command that
  /// reaches neither of its ends, whatever lies next to it; only one that reaches the damaged side
  /// could go on into the damaged frame.
  @Test func aCommandInsideAFrameIsToldWhateverLiesNextToIt() async throws {
    let dir = TemporaryDirectory("cli-show-frame")
    var options = JournalOptions(durability: .none)
    options.indexIntervalBytes = 1 << 20
    let journal = try Journal(directory: dir.path, options: options)
    func record(_ sequence: Int, command: UInt64) throws -> NewRecord {
      let book = NotebookID(Identifier(high: 2, low: UInt64(sequence)))
      return NewRecord(
        timestamp: Int64(sequence),
        payload: try EventRecord.encode(
          NotebookCreated(id: book, title: "book \(sequence)"), origin: .user,
          commandID: Identifier(high: 1, low: command)))
    }
    // Frames: 1-5 (commands 1-5), 6-10 (command 6, damaged), 11-15 (commands 11, 12 of 12-14, 15).
    try journal.appendAndWait(try (1...5).map { try record($0, command: UInt64($0)) })
    try journal.appendAndWait(try (6...10).map { try record($0, command: 6) })
    try journal.appendAndWait(try (11...15).map { try record($0, command: (12...14).contains($0) ? 12 : UInt64($0)) })
    journal.close()
    let name = Layout.segmentName(firstSequence: 1)
    var bytes = try Files.read(dir.path + "/" + name)
    let frames = segmentFrames(in: bytes)
    try #require(frames.count == 3)
    bytes[frames[1].middleOfData] ^= 0x5A
    try Files.write(bytes, to: dir.path + "/" + name)
    for (sequence, command) in [
      (2, "[2,2]"), (4, "[4,4]"), (12, "[12,14]"), (13, "[12,14]"), (14, "[12,14]"), (15, "[15,15]"),
    ] {
      let run = try await ToolRun.run("rewind", ["show", dir.path, "\(sequence)", "--json"])
      #expect(run.status == 0, "\(sequence): \(run.err)")
      #expect(run.out.contains(#""commandEvents":\#(command)"#), "\(sequence): \(run.out)")
    }
    // Next to the damaged frame: shown, its command left out.
    for sequence in [5, 11] {
      let run = try await ToolRun.run("rewind", ["show", dir.path, "\(sequence)", "--json"])
      #expect(run.status == 3 && run.out.hasPrefix(#"{"seq":\#(sequence),"#), "\(sequence): \(run.out)")
      #expect(!run.out.contains("commandEvents"), "\(sequence): \(run.out)")
      #expect(run.err.contains("\(name), byte offset \(frames[1].offset)"), "\(sequence): \(run.err)")
    }
  }
}
