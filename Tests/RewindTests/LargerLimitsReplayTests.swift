import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// A journal written with limits larger than the default is read by everything the model layer
/// reads it with: replay, time travel, snapshots and a manager's start-up.
@Suite struct LargerLimitsReplayTests {
  /// Limits that let one event be larger than the default `maxRecordBytes` (4 MiB).
  static let writerLimits = JournalLimits(maxRecordBytes: 8 << 20, maxBatchBytes: 32 << 20)
  /// A label of 5 MiB: its event is over the default record limit.
  static let label = String(repeating: "l", count: 5 << 20)

  /// A journal of a small event, then one of over 4 MiB, written with `writerLimits`.
  static func journal(_ temporary: TemporaryDirectory) throws -> String {
    let directory = temporary.appending("journal")
    var options = JournalOptions()
    options.limits = writerLimits
    let journal = try Journal(directory: directory, options: options)
    defer { journal.close() }
    let command = Identifier(high: 1, low: 7)
    for event in [ShelfPlaced(crate: false, id: 1, label: "small"), ShelfPlaced(crate: false, id: 2, label: label)] {
      let payload = try EventRecord.encode(event, origin: .user, commandID: command)
      try journal.appendAndWait([NewRecord(timestamp: 1, payload: payload)])
    }
    try #require(throws: JournalError.self, "the default limits refuse the large event") {
      _ = try JournalReader(directory: directory).records(from: 2).next()
    }
    return directory
  }

  @Test func replayAndTimeTravelReadIt() throws {
    let temporary = TemporaryDirectory()
    let directory = try Self.journal(temporary)
    #expect(try Replay.run(Shelves.self, directory: directory).state.boxes.find(id: 2)?.label == Self.label)
    #expect(try Replay.rebuild(Shelves.self, directory: directory).lastSequence == 2)
    #expect(try Replay.events(of: Shelves.self, directory: directory).count == 2)
    let machine = try TimeMachine<Shelves>(directory: directory)
    #expect(try machine.jump(to: 2).boxes.find(id: 2)?.label == Self.label)
    #expect(try machine.jump(to: 1).boxes.find(id: 2) == nil)
  }

  /// A manager's start-up replay (with no snapshot to start from), then a snapshot.
  @Test func aManagerAndSnapshotsReadIt() throws {
    let temporary = TemporaryDirectory()
    let directory = try Self.journal(temporary)
    var options = JournalOptions()
    options.limits = Self.writerLimits
    let manager = try Manager<Shelves>(directory: directory, options: options)
    #expect(manager.lastSequence == 2)
    #expect(manager.state.boxes.find(id: 2)?.label == Self.label)
    manager.close()
    #expect(try Snapshots.update(Shelves.self, directory: directory, every: 2) == [2])
  }
}
