import Glibc
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// Foundation's `Thread.start()` ignores `pthread_create`'s failure on Linux: at a process's
/// thread limit, replay waited for ever for batches its reading thread would never bring (every
/// replay of more than two batches: start-up, `rewind replay`, snapshots, seeks), and a
/// checkpoint's digest for a thread that never ran. Threads are started by `Threads.start` now,
/// which throws; each test refuses the starts made within its own task.
@Suite struct ThreadStartTests {
  @Test(.timeLimit(.minutes(2))) func replayReadsInlineWhenItsReadingThreadCannotStart() async throws {
    let directory = TemporaryDirectory()
    try await SnapshotStoreReviewTests.journal(directory.path, commands: 1_200)
    let expected = try Replay.rebuild(Gauge.self, directory: directory.path)
    try #require(expected.lastSequence == 1_200)
    let refused = try Threads.$refusingStarts.withValue(true) {
      try Replay.rebuild(Gauge.self, directory: directory.path)
    }
    #expect(refused.lastSequence == expected.lastSequence)
    #expect(refused.state == expected.state)
    #expect(openFiles(under: directory.path).isEmpty, "\(openFiles(under: directory.path))")
  }

  @Test func aJournalWhoseWriterThreadCannotStartIsNotOpened() throws {
    let directory = TemporaryDirectory()
    let error = Threads.$refusingStarts.withValue(true) {
      #expect(throws: JournalError.self) { try Journal(directory: directory.path) }
    }
    #expect(error?.code == .io && error?.description.contains("pthread_create") == true, "\(String(describing: error))")
    #expect(openFiles(under: directory.path).isEmpty, "\(openFiles(under: directory.path))")
    // Nothing held: the journal opens once threads can start.
    try Journal(directory: directory.path).close()
  }

  @Test(.timeLimit(.minutes(2))) func aCheckpointWhoseDigestThreadCannotStartFails() async throws {
    let directory = TemporaryDirectory()
    try await SnapshotStoreReviewTests.journal(directory.path, commands: 3)
    let manager = try Manager<Gauge>(directory: directory.path)
    defer { manager.close() }
    await #expect(throws: JournalError.self) {
      try await Threads.$refusingStarts.withValue(true) { _ = try await manager.recordCheckpoint() }
    }
    // The manager goes on; a checkpoint whose thread starts is recorded.
    _ = try await manager.recordCheckpoint()
  }
}
