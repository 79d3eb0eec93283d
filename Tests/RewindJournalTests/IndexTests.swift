import Foundation
import RewindTestSupport
import Synchronization
import Testing

@testable import RewindJournal

/// The sparse index is derived data: missing, cut, garbage or stale, it is rebuilt on open and
/// never makes a read wrong.
@Suite struct IndexTests {
  static let options = JournalFixtures.options(segmentBytes: 4 << 10, indexBytes: 512)

  static func makeJournal(batches: Int = 120, seed: UInt64) async throws -> (TemporaryDirectory, [JournalRecord]) {
    let dir = TemporaryDirectory("index")
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: batches, maxRecords: 5, maxPayload: 80, seed: seed)
    journal.close()
    #expect(
      Files.size(dir.appending("index")) > SparseIndex.headerSize + 10 * IndexEntry.size,
      "the index should have many entries")
    return (dir, records)
  }

  /// Reads from many sequence numbers and times and compares with the naive answer.
  static func checkReads(_ directory: String, _ records: [JournalRecord], seed: UInt64, context: String) throws {
    let reader = try JournalReader(directory: directory)
    var random = SeededGenerator(seed: seed)
    #expect(try JournalFixtures.readAll(reader.records()) == records, "\(context)")
    for _ in 0..<40 {
      let start = UInt64.random(in: 1...UInt64(records.count + 1), using: &random)
      #expect(
        try JournalFixtures.readAll(reader.records(from: start)) == Array(records[Int(start - 1)...]),
        "\(context), from \(start), seed \(seed)")
      let pick =
        records[Int.random(in: 0..<records.count, using: &random)].timestamp + Int64.random(in: -1...1, using: &random)
      let naive = records.firstIndex { $0.timestamp >= pick }.map { Array(records[$0...]) } ?? []
      #expect(
        try JournalFixtures.readAll(reader.records(since: pick)) == naive, "\(context), since \(pick), seed \(seed)")
    }
    #expect(try reader.lastSequence() == UInt64(records.count), "\(context)")
  }

  enum Damage: String, CaseIterable, Sendable {
    case deleted, cutMidEntry, garbage, garbageAfterHeader, stale
  }

  static func damage(_ damage: Damage, _ dir: TemporaryDirectory, staleCopy: [UInt8]) throws {
    let path = dir.appending("index")
    let bytes = try Files.read(path)
    var random = SeededGenerator(seed: 71)
    switch damage {
    case .deleted: try FileManager.default.removeItem(atPath: path)
    case .cutMidEntry: try JournalFixtures.truncate(path, at: SparseIndex.headerSize + 5 * IndexEntry.size + 17)
    case .garbage: try Files.write(random.bytes(bytes.count), to: path)
    case .garbageAfterHeader:
      try Files.write(
        Array(bytes.prefix(SparseIndex.headerSize + 3 * IndexEntry.size)) + random.bytes(bytes.count), to: path)
    case .stale: try Files.write(staleCopy, to: path)
    }
  }

  static func expectedReason(_ damage: Damage) -> String {
    switch damage {
    case .deleted: "missing"
    case .cutMidEntry, .garbage, .garbageAfterHeader: "damaged"
    case .stale: "stale"
    }
  }

  /// A journal whose first half's index is kept aside (for the stale case) before the rest is written.
  static func journalWithStaleIndex(seed: UInt64) async throws -> (TemporaryDirectory, [JournalRecord], [UInt8]) {
    let (dir, firstHalf) = try await makeJournal(batches: 60, seed: seed)
    let stale = try Files.read(dir.appending("index"))
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(
      journal, batches: 60, maxRecords: 5, maxPayload: 80, seed: seed + 1, after: firstHalf)
    journal.close()
    #expect(Files.size(dir.appending("index")) > stale.count)
    return (dir, records, stale)
  }

  @Test(arguments: Damage.allCases)
  func aReopenedWriterRebuildsTheIndex(damage: Damage) async throws {
    let (dir, records, stale) = try await Self.journalWithStaleIndex(seed: 72)
    let good = try Files.read(dir.appending("index"))
    try Self.damage(damage, dir, staleCopy: stale)

    // Readers are right with the damaged index, before any writer repairs it.
    try Self.checkReads(dir.path, records, seed: 73, context: "\(damage), before repair")

    let journal = try Journal(directory: dir.path, options: Self.options)
    #expect(journal.recovery.indexRepairReason == Self.expectedReason(damage), "\(damage)")
    #expect(journal.recovery.indexEntriesRebuilt > 0, "\(damage)")
    #expect(journal.recovery.isClean, "the index is not journal data: nothing is moved aside")
    #expect(journal.lastSequence == UInt64(records.count))
    journal.close()
    #expect(try Files.read(dir.appending("index")) == good, "\(damage): the rebuilt index equals the one written live")
    try Self.checkReads(dir.path, records, seed: 74, context: "\(damage), after repair")

    let again = try Journal(directory: dir.path, options: Self.options)
    #expect(again.recovery.indexRepairReason == nil, "\(damage): a rebuilt index is current")
    again.close()
  }

  /// Every entry carries a checksum, and `verify` checks every one: a flipped byte anywhere in an
  /// entry is a note naming its place. Readers stop using the index there (and read on from the
  /// entry before), so `verify` used to note it only when the first entry was hit.
  @Test func verifyNotesAFlippedByteInAnyIndexEntry() async throws {
    let (dir, _) = try await Self.makeJournal(seed: 28)
    let path = dir.appending(Layout.indexName)
    let original = try Files.read(path)
    let entries = (original.count - SparseIndex.headerSize) / IndexEntry.size
    try #require(entries > 4)
    #expect(try JournalReader(directory: dir.path).verify().notes == [])
    // Every byte of an entry in the middle, and one byte of the last entry.
    let middle = SparseIndex.headerSize + entries / 2 * IndexEntry.size
    let last = SparseIndex.headerSize + (entries - 1) * IndexEntry.size
    for byte in Array(middle..<(middle + IndexEntry.size)) + [last + 9] {
      try Files.write(original, to: path)
      try JournalFixtures.flip(path, at: byte)
      let entryStart = byte - (byte - SparseIndex.headerSize) % IndexEntry.size
      let report = try JournalReader(directory: dir.path).verify()
      #expect(report.isSound)
      #expect(
        report.notes.contains { $0.hasPrefix("the index is damaged at byte offset \(entryStart) (") },
        "byte \(byte): \(report.notes)")
    }
  }

  enum WrongEntry: String, CaseIterable, Sendable {
    case timestampColumn, offsetOffAHeader, sequence, nonZeroPad, partialEntryAtTheEnd
  }

  /// An entry whose checksum and order hold but which is wrong went unmentioned by `verify`; a
  /// wrong timestamp column makes reads by time skip records, and no reader or writer notices it.
  @Test(arguments: WrongEntry.allCases)
  func verifyChecksEachEntryAgainstTheBatchItNames(wrong: WrongEntry) async throws {
    let (dir, _) = try await Self.makeJournal(seed: 31)
    let path = dir.appending(Layout.indexName)
    var bytes = try Files.read(path)
    let count = (bytes.count - SparseIndex.headerSize) / IndexEntry.size
    let k = count / 2
    let at = SparseIndex.headerSize + k * IndexEntry.size
    func entry(_ position: Int) throws -> IndexEntry {
      let start = SparseIndex.headerSize + position * IndexEntry.size
      return try #require(IndexEntry.decode(bytes[start..<(start + IndexEntry.size)]))
    }
    var changed = try entry(k)
    let before = try entry(k - 1)
    switch wrong {
    case .timestampColumn:
      try #require(before.maxTimestampBefore < changed.maxTimestampBefore)
      changed.maxTimestampBefore = before.maxTimestampBefore
    case .offsetOffAHeader: changed.offset += 1
    case .sequence: changed.firstSequence -= 1
    case .nonZeroPad, .partialEntryAtTheEnd: break
    }
    try #require(changed.follows(before))
    var writer = ByteWriter()
    changed.encode(into: &writer)
    var encoded = writer.bytes
    if wrong == .nonZeroPad {
      encoded[32..<36] = [0xDE, 0xAD, 0xBE, 0xEF]
      let crc = CRC32C.checksum(encoded[..<36])
      encoded[36..<40] = ArraySlice(withUnsafeBytes(of: crc.littleEndian) { Array($0) })
      try #require(IndexEntry.decode(encoded[...]) == changed)
    }
    bytes[at..<(at + IndexEntry.size)] = encoded[...]
    if wrong == .partialEntryAtTheEnd { bytes += encoded.prefix(17) }
    try Files.write(bytes, to: path)
    let report = try JournalReader(directory: dir.path).verify()
    #expect(report.isSound, "\(report.problems)")
    #expect(report.notes.count == 1, "\(wrong): \(report.notes)")
    let note = report.notes.first ?? ""
    switch wrong {
    case .timestampColumn, .offsetOffAHeader, .sequence:
      #expect(note.hasPrefix("the index's entry \(k + 1) (byte offset \(at)) "), "\(note)")
    case .nonZeroPad: #expect(note.hasPrefix("the index entry at byte offset \(at) has non-zero bytes"), "\(note)")
    case .partialEntryAtTheEnd: #expect(note.hasPrefix("the index ends in 17 bytes"), "\(note)")
    }
  }

  @Test func oneDamagedEntryIsOneNote() async throws {
    // Readers stop using the index at a damaged entry, and verify notes it. It also listed every
    // segment after the last entry before it as one the index names nowhere, though the
    // well-formed entries after the damaged one name them all.
    let (dir, _) = try await Self.makeJournal(seed: 29)
    try #require(JournalFixtures.segments(dir.path).count > 3)
    let path = dir.appending(Layout.indexName)
    var bytes = try Files.read(path)
    let second = SparseIndex.headerSize + IndexEntry.size
    for i in second..<(second + IndexEntry.size) { bytes[i] = 0 }
    try Files.write(bytes, to: path)
    let report = try JournalReader(directory: dir.path).verify()
    #expect(report.isSound)
    #expect(report.unindexed == [], "\(report.unindexed)")
    #expect(report.notes.count == 1, "\(report.notes)")
    #expect(report.notes.first?.hasPrefix("the index is damaged at byte offset \(second) (") == true, "\(report.notes)")
  }

  @Test func anIndexFromAnotherJournalIsIgnored() async throws {
    let (mine, records) = try await Self.makeJournal(seed: 75)
    let (theirs, _) = try await Self.makeJournal(seed: 76)
    try Files.write(Files.read(theirs.appending("index")), to: mine.appending("index"))
    try Self.checkReads(mine.path, records, seed: 77, context: "foreign index")
    let journal = try Journal(directory: mine.path, options: Self.options)
    #expect(journal.recovery.indexRepairReason == "damaged")
    journal.close()
  }

  @Test func anIndexThatPointsAtTheWrongBatchesIsNotBelieved() async throws {
    // Same journal id, different batch boundaries: every entry has a valid checksum, and points
    // into existing segments, but not at the batches it names.
    var options = Self.options
    options.newJournalID = JournalID(bytes: Array(repeating: 7, count: 16))
    let mine = TemporaryDirectory("index-mine")
    let theirs = TemporaryDirectory("index-theirs")
    var records: [JournalRecord] = []
    for (dir, seed) in [(mine, UInt64(78)), (theirs, 79)] {
      let journal = try Journal(directory: dir.path, options: options)
      let written = try await JournalFixtures.write(journal, batches: 120, maxRecords: 5, maxPayload: 80, seed: seed)
      if dir === mine { records = written }
      journal.close()
    }
    // Only their entries that point inside segments of mine: an entry naming a segment mine lacks,
    // or a place past the end of one, would witness lost records (FORMAT.md, "The sparse index").
    let theirIndex = try Files.read(theirs.appending("index"))
    var misleading = Array(theirIndex.prefix(SparseIndex.headerSize))
    for start in stride(from: SparseIndex.headerSize, to: theirIndex.count, by: IndexEntry.size) {
      let bytes = theirIndex[start..<(start + IndexEntry.size)]
      let entry = try #require(IndexEntry.decode(bytes))
      let size = Files.size(mine.appending(Layout.segmentName(firstSequence: entry.segment)))
      if size > 0, entry.offset <= Int64(size - Layout.batchHeaderSize) { misleading += bytes }
    }
    try #require(misleading.count > SparseIndex.headerSize + 4 * IndexEntry.size)
    try Files.write(misleading, to: mine.appending("index"))
    try Self.checkReads(mine.path, records, seed: 80, context: "misleading index")
    let journal = try Journal(directory: mine.path, options: options)
    #expect(journal.recovery.indexRepairReason == "damaged")
    #expect(journal.lastSequence == UInt64(records.count))
    journal.close()
    try Self.checkReads(mine.path, records, seed: 81, context: "misleading index, after repair")
  }

  /// A reader made with `cachingIndex` reads the index file once for all its cursors (a time
  /// machine opens one per seek), and reads what a reader without the cache reads, from anywhere.
  @Test func aCachingReaderLoadsTheIndexOnceAndReadsTheSame() async throws {
    let (dir, records) = try await Self.makeJournal(seed: 82)
    let io = IndexOpenCounter()
    let reader = try JournalReader(directory: dir.path, io: io, cachingIndex: true)
    let plain = try JournalReader(directory: dir.path, io: io, cachingIndex: false, indexSettling: 0)
    #expect(!reader.hasCachedIndex)
    var random = SeededGenerator(seed: 83)
    for _ in 0..<30 {
      let start = UInt64.random(in: 1...UInt64(records.count), using: &random)
      #expect(
        try JournalFixtures.readAll(reader.records(from: start)) == Array(records[Int(start - 1)...]), "from \(start)")
    }
    #expect(io.opens == 1)
    #expect(reader.hasCachedIndex)
    for _ in 0..<3 { _ = try plain.records(from: 5).next() }
    #expect(io.opens == 2, "a reader without `cachingIndex` loads it once too, while no file changes")
    reader.dropCachedIndex()
    _ = try reader.records(from: 5).next()
    #expect(io.opens == 3)
  }

  /// A reader made without `cachingIndex` (as every public one is) keeps the index while the
  /// files keep their stamps, and loads it again at the first cursor after a writer appended:
  /// its cursors read from records written since, as a new reader's do, and cursors made while
  /// nothing changed read the index file once between them.
  @Test func aReaderLoadsTheIndexAgainOnceTheJournalChanged() async throws {
    let dir = TemporaryDirectory("index-live")
    var records: [JournalRecord] = []
    let io = IndexOpenCounter()
    var reader: JournalReader?
    var random = SeededGenerator(seed: 87)
    for round in 0..<4 {
      let journal = try Journal(directory: dir.path, options: Self.options)
      // Then one batch a round: most rounds add no segment, so only the stamps tell the change.
      records = try await JournalFixtures.write(
        journal, batches: round == 0 ? 30 : 1, maxRecords: 5, maxPayload: 80, seed: 88 + UInt64(round),
        after: records)
      journal.close()
      let opens = io.opens
      if reader == nil {
        reader = try JournalReader(directory: dir.path, io: io, cachingIndex: false, indexSettling: 0)
      }
      let reader = try #require(reader)
      // From a record the round's appends wrote: loaded again, with the entries naming it.
      let start = records.last!.sequence
      #expect(try JournalFixtures.readAll(reader.records(from: start)) == [records.last!], "round \(round)")
      #expect(io.opens == opens + 1, "round \(round): loaded again after the appends")
      for _ in 0..<10 {
        let start = UInt64.random(in: 1...UInt64(records.count), using: &random)
        #expect(
          try JournalFixtures.readAll(reader.records(from: start)) == Array(records[Int(start - 1)...]),
          "round \(round), from \(start)")
      }
      #expect(io.opens == opens + 1, "round \(round): not loaded again while nothing changed")
    }
  }

  /// A reader that kept the index reports a loss among records indexed after it loaded it (the
  /// last segment cut short under a batch only the newer entries name), as a new reader does: a
  /// reader keeping the index by the segments' names alone would return a shorter journal.
  @Test func aReaderReportsALossAmongRecordsIndexedAfterItsLoad() async throws {
    let dir = TemporaryDirectory("index-later-loss")
    let options = JournalFixtures.options(segmentBytes: 1 << 20, indexBytes: 512)
    var journal = try Journal(directory: dir.path, options: options)
    var records = try await JournalFixtures.write(journal, batches: 40, maxRecords: 5, maxPayload: 80, seed: 89)
    journal.close()
    let reader = try JournalReader(directory: dir.path, io: PosixFileIO(), cachingIndex: false, indexSettling: 0)
    #expect(try JournalFixtures.readAll(reader.records(from: 1)) == records)
    let loadedEntries = Self.entries(dir)
    journal = try Journal(directory: dir.path, options: options)
    records = try await JournalFixtures.write(
      journal, batches: 40, maxRecords: 5, maxPayload: 80, seed: 90, after: records)
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count == 1, "\(segments)")
    // Cut inside the last batch the index names, which only entries written after the load name.
    let newest = try #require(Self.entries(dir).last)
    try #require(!loadedEntries.contains(newest))
    let bytes = try Files.read(dir.appending(segments[0]))
    try Files.write(
      Array(bytes.prefix(Int(newest.offset) + Layout.batchHeaderSize / 2)), to: dir.appending(segments[0]))
    for (name, after) in [
      ("the reader that kept the index", reader), ("a new reader", try JournalReader(directory: dir.path)),
    ] {
      let error = #expect(throws: JournalError.self, "\(name)") {
        _ = try JournalFixtures.readAll(after.records(from: 1))
      }
      #expect(error?.code == .sequenceBreak, "\(name): \(String(describing: error))")
    }
  }

  /// A load that could not read the index file is used by its cursor alone: the next cursor
  /// loads again (a short index kept would hide the losses the rest of it witnesses).
  @Test func anIndexThatCouldNotBeReadIsNotKept() async throws {
    let (dir, records) = try await Self.makeJournal(seed: 92)
    let io = IndexOpenCounter(failingFirstOpen: true)
    let reader = try JournalReader(directory: dir.path, io: io, cachingIndex: false, indexSettling: 0)
    for (round, start) in [UInt64(5), 40, 70, 100].enumerated() {
      #expect(try JournalFixtures.readAll(reader.records(from: start)) == Array(records[Int(start - 1)...]))
      #expect(io.opens == min(round + 1, 2), "cursor \(round): the failed load was not kept, the next one was")
    }
  }

  /// Files that changed within `settledNanoseconds` before a load may change again within the
  /// same tick of a coarse file system clock and keep their stamps: the load is not kept.
  @Test func anIndexOfFilesThatJustChangedIsNotKept() async throws {
    let (dir, records) = try await Self.makeJournal(seed: 93)
    let io = IndexOpenCounter()
    let reader = try JournalReader(directory: dir.path, io: io, cachingIndex: false)
    for round in 1...3 {
      #expect(try JournalFixtures.readAll(reader.records(from: 50)) == Array(records[49...]))
      #expect(io.opens == round, "the journal was written just now: loaded at every cursor")
    }
  }

  /// The well-formed entries of `dir`'s index file.
  static func entries(_ dir: TemporaryDirectory) -> [IndexEntry] {
    guard let bytes = try? Files.read(dir.appending("index")) else { return [] }
    let entries = bytes.dropFirst(SparseIndex.headerSize)
    return stride(from: entries.startIndex, to: entries.endIndex - IndexEntry.size + 1, by: IndexEntry.size)
      .compactMap { IndexEntry.decode(entries[$0..<($0 + IndexEntry.size)]) }
  }

  /// When compaction rewrites the segments a cached index points into, the first cursor that
  /// meets a stale entry finds its place without the index and drops the cache; the next loads
  /// the index again, and every read stays right.
  @Test func aCachingReaderDropsAStaleIndexAfterCompaction() async throws {
    let dir = TemporaryDirectory("index-compact")
    let options = JournalFixtures.options(.none, segmentBytes: 8 << 10, frameBytes: 1 << 10, indexBytes: 512)
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: 300, maxPayload: 60, seed: 84)
    let reader = try JournalReader(directory: dir.path, cachingIndex: true)
    let before = try reader.records(from: 1).next()
    #expect(before == records.first)
    #expect(reader.hasCachedIndex)
    let report = try journal.compactSealedSegments()
    journal.close()
    #expect(report.compacted.count >= 3)
    // A start in the middle of the second compacted segment: its cached entries point at the
    // offsets of the frames before compaction.
    let segments = JournalFixtures.segments(dir.path).compactMap(Layout.firstSequence(ofSegmentNamed:))
    let start = (segments[1] + segments[2]) / 2
    #expect(try JournalFixtures.readAll(reader.records(from: start)) == Array(records[Int(start - 1)...]))
    #expect(!reader.hasCachedIndex, "a stale entry drops the cache")
    var random = SeededGenerator(seed: 85)
    for _ in 0..<20 {
      let start = UInt64.random(in: 1...UInt64(records.count), using: &random)
      #expect(
        try JournalFixtures.readAll(reader.records(from: start)) == Array(records[Int(start - 1)...]), "from \(start)")
    }
    #expect(reader.hasCachedIndex)
  }

  /// Counts how often the index file is opened; with `failingFirstOpen`, the first open fails
  /// with EMFILE (too many open files), as a busy process's may.
  final class IndexOpenCounter: ForwardingFileIO {
    let base: any FileIO = PosixFileIO()
    let failingFirstOpen: Bool
    private let count = Mutex(0)
    var opens: Int { count.withLock { $0 } }

    init(failingFirstOpen: Bool = false) { self.failingFirstOpen = failingFirstOpen }

    func open(_ path: String, flags: Int32, mode: UInt32) throws -> Int32 {
      if path.hasSuffix("/" + Layout.indexName) {
        let first = count.withLock {
          $0 += 1
          return $0 == 1
        }
        if first && failingFirstOpen { throw SystemCallError("open", path: path, errno: EMFILE) }
      }
      return try base.open(path, flags: flags, mode: mode)
    }
  }
}

