import Foundation
import RewindTestSupport
import Synchronization
import Testing

@testable import RewindJournal

/// Compaction of sealed segments: every record reads back unchanged, the index follows, failures
/// and damage leave the original, and readers and followers reading meanwhile see no damage.
@Suite struct CompactionTests {
  /// Small segments (8 KiB), small frames and a dense index: a few hundred batches make ~10 segments.
  static func options(_ io: (any FileIO)? = nil) -> JournalOptions {
    var options = JournalFixtures.options(.none, segmentBytes: 8 << 10, frameBytes: 1 << 10, indexBytes: 512)
    if let io { options.io = io }
    return options
  }

  static func segmentBytes(_ directory: String) throws -> [String: [UInt8]] {
    var files: [String: [UInt8]] = [:]
    for name in JournalFixtures.segments(directory) { files[name] = try Files.read(directory + "/" + name) }
    return files
  }

  static func header(_ path: String) throws -> SegmentHeader {
    try SegmentHeader.decode(Array(try Files.read(path).prefix(Layout.segmentHeaderSize))).get()
  }

  /// Checks every index entry points at a batch header with its sequence number; returns the entries.
  @discardableResult
  static func checkIndex(_ directory: String) throws -> [IndexEntry] {
    let reader = try JournalReader(directory: directory)
    let layout = try JournalDirectory(path: directory, io: PosixFileIO())
    let index = reader.loadIndex(layout)
    let bytes = try Files.read(directory + "/" + Layout.indexName)
    #expect(bytes.count == SparseIndex.headerSize + index.entries.count * IndexEntry.size, "index wholly valid")
    for entry in index.entries {
      let segment = try Files.read(directory + "/" + Layout.segmentName(firstSequence: entry.segment))
      let header = try BatchHeader.decode(segment[Int(entry.offset)...], limits: JournalLimits()).get()
      #expect(header.firstSequence == entry.firstSequence)
    }
    // Every segment has an entry for its first frame.
    for first in layout.segments.dropLast() {
      #expect(index.entries.contains { $0.segment == first && $0.offset == Int64(Layout.segmentHeaderSize) })
    }
    return index.entries
  }

