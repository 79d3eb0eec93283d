import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// A `FileIO` that runs `hook` once, just before (or just after) the first listing of a
/// `snapshots/` folder: what a live writer (its records, then its snapshot policy) or a prune
/// does while a reader looks.
private final class SnapshotListingHook: ForwardingFileIO {
  let base: any FileIO = PosixFileIO()
  private let afterListing: Bool
  private let hook: Locked<(@Sendable () -> Void)?>

  init(afterListing: Bool = false, _ hook: @escaping @Sendable () -> Void) {
    self.afterListing = afterListing
    self.hook = Locked(hook)
  }

  func contentsOfDirectory(_ path: String) throws -> [String] {
    guard path.hasSuffix("/" + SnapshotStore.folderName), let hook = hook.withLock({ $0.take() }) else {
      return try base.contentsOfDirectory(path)
    }
    if !afterListing { hook() }
    let names = try base.contentsOfDirectory(path)
    if afterListing { hook() }
    return names
  }
}

/// Snapshots, checkpoints and compaction together: a damaged snapshot is skipped for a named
/// reason and replay gives the same digest; a reader that looks while the writer goes on does
/// not take a snapshot written meanwhile for one past the journal's end; checkpoints and
/// snapshots written while segments are compacted all verify, and replay, time travel and
/// snapshots agree before and after compaction.
@Suite struct SnapshotCompactionReviewTests {
  /// Small segments, frames and index intervals, so that a few hundred commands make segments
  /// for compaction to rewrite.
  static func options() -> JournalOptions {
    var options = JournalOptions(durability: .none)
    options.segmentTargetBytes = 2 << 10
    options.frameTargetBytes = 512
    options.indexIntervalBytes = 256
    return options
  }

  static func manager(_ directory: String, options: JournalOptions = options()) throws -> Manager<Gauge> {
    try Manager<Gauge>(directory: directory, options: options, clock: .stepping(from: 1_000), ids: .sequential())
  }

  /// A new journal of `count` commands, written by a manager under `none` and closed.
  static func committed(_ count: Int) async throws -> TemporaryDirectory {
    let directory = TemporaryDirectory()
    let manager = try Self.manager(directory.path, options: JournalOptions(durability: .none))
    try await Self.commit(count, to: manager)
    manager.close()
    return directory
  }

  /// Commits commands `first ..< first + count`: readings, levels, and every fifth a command of
  /// two events (so some snapshots stand inside a command).
  static func commit(_ count: Int, from first: Int = 0, to manager: Manager<Gauge>) async throws {
    for index in first..<first + count {
      try await manager.perform(.user) { _, command in
        if index % 3 == 0 { command.record(ReadingTaken(id: index, value: Double(index) / 4)) }
        command.record(LevelSet(value: Double(index) + 0.5))
        if index % 5 == 0 { command.record(LevelSet(value: Double(index) * 2)) }
      }
    }
  }

  /// Appends `count` one-event commands to `directory`'s journal through a `Journal` (no
  /// manager: for a hook, which runs synchronously), the levels numbered from `from`.
  static func append(_ count: Int, from: Int, to directory: String) throws {
    let journal = try Journal(directory: directory, options: JournalOptions(durability: .none))
    defer { journal.close() }
    for index in from..<from + count {
      let payload = try EventRecord.encode(
        LevelSet(value: Double(index)), origin: .user, commandID: Identifier(high: 7, low: UInt64(index)))
      try journal.appendAndWait([NewRecord(timestamp: Int64(10_000 + index), payload: payload)])
    }
  }

  static func digest(_ directory: String, through sequence: UInt64 = .max) throws -> StateDigest {
    try StateDigest.of(Replay.rebuild(Gauge.self, directory: directory, through: sequence).state)
  }

