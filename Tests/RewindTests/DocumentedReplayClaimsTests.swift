import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// Claims of the replay article (`Rewind.docc/ReplayAndTimeTravel.md`) that no other test pins,
/// checked as the article states them.
@Suite struct DocumentedReplayClaimsTests {
  /// "Replay starts from the newest usable one at or before its target (later ones are not
  /// candidates, and are reported only when past the journal's end)": a snapshot after the
  /// target within the journal is neither used nor reported; one past the journal's end is a
  /// sign of records lost, reported as `beyondJournal` whatever the target.
  @Test func aReplayToAnEarlierTargetReportsOnlyTheSnapshotsPastTheEnd() async throws {
    let directory = TemporaryDirectory()
    try await SnapshotStoreReviewTests.journal(directory.path, commands: 10)
    let store = SnapshotStore(journal: directory.path)
    for sequence: UInt64 in [4, 8] {
      _ = try store.write(Replay.rebuild(Gauge.self, directory: directory.path, through: sequence).state, at: sequence)
    }
    let folder = directory.appending(SnapshotStore.folderName)
    try Files.write(
      try Files.read(folder + "/" + SnapshotStore.fileName(8)), to: folder + "/" + SnapshotStore.fileName(99))

    let replayed = try Replay.run(Gauge.self, directory: directory.path, to: .sequence(6))
    #expect(replayed.report.snapshotSequence == 4)
    #expect(replayed.report.lastSequence == 6)
    #expect(replayed.report.skippedSnapshots.map(\.sequence) == [99])
    #expect(replayed.report.skippedSnapshots.map(\.reason) == [.beyondJournal(lastSequence: 10)])
    #expect(
      try StateDigest.of(replayed.state)
        == StateDigest.of(Replay.rebuild(Gauge.self, directory: directory.path, through: 6).state))
  }
}
