import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// A snapshot names the last record its state includes (format 2, SNAPSHOTS.md), and readers
/// skip it once the journal holds another record at that number: a journal cut and written again
/// past it, or another copy of itself, no longer passes for the history the snapshot stands for.
@Suite struct SnapshotHistoryTests {
  /// Appends one `LevelSet` per value to the Gauge journal in `directory`.
  static func append(_ values: [Double], to directory: String) async throws {
    let manager = try Manager<Gauge>(
      directory: directory, options: JournalOptions(durability: .none), clock: .stepping(from: 1_000),
      ids: .sequential())
    for value in values { try await manager.perform(.user) { _, command in command.record(LevelSet(value: value)) } }
    manager.close()
  }

  /// Two histories of one journal that share their first four records: `kept` holds records 1–6
  /// and the snapshot after 6; `other` is a copy made after record 4, then written on with other
  /// values (records 5 and 6 of another history), with no snapshot.
  static func twoHistories() async throws -> (kept: TemporaryDirectory, other: TemporaryDirectory) {
    let kept = TemporaryDirectory("history-kept")
    let other = TemporaryDirectory("history-other")
    try await append([2, 3, 4, 5], to: kept.path)
    try Files.copyDirectory(kept.path, to: other.path)
    try await append([6, 7], to: kept.path)
    try await append([60, 70], to: other.path)
    try #require(try Snapshots.take(Gauge.self, directory: kept.path)?.sequence == 6)
    return (kept, other)
  }