  /// Every byte of the newest snapshot flipped in turn, and the file cut at every length: each
  /// time replay, a time machine and verification skip it with a reason naming it, start from
  /// the older snapshot, and reach the digest of a replay without snapshots.
  @Test func aSnapshotWithAnyByteFlippedOrCutShortIsSkippedAndReplayAgrees() async throws {
    let directory = try await Self.committed(10)
    let store = SnapshotStore(journal: directory.path)
    try store.write(Replay.rebuild(Gauge.self, directory: directory.path, through: 6).state, at: 6)
    let last = try #require(try Snapshots.take(Gauge.self, directory: directory.path)).sequence
    let expected = try Self.digest(directory.path)
    let name = SnapshotStore.fileName(last)
    let path = directory.appending(SnapshotStore.folderName + "/" + name)
    let good = try Files.read(path)
    var damaged: [(damage: String, bytes: [UInt8])] = []
    for offset in good.indices {
      var bytes = good
      bytes[offset] ^= 0x10
      damaged.append(("byte \(offset) of \(good.count) flipped", bytes))
    }
    for count in 0..<good.count {
      damaged.append(("cut to \(count) of \(good.count) bytes", Array(good.prefix(count))))
    }
    for (damage, bytes) in damaged {
      try Files.write(bytes, to: path)
      let outcome = try Replay.run(Gauge.self, directory: directory.path)
      #expect(outcome.report.snapshotSequence == 6, "\(damage)")
      #expect(outcome.report.skippedSnapshots.map(\.file) == [name], "\(damage): \(outcome.report.skippedSnapshots)")
      #expect(try StateDigest.of(outcome.state) == expected, "\(damage)")
      // Read whole and checked against its checksum: named as damage, whatever the header says.
      let problems = store.fileProblems(lastSequence: last)
      #expect(problems.map(\.file) == [name], "\(damage): \(problems)")
      #expect(problems.allSatisfy { $0.reason.isDamage }, "\(damage): \(problems)")
      let machine = try TimeMachine<Gauge>(directory: directory.path, keyframeInterval: 1)
      #expect(try StateDigest.of(machine.jump(to: last)) == expected, "\(damage)")
      #expect(machine.skippedSnapshots.map(\.file) == [name], "\(damage): \(machine.skippedSnapshots)")
    }
  }

