import Foundation
import RewindTestSupport
import Synchronization
import Testing

@testable import RewindJournal

/// `JournalReader.backUp(to:)`: the journal as it stood when the backup began, also while a
/// writer appends, or nothing at all.
@Suite struct BackupTests {
  @Test func aBackupHoldsTheSameRecordsFramesAndID() async throws {
    let dir = TemporaryDirectory("backup-source")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(segmentBytes: 4 << 10))
    let records = try await JournalFixtures.write(journal, batches: 200, maxRecords: 4, seed: 3)
    // A compacted segment's frames each hold several batches: the copy keeps them whole too.
    _ = try journal.compactSealedSegments()
    journal.close()
    let source = try JournalReader(directory: dir.path)
    let sourceReport = try source.verify()
    try #require(sourceReport.isSound && sourceReport.segments > 2)

    let backup = TemporaryDirectory("backup-target")
    let target = backup.appending("copy")
    let report = try source.backUp(to: target)
    #expect(report.records == UInt64(records.count) && report.lastSequence == UInt64(records.count), "\(report)")
    #expect(report.frames == sourceReport.batches, "\(report) against \(sourceReport.batches) batches")
    let copy = try JournalReader(directory: target)
    #expect(try copy.id == source.id)
    #expect(try JournalFixtures.readAll(target) == records)
    let verification = try copy.verify()
    #expect(verification.isSound && verification.batches == sourceReport.batches, "\(verification)")
    #expect(report.bytes == Int64(Files.list(target).reduce(0) { $0 + Files.size(target + "/" + $1) }))
    // The copy is a journal a writer opens and appends to.
    let reopened = try Journal(directory: target, options: JournalFixtures.options())
    #expect(reopened.recovery.isClean && reopened.lastSequence == UInt64(records.count))
    try reopened.appendAndWait([NewRecord(timestamp: 1, payload: [1])])
    reopened.close()
  }

  @Test func anEmptyJournalBacksUpToAnEmptyOne() async throws {
    let dir = TemporaryDirectory("backup-empty")
    try Journal(directory: dir.path, options: JournalFixtures.options()).close()
    let target = TemporaryDirectory("backup-empty-target")
    let report = try JournalReader(directory: dir.path).backUp(to: target.path)
    #expect(report == BackupReport(lastSequence: 0, frames: 0, bytes: report.bytes) && report.records == 0)
    #expect(try JournalReader(directory: target.path).id == JournalReader(directory: dir.path).id)
    #expect(try JournalFixtures.readAll(target.path).isEmpty)
  }

  /// A writer appends and seals segment after segment while the backup reads: the copy holds the
  /// journal's first records, whole frames, through some point, none missing, none else.
  @Test func aBackupOfAJournalBeingWrittenIsAPrefixOfIt() async throws {
    for round in 0..<4 {
      let dir = TemporaryDirectory("backup-live")
      let journal = try Journal(directory: dir.path, options: JournalFixtures.options(segmentBytes: 2 << 10))
      // Long enough that the writer appends, and seals segments, while the backup reads it.
      let first = try await JournalFixtures.write(journal, batches: 400, seed: UInt64(round))
      let stop = Atomic<Bool>(false)
      let writer = Task {
        var records = first
        // At most 400 more batches: a writer without end, faster than the backup on a loaded
        // machine, would grow the journal (and this array) until the backup ended.
        for _ in 0..<80 where !stop.load(ordering: .relaxed) {
          records = try await JournalFixtures.write(
            journal, batches: 5, seed: UInt64(records.count), after: records)
        }
        return records
      }
      let target = TemporaryDirectory("backup-live-target")
      let report = try await onOwnThread { try JournalReader(directory: dir.path).backUp(to: target.path) }
      stop.store(true, ordering: .relaxed)
      let written = try await writer.value
      journal.close()
      let copied = try JournalFixtures.readAll(target.path)
      #expect(copied.count >= first.count && copied.count == Int(report.records), "round \(round)")
      #expect(copied == Array(written.prefix(copied.count)), "round \(round)")
      #expect(try JournalReader(directory: target.path).verify().isSound, "round \(round)")
    }
  }

  /// Appends a record to `journal` at each read of its segments: a writer that always keeps
  /// ahead of the backup reading them.
  private final class AppendingAtEachRead: ForwardingFileIO, @unchecked Sendable {
    let base: any FileIO = PosixFileIO()
    let source: String
    let journal: Journal
    let appended = Atomic<Int>(0)
    init(source: String, journal: Journal) {
      self.source = source
      self.journal = journal
    }
    func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws
      -> Int
    {
      if path.hasPrefix(source), path.hasSuffix(".lz4"), appended.add(1, ordering: .relaxed).newValue <= 5_000 {
        _ = try journal.appendAndWait([NewRecord(timestamp: 7, payload: Array("later".utf8))])
      }
      return try base.pread(fd, into: buffer, at: offset, path: path)
    }
  }

  /// Records appended after the backup began are left out, even when they come faster than the
  /// backup reads: before, it read on for as long as the writer kept ahead of it.
  @Test func aBackupEndsWhereTheJournalStoodWhenItBegan() async throws {
    let dir = TemporaryDirectory("backup-outrun")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(segmentBytes: 2 << 10))
    let records = try await JournalFixtures.write(journal, batches: 50, seed: 13)
    let io = AppendingAtEachRead(source: dir.path, journal: journal)
    let target = TemporaryDirectory("backup-outrun-target")
    let report = try JournalReader(directory: dir.path, io: io).backUp(to: target.path)
    journal.close()
    // Finding the end reads the last segment, so a few appends land before the copy's end is
    // known: it stands at or after what was written before, and well before the journal's end.
    let written = try JournalFixtures.readAll(dir.path)
    #expect(io.appended.load(ordering: .relaxed) > 0)
    #expect(report.lastSequence >= UInt64(records.count) && report.lastSequence < UInt64(written.count), "\(report)")
    #expect(try JournalFixtures.readAll(target.path) == Array(written.prefix(Int(report.lastSequence))))
  }

  @Test func aDestinationThatHoldsAnythingIsRefusedAndLeftAlone() async throws {
    let dir = TemporaryDirectory("backup-refused")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    _ = try await JournalFixtures.write(journal, batches: 5, seed: 9)
    journal.close()
    let reader = try JournalReader(directory: dir.path)
    let target = TemporaryDirectory("backup-refused-target")
    #expect(FileManager.default.createFile(atPath: target.appending("notes.txt"), contents: Data("mine".utf8)))
    let error = journalError { _ = try reader.backUp(to: target.path) }
    #expect(error?.code == .invalidArgument && error?.message.contains("new or empty directory") == true)
    #expect(error?.message.hasPrefix("it holds 1 file: ") == true, "\(String(describing: error))")
    #expect(Files.list(target.path) == ["notes.txt"])
    let file = target.appending("notes.txt")
    let onFile = journalError { _ = try reader.backUp(to: file) }
    #expect(onFile?.code == .invalidArgument)
    #expect(onFile?.message.hasPrefix("it is a file: ") == true, "\(String(describing: onFile))")
    #expect(try Files.read(file) == Array("mine".utf8))
    // A symbolic link, even to an empty directory, is refused saying so (the refusal gave no reason).
    let empty = TemporaryDirectory("backup-refused-empty")
    let emptyLink = target.appending("empty-link")
    try FileManager.default.createSymbolicLink(atPath: emptyLink, withDestinationPath: empty.path)
    let onLink = journalError { _ = try reader.backUp(to: emptyLink) }
    #expect(onLink?.code == .invalidArgument)
    #expect(onLink?.message.hasPrefix("it is a symbolic link: ") == true, "\(String(describing: onLink))")
    #expect(Files.list(empty.path).isEmpty)
    // Inside the journal's own directory, however it is spelled: it would be lost with the
    // journal, and leave a folder among its files.
    let journalFiles = Files.list(dir.path)
    let link = target.appending("link")
    try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: dir.path)
    let name = URL(fileURLWithPath: dir.path).lastPathComponent
    for inside in [dir.appending("copy"), dir.path + "/./../" + name + "/copy/", link + "/copy"] {
      let refused = journalError { _ = try reader.backUp(to: inside) }
      #expect(refused?.code == .invalidArgument && refused?.message.contains("inside the journal") == true, "\(inside)")
    }
    #expect(Files.list(dir.path) == journalFiles)
  }

  /// Damage in the journal fails the backup, located, and leaves no partial copy behind, in a
  /// directory the backup made or in an empty one it was given.
  @Test(arguments: [false, true]) func damageFailsTheBackupAndLeavesNoCopy(givenEmptyDirectory: Bool) async throws {
    let dir = TemporaryDirectory("backup-damage")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(segmentBytes: 4 << 10))
    _ = try await JournalFixtures.write(journal, batches: 100, seed: 11)
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 2)
    try Files.flipMiddleByte(of: dir.appending(segments[1]), with: 0x40)

    let parent = TemporaryDirectory("backup-damage-target")
    let target = givenEmptyDirectory ? parent.path : parent.appending("copy")
    let error = journalError { _ = try JournalReader(directory: dir.path).backUp(to: target) }
    #expect(error?.code == .corrupt && error?.file == segments[1], "\(String(describing: error))")
    #expect(FileManager.default.fileExists(atPath: target) == givenEmptyDirectory)
    if givenEmptyDirectory { #expect(Files.list(target).isEmpty) }
  }

  /// A new DEST whose parent directory does not exist: the copy's hidden directory could not be
  /// made beside it, and the error named that directory as "journal". It is refused as DEST now,
  /// naming its parent, and nothing is made.
  @Test func aDestinationWithoutAParentIsRefused() async throws {
    let dir = TemporaryDirectory("backup-no-parent")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    _ = try await JournalFixtures.write(journal, batches: 5, seed: 18)
    journal.close()
    let parent = TemporaryDirectory("backup-no-parent-target")
    let target = parent.appending("nope/copy")
    let error = journalError { _ = try JournalReader(directory: dir.path).backUp(to: target) }
    #expect(error?.code == .invalidArgument && error?.directory == target, "\(String(describing: error))")
    #expect(error?.message.contains("its parent directory \(parent.appending("nope")) does not exist") == true)
    #expect(Files.list(parent.path).isEmpty)
  }

  /// A backup cut off part way (Ctrl-C, a timeout, the OOM killer, a power loss) left the copy
  /// made so far in DEST, with the journal's manifest and id: `verify` called it sound, a prefix
  /// passing for the backup. At every sync and rename the backup makes (where a kill leaves what
  /// is on disk), DEST is now no journal at all, or the whole copy: the copy is made in a hidden
  /// directory and becomes DEST only once verified (the manifest last into an empty DEST).
  @Test(arguments: [false, true])
  func destinationIsAJournalOnlyOnceTheCopyIsWhole(givenEmptyDirectory: Bool) async throws {
    let dir = TemporaryDirectory("backup-kill-source")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(segmentBytes: 4 << 10))
    let records = try await JournalFixtures.write(journal, batches: 150, seed: 17)
    journal.close()
    let parent = TemporaryDirectory("backup-kill-target")
    let target = givenEmptyDirectory ? parent.path : parent.appending("copy")
    let io = KillPointFileIO {
      guard FileManager.default.fileExists(atPath: target + "/" + Layout.manifestName) else { return "no journal" }
      let report = try? JournalReader(directory: target).verify()
      return report.map { "\($0.isSound ? "sound" : "damaged") through \($0.lastSequence)" } ?? "unreadable"
    }
    let report = try JournalReader(directory: dir.path, io: io).backUp(to: target)
    let last = UInt64(records.count)
    #expect(report.lastSequence == last)
    let seen = io.seen
    #expect(seen.count > 5, "\(seen)")
    #expect(
      seen.allSatisfy { $0 == "no journal" || $0 == "sound through \(last)" }, "DEST as a kill would leave it: \(seen)")
    #expect(try JournalFixtures.readAll(target) == records)
    // Nothing else is left: no hidden directory beside DEST or in it.
    #expect(Files.list(parent.path) == (givenEmptyDirectory ? Files.list(target) : ["copy"]))
    #expect(!Files.list(target).contains { $0.hasPrefix(".") }, "\(Files.list(target))")
  }
}

