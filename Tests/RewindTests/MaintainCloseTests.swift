import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

@Suite struct MaintainCloseTests {
  /// A manager of `Gauge` over `directory`: durability `none`, a stepping clock, sequential ids.
  private func open(_ directory: TemporaryDirectory) throws -> Manager<Gauge> {
    try Manager<Gauge>(
      directory: directory.path, options: JournalOptions(durability: .none), clock: .stepping(from: 1_000),
      ids: .sequential())
  }

  /// `count` commands through `manager`, one level each.
  private func commit(_ count: Int, to manager: Manager<Gauge>) async throws {
    for index in 0..<count {
      try await manager.perform(.user) { _, command in command.record(LevelSet(value: Double(index))) }
    }
  }

  /// The maintenance job runs until the manager is closed. Closed while the job is still behind
  /// (a checkpoint due after every command, the commands made faster than checkpoints), it used to
  /// throw `closed` from the checkpoint it then tried; it now ends as it does when caught up.
  /// Several rounds: whether the job is behind at the close depends on the threads.
  @Test func aCloseThatFindsTheJobBehindEndsItWithoutAnError() async throws {
    for round in 0..<10 {
      let directory = TemporaryDirectory()
      let manager = try open(directory)
      let job = Task { try await manager.maintain(checkpointEvery: 1) }
      try await manager.waitUntil(observersAttached: 1)
      try await commit(5, to: manager)
      manager.close()
      let outcome = await job.result
      #expect(throws: Never.self, "round \(round)") { try outcome.get() }
      let report = try Replay.verify(Gauge.self, directory: directory.path)
      #expect(report.firstDivergence == nil && report.strayCheckpointDigests.isEmpty, "round \(round)")
    }
  }

  /// Records committed before the job began count toward its checkpoints and snapshots: the job
  /// counted only what it saw committed, so an app whose runs each commit fewer records than an
  /// interval never got a checkpoint. Runs of 7 commands, checkpoints every 10: the second run's
  /// job records one after 3 more; a run started with 12 records since then records one (and the
  /// snapshots due) at once, with no command.
  @Test func recordsCommittedBeforeTheJobCountTowardItsCheckpoint() async throws {
    let directory = TemporaryDirectory()
    /// A run: `before` commands, then the job (and a watcher of its checkpoint), then `during`;
    /// returns whether a checkpoint's digest was committed.
    func run(before: Int, during: Int, expecting expected: Bool, snapshots: SnapshotPolicy? = nil) async throws
      -> Bool
    {
      let manager = try open(directory)
      try await commit(before, to: manager)
      let changes = manager.changes()
      let watcher = Task {
        for await change in changes where change.events.contains(where: { $0.event is CheckpointDigest }) {
          return true
        }
        return false
      }
      let job = Task { try await manager.maintain(checkpointEvery: 10, snapshots: snapshots) }
      try await manager.waitUntil(observersAttached: 2)
      try await commit(during, to: manager)
      // Expecting one, wait for it (the watcher gives up after the bound); otherwise the close
      // ends the watcher's stream.
      let early = expected ? await boundedValue(of: watcher) : false
      manager.close()
      try await boundedValue(of: job)
      return expected ? early : await boundedValue(of: watcher)
    }
    #expect(try await run(before: 7, during: 0, expecting: false) == false)
    #expect(try await run(before: 0, during: 3, expecting: true), "7 records before the job, 3 after: one is due")
    let policy = SnapshotPolicy(directory: directory.path, every: 10, keep: 2)
    #expect(try await run(before: 12, during: 0, expecting: true, snapshots: policy), "12 since the last checkpoint")
    let report = try Replay.verify(Gauge.self, directory: directory.path)
    #expect(report.checkpointsVerified == 2 && report.firstDivergence == nil, "\(report)")
    #expect(SnapshotStore(journal: directory.path).sequences() == [10, 20], "snapshots due at the start")
  }