  /// `rewind verify` read the journal's end, then listed the snapshots: against a live journal,
  /// a snapshot the writer's policy wrote in between (its records appended after the end was
  /// read) was called one past the journal's end, a problem that means committed records were
  /// lost. Replay's report listed it as skipped for that reason too. The end is read again
  /// after the listing before a file is judged past it.
  @Test func aSnapshotWrittenAfterTheEndWasReadIsNotPastTheJournal() async throws {
    let directory = try await Self.committed(4)
    // A snapshot before, so that the folder is there to be listed.
    try SnapshotStore(journal: directory.path).write(
      Replay.rebuild(Gauge.self, directory: directory.path, through: 2).state, at: 2)
    let end = try JournalReader(directory: directory.path).lastSequence()
    let failure = Locked<String?>(nil)
    // The writer goes on: four more records, then a snapshot of the new end.
    func writerGoesOn(from index: Int) -> @Sendable () -> Void {
      {
        do {
          try Self.append(4, from: index, to: directory.path)
          if try Snapshots.take(Gauge.self, directory: directory.path) == nil { failure.withLock { $0 = "empty" } }
        } catch {
          failure.withLock { $0 = "\(error)" }
        }
      }
    }
    let verifying = SnapshotStore(journal: directory.path, io: SnapshotListingHook(writerGoesOn(from: 100)))
    let problems = verifying.fileProblems(lastSequence: end)
    #expect(failure.withLock { $0 } == nil)
    #expect(SnapshotStore(journal: directory.path).sequences() == [2, end + 4])
    #expect(problems.isEmpty, "\(problems)")

    let replaying = SnapshotStore(journal: directory.path, io: SnapshotListingHook(writerGoesOn(from: 200)))
    let found = replaying.latest(Gauge.self, atOrBefore: end + 4, lastSequence: end + 4)
    #expect(failure.withLock { $0 } == nil)
    #expect(found.snapshot?.sequence == end + 4)
    #expect(found.problems.isEmpty, "\(found.problems)")
    #expect(try StateDigest.of(found.snapshot?.state ?? Gauge()) == Self.digest(directory.path, through: end + 4))

    // A file past the end as read after the listing still is one.
    let folder = directory.appending(SnapshotStore.folderName)
    try Files.write(
      try Files.read(folder + "/" + SnapshotStore.fileName(end + 8)), to: folder + "/" + SnapshotStore.fileName(99))
    let now = try JournalReader(directory: directory.path).lastSequence()
    #expect(
      SnapshotStore(journal: directory.path).fileProblems(lastSequence: now).map(\.reason)
        == [.beyondJournal(lastSequence: now)])
    #expect(
      SnapshotStore(journal: directory.path).latest(Gauge.self, atOrBefore: now, lastSequence: now).problems.map(
        \.reason)
        == [.beyondJournal(lastSequence: now)])
  }

  /// A prune (a snapshot policy, `rewind snapshot`) that removes the files a reader listed
  /// before it opens them: the reader falls back to an older snapshot or the journal, and names
  /// no problem for files that are simply gone (they were reported as unreadable, "No such file
  /// or directory", and `rewind verify` noted each).
  @Test func snapshotsPrunedWhileAReaderLooksAreNoProblem() async throws {
    let directory = try await Self.committed(8)
    let last = try JournalReader(directory: directory.path).lastSequence()
    let store = try SnapshotStoreReviewTests.snapshots(directory.path, at: [3, 6, last])
    let prune: @Sendable () -> Void = { _ = try? SnapshotStore(journal: directory.path).prune(keeping: 1) }

    let found = SnapshotStore(journal: directory.path, io: SnapshotListingHook(afterListing: true, prune))
      .latest(Gauge.self, atOrBefore: 7, lastSequence: last)
    #expect(store.sequences() == [last], "the prune ran")
    #expect(found.snapshot == nil && found.problems.isEmpty, "\(found.problems)")
    let outcome = try Replay.run(Gauge.self, directory: directory.path, to: .sequence(7))
    #expect(try StateDigest.of(outcome.state) == Self.digest(directory.path, through: 7))

    try store.write(Replay.rebuild(Gauge.self, directory: directory.path, through: 6).state, at: 6)
    let problems = SnapshotStore(journal: directory.path, io: SnapshotListingHook(afterListing: true, prune))
      .fileProblems(lastSequence: last)
    #expect(store.sequences() == [last], "the prune ran")
    #expect(problems.isEmpty, "\(problems)")
  }

  /// A state holding the double -0.0 gets no snapshot (`SnapshotStore.write` throws
  /// `EncodingError`). `Snapshots.update` threw it at the first multiple of its interval where
  /// such a state stood, writing no snapshot after it, then or at any later call (each replays to
  /// that state again), and a manager's maintenance job ended with it, marking no checkpoint
  /// after. The multiple is now passed over.
  @Test func aStateWithoutAnExactSnapshotStopsNoSnapshotAfterIt() async throws {
    let directory = TemporaryDirectory()
    let manager = try Self.manager(directory.path, options: JournalOptions(durability: .none))
    let policy = SnapshotPolicy(directory: directory.path, every: 5, keep: 10)
    let job = Task { try await manager.maintain(checkpointEvery: 4, snapshots: policy) }
    // The level is -0.0 from the 3rd command through the 14th: every state there holds it.
    for index in 1...30 {
      try await manager.perform(.user) { _, command in
        if index == 3 {
          command.record(LevelSet(value: -0.0))
        } else if (4...14).contains(index) {
          command.record(ReadingTaken(id: index, value: Double(index)))
        } else {
          command.record(LevelSet(value: Double(index)))
        }
      }
      await Task.yield()
    }
    // The job goes on past the -0.0 states: it marks checkpoints after them (one every four
    // records of the 30 commands), which it did not once its first snapshot update threw.
    var verified = 0
    for _ in 0..<500 where verified < 6 {
      verified = try Replay.verify(Gauge.self, directory: directory.path).checkpointsVerified
      if verified < 6 { try await Task.sleep(for: .milliseconds(10)) }
    }
    #expect(verified >= 6, "checkpoints the job recorded")
    manager.close()
    let outcome = await job.result
    #expect(throws: Never.self, "the maintenance job") { try outcome.get() }

    let journal = try JournalReader(directory: directory.path)
    let last = try journal.lastSequence()
    let written = try Snapshots.update(Gauge.self, directory: directory.path, every: 5, keep: 10)
    let all = SnapshotStore(journal: directory.path).sequences()
    #expect(all.contains { $0 > 20 }, "snapshots after the -0.0 states: \(all), written now \(written)")
    #expect(all.last == last / 5 * 5, "\(all)")
    let replayed = try Replay.run(Gauge.self, directory: directory.path)
    #expect(try StateDigest.of(replayed.state) == Self.digest(directory.path))
  }

  /// A manager compacting its sealed segments in the background, its maintenance job marking
  /// checkpoints and writing snapshots, a time machine opened before: then compaction of every
  /// sealed segment while snapshots are taken and the time machine seeks, with a leftover copy
  /// of a compaction a crash interrupted. Every checkpoint and snapshot verifies, and replay
  /// with and without snapshots and the time machine give the same digests before and after.
  @Test func checkpointsSnapshotsAndReplayAgreeAcrossCompaction() async throws {
    let directory = TemporaryDirectory()
    var options = Self.options()
    options.compactsSealedSegments = true
    let manager = try Self.manager(directory.path, options: options)
    let machine = try TimeMachine<Gauge>(directory: directory.path, keyframeInterval: 8)
    let policy = SnapshotPolicy(directory: directory.path, every: 25, keep: 3)
    let job = Task { try await manager.maintain(checkpointEvery: 10, snapshots: policy) }
    for first in stride(from: 0, to: 240, by: 8) {
      try await Self.commit(8, from: first, to: manager)
      await Task.yield()
    }
    // The job catches up (it marks a checkpoint every 10 records of some 370) before the close.
    var verified = 0
    for _ in 0..<500 where verified < 20 {
      verified = try Replay.verify(Gauge.self, directory: directory.path).checkpointsVerified
      if verified < 20 { try await Task.sleep(for: .milliseconds(10)) }
    }
    let live = try StateDigest.of(manager.current.state)
    manager.close()
    try await job.value

    let last = try JournalReader(directory: directory.path).lastSequence()
    let points = stride(from: 1, through: last, by: 37).map { UInt64($0) } + [last]
    var expected: [UInt64: StateDigest] = [:]
    for point in points { expected[point] = try Self.digest(directory.path, through: point) }
    #expect(expected[last] == live)
    try machine.refresh()
    for point in points.reversed() { #expect(try StateDigest.of(machine.jump(to: point)) == expected[point]) }

    // A crash during a compaction leaves a partial copy beside its segment.
    let segments = Files.list(directory.path).filter { $0.hasSuffix(Layout.segmentSuffix) }.sorted()
    try #require(segments.count >= 4, "\(segments)")
    let victim = segments[segments.count - 2]
    let copy = try Files.read(directory.appending(victim))
    try Files.write(Array(copy.prefix(copy.count / 2)), to: directory.appending(victim + ".compact.tmp"))

    let journal = try Journal(directory: directory.path, options: Self.options())
    let compacting = Task.detached { try journal.compactSealedSegments() }
    let snapshotting = Task.detached {
      for _ in 0..<4 { try Snapshots.take(Gauge.self, directory: directory.path) }
      return try Snapshots.update(Gauge.self, directory: directory.path, every: 20, keep: 5)
    }
    for point in points { #expect(try StateDigest.of(machine.jump(to: point)) == expected[point]) }
    _ = try await compacting.value
    _ = try await snapshotting.value
    journal.close()
    #expect(!Files.list(directory.path).contains { $0.hasSuffix(".compact.tmp") })
    for segment in segments.dropLast() {
      let header = try SegmentHeader.decode(
        Array(try Files.read(directory.appending(segment)).prefix(Layout.segmentHeaderSize))
      ).get()
      #expect(header.isCompacted, "\(segment)")
    }

    let report = try Replay.verify(Gauge.self, directory: directory.path)
    #expect(report.firstDivergence == nil && report.snapshotDivergences.isEmpty)
    #expect(report.strayCheckpointDigests.isEmpty, "\(report.strayCheckpointDigests)")
    #expect(report.checkpointsVerified >= 20 && report.snapshotsVerified >= 3, "\(report)")
    #expect(SnapshotStore(journal: directory.path).fileProblems(lastSequence: last).isEmpty)
    let outcome = try Replay.run(Gauge.self, directory: directory.path)
    #expect(outcome.report.snapshotSequence != nil && outcome.report.skippedSnapshots.isEmpty)
    #expect(try StateDigest.of(outcome.state) == live)
    try machine.refresh()
    for point in points { #expect(try StateDigest.of(machine.jump(to: point)) == expected[point]) }
    let fresh = try TimeMachine<Gauge>(directory: directory.path, keyframeInterval: 64)
    for point in points.reversed() {
      #expect(try StateDigest.of(fresh.jump(to: point)) == expected[point])
      #expect(try Self.digest(directory.path, through: point) == expected[point])
    }
  }
}

extension SnapshotProblem.Reason {
  /// Whether this names damage to the file itself (what a whole read checked against the
  /// checksum finds), not a file of another journal, model code or end.
  fileprivate var isDamage: Bool {
    switch self {
    case .corrupt, .unknownFormat: true
    default: false
    }
  }
}
