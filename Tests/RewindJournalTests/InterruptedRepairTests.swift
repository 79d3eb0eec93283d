import Foundation
import RewindTestSupport
import Synchronization
import Testing

@testable import RewindJournal

/// A repair stopped part way, as by `kill -9`: whatever it had moved, the next repair finishes
/// it, keeping every record before the damage and leaving every byte it moves in `quarantine/`.
@Suite struct InterruptedRepairTests {
  /// Plays a process killed after its first `changes` calls that change the disk (writes, syncs,
  /// cuts, renames, removals, new folders): each later one fails with EIO without reaching the disk.
  final class DyingFileIO: ForwardingFileIO {
    let base: any FileIO = PosixFileIO()
    private let left: Mutex<Int>

    init(changes: Int) { left = Mutex(changes) }

    /// Whether the process died before the call: it then fails, changing nothing.
    var died: Bool { left.withLock { $0 < 0 } }

    private func change(_ path: String) throws {
      let dead = left.withLock { (left) -> Bool in
        left -= 1
        return left < 0
      }
      if dead { throw SystemCallError("killed", path: path, errno: EIO) }
    }

    func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws -> Int {
      try change(path)
      return try base.pwrite(fd, bytes, at: offset, path: path)
    }
    func sync(_ fd: Int32, metadata: Bool, path: String) throws {
      try change(path)
      try base.sync(fd, metadata: metadata, path: path)
    }
    func truncate(_ fd: Int32, to length: Int64, path: String) throws {
      try change(path)
      try base.truncate(fd, to: length, path: path)
    }
    func rename(_ from: String, to: String) throws {
      try change(from)
      try base.rename(from, to: to)
    }
    func removeFile(_ path: String) throws {
      try change(path)
      try base.removeFile(path)
    }
    func makeDirectory(_ path: String) throws {
      try change(path)
      try base.makeDirectory(path)
    }
  }

  /// A journal of several segments whose second segment has a damaged frame in its middle, or
  /// its last frame damaged (`lastFrame`).
  struct Damaged {
    var dir: TemporaryDirectory
    var records: [JournalRecord]
    /// Every segment's bytes after the damage, by name.
    var bytes: [String: [UInt8]]
    var segments: [String]
    var damagedSegment: String
    var damageOffset: Int
    /// The records before the damaged frame: what a repair keeps.
    var kept: [JournalRecord]
  }

  static func damaged(lastFrame: Bool) async throws -> Damaged {
    let dir = TemporaryDirectory("interrupted-repair")
    let options = JournalFixtures.options(segmentBytes: 2 << 10)
    let journal = try Journal(directory: dir.appending("j"), options: options)
    let records = try await JournalFixtures.write(journal, batches: 80, seed: 131)
    journal.close()
    let path = dir.appending("j")
    let segments = JournalFixtures.segments(path)
    try #require(segments.count >= 4, "\(segments)")
    let name = segments[1]
    let frames = try JournalFixtures.frames(of: Files.read(path + "/" + name))
    try #require(frames.count >= 3)
    let frame = lastFrame ? frames[frames.count - 1] : frames[frames.count / 2]
    try JournalFixtures.flip(path + "/" + name, at: frame.offset + Layout.batchHeaderSize + 3)
    var bytes: [String: [UInt8]] = [:]
    for segment in segments { bytes[segment] = try Files.read(path + "/" + segment) }
    let kept = Array(records.prefix(Int(frame.header.firstSequence - 1)))
    return Damaged(
      dir: dir, records: records, bytes: bytes, segments: segments, damagedSegment: name, damageOffset: frame.offset,
      kept: kept)
  }

  /// Kills the repair after each of its changes in turn. Every time, the next repair must run
  /// (not refuse), keep exactly the records before the damage, and leave every moved byte in
  /// quarantine; then the journal opens, takes a record and verifies sound. Moving the damaged
  /// segment's tail first left, when killed before the later segments had moved, a gap before
  /// intact segments, which repair refuses and `verify` says only a backup fills. With the last
  /// frame of the damaged segment damaged, that segment is the last left once the later ones
  /// moved, and its damage has nothing after it: it must still be taken for committed records
  /// lost (the index names the later segments), not for a frame never finished.
  @Test(arguments: [false, true]) func aRepairKilledAfterAnyChangeIsFinishedByTheNext(lastFrame: Bool) async throws {
    let original = try await Self.damaged(lastFrame: lastFrame)
    let later = original.segments.drop(while: { $0 != original.damagedSegment }).dropFirst()
    var killed = 0
    for changes in 0... {
      let copy = TemporaryDirectory("interrupted-repair-copy")
      let path = copy.appending("j")
      try Files.copyDirectory(original.dir.appending("j"), to: path)
      var options = JournalOptions()
      let dying = DyingFileIO(changes: changes)
      options.io = dying
      do {
        _ = try Journal.repair(directory: path, options: options)
        #expect(!dying.died, "a repair that finished did not die")
        break
      } catch {
        try #require(dying.died, "killed after \(changes) changes: \(error)")
      }
      killed += 1
      let report: RepairReport
      do {
        report = try Journal.repair(directory: path)
      } catch {
        Issue.record("killed after \(changes) changes, the next repair failed: \(error)")
        continue
      }
      #expect(try JournalFixtures.readAll(path) == original.kept, "killed after \(changes) changes")
      #expect(report.lastSequence == UInt64(original.kept.count), "killed after \(changes) changes")
      // Every later segment is in quarantine whole, the damaged one's tail too (once or twice:
      // a copy made before the kill, and the one the second repair made).
      let quarantine = path + "/" + Layout.quarantineName
      for name in later {
        #expect(try Files.read(quarantine + "/" + name) == original.bytes[name], "killed after \(changes): \(name)")
      }
      // A kill while the tail was being copied leaves that copy under a name of its own, ending
      // in ".partial", never under a tail's name, where it would pass for what was moved.
      let tail = "\(original.damagedSegment).from-\(original.damageOffset).tail"
      let tailBytes = Array(original.bytes[original.damagedSegment]![original.damageOffset...])
      let copies = try Files.list(quarantine).filter { $0.hasPrefix(tail) && !$0.hasSuffix(".partial") }.map {
        try Files.read(quarantine + "/" + $0)
      }
      #expect(
        !copies.isEmpty && copies.allSatisfy { $0 == tailBytes },
        "killed after \(changes) changes: \(Files.list(quarantine))")
      let journal = try Journal(directory: path, options: JournalFixtures.options(segmentBytes: 2 << 10))
      try journal.appendAndWait([NewRecord(timestamp: 1, payload: [7])])
      journal.close()
      #expect(try JournalReader(directory: path).verify().problems.isEmpty, "killed after \(changes) changes")
    }
    #expect(killed > later.count, "the repair was killed at each of its moves at least")
  }
}
