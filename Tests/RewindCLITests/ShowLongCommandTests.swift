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
}
