import Rewind
import RewindTestSupport
import Testing

@Suite struct RebuildWithoutSnapshotsTests {
  /// `Replay.rebuild(_:directory:through:)` replays from the empty state, as it says: a snapshot
  /// that disagrees with the journal (here, another history's state written under its last
  /// sequence number) changes neither a rebuild to the end nor one through that number. A
  /// manager's start-up and `Replay.run` do start from it.
  @Test func rebuildToTheEndReadsNoSnapshot() async throws {
    let directory = TemporaryDirectory("rebuild")
    let id = try await NestedStoreTests.cellar(in: directory)
    let other = TemporaryDirectory("rebuild-other")
    let manager = try Manager<Cellar>(directory: other.path, clock: .stepping(from: 0), ids: .sequential())
    try await manager.perform(.user) { _, command in
      command.record(BottleLaid(id: id, wine: "Humagne", region: "Valais"))
    }
    let foreign = manager.state
    manager.close()
    try SnapshotStore(journal: directory.path).write(foreign, at: 3)

    let whole = try Replay.rebuild(Cellar.self, directory: directory.path)
    #expect(whole.report.snapshotSequence == nil)
    #expect(whole.state.racks.bottles.find(id: id)?.wine == "Dézaley")
    #expect(whole.state == (try Replay.rebuild(Cellar.self, directory: directory.path, through: 3).state))
    #expect(try Replay.run(Cellar.self, directory: directory.path).report.snapshotSequence == 3)
    let reopened = try Manager<Cellar>(directory: directory.path)
    #expect(reopened.startupReport.snapshotSequence == 3)
    reopened.close()
  }
}
