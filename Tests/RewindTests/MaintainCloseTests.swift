import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

@Suite struct MaintainCloseTests {
  /// The maintenance job runs until the manager is closed. Closed while the job is still behind
  /// (a checkpoint due after every command, the commands made faster than checkpoints), it used to
  /// throw `closed` from the checkpoint it then tried; it now ends as it does when caught up.
  /// Several rounds: whether the job is behind at the close depends on the threads.
  @Test func aCloseThatFindsTheJobBehindEndsItWithoutAnError() async throws {
    for round in 0..<10 {
      let directory = TemporaryDirectory()
      let manager = try Manager<Gauge>(
        directory: directory.path, options: JournalOptions(durability: .none), clock: .stepping(from: 1_000),
        ids: .sequential())
      let job = Task { try await manager.maintain(checkpointEvery: 1) }
      try await manager.waitUntil(observersAttached: 1)
      for index in 0..<5 {
        try await manager.perform(.user) { _, command in command.record(LevelSet(value: Double(index))) }
      }
      manager.close()
      let outcome = await job.result
      #expect(throws: Never.self, "round \(round)") { try outcome.get() }
      let report = try Replay.verify(Gauge.self, directory: directory.path)
      #expect(report.firstDivergence == nil && report.strayCheckpointDigests.isEmpty, "round \(round)")
    }
  }
}
