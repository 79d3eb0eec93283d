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

  /// A journal of a small event, then one of over 4 MiB, written with `writerLimits`. Writing it,
  /// and the replays the tests make of it, take seconds of a debug build: they run on threads of
  /// their own (`onOwnThread`), and the tests check what they return. On the cooperative pool
  /// (two threads on two cores) they held up every other test's awaits.
  static func journal(_ temporary: TemporaryDirectory) async throws -> String {
    let directory = temporary.appending("journal")
    try await onOwnThread {
      var options = JournalOptions()
      options.limits = writerLimits
      let journal = try Journal(directory: directory, options: options)
      defer { journal.close() }
      let command = Identifier(high: 1, low: 7)
      for event in [ShelfPlaced(crate: false, id: 1, label: "small"), ShelfPlaced(crate: false, id: 2, label: label)] {
        let payload = try EventRecord.encode(event, origin: .user, commandID: command)
        try journal.appendAndWait([NewRecord(timestamp: 1, payload: payload)])
      }
    }
    try #require(throws: JournalError.self, "the default limits refuse the large event") {
      _ = try JournalReader(directory: directory).records(from: 2).next()
    }
    return directory
  }

  @Test func replayAndTimeTravelReadIt() async throws {
    let temporary = TemporaryDirectory()
    let directory = try await Self.journal(temporary)
    let (replayed, rebuiltTo, events, jumpedTo2, jumpedTo1) = try await onOwnThread {
      let machine = try TimeMachine<Shelves>(directory: directory)
      return (
        try Replay.run(Shelves.self, directory: directory).state.boxes.find(id: 2)?.label == Self.label,
        try Replay.rebuild(Shelves.self, directory: directory).lastSequence,
        try Replay.events(of: Shelves.self, directory: directory).count,
        try machine.jump(to: 2).boxes.find(id: 2)?.label == Self.label,
        try machine.jump(to: 1).boxes.find(id: 2) == nil
      )
    }
    #expect(replayed, "replay reads the large event")
    #expect(rebuiltTo == 2)
    #expect(events == 2)
    #expect(jumpedTo2, "a jump to 2 reads the large event")
    #expect(jumpedTo1, "a jump to 1 has no box 2")
  }

  /// A manager's start-up replay (with no snapshot to start from), then a snapshot.
  @Test func aManagerAndSnapshotsReadIt() async throws {
    let temporary = TemporaryDirectory()
    let directory = try await Self.journal(temporary)
    var options = JournalOptions()
    options.limits = Self.writerLimits
    let (last, label, snapshots) = try await onOwnThread { [options] in
      let manager = try Manager<Shelves>(directory: directory, options: options)
      let last = manager.lastSequence
      let label = manager.state.boxes.find(id: 2)?.label == Self.label
      manager.close()
      return (last, label, try Snapshots.update(Shelves.self, directory: directory, every: 2))
    }
    #expect(last == 2)
    #expect(label, "the manager's state holds the large event's label")
    #expect(snapshots == [2])
  }
}