  /// The snapshot after record 6 of one history, copied beside the other history's record 6:
  /// replay used to start from it and give the state of records the journal does not hold (7
  /// where the journal's records give 70). It is skipped, said to be of another history, and
  /// replay rebuilds the journal's own state; `verify`'s check of the files says the same.
  @Test func aSnapshotOfAnotherHistoryIsSkipped() async throws {
    let (kept, other) = try await Self.twoHistories()
    let name = SnapshotStore.fileName(6)
    try FileManager.default.createDirectory(
      atPath: other.appending(SnapshotStore.folderName), withIntermediateDirectories: true)
    try Files.write(
      try Files.read(kept.appending("snapshots/" + name)), to: other.appending("snapshots/" + name))

    let outcome = try Replay.run(Gauge.self, directory: other.path)
    #expect(outcome.state.level.value == 70)
    #expect(outcome.report.snapshotSequence == nil)
    let skipped = try #require(outcome.report.skippedSnapshots.first as SnapshotProblem?)
    #expect(outcome.report.skippedSnapshots.count == 1)
    #expect(skipped.sequence == 6)
    guard case .otherHistory(let why) = skipped.reason else {
      Issue.record("skipped as \(skipped.reason), not as of another history")
      return
    }
    #expect(why.contains("record 6"), "\(why)")
    #expect(
      SnapshotStore(journal: other.path).fileProblems(lastSequence: 6).map(\.reason) == [skipped.reason])
    // In its own history the same file is used.
    let own = try Replay.run(Gauge.self, directory: kept.path)
    #expect(own.report.snapshotSequence == 6 && own.report.skippedSnapshots.isEmpty)
    #expect(own.state.level.value == 7)
  }

  /// `Snapshots.take` records the last record as its replay read it, not as the journal holds it
  /// when the file is written: in between, a writer whose group failed can cut the group off and
  /// number other records over it (here the journal's files are replaced by the other history's
  /// once the replay has read them). Read back at writing, the file would name the other history's
  /// record 6 and pass every check, standing for a state the journal does not hold.
  @Test func takeNamesTheRecordItsReplayRead() async throws {
    let (kept, other) = try await Self.twoHistories()
    try FileManager.default.removeItem(atPath: kept.appending("snapshots"))
    let segment = Layout.segmentName(firstSequence: 1)
    let replaced = Locked(false)
    let taken = try Snapshots.take(Gauge.self, directory: kept.path) { progress in
      guard progress.sequence == 6, !replaced.withLock({ $0 }) else { return }
      // The replay has read record 6: the journal now holds the other history.
      for file in [segment, Layout.indexName] {
        try? Files.write(try Files.read(other.appending(file)), to: kept.appending(file))
      }
      replaced.withLock { $0 = true }
    }
    #expect(replaced.withLock { $0 })
    #expect(taken?.sequence == 6)
    let outcome = try Replay.run(Gauge.self, directory: kept.path)
    #expect(outcome.state.level.value == 70, "replay started from the snapshot of the history that was replaced")
    #expect(outcome.report.skippedSnapshots.map(\.sequence) == [6])
  }

  /// `SnapshotStore.write(_:at:)` reads the record it names from the journal, and refuses a
  /// sequence number the journal does not reach: such a file would stand for records no one wrote.
  @Test func writeRefusesARecordTheJournalDoesNotHold() async throws {
    let directory = TemporaryDirectory()
    try await Self.append([2, 3], to: directory.path)
    let state = try Replay.rebuild(Gauge.self, directory: directory.path).state
    #expect {
      try SnapshotStore(journal: directory.path).write(state, at: 3)
    } throws: { error in
      (error as? JournalError)?.code == .invalidArgument && "\(error)".contains("does not reach")
    }
    #expect(SnapshotStore(journal: directory.path).sequences() == [])
    try SnapshotStore(journal: directory.path).write(state, at: 2)
    let file = try SnapshotFile.decode(
      try Files.read(directory.appending("snapshots/" + SnapshotStore.fileName(2))))
    let record = try #require(try JournalReader(directory: directory.path).record(2))
    #expect(file.lastRecord == SnapshotFile.recordDigest(of: record))
  }

  /// `Snapshots.take` when the newest usable snapshot already holds the last state writes
  /// nothing: written again, the file would name the record as the journal holds it then, and a
  /// file of format 1 of another history (used unchecked) would come out as a checked one.
  @Test func takeAtTheNewestSnapshotWritesNothing() async throws {
    let (kept, other) = try await Self.twoHistories()
    let name = SnapshotStore.fileName(6)
    // The other history's file, as a writer of format 1 left it (no record digest).
    let written = try SnapshotFile.decode(try Files.read(kept.appending("snapshots/" + name)))
    try FileManager.default.createDirectory(
      atPath: other.appending(SnapshotStore.folderName), withIntermediateDirectories: true)
    let formatOne = try Self.formatOne(written)
    try Files.write(formatOne, to: other.appending("snapshots/" + name))
    let taken = try Snapshots.take(Gauge.self, directory: other.path)
    #expect(taken?.sequence == 6 && taken?.digest == written.digest)
    #expect(try Files.read(other.appending("snapshots/" + name)) == formatOne, "the file was written again")
  }

  /// `written`'s bytes in format 1: the same fields without the last record's digest.
  static func formatOne(_ written: SnapshotFile) throws -> [UInt8] {
    let current = written.encoded()
    var bytes = Array(current[0..<100]) + Array(current[132..<(current.count - 4)])
    bytes[8] = 1
    let crc = CRC32C.checksum(bytes)
    for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
    #expect(try SnapshotFile.decode(bytes).lastRecord == nil)
    return bytes
  }

  /// `update` chose the multiples it writes by the files' headers, and counted one of another
  /// history as the newest usable file: with keep 1, it wrote nothing at 30, and start-ups went on
  /// replaying from 20 and reading that file whole each time (the review of entry 361).
  @Test func updateCountsAFileOfAnotherHistoryForNothing() async throws {
    let kept = TemporaryDirectory("update-kept")
    let other = TemporaryDirectory("update-other")
    try await Self.append((0..<30).map { Double($0) }, to: kept.path)
    try Files.copyDirectory(kept.path, to: other.path)
    try await Self.append((0..<9).map { Double($0) }, to: kept.path)
    try await Self.append((0..<9).map { Double($0 + 100) }, to: other.path)
    #expect(try Snapshots.update(Gauge.self, directory: other.path, every: 10, keep: 1) == [30])
    try Snapshots.take(Gauge.self, directory: kept.path)
    let name = SnapshotStore.fileName(39)
    try Files.write(try Files.read(kept.appending("snapshots/" + name)), to: other.appending("snapshots/" + name))
    try FileManager.default.removeItem(atPath: other.appending("snapshots/" + SnapshotStore.fileName(30)))
    try SnapshotStore(journal: other.path).write(
      try Replay.rebuild(Gauge.self, directory: other.path, through: 20).state, at: 20)
    #expect(try Snapshots.update(Gauge.self, directory: other.path, every: 10, keep: 1) == [30])
    #expect(SnapshotStore(journal: other.path).newestSequence(fingerprint: Gauge.fingerprint) == 30)
  }

  /// `SnapshotStore.write(_:at:)` reads the record it names with the largest limits, as readers
  /// do: it refused a journal written with records over the default limits (`limitExceeded`).
  @Test func writeReadsARecordOverTheDefaultLimits() async throws {
    let directory = TemporaryDirectory()
    var options = JournalOptions(durability: .none)
    options.limits = JournalLimits(maxRecordBytes: 8 << 20, maxBatchBytes: 32 << 20)
    let manager = try Manager<Blob>(
      directory: directory.path, options: options, clock: .stepping(from: 1_000), ids: .sequential())
    let text = String(repeating: "a", count: 5 << 20)
    try await manager.perform(.user) { _, command in command.record(TextSet(text: text)) }
    manager.close()
    let state = try Replay.rebuild(Blob.self, directory: directory.path).state
    #expect(state.text.value.utf8.count == 5 << 20)
    try SnapshotStore(journal: directory.path).write(state, at: 1)
    let outcome = try Replay.run(Blob.self, directory: directory.path)
    #expect(outcome.report.snapshotSequence == 1, "\(outcome.report.skippedSnapshots)")
  }
}