/// A replaced or removed index is durable before what relies on it goes on: the new file is synced
/// before its rename and the directory after it, and repair syncs the directory after removing
/// it. Otherwise a power loss can bring back an old index that names records gone (or moved),
/// which the next opening reports missing again, now numbered anew, or refuses.
@Suite struct IndexDurabilityTests {
  /// Whether `expected` occurs in `events` in this order (other events between them allowed).
  static func inOrder(_ expected: [String], in events: [String]) -> Bool {
    var rest = expected[...]
    for event in events where event == rest.first { rest = rest.dropFirst() }
    return rest.isEmpty
  }

  /// The syncs and rename of replacing `dir`'s index, in their order.
  static func replacement(_ dir: String) -> [String] {
    ["sync " + dir + "/index.tmp", "rename " + dir + "/index", "sync " + dir]
  }

  @Test func aWriterRewritingTheIndexSyncsItAndTheDirectory() async throws {
    let dir = TemporaryDirectory("index-durable")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    _ = try await JournalFixtures.write(journal, batches: 20, seed: 61)
    journal.close()
    try FileManager.default.removeItem(atPath: dir.appending(Layout.indexName))
    let io = SyncRecordingFileIO()
    var options = JournalFixtures.options()
    options.io = io
    let reopened = try Journal(directory: dir.path, options: options)
    reopened.close()
    #expect(Self.inOrder(Self.replacement(dir.path), in: io.events), "\(io.events)")
    #expect(DirectorySyncTests.unsyncedRenames(io.events, journal: dir.path).isEmpty, "\(io.events)")
  }

