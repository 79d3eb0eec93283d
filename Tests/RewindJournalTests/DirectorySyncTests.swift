import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// A new, renamed or removed name in a journal is durable (its directory synced) before anything
/// relies on it: a new segment before its first record is acknowledged (a compacted segment and a
/// replaced index: `IndexDurabilityTests`), a quarantined copy before its source is cut. Otherwise a
/// power loss can undo the name but not what followed it: acknowledged records gone with their
/// segment, an old index naming what moved, a tail neither in quarantine nor in its segment.
@Suite struct DirectorySyncTests {
  /// The renames in `events` not followed at once by the syncs of the directories they changed:
  /// the destination's directory and, for a move into `quarantine/`, the journal's too.
  static func unsyncedRenames(_ events: [String], journal: String) -> [String] {
    var unsynced: [String] = []
    for (position, event) in events.enumerated() where event.hasPrefix("rename ") {
      let destination = event.dropFirst("rename ".count)
      let folder = String(destination[..<destination.lastIndex(of: "/")!])
      let expected = ["sync " + folder] + (folder == journal ? [] : ["sync " + journal])
      if Array(events.dropFirst(position + 1).prefix(expected.count)) != expected { unsynced.append(event) }
    }
    return unsynced
  }

  /// The directories made in `events` whose parent is not synced at once after.
  static func unsyncedDirectories(_ events: [String]) -> [String] {
    events.indices.filter { events[$0].hasPrefix("mkdir ") }.compactMap { position in
      let made = events[position].dropFirst("mkdir ".count)
      let parent = String(made[..<made.lastIndex(of: "/")!])
      return events.dropFirst(position + 1).first == "sync " + parent ? nil : events[position]
    }
  }

  @Test func aJournalItMakesIsDurablyNamedInItsParent() throws {
    // Syncing the journal's directory makes its entries durable, not its own name: a power loss
    // could otherwise take the whole new journal, acknowledged records and all.
    let parent = TemporaryDirectory("dirsync-made")
    let path = parent.appending("journal")
    let io = SyncRecordingFileIO()
    var options = JournalFixtures.options(.always)
    options.io = io
    try Journal(directory: path, options: options).close()
    let events = io.events
    #expect(Array(events.prefix(2)) == ["mkdir " + path, "sync " + parent.path], "\(events)")
    #expect(Self.unsyncedDirectories(events).isEmpty, "\(events)")
    // Opened again, the directory is there: nothing is made or synced for it.
    let again = SyncRecordingFileIO()
    options.io = again
    try Journal(directory: path, options: options).close()
    #expect(!again.events.contains { $0.hasPrefix("mkdir ") || $0 == "sync " + parent.path }, "\(again.events)")
  }

