import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// A reader of a change stream that fell behind catches up from the journal ("Change streams"):
/// its records are bytes, and nothing public turned a range of them into events, decoded and
/// upcast (a library user's walkthrough, Dec 7). `Replay.events(of:directory:from:through:)` does.
@Test func eventsOfARangeOfRecordsAreDecodedWithoutCheckpoints() async throws {
  let directory = TemporaryDirectory()
  let manager = try Manager<Gauge>(
    directory: directory.path, options: JournalOptions(durability: .none), clock: .stepping(from: 1_000),
    ids: .sequential())
  for value in 1...3 {
    try await manager.perform(.user) { _, command in command.record(LevelSet(value: Double(value))) }
  }
  try await manager.recordCheckpoint()  // sequences 4 and 5: a mark and its digest
  for value in 4...6 {
    try await manager.perform(.user) { _, command in command.record(LevelSet(value: Double(value))) }
  }
  let last = manager.lastSequence
  manager.close()
  try #require(last == 8)

  let range = try Replay.events(of: Gauge.self, directory: directory.path, from: 2, through: 7)
  #expect(range.map(\.envelope.sequence) == [2, 3, 6, 7])
  #expect(range.map { ($0.event as? LevelSet)?.value } == [2, 3, 4, 5])
  #expect(try Replay.events(of: Gauge.self, directory: directory.path, from: 7).map(\.envelope.sequence) == [7, 8])
  #expect(try Replay.events(of: Gauge.self, directory: directory.path, from: 9).isEmpty)
  #expect(try Replay.events(of: Gauge.self, directory: directory.path, from: 5, through: 4).isEmpty)
  #expect(
    try Replay.events(of: Gauge.self, directory: directory.path, from: 0).map(\.envelope.sequence)
      == (try Replay.events(of: Gauge.self, directory: directory.path)).map(\.envelope.sequence))
}
