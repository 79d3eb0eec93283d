import Foundation
import Glibc
import RewindTestSupport
import Synchronization
import Testing

@testable import RewindJournal

/// Cases found reviewing preallocation (FORMAT.md, "Preallocated space"): damage before the zeros
/// that no write in progress or crash can leave must stay damage for every reader, and what
/// `verify` says must agree with what opening the journal does.
@Suite struct PreallocationReviewTests {
  /// A closed journal's last segment, then a megabyte of zeros after its last frame: what a
  /// crashed writer's segment looks like.
  static func crashedCopy(seed: UInt64) async throws -> (TornTailTests.Original, path: String, copy: TemporaryDirectory)
  {
    let original = try await TornTailTests.makeOriginal(batches: 6, seed: seed)
    let copy = TemporaryDirectory("review-prealloc")
    let path = copy.appending("j")
    try Files.copyDirectory(original.dir.path, to: path)
    try Files.write(original.bytes + [UInt8](repeating: 0, count: 1 << 20), to: path + "/" + original.segment)
    return (original, path, copy)
  }

  /// Rewrites the batch header at `offset` of `bytes` after `change`, with valid checksums.
  static func rewriteHeader(
    _ bytes: inout [UInt8], at offset: Int, _ change: (inout BatchHeader, inout ArraySlice<UInt8>) -> Void
  ) throws {
    var header = try BatchHeader.decode(bytes[offset...], limits: JournalLimits()).get()
    let frameStart = offset + Layout.batchHeaderSize
    var frame = bytes[frameStart..<(frameStart + Int(header.frameLength))]
    change(&header, &frame)
    header.frameChecksum = CRC32C.checksum(frame)
    bytes.replaceSubrange(frameStart..<(frameStart + frame.count), with: frame)
    bytes.withUnsafeMutableBytes { header.encode(to: $0.baseAddress! + offset) }
  }

  /// A sealed segment that ends in zeros: its last frames turned to zeros (its size unchanged), or
  /// zeros after its last frame. `verify` reports it once, naming the records the zeros stand
  /// for (from the first zero to the next segment's first record), or none when the next
  /// segment follows on. Records gone before intact segments: repair refuses and moves nothing,
  /// as for a sealed segment cut short.
  @Test(arguments: [true, false])
  func zerosEndingASealedSegmentAreReportedAsTheRecordsTheyStandFor(overFrames: Bool) async throws {
    let (dir, _, _) = try await JournalFixtures.smallSegments("review-sealed-zeros", batches: 80, seed: 47)
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count >= 3)
    let path = dir.appending(segments[0])
    var bytes = try Files.read(path)
    let frames = try JournalFixtures.frames(of: bytes)
    try #require(frames.count >= 3)
    let zeros = overFrames ? frames[frames.count - 2].offset : bytes.count
    bytes = Array(bytes[..<zeros]) + [UInt8](repeating: 0, count: overFrames ? bytes.count - zeros : 4096)
    try Files.write(bytes, to: path)
    let next = try #require(Layout.firstSequence(ofSegmentNamed: segments[1]))
    let first = overFrames ? frames[frames.count - 2].header.firstSequence : next