  @Test func compactionReplacingTheIndexSyncsItAndTheDirectory() async throws {
    let dir = TemporaryDirectory("index-durable-compact")
    let io = SyncRecordingFileIO()
    let journal = try Journal(directory: dir.path, options: CompactionTests.options(io))
    _ = try await JournalFixtures.write(journal, batches: 200, maxPayload: 60, seed: 62)
    let report = try journal.compactSealedSegments()
    journal.close()
    try #require(report.compacted.count >= 2, "\(report)")
    #expect(Self.inOrder(Self.replacement(dir.path), in: io.events), "\(io.events)")
    // Each compacted segment's rename and each index's, the directory synced after it.
    #expect(DirectorySyncTests.unsyncedRenames(io.events, journal: dir.path).isEmpty, "\(io.events)")
  }

  @Test func repairSyncsTheDirectoryAfterRemovingTheIndex() async throws {
    let dir = TemporaryDirectory("index-durable-repair")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    _ = try await JournalFixtures.write(journal, batches: 20, seed: 63)
    journal.close()
    let segment = dir.appending(Layout.segmentName(firstSequence: 1))
    let frames = try JournalFixtures.frames(of: try Files.read(segment))
    try JournalFixtures.flip(segment, at: frames[5].offset + Layout.batchHeaderSize + 3)
    let io = SyncRecordingFileIO()
    var options = JournalOptions()
    options.io = io
    let report = try Journal.repair(directory: dir.path, options: options)
    #expect(report.moved.count == 1, "\(report)")
    #expect(!Files.list(dir.path).contains(Layout.indexName))
    #expect(
      Array(io.events.suffix(2)) == ["remove " + dir.appending(Layout.indexName), "sync " + dir.path],
      "the index is removed, then the directory synced, last: \(io.events)")
  }
}