  /// A state whose snapshot file would be larger than any reader takes made `Snapshots.update`
  /// throw (entry 334), which ended the whole maintenance job: checkpoints stopped too, for good,
  /// since later states are no smaller (the review of the day's change, Dec 7). The job now stops
  /// taking snapshots and goes on recording checkpoints. Files of at most 10 bytes here: every
  /// state is too large.
  @Test func aStateTooLargeToSnapshotStopsTheSnapshotsNotTheCheckpoints() async throws {
    let directory = TemporaryDirectory()
    let manager = try open(directory)
    try await commit(12, to: manager)
    let changes = manager.changes()
    let digests = Locked(0)
    let watcher = Task {
      for await change in changes where change.events.contains(where: { $0.event is CheckpointDigest }) {
        digests.withLock { $0 += 1 }
      }
    }
    var policy = SnapshotPolicy(directory: directory.path, every: 10, keep: 2)
    policy.fileLimit = 10
    let ended = Locked(false)
    let job = Task {
      defer { ended.withLock { $0 = true } }
      try await manager.maintain(checkpointEvery: 10, snapshots: policy)
    }
    try await manager.waitUntil(observersAttached: 2)
    try await commit(12, to: manager)
    // Two checkpoints (12 records before the job, 12 after), unless the job ends first.
    let deadline = ContinuousClock.now + .seconds(60)
    while digests.withLock({ $0 }) < 2 && !ended.withLock({ $0 }) && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(10))
    }
    #expect(digests.withLock { $0 } == 2, "a second checkpoint, after the snapshot was refused")
    manager.close()
    let outcome = await job.result
    #expect(throws: Never.self) { try outcome.get() }
    await watcher.value
    #expect(SnapshotStore(journal: directory.path).sequences().isEmpty)
    let report = try Replay.verify(Gauge.self, directory: directory.path)
    #expect(report.checkpointsVerified == 2 && report.firstDivergence == nil, "\(report)")
  }

  /// Snapshots of other model code (here `Tally`'s, as after an upgrade of the model) stand for no
  /// state: the job counted its next snapshot from the newest file whatever its code, so with 25
  /// records, snapshots every 10 and another code's file at 20, the first of this code waited
  /// for record 30, and every start until then replayed from the beginning. The job now writes
  /// the ones due (10 and 20) as it starts.
  @Test func snapshotsOfOtherModelCodeDoNotPutOffTheFirstSnapshot() async throws {
    let directory = TemporaryDirectory()
    let first = try open(directory)
    try await commit(25, to: first)
    first.close()
    let store = SnapshotStore(journal: directory.path)
    try store.write(Tally(), at: 20)
    #expect(store.newestSequence(fingerprint: Gauge.fingerprint) == nil)
    #expect(store.newestSequence(fingerprint: Tally.fingerprint) == 20)

    let manager = try open(directory)
    let policy = SnapshotPolicy(directory: directory.path, every: 10, keep: 4)
    let job = Task { try await manager.maintain(checkpointEvery: 1_000, snapshots: policy) }
    try await manager.waitUntil(observersAttached: 1)
    // The job writes what is due before it reads its first change, so it has once its stream ends.
    manager.close()
    try await boundedValue(of: job)
    #expect(store.sequences() == [10, 20])
    #expect(store.newestSequence(fingerprint: Gauge.fingerprint) == 20, "snapshots of this code due at the start")
    let found = store.latest(Gauge.self, atOrBefore: 25, lastSequence: 25)
    #expect(found.snapshot?.sequence == 20 && found.problems.isEmpty, "\(found.problems)")
  }
  /// The job followed the changes through an unbounded stream: a burst of commands while it was
  /// busy (a digest being computed) grew its buffer without bound, and reading the backlog took a
  /// checkpoint per interval in it, back to back at the same place. It now follows a bounded
  /// stream and, fallen behind, counts the records since the last checkpoint from the journal.
  /// Checkpoints every 10 and 4 changes buffered at most; the job held after its first checkpoint
  /// (mark 11, digest 12) while 25 commands are committed (13-37): it reads 4 changes, falls
  /// behind, catches up and records one checkpoint for the backlog (mark 38); 10 more commands
  /// (40-49) then get the next (mark 50), no sooner.
  @Test(.timeLimit(.minutes(10))) func aJobThatFallsBehindCatchesUpFromTheJournal() async throws {
    let directory = TemporaryDirectory()
    let manager = try open(directory)
    let digests = Counter(0)
    let watcher = Task {
      for await change in manager.changes() where change.events.contains(where: { $0.event is CheckpointDigest }) {
        _ = digests.advance(by: 1)
      }
    }
    let holding = Signal("the job held after its first checkpoint")
    let release = Signal("the test's burst committed")
    let checkpoints = Counter(0)
    let catchUps = Counter(0)
    var following = MaintainFollowing()
    following.limit = 4
    following.afterCheckpoint = {
      if checkpoints.advance(by: 1) == 0 {
        holding.set()
        try? await release.wait()
      }
    }
    following.caughtUp = { _ in _ = catchUps.advance(by: 1) }
    let job = Task { try await manager.maintain(checkpointEvery: 10, snapshots: nil, following: following) }
    try await manager.waitUntil(observersAttached: 2)
    try await commit(10, to: manager)
    try await holding.wait()
    try await commit(25, to: manager)
    release.set()
    #expect(await digests.wait(untilAtLeast: 2))
    try await commit(10, to: manager)
    #expect(await digests.wait(untilAtLeast: 3))
    manager.close()
    try await boundedValue(of: job)
    await watcher.value

    // Once at least; the last 10 commands may outrun a buffer of 4 too, and each catch-up counts
    // from the journal, so the marks are the same.
    #expect(catchUps.advance(by: 0) >= 1, "the job fell behind and caught up")
    var marks: [UInt64] = []
    let cursor = try JournalReader(directory: directory.path).records(from: 1)
    while let record = try cursor.next() {
      if try EventRecord.header(of: record.payload).name == CheckpointMark.name { marks.append(record.sequence) }
    }
    #expect(marks == [11, 38, 50])
    let report = try Replay.verify(Gauge.self, directory: directory.path)
    #expect(report.checkpointsVerified == 3 && report.firstDivergence == nil, "\(report)")
  }
}