    let report = try JournalReader(directory: dir.path).verify()
    #expect(report.problems.count == 1, "reported once: \(report.problems)")
    let problem = try #require(report.problems.first)
    #expect(problem.file == segments[0] && problem.offset == Int64(zeros), "\(problem)")
    #expect(problem.sequences == (overFrames ? first...(next - 1) : nil), "\(problem)")
    #expect(problem.missingBeforeIntactSegments == overFrames, "\(problem)")
    #expect(problem.message.contains(overFrames ? "which are gone" : "no records are missing"), "\(problem)")
    #expect(report.lastSequence == first - 1)
    if overFrames {
      let refused = journalError { _ = try Journal.repair(directory: dir.path) }
      #expect(
        refused?.code == .sequenceBreak && refused?.sequences == first...(next - 1), "\(String(describing: refused))")
      #expect(try Files.read(path) == bytes && JournalFixtures.segments(dir.path) == segments, "nothing moved")
    } else {
      // Nothing is missing: repair cuts the zeros and keeps every segment (it moved every one
      // after them aside, and the next writer numbered new records over theirs).
      let last = try JournalReader(directory: dir.path).lastSequence()
      let plan = try Journal.repair(directory: dir.path, dryRun: true)
      #expect(plan.moved.isEmpty && plan.damage?.zerosOnly == true, "\(plan)")
      #expect(plan.zerosCut.map(\.segment) == [segments[0]] && plan.zerosCut.first?.length == 4096, "\(plan)")
      #expect(plan.zerosCut.first?.offset == Int64(zeros))
      #expect(plan.lastSequence == last)
      let done = try Journal.repair(directory: dir.path)
      #expect(done.moved.isEmpty, "\(done.moved)")
      #expect(done.zerosCut == plan.zerosCut)
      #expect(done.lastSequence == last)
      #expect(JournalFixtures.segments(dir.path) == segments)
      #expect(try Files.read(path) == Array(bytes[..<zeros]))
      let after = try JournalReader(directory: dir.path).verify()
      #expect(after.isSound, "\(after.problems)")
      #expect(after.lastSequence == last)
    }
  }

  /// Zeros that hold no record ending a sealed segment, and a damaged frame in the last segment
  /// as well: the repair cuts the zeros, then moves from the frame on, keeping the intact
  /// segments between. It moved every segment from the zeros on (the intact ones too, whose
  /// numbers the next writer then reused).
  @Test func zerosAndLaterDamageKeepTheSegmentsBetween() async throws {
    let (dir, _, records) = try await JournalFixtures.smallSegments("review-zeros-and-damage", batches: 80, seed: 49)
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count >= 4)
    let first = dir.appending(segments[0])
    try Files.write(try Files.read(first) + [UInt8](repeating: 0, count: 4096), to: first)
    let lastPath = dir.appending(try #require(segments.last))
    var lastBytes = try Files.read(lastPath)
    let frames = try JournalFixtures.frames(of: lastBytes)
    try #require(frames.count >= 3)
    let damaged = frames[1]
    lastBytes[damaged.offset + Layout.batchHeaderSize + 2] ^= 0xFF
    try Files.write(lastBytes, to: lastPath)
    let before = try JournalReader(directory: dir.path).verify()
    try #require(before.problems.count == 2 && before.problems[0].zerosOnly, "\(before.problems)")

    for dryRun in [true, false] {
      let report = try Journal.repair(directory: dir.path, dryRun: dryRun)
      #expect(report.zerosCut.map(\.segment) == [segments[0]], "dry run \(dryRun): \(report)")
      #expect(report.moved.map(\.segment) == [try #require(segments.last)], "dry run \(dryRun): \(report.moved)")
      #expect(report.moved.first?.offset == Int64(damaged.offset), "dry run \(dryRun): \(report.moved)")
      #expect(report.lastSequence == damaged.header.firstSequence - 1, "dry run \(dryRun): \(report)")
    }
    #expect(JournalFixtures.segments(dir.path) == segments, "every segment stays")
    let after = try JournalReader(directory: dir.path).verify()
    #expect(after.isSound, "\(after.problems)")
    #expect(try JournalFixtures.readAll(dir.path) == Array(records.prefix(Int(damaged.header.firstSequence - 1))))
  }

  /// The last frame of a sealed segment damaged (its header intact): one problem, its records.
  /// `verify` reported a second one, a break before the next segment ("the previous one ends at"
  /// the record before the damaged frame), flagged as records missing before intact segments.
  /// Where the last frame of a sealed segment is damaged.
  enum LastFrameDamage: String, CaseIterable, Sendable {
    /// In the frame, after its header.
    case frame
    /// In the header's checksummed bytes (helper-217, Dec 7: "segment starts at sequence N, but
    /// the previous one ends at N − 2" was reported too).
    case header
    /// The header renumbered, its checksum made to hold (helper-219, Dec 7: the same).
    case renumbered
  }

  @Test(arguments: LastFrameDamage.allCases)
  func aDamagedLastFrameOfASealedSegmentIsOneProblem(damage: LastFrameDamage) async throws {
    let (dir, _, _) = try await JournalFixtures.smallSegments("review-sealed-last-frame", batches: 80, seed: 48)
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count >= 3)
    let path = dir.appending(segments[0])
    var bytes = try Files.read(path)
    let last = try #require(try JournalFixtures.frames(of: bytes).last)
    switch damage {
    case .frame: bytes[bytes.count - 3] ^= 0xFF
    case .header: bytes[last.offset + 30] ^= 0xFF
    case .renumbered: try Self.rewriteHeader(&bytes, at: last.offset) { header, _ in header.firstSequence += 3 }
    }
    try Files.write(bytes, to: path)

    let report = try JournalReader(directory: dir.path).verify()
    #expect(report.problems.count == 1, "\(report.problems)")
    let problem = try #require(report.problems.first)
    #expect(problem.file == segments[0] && problem.offset == Int64(last.offset), "\(problem)")
    #expect(problem.sequences == last.header.sequences, "\(problem)")
    #expect(!report.problems.contains { $0.missingBeforeIntactSegments }, "\(report.problems)")
  }

  @Test func aSequenceBreakBeforeTheZerosIsAProblemForVerifyAsForOpening() async throws {
    // A last frame whose checksums are valid but whose sequence does not follow: no write in
    // progress and no crash leaves that, and opening refuses it; verify must not call it sound.
    let (original, path, copy) = try await Self.crashedCopy(seed: 61)
    let last = original.frames.last!
    var bytes = try Files.read(path + "/" + original.segment)
    try Self.rewriteHeader(&bytes, at: last.offset) { header, _ in header.firstSequence += 5 }
    try Files.write(bytes, to: path + "/" + original.segment)
    defer { withExtendedLifetime(copy) {} }

    let opening = journalError { _ = try Journal(directory: path, options: JournalFixtures.options()) }
    #expect(opening?.code == .sequenceBreak, "\(String(describing: opening))")
    let reading = journalError { _ = try JournalFixtures.readAll(path) }
    #expect(reading?.code == .sequenceBreak, "\(String(describing: reading))")
    let verification = try JournalReader(directory: path).verify()
    #expect(!verification.isSound, "a sequence break is damage, whatever follows it")
    #expect(verification.problems.map(\.offset) == [Int64(last.offset)], "\(verification.problems)")
    #expect(verification.unfinishedTail == nil)
  }

  @Test func anUndecodableFrameBeforeTheZerosIsAProblemForVerifyAsForReaders() async throws {
    // A last frame whose CRC-32C matches its bytes but whose LZ4 content does not decode: written
    // whole, so not a frame in progress; readers fail on it, and opening keeps it as committed.
    let (original, path, copy) = try await Self.crashedCopy(seed: 62)
    let last = original.frames.last!
    var bytes = try Files.read(path + "/" + original.segment)
    try Self.rewriteHeader(&bytes, at: last.offset) { _, frame in
      // No LZ4 frame magic: no decoder takes it, whether or not it checks LZ4's own checksums.
      frame[frame.startIndex] ^= 0x5A
    }
    try Files.write(bytes, to: path + "/" + original.segment)
    defer { withExtendedLifetime(copy) {} }

    let reading = journalError { _ = try JournalFixtures.readAll(path) }
    #expect(reading?.code == .corrupt && reading?.offset == Int64(last.offset), "\(String(describing: reading))")
    let verification = try JournalReader(directory: path).verify()
    #expect(!verification.isSound, "a checksum-valid frame that does not decode is damage")
    #expect(verification.problems.map(\.offset) == [Int64(last.offset)], "\(verification.problems)")
    #expect(verification.unfinishedTail == nil)
    #expect(verification.preallocatedBytes == 1 << 20, "the zeros after it are still preallocated space")
  }
}