extension BackupTests {
  /// Into an empty DEST, the copy's files are moved in with the manifest last: nothing orders two
  /// renames on their way to the disk, so DEST is synced between the others and the manifest's,
  /// and a power loss cannot leave the manifest beside only some of the segments.
  @Test func theManifestMovesIntoAnEmptyDestinationOnceTheOtherNamesAreDurable() async throws {
    let dir = TemporaryDirectory("backup-order-source")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(segmentBytes: 4 << 10))
    _ = try await JournalFixtures.write(journal, batches: 60, seed: 19)
    journal.close()
    let target = TemporaryDirectory("backup-order-target")
    let io = SyncRecordingFileIO()
    _ = try JournalReader(directory: dir.path, io: io).backUp(to: target.path)
    let events = io.events
    let manifest = try #require(events.firstIndex(of: "rename " + target.appending(Layout.manifestName)))
    let others = events.indices.filter { events[$0].hasPrefix("rename " + target.path + "/") && $0 != manifest }
    try #require(others.count > 2, "\(events)")
    let sync = try #require(events.lastIndex(of: "sync " + target.path), "\(events)")
    let synced = try #require(events[..<manifest].lastIndex(of: "sync " + target.path), "\(events)")
    #expect(others.allSatisfy { $0 < synced } && synced < manifest && manifest < sync, "\(events)")
  }
}

/// Runs `state` before every sync and rename, where a process killed, or a machine stopped, leaves
/// the files as they are, and keeps what it says.
private final class KillPointFileIO: ForwardingFileIO, @unchecked Sendable {
  let base: any FileIO = PosixFileIO()
  private let state: @Sendable () -> String
  private let noted = Locked<[String]>([])

  init(state: @escaping @Sendable () -> String) { self.state = state }

  var seen: [String] { noted.withLock { $0 } }

  private func look() { noted.withLock { $0.append(state()) } }

  func sync(_ fd: Int32, metadata: Bool, path: String) throws {
    look()
    try base.sync(fd, metadata: metadata, path: path)
  }

  func rename(_ from: String, to: String) throws {
    look()
    try base.rename(from, to: to)
  }
}
