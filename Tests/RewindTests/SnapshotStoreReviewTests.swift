import Foundation
import Glibc
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// A `FileIO` that runs `hook` once, when a snapshot's temporary file is first synced: what
/// another thread or process does while that write is under way.
private final class TemporarySyncHook: ForwardingFileIO {
  let base: any FileIO = PosixFileIO()
  private let hook: Locked<(@Sendable () -> Void)?>

  init(_ hook: @escaping @Sendable () -> Void) { self.hook = Locked(hook) }

  func sync(_ fd: Int32, metadata: Bool, path: String) throws {
    if path.contains(".snapshot."), path.hasSuffix(".tmp"), let hook = hook.withLock({ $0.take() }) { hook() }
    try base.sync(fd, metadata: metadata, path: path)
  }
}

/// A `FileIO` that counts the bytes read from snapshot files.
private final class SnapshotReadCounter: ForwardingFileIO {
  let base: any FileIO = PosixFileIO()
  let bytes = Locked(0)

  func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws -> Int {
    let count = try base.pread(fd, into: buffer, at: offset, path: path)
    if path.hasSuffix(".snapshot") { bytes.withLock { $0 += count } }
    return count
  }
}

/// The digest of the journal's record `sequence`, which a snapshot file made by hand names as its
/// last record so that it differs from a written one only where the test says.
private func lastRecord(_ directory: String, _ sequence: UInt64) throws -> [UInt8] {
  SnapshotFile.recordDigest(of: try #require(try JournalReader(directory: directory).record(sequence)))
}

/// Defects a reviewer found in the snapshot store: what `prune` removes, what reading does when
/// the journal's id cannot be read or the model code changed, and what a snapshot policy accepts.
@Suite struct SnapshotStoreReviewTests {
  /// A journal of `Gauge` with `count` one-event commands.
  static func journal(_ directory: String, commands count: Int) async throws {
    let manager = try Manager<Gauge>(
      directory: directory, options: JournalOptions(durability: .none), clock: .stepping(from: 1_000),
      ids: .sequential())
    for index in 0..<count {
      try await manager.perform(.user) { _, command in command.record(LevelSet(value: Double(index + 2))) }
    }
    manager.close()
  }

  /// Writes the Gauge state after each of `sequences` into the journal's snapshot folder, as
  /// replay rebuilt it; returns the store.
  @discardableResult
  static func snapshots(_ directory: String, at sequences: [UInt64]) throws -> SnapshotStore {
    let store = SnapshotStore(journal: directory)
    for sequence in sequences {
      _ = try store.write(Replay.rebuild(Gauge.self, directory: directory, through: sequence).state, at: sequence)
    }
    return store
  }

  /// `prune` used to remove every `.tmp` file in the folder, also that of a snapshot another
  /// thread or process was writing, whose rename then failed. A write under way holds the folder's
  /// lock, and `prune` leaves its temporary file alone.
  @Test func pruneLeavesTheTemporaryFileOfAWriteUnderWay() async throws {
    let directory = TemporaryDirectory()
    try await Self.journal(directory.path, commands: 3)
    try #require(try Snapshots.take(Gauge.self, directory: directory.path)?.sequence == 3)
    let pruned = Locked<[UInt64]?>(nil)
    let temporaries = Locked<[String]>([])
    let folder = directory.appending(SnapshotStore.folderName)
    let io = TemporarySyncHook {
      // Another store (another open of the lock file, as another process's would be) prunes.
      pruned.withLock { $0 = try? SnapshotStore(journal: directory.path).prune(keeping: 1) }
      let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
      temporaries.withLock { $0 = names.filter { $0.hasSuffix(".tmp") } }
    }
    let state = try Replay.rebuild(Gauge.self, directory: directory.path, through: 2).state
    try SnapshotStore(journal: directory.path, io: io).write(state, at: 2)
    #expect(pruned.withLock { $0 } == [], "the prune ran while the write was under way, keeping the newest")
    let kept = temporaries.withLock { $0 }
    #expect(
      kept.count == 1 && kept.allSatisfy { $0.hasPrefix(SnapshotStore.fileName(2) + ".") },
      "the write's temporary file stayed: \(kept)")
    let store = SnapshotStore(journal: directory.path)
    #expect(store.sequences() == [2, 3])
    let found = store.latest(Gauge.self, atOrBefore: 2, lastSequence: 3)
    #expect(found.snapshot?.sequence == 2 && found.problems.isEmpty, "\(found.problems)")
  }

  /// `rewind stats` read the journal's end, counted every record (minutes, on a large journal),
  /// then listed `snapshots/`: a live writer's snapshot of the records appended meanwhile read
  /// as past the end, "records … are lost. Restore the journal from a backup". Files are judged
  /// against the end read after the listing when one lies past the end read before.
  @Test func aSnapshotWrittenSinceTheEndWasReadIsNotPastIt() async throws {
    let directory = TemporaryDirectory()
    try await Self.journal(directory.path, commands: 3)
    try #require(try Snapshots.take(Gauge.self, directory: directory.path)?.sequence == 3)
    let store = SnapshotStore(journal: directory.path)
    let grown = store.pastTheEnd(lastSequence: 2)
    #expect(grown.past == [] && grown.end == 3, "the journal grew to 3 since the end was read at 2: \(grown)")
    #expect(store.pastTheEnd(lastSequence: 3).past == [])
    // A file past the end as read now is past it, whichever end the caller read.
    let folder = directory.appending(SnapshotStore.folderName)
    try FileManager.default.copyItem(
      atPath: folder + "/" + SnapshotStore.fileName(3), toPath: folder + "/" + SnapshotStore.fileName(9))
    #expect(store.pastTheEnd(lastSequence: 2) == ([3, 9], 3, [9]))
    #expect(store.pastTheEnd(lastSequence: 3).past == [9])
  }

  /// The first snapshot makes `snapshots/`: its name in the journal's directory is synced before
  /// the snapshot is written into it, or a power loss could take the folder and the snapshot.
  @Test func theSnapshotFolderIsDurablyNamedWhenMade() async throws {
    let directory = TemporaryDirectory()
    try await Self.journal(directory.path, commands: 3)
    let state = try Replay.rebuild(Gauge.self, directory: directory.path, through: 2).state
    let io = SyncRecordingFileIO()
    try SnapshotStore(journal: directory.path, io: io).write(state, at: 2)
    let folder = directory.appending(SnapshotStore.folderName)
    let made = try #require(io.events.firstIndex(of: "mkdir " + folder), "\(io.events)")
    #expect(io.events.dropFirst(made + 1).first == "sync " + directory.path, "\(io.events)")
  }

  /// Two writes of one snapshot at once (a manager's policy and `rewind snapshot`, or two
  /// threads) used to share `….snapshot.tmp`: the second truncated and rewrote the first's file
  /// and renamed it, and the first's rename then failed (ENOENT) although the snapshot was
  /// written; had the second died half-way, the first would have renamed a torn file. Each write
  /// now has a temporary file of its own.
  @Test func twoWritesOfOneSnapshotAtOnceEachHaveTheirOwnTemporaryFile() async throws {
    let directory = TemporaryDirectory()
    try await Self.journal(directory.path, commands: 3)
    let state = try Replay.rebuild(Gauge.self, directory: directory.path, through: 2).state
    let second = Locked<Result<StateDigest, any Error>?>(nil)
    let io = TemporarySyncHook {
      // Written and not yet synced: another writer of the same snapshot runs from start to end.
      second.withLock { $0 = Result { try SnapshotStore(journal: directory.path).write(state, at: 2) } }
    }
    let first = Result { try SnapshotStore(journal: directory.path, io: io).write(state, at: 2) }
    let other = try #require(second.withLock { $0 }, "the second write ran while the first was under way")
    #expect(throws: Never.self, "the first write") { try first.get() }
    #expect(throws: Never.self, "the second write") { try other.get() }
    let store = SnapshotStore(journal: directory.path)
    #expect(store.sequences() == [2])
    let found = store.latest(Gauge.self, atOrBefore: 3, lastSequence: 3)
    #expect(
      found.snapshot?.sequence == 2 && found.snapshot?.state.level.value == state.level.value, "\(found.problems)")
    #expect(found.problems.isEmpty, "\(found.problems)")
    #expect(store.fileProblems(lastSequence: 3).isEmpty)
    let names = try FileManager.default.contentsOfDirectory(atPath: directory.appending(SnapshotStore.folderName))
    #expect(!names.contains { $0.hasSuffix(".tmp") }, "\(names)")
    // Each write's name is its own, ends in `.tmp` (what prune removes), and is no snapshot's.
    let (one, another) = (SnapshotStore.temporaryName(2), SnapshotStore.temporaryName(2))
    #expect(one != another && one.hasSuffix(".tmp") && one.hasPrefix(SnapshotStore.fileName(2) + "."), "\(one)")
    try Files.write(Array("half a snapshot".utf8), to: directory.appending(SnapshotStore.folderName + "/" + one))
    #expect(store.sequences() == [2])
  }

  /// `prune(keeping: 0)` removed every snapshot (and a negative count too), the one just
  /// written among them, where Journal/SNAPSHOTS.md says pruning keeps at least 1. A count below
  /// 1 is bad input: `invalidArgument`, naming the count, with nothing removed.
  @Test func pruneRefusesToKeepFewerThanOneSnapshot() async throws {
    let directory = TemporaryDirectory()
    try await Self.journal(directory.path, commands: 4)
    let store = try Self.snapshots(directory.path, at: [2, 4])
    let folder = directory.appending(SnapshotStore.folderName)
    let abandoned = folder + "/" + SnapshotStore.fileName(3) + ".tmp"
    try Files.write(Array("half a snapshot".utf8), to: abandoned)
    for count in [0, -1, Int.min] {
      let error = #expect(throws: JournalError.self) { try store.prune(keeping: count) }
      #expect(error?.code == .invalidArgument, "\(String(describing: error))")
      #expect(error?.message.contains("not \(count)") == true, "\(String(describing: error))")
      #expect(store.sequences() == [2, 4], "keeping \(count) removed snapshots")
      #expect(FileManager.default.fileExists(atPath: abandoned), "keeping \(count) went on to clean up")
    }
    #expect(try store.prune(keeping: 1) == [2])
    #expect(store.sequences() == [4])
  }

  /// A temporary file that no write holds (its writer died half-way) is removed.
  @Test func pruneRemovesTheTemporaryFileOfAnAbandonedWrite() async throws {
    let directory = TemporaryDirectory()
    try await Self.journal(directory.path, commands: 3)
    try #require(try Snapshots.take(Gauge.self, directory: directory.path)?.sequence == 3)
    let folder = directory.appending(SnapshotStore.folderName)
    let abandoned = folder + "/" + SnapshotStore.fileName(2) + ".tmp"
    try Files.write(Array("half a snapshot".utf8), to: abandoned)
    #expect(try SnapshotStore(journal: directory.path).prune(keeping: 1) == [])
    #expect(!FileManager.default.fileExists(atPath: abandoned))
    #expect(SnapshotStore(journal: directory.path).sequences() == [3])
  }

  /// Reading used to take the journal's id with `try?`: when it could not be read, the check that
  /// a snapshot is this journal's was skipped, and another journal's snapshot was used. Now no
  /// snapshot is, and each is reported as unverifiable.
  @Test func noSnapshotIsUsedWhenTheJournalsIDCannotBeRead() async throws {
    let mine = TemporaryDirectory()
    let other = TemporaryDirectory()
    try await Self.journal(mine.path, commands: 3)
    try await Self.journal(other.path, commands: 3)
    try #require(try Snapshots.take(Gauge.self, directory: other.path)?.sequence == 3)
    try FileManager.default.createDirectory(
      atPath: mine.appending(SnapshotStore.folderName), withIntermediateDirectories: true)
    let name = SnapshotStore.folderName + "/" + SnapshotStore.fileName(3)
    try Files.write(try Files.read(other.appending(name)), to: mine.appending(name))
    let store = SnapshotStore(journal: mine.path)
    #expect(store.latest(Gauge.self, atOrBefore: 3, lastSequence: 3).problems.first?.reason.isForeign == true)

    try Files.write(Array("not a manifest".utf8), to: mine.appending("manifest.json"))
    let found = store.latest(Gauge.self, atOrBefore: 3, lastSequence: 3)
    #expect(found.snapshot == nil, "another journal's snapshot was used")
    #expect(found.problems.map(\.reason.isUnverifiable) == [true], "\(found.problems)")
    #expect(found.problems.first?.description.contains("journal's id could not be read") == true)
    #expect(store.fileProblems(lastSequence: 3).map(\.reason.isUnverifiable) == [true])
    #expect(store.recordedDigests(fingerprint: Gauge.fingerprint, after: 0, through: 3).isEmpty)
  }

  /// Writes a snapshot file at `sequence` that names other model code (a stale one: an older
  /// app's, or another tool's), over whatever is there.
  static func staleSnapshot(_ directory: String, at sequence: UInt64) throws {
    let state = Array("an older model's state".utf8)
    let file = SnapshotFile(
      sequence: sequence, journalID: try JournalReader(directory: directory).id.bytes,
      fingerprint: StateDigest(bytes: SHA256.hash(Array("other model code".utf8))),
      digest: StateDigest(bytes: SHA256.hash(state)), lastRecord: try lastRecord(directory, sequence), state: state)
    try FileManager.default.createDirectory(
      atPath: directory + "/" + SnapshotStore.folderName, withIntermediateDirectories: true)
    try Files.write(
      file.encoded(), to: directory + "/" + SnapshotStore.folderName + "/" + SnapshotStore.fileName(sequence))
  }

  /// Pruning counted a stale snapshot (other model code's) as usable, and the update chose its
  /// multiples by every file: with a usable snapshot at 10, a stale one at 25, the journal at 26,
  /// every 10 and keep 1, the update wrote nothing at 20 (25 was "the newest") and the pruning
  /// removed 10, the one file this code could start from (a review of the snapshots, Dec 7). The
  /// model's own pruning counts its own code's files now, and the update chooses by them.
  @Test func aStaleSnapshotCountsForNothingInThePolicy() async throws {
    let directory = TemporaryDirectory()
    try await Self.journal(directory.path, commands: 26)
    let store = try Self.snapshots(directory.path, at: [10])
    try Self.staleSnapshot(directory.path, at: 25)
    #expect(try store.prune(keeping: 1, fingerprint: Gauge.fingerprint) == [], "the usable one is the newest")
    #expect(store.sequences() == [10, 25])
    #expect(try Snapshots.update(Gauge.self, directory: directory.path, every: 10, keep: 1) == [20])
    #expect(store.sequences() == [20, 25], "the stale file is left, for verify to note")
    let found = store.latest(Gauge.self, atOrBefore: 26, lastSequence: 26)
    #expect(found.snapshot?.sequence == 20, "\(found.problems)")
    // Pruning for any model code counts the stale file, as before: it is not this code's to judge.
    #expect(try store.prune(keeping: 1) == [20])
  }

  /// After a change of model code, every snapshot is stale; each used to be read whole (tens of
  /// megabytes for a large model) before its fingerprint was looked at. Its header is enough.
  @Test func aStaleSnapshotIsSkippedByItsHeader() async throws {
    let directory = TemporaryDirectory()
    try await Self.journal(directory.path, commands: 3)
    let state = [UInt8](repeating: 0x5A, count: 1 << 20)
    let file = SnapshotFile(
      sequence: 3, journalID: try JournalReader(directory: directory.path).id.bytes,
      fingerprint: StateDigest(bytes: SHA256.hash(Array("other model code".utf8))),
      digest: StateDigest(bytes: SHA256.hash(state)), lastRecord: try lastRecord(directory.path, 3), state: state)
    try FileManager.default.createDirectory(
      atPath: directory.appending(SnapshotStore.folderName), withIntermediateDirectories: true)
    try Files.write(file.encoded(), to: directory.appending(SnapshotStore.folderName + "/" + SnapshotStore.fileName(3)))

    let io = SnapshotReadCounter()
    let store = SnapshotStore(journal: directory.path, io: io)
    let found = store.latest(Gauge.self, atOrBefore: 3, lastSequence: 3)
    #expect(found.snapshot == nil)
    #expect(found.problems.map(\.reason.isStale) == [true], "\(found.problems)")
    #expect(io.bytes.withLock { $0 } <= SnapshotFile.headerSize, "read \(io.bytes.withLock { $0 }) bytes")
    io.bytes.withLock { $0 = 0 }
    #expect(store.recordedDigests(fingerprint: Gauge.fingerprint, after: 0, through: 3).isEmpty)
    #expect(io.bytes.withLock { $0 } <= SnapshotFile.headerSize, "read \(io.bytes.withLock { $0 }) bytes")
  }

  /// A policy (or an update) that keeps no snapshot traps: it would remove each one as it is
  /// written (`keep: 0` was taken, and a negative count too).
  @Test func aPolicyKeepingNoSnapshotTraps() async {
    await #expect(processExitsWith: .failure) { _ = SnapshotPolicy(directory: "/tmp", every: 10, keep: 0) }
    await #expect(processExitsWith: .failure) { _ = SnapshotPolicy(directory: "/tmp", every: 10, keep: -1) }
    await #expect(processExitsWith: .failure) {
      _ = try? Snapshots.update(Gauge.self, directory: "/nonexistent", every: 10, keep: 0)
    }
  }

  /// `maintain` used to take any directory for its snapshots: another journal's got snapshots of
  /// it replayed with this model, and this one's none. It now throws at once.
  @Test func maintainRefusesASnapshotPolicyForAnotherJournal() async throws {
    let mine = TemporaryDirectory()
    let other = TemporaryDirectory()
    try await Self.journal(other.path, commands: 30)
    let manager = try Manager<Gauge>(
      directory: mine.path, options: JournalOptions(durability: .none), clock: .stepping(from: 1_000),
      ids: .sequential())
    let policy = SnapshotPolicy(directory: other.path, every: 5, keep: 2)
    let job = Task { try await manager.maintain(checkpointEvery: 100, snapshots: policy) }
    for index in 0..<10 {
      try await manager.perform(.user) { _, command in command.record(LevelSet(value: Double(index))) }
    }
    manager.close()  // ends the job if it took the policy (it used to)
    let outcome = await job.result
    #expect(throws: JournalError.self) { try outcome.get() }
    if case .failure(let error as JournalError) = outcome {
      #expect(error.code == .invalidArgument && error.message.contains("not this manager's"), "\(error)")
    }
    #expect(SnapshotStore(journal: other.path).sequences().isEmpty, "nothing was written to the other journal")
  }

  /// A state whose file would be larger than every reader takes (`SnapshotStore.maxFileBytes`)
  /// was written, and then skipped by each of them: a manager's maintenance wrote it at every
  /// interval for nothing (a review of the snapshots, Dec 7, entry 329's "Left"). `write`
  /// refuses it now and writes nothing; a file of exactly the limit is written and read.
  @Test func aSnapshotNoReaderTakesIsNotWritten() async throws {
    let directory = TemporaryDirectory()
    try await Self.journal(directory.path, commands: 3)
    let state = try Replay.rebuild(Gauge.self, directory: directory.path, through: 3).state
    let path = directory.path + "/snapshots/" + SnapshotStore.fileName(3)
    try SnapshotStore(journal: directory.path).write(state, at: 3)
    let size = Int64(try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int))
    try FileManager.default.removeItem(atPath: path)

    let under = SnapshotStore(journal: directory.path, io: PosixFileIO(), fileLimit: size - 1)
    do {
      try under.write(state, at: 3)
      Issue.record("a snapshot of \(size) bytes was written under a limit of \(size - 1)")
    } catch let EncodingError.invalidValue(_, context) {
      #expect(
        context.debugDescription.hasPrefix(
          "the snapshot after record 3 would be \(size) bytes, more than the \(size - 1) a snapshot file may have"),
        "\(context.debugDescription)")
    }
    #expect(!FileManager.default.fileExists(atPath: path))
    #expect(under.sequences().isEmpty)

    let at = SnapshotStore(journal: directory.path, io: PosixFileIO(), fileLimit: size)
    try at.write(state, at: 3)
    let found = at.latest(Gauge.self, atOrBefore: 3, lastSequence: 3)
    #expect(found.snapshot?.sequence == 3 && found.snapshot?.state == state, "\(found.problems)")
  }
}

extension SnapshotProblem.Reason {
  fileprivate var isForeign: Bool { if case .foreign = self { true } else { false } }
  fileprivate var isUnverifiable: Bool { if case .unverifiable = self { true } else { false } }
  fileprivate var isStale: Bool { if case .stale = self { true } else { false } }
}