  @Test func aJournalWhoseParentCannotBeSyncedIsNotLeftHalfMade() throws {
    // The parent's sync fails: the new directory is removed again, so that the next opening
    // makes it (and syncs the parent) rather than find it and take it as made.
    let parent = TemporaryDirectory("dirsync-parent-fails")
    let path = parent.appending("journal")
    let faults = FaultInjectingFileIO()
    faults.arm(.syncError(EIO), pathContains: parent.path)
    var options = JournalFixtures.options(.always)
    options.io = faults
    let error = journalError { _ = try Journal(directory: path, options: options) }
    #expect(faults.struck == 1)
    #expect(
      error?.description.contains("fsync of the parent directory \(parent.path) for \(path)") == true,
      "\(String(describing: error))")
    #expect(!FileManager.default.fileExists(atPath: path), "\(Files.list(parent.path))")
    let io = SyncRecordingFileIO()
    options.io = io
    try Journal(directory: path, options: options).close()
    #expect(Array(io.events.prefix(2)) == ["mkdir " + path, "sync " + parent.path], "\(io.events)")
  }

  @Test func aNewJournalSyncsItsDirectoryAfterNamingTheManifestAndTheFirstSegment() throws {
    let dir = TemporaryDirectory("dirsync-new")
    let io = SyncRecordingFileIO()
    var options = JournalFixtures.options()
    options.io = io
    try Journal(directory: dir.path, options: options).close()
    let events = io.events
    #expect(events.contains("rename " + dir.appending(Layout.manifestName)), "\(events)")
    #expect(events.contains("rename " + dir.appending(Layout.segmentName(firstSequence: 1))), "\(events)")
    #expect(Self.unsyncedRenames(events, journal: dir.path).isEmpty, "\(events)")
  }

  @Test func aNewSegmentIsDurablyNamedBeforeItsFirstRecordIsAcknowledged() async throws {
    let dir = TemporaryDirectory("dirsync-roll")
    let io = SyncRecordingFileIO()
    var options = JournalFixtures.options(.always, segmentBytes: 8 << 10, frameBytes: 1 << 10)
    options.io = io
    let journal = try Journal(directory: dir.path, options: options)
    var random = SeededGenerator(seed: 71)
    for timestamp in 1...150 {
      let payload = random.eventLikePayload(Int.random(in: 20...80, using: &random))
      let range = try await journal.append([NewRecord(timestamp: Int64(timestamp), payload: payload)])
      io.note("ack \(range.upperBound)")
    }
    journal.close()
    let events = io.events
    let rolled = JournalFixtures.segments(dir.path).dropFirst()
    try #require(rolled.count >= 2, "\(JournalFixtures.segments(dir.path))")
    for name in rolled {
      let first = try #require(Layout.firstSequence(ofSegmentNamed: name))
      let renamed = try #require(events.firstIndex(of: "rename " + dir.appending(name)), "\(events)")
      let acknowledged = try #require(
        events.firstIndex { $0.hasPrefix("ack ") && UInt64($0.dropFirst(4))! >= first }, "\(events)")
      let synced = try #require(
        events[renamed...].firstIndex(of: "sync " + dir.path), "\(name) is never made durable: \(events)")
      #expect(synced < acknowledged, "\(name): \(events[renamed...acknowledged])")
    }
    #expect(Self.unsyncedRenames(events, journal: dir.path).isEmpty, "\(events)")
  }

  @Test func repairMakesTheQuarantinedCopiesDurableBeforeItCutsOrRemoves() async throws {
    // Damage in a sealed segment: its tail is copied aside (moveTail), every later segment
    // moved whole (moveFile), and the index removed.
    let dir = TemporaryDirectory("dirsync-repair")
    let journal = try Journal(
      directory: dir.path, options: JournalFixtures.options(segmentBytes: 8 << 10, frameBytes: 1 << 10))
    _ = try await JournalFixtures.write(journal, batches: 300, seed: 74)
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count >= 3, "\(segments)")
    let damaged = dir.appending(segments[segments.count - 3])
    let frames = try JournalFixtures.frames(of: try Files.read(damaged))
    try JournalFixtures.flip(damaged, at: frames[3].offset + Layout.batchHeaderSize + 3)
    let io = SyncRecordingFileIO()
    var options = JournalOptions()
    options.io = io
    let report = try Journal.repair(directory: dir.path, options: options)
    try #require(report.moved.count == 3, "\(report)")
    let events = io.events
    let quarantine = dir.appending(Layout.quarantineName)

    // The tail: copied under a name of its own and synced, renamed, both directories synced,
    // and only then cut.
    let tail = dir.appending(report.moved[0].movedTo)
    let copied = try #require(events.firstIndex(of: "sync " + tail + ".partial"), "\(events)")
    #expect(
      Array(events[copied...].prefix(6))
        == [
          "sync " + tail + ".partial", "rename " + tail, "sync " + quarantine, "sync " + dir.path,
          "truncate " + damaged, "sync " + damaged,
        ],
      "\(events)")
    // quarantine/, made for them, is durably named in the journal's directory.
    #expect(events.contains("mkdir " + quarantine), "\(events)")
    #expect(Self.unsyncedDirectories(events).isEmpty, "\(events)")
    // The whole segments: each rename followed by the syncs of both directories.
    for moved in report.moved.dropFirst() {
      #expect(events.contains("rename " + dir.appending(moved.movedTo)), "\(events)")
    }
    #expect(Self.unsyncedRenames(events, journal: dir.path).isEmpty, "\(events)")
    // The index last, its removal made durable.
    #expect(Array(events.suffix(2)) == ["remove " + dir.appending(Layout.indexName), "sync " + dir.path], "\(events)")
  }
}
