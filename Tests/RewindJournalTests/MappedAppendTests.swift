import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Appends under `none` stored through a shared mapping of the active segment (FORMAT.md,
/// "Writing"): no `pwrite` per append, the same bytes, the same readers and recovery; space
/// allocated (`fallocate`) before any store, `pwrite` where allocating or mapping fails, and the
/// zeros cut when a segment is sealed and when the journal is closed.
@Suite struct MappedAppendTests {
  /// `none`, windows (and allocations) of `window` bytes, segments of `segmentBytes`; the system
  /// calls go through `faults` (which injects nothing unless armed, and counts).
  static func options(
    _ faults: FaultInjectingFileIO, segmentBytes: Int = 64 << 10, window: Int = 4 << 10
  ) -> JournalOptions {
    var options = JournalFixtures.options(.none, segmentBytes: segmentBytes, frameBytes: 1 << 10)
    options.preallocationBytes = window
    options.io = faults
    return options
  }

  static func batches(_ count: Int, seed: UInt64, payload: Int = 300) -> [[NewRecord]] {
    PreallocationTests.batches(count, seed: seed, payload: payload)
  }

  static func records(_ batches: [[NewRecord]], from first: UInt64 = 1) -> [JournalRecord] {
    PreallocationTests.records(batches, from: first)
  }

  /// Checks that a closed journal's segments end at their last frames, that it reopens cleanly,
  /// and that it reads back `expected`.
  static func expectClosed(_ path: String, holds expected: [JournalRecord]) throws {
    for (size, used) in try PreallocationTests.lengths(path) { #expect(size == used, "zeros are cut") }
    for name in JournalFixtures.segments(path) {
      #expect(!(try JournalFixtures.frames(of: try Files.read(path + "/" + name))).isEmpty, "\(name)")
    }
    let reopened = try Journal(directory: path, options: JournalFixtures.options())
    #expect(reopened.recovery.isClean, "\(reopened.recovery.movedAside)")
    #expect(reopened.lastSequence == UInt64(expected.count))
    reopened.close()
    #expect(try JournalFixtures.readAll(path) == expected)
  }

  @Test func appendsAcrossWindowsAndRollsReadBackWithoutAWritePerAppend() async throws {
    let dir = TemporaryDirectory("mapped")
    let faults = FaultInjectingFileIO()
    let journal = try Journal(directory: dir.path, options: Self.options(faults))
    let batches = Self.batches(600, seed: 21)
    for batch in batches.prefix(100) { try await journal.append(batch) }
    #expect(faults.segmentWrites == 0, "no pwrite to a segment: frames go through the mapping")
    let live = try PreallocationTests.lengths(dir.path).last!
    #expect(live.size > live.used, "space is allocated ahead of the frames")
    #expect(live.size % (4 << 10) == 0 || live.size == 64 << 10, "in whole windows, up to the segment's target")
    // Read in this process while the writer still holds its window.
    #expect(try JournalFixtures.readAll(dir.path) == Self.records(Array(batches.prefix(100))))

    for batch in batches.dropFirst(100) { try await journal.append(batch) }
    #expect(faults.segmentWrites == 0)
    let segments = try PreallocationTests.lengths(dir.path)
    #expect(segments.count > 2, "the journal should have rolled")
    for (size, used) in segments.dropLast() { #expect(size == used, "a sealed segment ends at its last frame") }
    #expect(faults.mappingCounts.maps > segments.count, "several windows a segment")
    #expect(try JournalFixtures.readAll(dir.path) == Self.records(batches))
    journal.close()
    try Self.expectClosed(dir.path, holds: Self.records(batches))
  }

  @Test func largeFramesAreWrittenIntoTheAllocatedSpaceAmongMappedOnes() async throws {
    let dir = TemporaryDirectory("mapped-large")
    let faults = FaultInjectingFileIO()
    let journal = try Journal(directory: dir.path, options: Self.options(faults, segmentBytes: 1 << 20))
    // Incompressible payloads of 20 KB (a frame of five 4 KiB windows) among small ones: the
    // large frames go by `pwrite` (a mapping's page faults cost more than the call for them),
    // the small ones before and after them through the mapping.
    let small = Self.batches(30, seed: 22)
    let large = Self.batches(3, seed: 23, payload: 20_000)
    let batches = Array(small[..<10]) + [large[0]] + Array(small[10..<20]) + large[1...] + small[20...]
    for batch in batches { try await journal.append(batch) }
    #expect(faults.segmentWrites == large.count, "one pwrite for each large frame, none for the others")
    let (size, used) = try PreallocationTests.lengths(dir.path).last!
    #expect(size > used && size % (4 << 10) == 0, "written into the allocated space, which stays ahead")
    #expect(try JournalFixtures.readAll(dir.path) == Self.records(batches))
    journal.close()
    try Self.expectClosed(dir.path, holds: Self.records(batches))
  }

  @Test func aFollowerInThisProcessSeesEveryRecordWhileTheWriterAppends() async throws {
    let dir = TemporaryDirectory("mapped-follow")
    let faults = FaultInjectingFileIO()
    let journal = try Journal(directory: dir.path, options: Self.options(faults, segmentBytes: 48 << 10))
    let batches = Self.batches(700, seed: 24, payload: 200)
    let follower = try FollowTests.follow(dir.path, from: 1, count: batches.count)
    let late = try FollowTests.follow(dir.path, from: 350, count: batches.count - 349)
    for batch in batches { try await journal.append(batch) }
    let expected = Self.records(batches)
    #expect(try await follower.value == expected)
    #expect(try await late.value == Array(expected[349...]))
    #expect(faults.segmentWrites == 0)
    journal.close()
  }

  /// A reader's view of the active segment while the writer stores a frame through its mapping:
  /// the file up to `storedTo` (a byte inside the frame at `frameStart`), then the zeros of the
  /// allocated space that the store has not reached. The writer finishes that frame and stores
  /// the next one just before the first read that starts at or after the frame's end
  /// (`frameEnd`): only a scan for a valid header after damage at `frameStart` reads there (its
  /// header is whole, so the scan starts at the end of the extent it declares). From then on,
  /// the whole file.
  final class FrameBeingStored: ForwardingFileIO, @unchecked Sendable {
    let base: any FileIO = PosixFileIO()
    let segment: String
    let frameStart: Int64
    let frameEnd: Int64
    let storedTo: Int64
    private let storing = Locked(true)
    /// Whether the reader scanned past the half-stored frame (and so saw the writer finish it).
    var scanned: Bool { !storing.withLock { $0 } }

    init(segment: String, frameStart: Int64, frameEnd: Int64, storedTo: Int64) {
      (self.segment, self.frameStart, self.frameEnd, self.storedTo) = (segment, frameStart, frameEnd, storedTo)
    }

    func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws -> Int {
      let ofSegment = path.hasSuffix("/" + segment)
      let stillStoring = storing.withLock { (storing: inout Bool) -> Bool in
        if ofSegment, offset >= frameEnd { storing = false }
        return storing
      }
      let count = try base.pread(fd, into: buffer, at: offset, path: path)
      if ofSegment, stillStoring, offset + Int64(count) > storedTo {
        let from = Int(max(0, storedTo - offset))
        for i in from..<count { buffer[i] = 0 }
      }
      return count
    }
  }

  @Test func aFrameReadWhileItIsStoredIsNotDamageWhenTheNextOneFollowsIt() async throws {
    // A reader read a frame half stored through the mapping (its header whole, its frame not),
    // twice, then found the next frame's valid header after it: the writer had finished the one
    // and stored the next meanwhile. It took that header for committed data after damage and
    // reported "frame checksum mismatch ... Committed data is damaged" on a healthy journal;
    // `verify` reported the frame as a problem.
    let dir = TemporaryDirectory("mapped-half-stored")
    let journal = try Journal(directory: dir.path, options: Self.options(FaultInjectingFileIO()))
    let batches = Self.batches(3, seed: 27)
    for batch in batches { try await journal.append(batch) }
    let name = try #require(JournalFixtures.segments(dir.path).last)
    let bytes = try Files.read(dir.appending(name))
    let first = try BatchHeader.decode(bytes[Layout.segmentHeaderSize...], limits: JournalLimits()).get()
    let middle = Int64(Layout.segmentHeaderSize) + first.totalLength
    let second = try BatchHeader.decode(bytes[Int(middle)...], limits: JournalLimits()).get()
    #expect(Int64(bytes.count) > middle + 600, "space allocated after the frames")
    let io = FrameBeingStored(
      segment: name, frameStart: middle, frameEnd: middle + second.totalLength,
      storedTo: middle + Int64(Layout.batchHeaderSize) + 100)
    try #require(io.storedTo < io.frameEnd, "the store stops inside the frame")
    let read = try JournalFixtures.readAll(JournalReader(directory: dir.path, io: io).records())
    #expect(io.scanned, "the reader looked for a header after the half-stored frame")
    #expect(read == Self.records(batches))
    // `verify` (safe while a writer appends) judged it the same way, on one read of the frame.
    let again = FrameBeingStored(
      segment: name, frameStart: io.frameStart, frameEnd: io.frameEnd, storedTo: io.storedTo)
    let report = try JournalReader(directory: dir.path, io: again).verify()
    #expect(again.scanned, "verify looked for a header after the half-stored frame")
    #expect(report.problems.isEmpty, "\(report.problems)")
    #expect(report.records == UInt64(batches.count))
    journal.close()
  }

  /// Records where in the file each store through `FileIO.store` went, in the order they were made.
  final class StoreRecorder: ForwardingFileIO, @unchecked Sendable {
    let base: any FileIO = PosixFileIO()
    private struct Mapping {
      var address: UnsafeMutableRawPointer
      var length: Int
      var offset: Int64
    }
    private let state = Locked((mappings: [Mapping](), stores: [Range<Int64>]()))
    /// The file ranges stored, in order (only segments are ever mapped, and these tests write one).
    var stores: [Range<Int64>] { state.withLock { $0.stores } }

    func map(_ fd: Int32, at offset: Int64, length: Int, path: String) throws -> UnsafeMutableRawPointer {
      let address = try base.map(fd, at: offset, length: length, path: path)
      state.withLock { $0.mappings.append(Mapping(address: address, length: length, offset: offset)) }
      return address
    }

    func unmap(_ address: UnsafeMutableRawPointer, length: Int) {
      state.withLock { $0.mappings.removeAll { $0.address == address } }
      base.unmap(address, length: length)
    }

    func store(_ bytes: UnsafeRawBufferPointer, at address: UnsafeMutableRawPointer) {
      state.withLock { state in
        // A store outside every mapping is recorded as an empty range, which fails the test.
        guard let mapping = state.mappings.first(where: { address >= $0.address && address < $0.address + $0.length })
        else { return state.stores.append(0..<0) }
        let start = mapping.offset + Int64(address - mapping.address)
        state.stores.append(start..<start + Int64(bytes.count))
      }
      base.store(bytes, at: address)
    }
  }

  @Test func aGroupOfSeveralFramesIsStoredFrameByFrameInOrder() async throws {
    // A group of appends is encoded as several frames and was copied into the mapping at once:
    // `memcpy` may store a copy's last bytes first, so a reader could see the second frame whole
    // while the first was still half stored, and (the writer preempted there) call a healthy
    // journal damaged, the first frame reading the same each time it read it again.
    let dir = TemporaryDirectory("mapped-frame-order")
    let recorder = StoreRecorder()
    var options = Self.options(FaultInjectingFileIO())  // the suite's settings, with the recorder's file layer
    options.io = recorder
    options.frameTargetBytes = 1  // a frame per append
    let journal = try Journal(directory: dir.path, options: options)
    let batches = Self.batches(6, seed: 35, payload: 80)
    try await journal.append(batches[0])
    // Queued without writing, then written together: one group, four frames, one window.
    let outcomes = Locked([Result<ClosedRange<UInt64>, JournalError>]())
    for batch in batches[1...4] {
      journal.enqueue(batch, expectedFirst: nil) { outcome in outcomes.withLock { $0.append(outcome) } }
    }
    journal.lead()
    #expect(outcomes.withLock { $0.map { try? $0.get() } } == (2...5).map { $0...$0 })
    try await journal.append(batches[5])
    journal.close()

    let segment = try #require(JournalFixtures.segments(dir.path).first)
    let frames = try JournalFixtures.frames(of: try Files.read(dir.appending(segment))).map {
      Int64($0.offset)..<Int64($0.offset) + $0.header.totalLength
    }
    #expect(frames.count == batches.count)
    // The groups of one frame (the first and last appends) are copied directly, not through the seam.
    #expect(recorder.stores == Array(frames[1...4]), "one store per frame of the group, in the order of the frames")
    #expect(try JournalFixtures.readAll(dir.path) == Self.records(batches))
  }

  @Test func aCopyTakenWhileTheWriterIsLiveReopensWithEveryAcknowledgedRecord() async throws {
    // What killing the process leaves: the files of a live writer, allocated zeros and all.
    let batches = Self.batches(300, seed: 25)
    let copy = TemporaryDirectory("mapped-crash")
    let faults = FaultInjectingFileIO()
    let options = Self.options(faults)
    let path = try await PreallocationTests.liveCopy("mapped-live", options: options, batches: batches, into: copy)
    #expect(faults.segmentWrites == 0)
    let expected = Self.records(batches)
    let reopened = try PreallocationTests.expectLiveCopyIsSound(
      path, holds: expected, reopenedWith: Self.options(FaultInjectingFileIO()))
    let more = Self.batches(50, seed: 26)
    for batch in more { try await reopened.append(batch) }
    reopened.close()
    try Self.expectClosed(path, holds: expected + Self.records(more, from: UInt64(expected.count + 1)))
  }

  @Test(arguments: [ENOSPC, EOPNOTSUPP, EINVAL])
  func anAllocationThatFailsLeavesTheSegmentToPwrite(errno: Int32) async throws {
    let dir = TemporaryDirectory("mapped-enospc")
    let faults = FaultInjectingFileIO()
    let journal = try Journal(directory: dir.path, options: Self.options(faults, segmentBytes: 128 << 10))
    let before = Self.batches(40, seed: 27)
    for batch in before { try await journal.append(batch) }
    let allocations = faults.mappingCounts.allocations
    #expect(allocations > 1 && faults.segmentWrites == 0)
    let segment = try #require(JournalFixtures.segments(dir.path).last)
    let used = JournalFixtures.usedLength(try Files.read(dir.appending(segment)))
    let bytesBefore = Array(try Files.read(dir.appending(segment)).prefix(used))

    // The next allocation fails: the appends that need it go through `pwrite`, and succeed.
    faults.arm(.allocateError(errno))
    let after = Self.batches(60, seed: 28)
    for batch in after { try await journal.append(batch) }
    #expect(faults.struck == 1)
    #expect(faults.segmentWrites > 0, "the segment fell back to pwrite")
    #expect(faults.mappingCounts.allocations == allocations + 1, "and tried no more allocations")
    let bytes = try Files.read(dir.appending(segment))
    #expect(Array(bytes.prefix(used)) == bytesBefore, "the frames stored through the mapping stay as they were")
    #expect(JournalFixtures.segments(dir.path).count == 1)
    #expect(try JournalFixtures.readAll(dir.path) == Self.records(before + after))

    // The next segment maps again: once the journal has rolled, no more pwrite.
    var more: [[NewRecord]] = []
    var writes = 0
    for (index, batch) in Self.batches(600, seed: 29).enumerated() {
      try await journal.append(batch)
      more.append(batch)
      if JournalFixtures.segments(dir.path).count == 2 {
        if writes == 0 { writes = faults.segmentWrites }
        if index > 500 { break }
      }
    }
    #expect(writes > 0, "the journal should have rolled")
    #expect(faults.segmentWrites == writes, "the next segment stores through its mapping")
    #expect(faults.mappingCounts.allocations > allocations + 1)
    journal.close()
    try Self.expectClosed(dir.path, holds: Self.records(before + after + more))
  }

  @Test(arguments: [FaultInjectingFileIO.Fault.writeError(EIO), .shortWrite(bytes: 100, thenErrno: ENOSPC)])
  func aLargeFrameWhoseWriteFailsLeavesNothingAndTheMappingGoesOn(fault: FaultInjectingFileIO.Fault) async throws {
    // A large frame goes by `pwrite` into the allocated space; when that fails, the segment is
    // cut back to its last frame (allocation and all), and the next small frames, stored through
    // the mapping, must allocate again before they store.
    let dir = TemporaryDirectory("mapped-write-fault")
    let faults = FaultInjectingFileIO()
    let journal = try Journal(directory: dir.path, options: Self.options(faults, segmentBytes: 1 << 20))
    let before = Self.batches(20, seed: 32)
    for batch in before { try await journal.append(batch) }
    let segment = try #require(JournalFixtures.segments(dir.path).last)
    let used = JournalFixtures.usedLength(try Files.read(dir.appending(segment)))
    let allocations = faults.mappingCounts.allocations

    faults.arm(fault)
    let large = Self.batches(1, seed: 33, payload: 20_000)[0]
    do {
      try await journal.append(large)
      Issue.record("the append should have failed under \(fault)")
    } catch let error as JournalError {
      #expect(error.code == .io, "\(error)")
    }
    #expect(faults.struck == 1)
    #expect(journal.failure == nil, "a failed write that was undone does not stop the journal")
    #expect(Files.size(dir.appending(segment)) == used, "cut back to the last frame, allocation and all")

    let writes = faults.segmentWrites
    let after = Self.batches(40, seed: 34)
    for batch in after { try await journal.append(batch) }
    #expect(faults.segmentWrites == writes, "the small frames go through the mapping again")
    #expect(faults.mappingCounts.allocations > allocations, "after allocating again")
    let (size, usedNow) = try PreallocationTests.lengths(dir.path).last!
    #expect(size > usedNow)
    journal.close()
    try Self.expectClosed(dir.path, holds: Self.records(before + after))
  }

  @Test func aMappingThatFailsLeavesTheSegmentToPwrite() async throws {
    let dir = TemporaryDirectory("mapped-nomap")
    let faults = FaultInjectingFileIO()
    faults.arm(.mapError(ENOMEM))
    let journal = try Journal(directory: dir.path, options: Self.options(faults, segmentBytes: 1 << 20))
    let batches = Self.batches(50, seed: 30)
    for batch in batches { try await journal.append(batch) }
    #expect(faults.struck == 1)
    #expect(faults.mappingCounts.maps == 1, "the segment maps no more")
    #expect(faults.segmentWrites == batches.count, "one pwrite per append")
    #expect(try JournalFixtures.readAll(dir.path) == Self.records(batches))
    journal.close()
    try Self.expectClosed(dir.path, holds: Self.records(batches))
  }

  @Test func withoutPreallocationOrWithSyncsNothingIsMapped() async throws {
    for (durability, window) in [(Durability.none, 0), (.always, 4 << 10), (.batched, 4 << 10)] {
      let dir = TemporaryDirectory("mapped-off")
      let faults = FaultInjectingFileIO()
      var options = Self.options(faults)
      options.durability = durability
      options.preallocationBytes = window
      let journal = try Journal(directory: dir.path, options: options)
      let batches = Self.batches(20, seed: 31)
      for batch in batches { try await journal.append(batch) }
      #expect(faults.mappingCounts == (0, 0), "\(durability), \(window)")
      #expect(faults.segmentWrites >= batches.count, "\(durability), \(window)")
      journal.close()
      try Self.expectClosed(dir.path, holds: Self.records(batches))
    }
  }
}