/// A `FileIO` whose reads of segment files fail with `EIO`.
private final class SegmentReadFailure: ForwardingFileIO {
  let base: any FileIO = PosixFileIO()

  func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws -> Int {
    if path.hasSuffix(Layout.segmentSuffix) { throw SystemCallError("pread", path: path, errno: EIO) }
    return try base.pread(fd, into: buffer, at: offset, path: path)
  }
}

extension SnapshotHistoryTests {
  /// A snapshot whose record the journal cannot read because of damage there is used unchecked
  /// (it may be all a reader has past that damage); one whose record could not be read for any
  /// other reason (an I/O error) is skipped as unreadable: the check did not run. Both used to be
  /// taken.
  @Test func aRecordThatCannotBeReadLeavesTheSnapshotUncheckedOnlyForDamage() async throws {
    let directory = TemporaryDirectory()
    try await Self.append([2, 3, 4], to: directory.path)
    try #require(try Snapshots.take(Gauge.self, directory: directory.path)?.sequence == 3)
    let segment = directory.appending(Layout.segmentName(firstSequence: 1))
    let thirdEnds = Files.size(segment)
    try await Self.append([5], to: directory.path)
    let failing = SnapshotStore(journal: directory.path, io: SegmentReadFailure())
      .latest(Gauge.self, atOrBefore: 3, lastSequence: 4)
    #expect(failing.snapshot == nil)
    let problem = try #require(failing.problems.first)
    guard case .unreadable(let why) = problem.reason else {
      Issue.record("skipped as \(problem.reason), not as unreadable")
      return
    }
    #expect(why.contains("could not be read to check it"), "\(why)")
    // Record 3's frame damaged, record 4's after it whole: the record reads as `.corrupt`.
    var bytes = try Files.read(segment)
    bytes[thirdEnds - 6] ^= 0xFF
    try Files.write(bytes, to: segment)
    #expect(throws: JournalError.self) { try JournalReader(directory: directory.path).record(3) }
    let damaged = SnapshotStore(journal: directory.path).latest(Gauge.self, atOrBefore: 3, lastSequence: 4)
    #expect(damaged.snapshot?.sequence == 3, "\(damaged.problems)")
    #expect(damaged.snapshot?.state.level.value == 4)
  }
}

/// A model of one text, for records larger than the default limits.
struct Blob: SnapshotModel {
  var text = ValueStore<String>(name: "text", initial: "")

  static func registerEvents(in registry: inout EventRegistry<Blob>) {
    registry.register(TextSet.self) { model, event, context in model.text.set(event.text, context: &context) }
  }
}

struct TextSet: Event {
  static let name = "blob.textSet"
  var text: String
}