extension PreallocationReviewTests {
  /// The file system, running `onListing` once (when armed) as a reader next lists the journal's
  /// directory: what a writer does between two of a reader's system calls.
  final class ListingHook: ForwardingFileIO {
    let base: any FileIO = PosixFileIO()
    private let hook = Mutex<(@Sendable () throws -> Void)?>(nil)

    func arm(_ action: @escaping @Sendable () throws -> Void) { hook.withLock { $0 = action } }

    func contentsOfDirectory(_ path: String) throws -> [String] {
      if let action = hook.withLock({ hook in
        defer { hook = nil }
        return hook
      }) {
        try action()
      }
      return try base.contentsOfDirectory(path)
    }
  }

  @Test func aCursorAtTheZerosReadsOnWhenTheWriterFillsThemExactlyAndRolls() async throws {
    // The writer's frames fill the preallocated space to its last byte, so sealing cuts nothing
    // and the segment keeps its size; between the cursor's look at the zeros and its listing of
    // the directory, the writer wrote those frames and started the next segment. The zeros the
    // cursor saw are gone: it must read on, not report the sealed segment as damaged.
    let original = TemporaryDirectory("review-exact")
    let journal = try Journal(directory: original.path, options: JournalFixtures.options(segmentBytes: 2 << 10))
    let records = try await JournalFixtures.write(journal, batches: 40, seed: 63)
    journal.close()
    let segments = JournalFixtures.segments(original.path)
    try #require(segments.count > 2)
    let sealed = try Files.read(original.appending(segments[0]))
    let frames = try JournalFixtures.frames(of: sealed)
    let filled = frames[frames.count - 3].offset

    let copy = TemporaryDirectory("review-exact-live")
    let path = copy.appending("j")
    try Files.copyDirectory(original.path, to: path)
    for name in segments.dropFirst() + [Layout.indexName] {
      try FileManager.default.removeItem(atPath: path + "/" + name)
    }
    try Files.write(
      Array(sealed[..<filled]) + [UInt8](repeating: 0, count: sealed.count - filled), to: path + "/" + segments[0])

    let io = ListingHook()
    let cursor = try JournalReader(directory: path, io: io).records()
    let before = Int(frames[frames.count - 3].header.firstSequence - 1)
    #expect(try JournalFixtures.readAll(cursor) == Array(records.prefix(before)), "up to the zeros")

    let rest = Array(sealed[filled...])
    let next = original.appending(segments[1])
    let nextCopy = path + "/" + segments[1]
    let segmentPath = path + "/" + segments[0]
    io.arm {
      // In place, as the writer does: the cursor holds the file open.
      let handle = try #require(FileHandle(forUpdatingAtPath: segmentPath))
      try handle.seek(toOffset: UInt64(filled))
      try handle.write(contentsOf: Data(rest))
      try handle.close()
      try FileManager.default.copyItem(atPath: next, toPath: nextCopy)
    }
    let end = Int(Layout.firstSequence(ofSegmentNamed: segments[2])! - 1)
    // "No more for now" is fine while the writer is seen mid-roll; a follower asks again.
    var read = try JournalFixtures.readAll(cursor)
    read += try JournalFixtures.readAll(cursor)
    #expect(read == Array(records[before..<end]), "over the zeros, then the next segment")
  }