  @Test func everyRecordReadsBackUnchangedAndSegmentsShrink() async throws {
    let dir = TemporaryDirectory("compact")
    let journal = try Journal(directory: dir.path, options: Self.options())
    let expected = try await JournalFixtures.write(journal, batches: 400, maxPayload: 60, seed: 11)
    let before = try Self.segmentBytes(dir.path)
    #expect(before.count >= 5)

    let report = try journal.compactSealedSegments()
    let names = JournalFixtures.segments(dir.path)
    #expect(report.compacted.map(\.segment) == Array(names.dropLast()))
    #expect(report.alreadyCompacted.isEmpty)
    #expect(report.records == Layout.firstSequence(ofSegmentNamed: names.last!)! - 1)
    for done in report.compacted {
      let path = dir.appending(done.segment)
      #expect(Int64(Files.size(path)) == done.bytesAfter)
      #expect(Int64(before[done.segment]!.count) == done.bytesBefore)
      #expect(done.bytesAfter < done.bytesBefore, "\(done)")
      #expect(done.framesAfter < done.framesBefore, "\(done)")
      let header = try Self.header(path)
      let old = try SegmentHeader.decode(Array(before[done.segment]!.prefix(Layout.segmentHeaderSize))).get()
      #expect(header.isCompacted && !old.isCompacted)
      #expect(header.journalID == old.journalID && header.firstSequence == old.firstSequence)
    }
    // The active segment is never touched.
    #expect(try Files.read(dir.appending(names.last!)) == before[names.last!])

    #expect(try JournalFixtures.readAll(dir.path) == expected)
    let verification = try JournalReader(directory: dir.path).verify()
    #expect(verification.isSound && verification.records == UInt64(expected.count))
    try Self.checkIndex(dir.path)
    for probe in stride(from: 1, through: expected.count, by: 37) {
      #expect(try JournalReader(directory: dir.path).record(UInt64(probe)) == expected[probe - 1])
      let since = try JournalReader(directory: dir.path).records(since: expected[probe - 1].timestamp)
      #expect(try since.next()?.timestamp == expected[probe - 1].timestamp)
    }

    // A second run finds nothing to do; appends go on, and the journal reopens with its index current.
    let again = try journal.compactSealedSegments()
    #expect(again.compacted.isEmpty && again.alreadyCompacted == Array(names.dropLast()))
    let more = try await JournalFixtures.write(journal, batches: 60, maxPayload: 60, seed: 12, after: expected)
    journal.close()
    let reopened = try Journal(directory: dir.path, options: Self.options())
    #expect(reopened.recovery.indexRepairReason == nil && reopened.recovery.isClean)
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path) == more)
    // The standard tool checks and decodes compacted segments as any other (and the active one,
    // now that closing cut its preallocated zeros).
    try await LZ4ToolTests.checkSegments(dir.path, records: more)
  }

  /// A compacted segment that `repair` cuts into (damage in one of its merged frames) and leaves
  /// last: the next writer appends ordinary frames to it, everything kept reads back and verifies,
  /// and `lz4` decodes it; once it is sealed again, compaction leaves it as it is (its header
  /// says compacted), so the frames appended after the repair stay as they were written.
  @Test func aCompactedSegmentThatRepairCutsIntoAndLeavesLastIsAppendedTo() async throws {
    let dir = TemporaryDirectory("compact-repair")
    let options = JournalFixtures.options(.none, segmentBytes: 3 << 20, frameBytes: 64 << 10, indexBytes: 64 << 10)
    let journal = try Journal(directory: dir.path, options: options)
    var random = SeededGenerator(seed: 5)
    var expected: [JournalRecord] = []
    func appendRandom(to journal: Journal) async throws {
      // Random, so that it does not compress: few records fill a segment of several merged frames.
      let payload = (0..<1024).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }
      let timestamp = Int64(expected.count)
      let range = try await journal.append([NewRecord(timestamp: timestamp, payload: payload)])
      expected.append(JournalRecord(sequence: range.lowerBound, timestamp: timestamp, payload: payload))
    }
    while JournalFixtures.segments(dir.path).count < 3 { try await appendRandom(to: journal) }
    let names = JournalFixtures.segments(dir.path)
    #expect(try journal.compactSealedSegments().compacted.map(\.segment) == Array(names.dropLast()))
    journal.close()
    let frames = try JournalFixtures.frames(of: Files.read(dir.appending(names[0])))
    try #require(frames.count >= 3, "merged frames of at most 1 MiB decoded: \(frames.count)")

    let damaged = frames[1]
    try JournalFixtures.flip(dir.appending(names[0]), at: damaged.offset + Layout.batchHeaderSize + 100)
    let repair = try Journal.repair(directory: dir.path)
    #expect(repair.moved.map(\.segment) == names, "\(repair.moved)")
    #expect(repair.moved.first?.offset == Int64(damaged.offset), "\(repair.moved)")
    expected.removeSubrange(Int(damaged.header.firstSequence - 1)...)
    #expect(try Self.header(dir.appending(names[0])).isCompacted)

    let reopened = try Journal(directory: dir.path, options: options)
    #expect(reopened.recovery.isClean, "\(reopened.recovery)")
    #expect(reopened.lastSequence == UInt64(expected.count))
    while JournalFixtures.segments(dir.path).count < 2 { try await appendRandom(to: reopened) }
    let again = try reopened.compactSealedSegments()
    #expect(again.compacted.isEmpty && again.alreadyCompacted == [names[0]], "\(again)")
    reopened.close()

    #expect(try JournalFixtures.readAll(dir.path) == expected)
    let verification = try JournalReader(directory: dir.path).verify()
    #expect(verification.isSound && verification.records == UInt64(expected.count), "\(verification)")
    try Self.checkIndex(dir.path)
    try await LZ4ToolTests.checkSegments(dir.path, records: expected)
  }

  @Test func theRewrittenIndexIsTheOneAWriterDerivesFromScratch() async throws {
    let dir = TemporaryDirectory("compact-index")
    let journal = try Journal(directory: dir.path, options: Self.options())
    let expected = try await JournalFixtures.write(journal, batches: 300, maxPayload: 200, seed: 21)
    _ = try journal.compactSealedSegments()
    journal.close()
    let compacted = try Files.read(dir.appending(Layout.indexName))
    try FileManager.default.removeItem(atPath: dir.appending(Layout.indexName))
    let reopened = try Journal(directory: dir.path, options: Self.options())
    #expect(reopened.recovery.indexRepairReason == "missing")
    reopened.close()
    #expect(try Files.read(dir.appending(Layout.indexName)) == compacted)
    #expect(try JournalFixtures.readAll(dir.path) == expected)
  }

  @Test func mergedFramesHoldWholeOriginalFrames() async throws {
    let dir = TemporaryDirectory("compact-whole")
    let journal = try Journal(directory: dir.path, options: Self.options())
    let expected = try await JournalFixtures.write(journal, batches: 300, maxRecords: 5, maxPayload: 100, seed: 31)
    let before = try Self.segmentBytes(dir.path)
    // A small frame target, so each segment becomes several frames.
    let compactor = SegmentCompactor(
      directory: try JournalDirectory(path: dir.path, io: PosixFileIO()), options: Self.options(),
      indexGate: IndexFileGate())
    let report = try compactor.compactSealed(frameContentBytes: 2 << 10)
    #expect(!report.compacted.isEmpty)
    for done in report.compacted {
      let old = try JournalFixtures.frames(of: before[done.segment]!)
      let new = try JournalFixtures.frames(of: try Files.read(dir.appending(done.segment)))
      #expect(new.count > 1 && new.count == done.framesAfter && old.count == done.framesBefore)
      let boundaries = Set(old.map(\.header.firstSequence))
      for frame in new {
        #expect(boundaries.contains(frame.header.firstSequence), "a frame starts inside an original frame")
        let covered = old.filter { frame.header.sequences.contains($0.header.firstSequence) }
        #expect(frame.header.minTimestamp == covered.map(\.header.minTimestamp).min())
        #expect(frame.header.maxTimestamp == covered.map(\.header.maxTimestamp).max())
        #expect(Int(frame.header.contentLength) == covered.reduce(0) { $0 + Int($1.header.contentLength) })
        #expect(Int(frame.header.contentLength) <= 2 << 10 || covered.count == 1)
      }
    }
    compactor.close()
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path) == expected)
  }

  static let faults: [(FaultInjectingFileIO.Fault, String)] = [
    (.writeError(ENOSPC), ".compact.tmp"), (.writeError(EIO), ".compact.tmp"),
    (.shortWrite(bytes: 100, thenErrno: ENOSPC), ".compact.tmp"), (.syncError(EIO), ".compact.tmp"),
    (.renameError(EIO), ""), (.renameError(ENOSPC), ""),
  ]

  @Test(arguments: 0..<faults.count)
  func aFailureLeavesTheOriginalAndALaterRunSucceeds(fault: Int) async throws {
    let (injected, path) = Self.faults[fault]
    let dir = TemporaryDirectory("compact-fault")
    let io = FaultInjectingFileIO()
    let journal = try Journal(directory: dir.path, options: Self.options(io))
    let expected = try await JournalFixtures.write(journal, batches: 200, maxPayload: 60, seed: 41)
    let before = try Self.segmentBytes(dir.path)
    let index = try Files.read(dir.appending(Layout.indexName))

    // The third segment fails: the first two are compacted, the rest left as they are.
    let third = Layout.segmentName(firstSequence: try #require(Self.third(dir.path)))
    io.arm(injected, pathContains: third + path)
    let error = journalError("\(injected)") { _ = try journal.compactSealedSegments() }
    #expect(error?.code == .io, "\(String(describing: error))")
    #expect(io.struck == 1)
    let names = JournalFixtures.segments(dir.path)
    #expect(error?.file?.hasPrefix(names[2]) == true, "\(String(describing: error)) \(error?.file ?? "-")")
    #expect(!Files.list(dir.path).contains { $0.hasSuffix(".tmp") })
    for name in names[2...] { #expect(try Files.read(dir.appending(name)) == before[name], "\(name)") }
    for name in names[..<2] { #expect(try Self.header(dir.appending(name)).isCompacted) }
    #expect(try Files.read(dir.appending(Layout.indexName)) != index)
    #expect(try JournalFixtures.readAll(dir.path) == expected)
    try Self.checkIndex(dir.path)

    let report = try journal.compactSealedSegments()
    #expect(report.alreadyCompacted == Array(names[..<2]) && report.compacted.count == names.count - 3)
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path) == expected)
    #expect(try JournalReader(directory: dir.path).verify().isSound)
  }

  static func third(_ directory: String) -> UInt64? {
    JournalFixtures.segments(directory).dropFirst(2).first.flatMap(Layout.firstSequence(ofSegmentNamed:))
  }

  @Test func aDamagedSegmentIsNotCompactedAndTheErrorLocatesIt() async throws {
    let dir = TemporaryDirectory("compact-damage")
    let journal = try Journal(directory: dir.path, options: Self.options())
    _ = try await JournalFixtures.write(journal, batches: 200, maxPayload: 60, seed: 51)
    let names = JournalFixtures.segments(dir.path)
    let frames = try JournalFixtures.frames(of: try Files.read(dir.appending(names[1])))
    let damaged = frames[frames.count / 2]
    try JournalFixtures.flip(dir.appending(names[1]), at: damaged.offset + Layout.batchHeaderSize + 5)
    let before = try Self.segmentBytes(dir.path)
    let index = try Files.read(dir.appending(Layout.indexName))

    let error = journalError { _ = try journal.compactSealedSegments() }
    #expect(error?.code == .corrupt)
    #expect(error?.file == names[1] && error?.offset == Int64(damaged.offset), "\(String(describing: error))")
    #expect(error?.sequences?.contains(damaged.header.firstSequence) == true)
    // The segment before it was compacted; the damaged one and those after it are untouched.
    #expect(try Self.header(dir.appending(names[0])).isCompacted)
    for name in names[1...] { #expect(try Files.read(dir.appending(name)) == before[name]) }
    #expect(!Files.list(dir.path).contains { $0.hasSuffix(".tmp") })
    #expect(try Files.read(dir.appending(Layout.indexName)) != index)
    journal.close()
  }

  @Test func aFrameWhoseChecksumsHoldButWhoseRecordsDoNotIsRefused() async throws {
    let dir = TemporaryDirectory("compact-framing")
    let journal = try Journal(directory: dir.path, options: Self.options())
    _ = try await JournalFixtures.write(journal, batches: 200, maxPayload: 60, seed: 55)
    journal.close()
    // Re-encode one frame of the second segment with a record stamped outside its header's
    // range, and give it a matching CRC: only the record framing check can tell.
    let names = JournalFixtures.segments(dir.path)
    let bytes = try Files.read(dir.appending(names[1]))
    let frames = try JournalFixtures.frames(of: bytes)
    let victim = frames[frames.count / 2]
    let frameStart = victim.offset + Layout.batchHeaderSize
    var content = try bytes[frameStart..<victim.end].withUnsafeBytes {
      try LZ4FrameDecoder().decompress($0, expectedLength: Int(victim.header.contentLength))
    }
    withUnsafeBytes(of: (victim.header.maxTimestamp + 1).littleEndian) { content.replaceSubrange(8..<16, with: $0) }
    var frame: [UInt8] = []
    _ = try content.withUnsafeBytes { try LZ4FrameEncoder().compress($0, appendingTo: &frame) }
    var header = victim.header
    header.frameLength = UInt32(frame.count)
    header.frameChecksum = CRC32C.checksum(frame)
    var writer = ByteWriter()
    header.encode(into: &writer)
    let damaged = Array(bytes[..<victim.offset]) + writer.bytes + frame + Array(bytes[victim.end...])
    try Files.write(damaged, to: dir.appending(names[1]))

    let reopened = try Journal(directory: dir.path, options: Self.options())
    let error = journalError { _ = try reopened.compactSealedSegments() }
    reopened.close()
    #expect(error?.code == .corrupt)
    #expect(
      error?.message.contains("timestamp outside the batch header's range") == true, "\(String(describing: error))")
    #expect(error?.file == names[1] && error?.offset == Int64(victim.offset))
    #expect(try Files.read(dir.appending(names[1])) == damaged)
    #expect(try Self.header(dir.appending(names[0])).isCompacted)
  }

  /// Flips a bit of every write to a compaction's temporary file: what reaches the disk is not
  /// what was meant, which only reading it back can tell.
  final class CorruptingIO: ForwardingFileIO, @unchecked Sendable {
    let base: any FileIO = PosixFileIO()
    func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws -> Int {
      guard path.hasSuffix(".compact.tmp"), bytes.count > 200 else {
        return try base.pwrite(fd, bytes, at: offset, path: path)
      }
      var copy = [UInt8](bytes)
      copy[copy.count - 100] ^= 0x10
      return try copy.withUnsafeBytes { try base.pwrite(fd, $0, at: offset, path: path) }
    }
  }

  @Test func aCopyThatDoesNotReadBackAsTheOriginalIsNotRenamed() async throws {
    let dir = TemporaryDirectory("compact-readback")
    let journal = try Journal(directory: dir.path, options: Self.options(CorruptingIO()))
    let expected = try await JournalFixtures.write(journal, batches: 200, maxPayload: 60, seed: 57)
    let before = try Self.segmentBytes(dir.path)
    let error = journalError { _ = try journal.compactSealedSegments() }
    journal.close()
    #expect(error?.message.contains("does not read back as the original") == true, "\(String(describing: error))")
    #expect(error?.file == JournalFixtures.segments(dir.path)[0])
    // Unchanged, but for the active segment's preallocated zeros, which closing cut.
    var trimmed = before
    let active = JournalFixtures.segments(dir.path).last!
    trimmed[active] = Array(before[active]!.prefix(JournalFixtures.usedLength(before[active]!)))
    #expect(try Self.segmentBytes(dir.path) == trimmed)
    #expect(!Files.list(dir.path).contains { $0.hasSuffix(".tmp") })
    #expect(try JournalFixtures.readAll(dir.path) == expected)
  }

  @Test func aLeftoverTemporaryFileIsIgnoredByReadersAndReplaced() async throws {
    let dir = TemporaryDirectory("compact-leftover")
    let journal = try Journal(directory: dir.path, options: Self.options())
    let expected = try await JournalFixtures.write(journal, batches: 200, maxPayload: 60, seed: 61)
    journal.close()
    // A crash in the middle of compacting the first segment left half a copy behind.
    let first = JournalFixtures.segments(dir.path)[0]
    try Files.write(Array(try Files.read(dir.appending(first)).prefix(700)), to: dir.appending(first + ".compact.tmp"))
    #expect(try JournalFixtures.readAll(dir.path) == expected)
    #expect(try JournalReader(directory: dir.path).verify().isSound)
    let reopened = try Journal(directory: dir.path, options: Self.options())
    #expect(reopened.recovery.isClean)
    let report = try reopened.compactSealedSegments()
    #expect(report.compacted.first?.segment == first)
    #expect(!Files.list(dir.path).contains { $0.hasSuffix(".tmp") })
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path) == expected)
  }

  @Test func aCrashBetweenTheRenameAndTheIndexLeavesAStaleIndexThatReadersSurvive() async throws {
    let dir = TemporaryDirectory("compact-stale")
    let journal = try Journal(directory: dir.path, options: Self.options())
    let expected = try await JournalFixtures.write(journal, batches: 300, maxPayload: 60, seed: 71)
    let oldIndex = try Files.read(dir.appending(Layout.indexName))
    _ = try journal.compactSealedSegments()
    journal.close()
    // As if the process died after the segments were renamed but before the index was replaced.
    try Files.write(oldIndex, to: dir.appending(Layout.indexName))
    for probe in stride(from: 1, through: expected.count, by: 13) {
      let reader = try JournalReader(directory: dir.path)
      #expect(try JournalFixtures.readAll(reader.records(from: UInt64(probe))) == Array(expected[(probe - 1)...]))
      let since = try reader.records(since: expected[probe - 1].timestamp)
      #expect(try since.next()?.timestamp == expected[probe - 1].timestamp)
    }
    #expect(try JournalReader(directory: dir.path).verify().isSound)
    let reopened = try Journal(directory: dir.path, options: Self.options())
    #expect(reopened.recovery.indexRepairReason != nil && reopened.recovery.isClean)
    reopened.close()
    try Self.checkIndex(dir.path)
    #expect(try JournalFixtures.readAll(dir.path) == expected)
  }

  /// A FileIO that runs `action` once, when a segment is opened after the index was read: a reader
  /// that loaded the index before compaction opens the segment after it.
  final class CompactWhenSegmentOpens: ForwardingFileIO, @unchecked Sendable {
    let base: any FileIO = PosixFileIO()
    let lock = NSLock()
    var indexRead = false
    var action: (() -> Void)?

    init(_ action: @escaping () -> Void) { self.action = action }

    func open(_ path: String, flags: Int32, mode: UInt32) throws -> Int32 {
      lock.lock()
      if path.hasSuffix("/" + Layout.indexName) { indexRead = true }
      let run = indexRead && path.hasSuffix(Layout.segmentSuffix) ? action : nil
      if run != nil { action = nil }
      lock.unlock()
      run?()
      return try base.open(path, flags: flags, mode: mode)
    }
  }

  @Test(arguments: [false, true])
  func aReaderPositionedByTheIndexBeforeCompactionReadsOnAfterIt(bySequence: Bool) async throws {
    let dir = TemporaryDirectory("compact-reader")
    let original = dir.appending("original")
    let journal = try Journal(directory: original, options: Self.options())
    let expected = try await JournalFixtures.write(journal, batches: 300, maxPayload: 60, seed: 81)
    journal.close()
    let entries = try Self.checkIndex(original)
    // Starts that the index places in the middle of a sealed segment (entries that compaction moves).
    let last = try #require(Layout.firstSequence(ofSegmentNamed: JournalFixtures.segments(original).last!))
    let stale = entries.filter { $0.offset > Int64(Layout.segmentHeaderSize) && $0.segment < last }
    #expect(stale.count > 5)
    for (n, entry) in stale.prefix(6).enumerated() {
      let copy = dir.appending("copy\(n)")
      try Files.copyDirectory(original, to: copy)
      let writer = try Journal(directory: copy, options: Self.options())
      let probe = Int(entry.firstSequence) + 1
      let io = CompactWhenSegmentOpens {
        do { _ = try writer.compactSealedSegments() } catch { Issue.record("compaction failed: \(error)") }
      }
      let reader = try JournalReader(directory: copy, io: io)
      let cursor =
        bySequence
        ? try reader.records(from: UInt64(probe)) : try reader.records(since: expected[probe - 1].timestamp)
      #expect(io.action == nil, "compaction ran between the index load and the segment open")
      #expect(try Self.header(copy + "/" + Layout.segmentName(firstSequence: entry.segment)).isCompacted)
      let read = try JournalFixtures.readAll(cursor)
      if bySequence {
        #expect(read == Array(expected[(probe - 1)...]))
      } else {
        #expect(read.first?.timestamp == expected[probe - 1].timestamp && read.last == expected.last)
      }
      writer.close()
    }
  }

  @Test func readersAndAFollowerReadingDuringCompactionSeeEveryRecordOnce() async throws {
    let dir = TemporaryDirectory("compact-follow")
    let journal = try Journal(directory: dir.path, options: Self.options())
    let expected = try await JournalFixtures.write(journal, batches: 300, maxPayload: 60, seed: 91)
    let total = expected.count + 200
    let follower = try FollowTests.follow(dir.path, from: 1, count: total)
    let state = ReaderState()
    let readerThread = Thread {
      while !state.done.load(ordering: .acquiring) {
        do {
          let read = try JournalFixtures.readAll(dir.path)
          if Array(read.prefix(expected.count)) != expected {
            state.failures.withLock { $0.append("a reader saw other records") }
          }
        } catch {
          state.failures.withLock { $0.append("\(error)") }
        }
        state.passes.add(1, ordering: .relaxed)
      }
    }
    readerThread.start()
    defer { state.done.store(true, ordering: .releasing) }  // a test that throws stops it too
    // Appends go on while the sealed segments are rewritten.
    let appender = Task {
      try await JournalFixtures.write(journal, batches: 100, maxRecords: 2, maxPayload: 60, seed: 92, after: expected)
    }
    let report = try journal.compactSealedSegments()
    let all = try await appender.value
    #expect(all.count <= total)
    // Segments sealed by those appends are compacted while the follower reads them.
    _ = try journal.compactSealedSegments()
    // Bounded: a reader that never ends a pass fails the test (below) instead of hanging it.
    for _ in 0..<60_000 where state.passes.load(ordering: .relaxed) == 0 { try await Task.sleep(for: .milliseconds(5)) }
    state.done.store(true, ordering: .releasing)
    #expect(state.passes.load(ordering: .relaxed) > 0, "the reader never ended a pass")
    #expect(!report.compacted.isEmpty)
    #expect(state.failures.withLock { $0 } == [])
    // The follower stops after `total` records; top up to exactly that many.
    var final = all
    if all.count < total {
      for _ in all.count..<total {
        let range = try await journal.append([NewRecord(timestamp: 1, payload: [1, 2, 3])])
        final.append(JournalRecord(sequence: range.lowerBound, timestamp: 1, payload: [1, 2, 3]))
      }
    }
    let seen = try await follower.value
    #expect(seen == final)
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path) == final)
  }

  @Test func theWriterCompactsSealedSegmentsInTheBackgroundAndKeepsItsIndexWhole() async throws {
    let dir = TemporaryDirectory("compact-background")
    var options = Self.options()
    options.compactsSealedSegments = true
    let journal = try Journal(directory: dir.path, options: options)
    let expected = try await JournalFixtures.write(journal, batches: 400, maxPayload: 60, seed: 101)
    let sealed = JournalFixtures.segments(dir.path).count - 1
    // Wait for the background thread (no time is asserted: a lost segment fails the count below).
    for _ in 0..<6000 where journal.backgroundCompaction.compacted.count < sealed {
      if journal.backgroundCompactionFailure != nil { break }
      try await Task.sleep(for: .milliseconds(10))
    }
    #expect(journal.backgroundCompactionFailure == nil)
    #expect(journal.backgroundCompaction.compacted.count == sealed)
    // The writer appended index entries meanwhile: they went to the replaced index file.
    let more = try await JournalFixtures.write(journal, batches: 20, maxPayload: 60, seed: 102, after: expected)
    let explicit = try journal.compactSealedSegments()
    journal.close()
    // The segment those appends sealed is compacted by one or the other; none twice.
    #expect(
      explicit.compacted.count + explicit.alreadyCompacted.count == JournalFixtures.segments(dir.path).count - 1)
    for name in JournalFixtures.segments(dir.path).dropLast() {
      #expect(try Self.header(dir.appending(name)).isCompacted)
    }
    try Self.checkIndex(dir.path)
    #expect(try JournalFixtures.readAll(dir.path) == more)
    let reopened = try Journal(directory: dir.path, options: Self.options())
    #expect(reopened.recovery.indexRepairReason == nil)
    reopened.close()
  }

  @Test func segmentsSealedBeforeOpeningAreCompactedInTheBackgroundAndClosingStopsIt() async throws {
    let dir = TemporaryDirectory("compact-open")
    let journal = try Journal(directory: dir.path, options: Self.options())
    let expected = try await JournalFixtures.write(journal, batches: 300, maxPayload: 60, seed: 111)
    journal.close()
    var options = Self.options()
    options.compactsSealedSegments = true
    let sealed = JournalFixtures.segments(dir.path).count - 1
    let reopened = try Journal(directory: dir.path, options: options)
    for _ in 0..<6000 where reopened.backgroundCompaction.compacted.count < sealed {
      try await Task.sleep(for: .milliseconds(10))
    }
    #expect(reopened.backgroundCompaction.compacted.count == sealed)
    reopened.close()
    #expect(throws: JournalError.self) { _ = try reopened.compactSealedSegments() }
    // Closing right after opening abandons the work cleanly: no temporary file, nothing damaged.
    let again = try Journal(directory: dir.path, options: options)
    again.close()
    #expect(!Files.list(dir.path).contains { $0.hasSuffix(".tmp") })
    #expect(try JournalFixtures.readAll(dir.path) == expected)
  }
}

/// What the reading thread of `readersAndAFollowerReadingDuringCompactionSeeEveryRecordOnce` shares.
final class ReaderState: Sendable {
  let done = Atomic<Bool>(false)
  let failures = Locked<[String]>([])
  let passes = Atomic<Int>(0)
}
