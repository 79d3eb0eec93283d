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
    try SnapshotStoreReviewTests.snapshots(directory.path, at: [4, 8])
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

  /// Journal/SNAPSHOTS.md: a file named past the journal's end is `beyondJournal` by its name
  /// alone, before its bytes are read (a file takes its name only once the records through it
  /// are durable): cut short, or holding another sequence number, it still says records were
  /// lost, for replay and for `rewind verify` (`fileProblems`), not merely `corrupt`.
  @Test func aFileNamedPastTheEndIsBeyondTheJournalWhateverItHolds() async throws {
    let directory = TemporaryDirectory()
    try await SnapshotStoreReviewTests.journal(directory.path, commands: 10)
    let store = SnapshotStore(journal: directory.path)
    _ = try store.write(Replay.rebuild(Gauge.self, directory: directory.path, through: 8).state, at: 8)
    let folder = directory.appending(SnapshotStore.folderName)
    let bytes = try Files.read(folder + "/" + SnapshotStore.fileName(8))
    try Files.write(Array(bytes.prefix(60)), to: folder + "/" + SnapshotStore.fileName(20))
    try Files.write(bytes, to: folder + "/" + SnapshotStore.fileName(30))
    try Files.write(Array(bytes.prefix(60)), to: folder + "/" + SnapshotStore.fileName(5))

    let problems = store.fileProblems(lastSequence: 10)
    #expect(problems.map(\.sequence) == [5, 20, 30], "\(problems)")
    #expect(problems.dropFirst().map(\.reason) == [.beyondJournal(lastSequence: 10), .beyondJournal(lastSequence: 10)])
    if case .corrupt = problems.first?.reason {} else { Issue.record("a cut file within the journal: \(problems)") }
    let found = store.latest(Gauge.self, atOrBefore: 10, lastSequence: 10)
    #expect(found.snapshot?.sequence == 8)
    #expect(found.problems.map(\.reason) == [.beyondJournal(lastSequence: 10), .beyondJournal(lastSequence: 10)])
  }
}