  @Test func zerosLeftByAFailedCutAreCutWhenTheSegmentIsSealed() async throws {
    // The zeros' write fails part way (a full disk) and cutting them fails too: whatever reached
    // the file must still go before the segment is sealed, or the sealed segment ends in zeros
    // (damage: opening and reading refuse it).
    let dir = TemporaryDirectory("review-failed-cut")
    let faults = FaultInjectingFileIO()
    var options = PreallocationTests.options(.always, segmentBytes: 16 << 10, chunk: 4 << 10)
    options.io = faults
    let journal = try Journal(directory: dir.path, options: options)
    let small = PreallocationTests.batches(10, seed: 64)
    for batch in small { try await journal.append(batch) }
    let large = PreallocationTests.batches(2, seed: 65, payload: 9000)
    faults.arm(.shortWrite(bytes: 100, thenErrno: ENOSPC))
    faults.arm(.truncateError(EIO))
    try await journal.append(large[0])
    #expect(faults.struck == 2)
    try await journal.append(large[1])  // rolls
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count == 2)
    let sealed = try Files.read(dir.appending(segments[0]))
    #expect(sealed.count == JournalFixtures.usedLength(sealed), "a sealed segment ends at its last frame")
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path) == PreallocationTests.records(small + large))
    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options())
    #expect(reopened.recovery.isClean)
    reopened.close()
  }

  @Test(arguments: [Layout.batchHeaderSize, Layout.batchHeaderSize + 10])
  func aTornFrameWithAWholeHeaderIsNotCountedByLastSequence(cut: Int) async throws {
    // A crash while the last frame was written over preallocated zeros: its header reached the
    // disk, its frame did not. The file is long enough to hold the frame, so only its checksum
    // tells it is torn; opening moves it aside, and no reader may count its records.
    let (original, path, copy) = try await Self.crashedCopy(seed: 66)
    defer { withExtendedLifetime(copy) {} }
    let last = original.frames.last!
    var bytes = try Files.read(path + "/" + original.segment)
    for i in (last.offset + cut)..<last.end { bytes[i] = 0 }
    try Files.write(bytes, to: path + "/" + original.segment)
    let kept = original.records(before: last.offset)

    let reader = try JournalReader(directory: path)
    #expect(try reader.lastSequence() == UInt64(kept.count), "the torn frame's records are not written")
    #expect(try JournalFixtures.readAll(path) == kept)
    let journal = try Journal(directory: path, options: JournalFixtures.options())
    #expect(journal.lastSequence == UInt64(kept.count))
    journal.close()
  }

  /// A live journal's copy whose last segment reads as zeros from its 51st frame on (or, with
  /// `tornAfter`, from just after that frame's batch header): synced, acknowledged frames whose
  /// blocks a disk lost. The index (an entry every KiB) names some of them.
  private static func committedFramesTurnedToZeros(tornAfter: Bool) async throws -> (
    path: String, segment: String, lost: JournalFixtures.Frame, copy: TemporaryDirectory
  ) {
    var options = PreallocationTests.options(.always, segmentBytes: 1 << 20, chunk: 64 << 10)
    options.indexIntervalBytes = 1 << 10
    let batches = PreallocationTests.batches(100, seed: 67)
    let copy = TemporaryDirectory("review-lost-copy")
    let path = try await PreallocationTests.liveCopy("review-lost", options: options, batches: batches, into: copy)
    let segment = try #require(JournalFixtures.segments(path).last)
    var bytes = try Files.read(path + "/" + segment)
    let frames = try JournalFixtures.frames(of: Array(bytes.prefix(JournalFixtures.usedLength(bytes))))
    let lost = frames[50]
    let from = lost.offset + (tornAfter ? Layout.batchHeaderSize : 0)
    for i in from..<bytes.count { bytes[i] = 0 }
    try Files.write(bytes, to: path + "/" + segment)
    return (path, segment, lost, copy)
  }

  @Test(arguments: [false, true])
  func committedFramesTurnedToZerosAreAProblemForVerify(tornAfter: Bool) async throws {
    // Since zeros end the last segment as preallocated space, only the index, which named some
    // of the lost frames, still tells that records were there. Verify must say so, not call the
    // journal sound.
    let (path, segment, lost, copy) = try await Self.committedFramesTurnedToZeros(tornAfter: tornAfter)
    defer { withExtendedLifetime(copy) {} }

    let verification = try JournalReader(directory: path).verify()
    #expect(!verification.isSound, "records the index names are gone")
    #expect(verification.unfinishedTail == nil, "\(String(describing: verification.unfinishedTail))")
    let problem = try #require(verification.problems.first)
    #expect(problem.file == segment && problem.offset == Int64(lost.offset), "\(problem)")
    #expect(problem.sequences?.lowerBound == lost.header.firstSequence, "\(problem)")
    #expect(problem.message.contains("index"), "\(problem)")
  }

  @Test(arguments: [false, true])
  func openingReportsCommittedFramesTurnedToZeros(tornAfter: Bool) async throws {
    // The same loss seen by a writer: it cannot bring the records back, and it numbers the next
    // append from the first of them, but it must say which records are gone, not go on as if
    // the journal had simply ended there.
    let (path, segment, lost, copy) = try await Self.committedFramesTurnedToZeros(tornAfter: tornAfter)
    defer { withExtendedLifetime(copy) {} }
    let index = try JournalReader(directory: path).loadIndex(JournalDirectory(path: path, io: PosixFileIO()))
    let lastNamed = try #require(
      index.entries.last(where: { $0.segment == Layout.firstSequence(ofSegmentNamed: segment) }))
    #expect(lastNamed.offset >= Int64(lost.offset), "the index names a lost batch")

    let journal = try Journal(directory: path, options: JournalFixtures.options())
    defer { journal.close() }
    let missing = try #require(journal.recovery.missingRecords, "\(journal.recovery)")
    #expect(!journal.recovery.isClean)
    #expect(missing.segment == segment && missing.offset == Int64(lost.offset), "\(missing)")
    #expect(missing.sequences == lost.header.firstSequence...lastNamed.firstSequence, "\(missing)")
    #expect(missing.indexedOffset == lastNamed.offset, "\(missing)")
    #expect(journal.lastSequence == lost.header.firstSequence - 1)
    #expect(journal.recovery.movedAside.count == (tornAfter ? 1 : 0), "a torn header moves aside as before")
  }

  @Test(arguments: [false, true])
  func repairOfCommittedFramesTurnedToZerosMovesOnlyWhatIsLeft(tornAfter: Bool) async throws {
    // Of frames turned to zeros nothing is left to set aside: no quarantine file, no moved entry,
    // the damage named. A header left before the zeros is bytes: it moves, with the extent it
    // declares, as opening moves it.
    let (path, segment, lost, copy) = try await Self.committedFramesTurnedToZeros(tornAfter: tornAfter)
    defer { withExtendedLifetime(copy) {} }
    let report = try Journal.repair(directory: path)
    #expect(report.damage?.file == segment && report.damage?.offset == Int64(lost.offset), "\(report)")
    #expect(report.moved.map(\.length) == (tornAfter ? [lost.header.totalLength] : []), "\(report.moved)")
    let quarantined = Files.list(path + "/" + Layout.quarantineName)
    #expect(quarantined.count == (tornAfter ? 1 : 0), "\(quarantined)")
    #expect(Files.size(path + "/" + segment) == lost.offset, "the zeros are cut")
    let journal = try Journal(directory: path, options: JournalFixtures.options())
    defer { journal.close() }
    #expect(journal.recovery.isClean, "\(journal.recovery)")
    #expect(journal.lastSequence == lost.header.firstSequence - 1)
  }
}
