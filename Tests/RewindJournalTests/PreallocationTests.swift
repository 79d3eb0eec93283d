import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// The zeros a writer keeps after the active segment's last frame (`JournalOptions.preallocationBytes`,
/// FORMAT.md "Writing"): the end of the journal while live or after a crash, cut when a segment is
/// sealed and on close; a chunk that does not fit on the disk leaves the frames to grow the file.
@Suite struct PreallocationTests {
  static func options(
    _ durability: Durability = .always, segmentBytes: Int = 64 << 10, chunk: Int = 16 << 10
  ) -> JournalOptions {
    var options = JournalFixtures.options(durability, segmentBytes: segmentBytes, frameBytes: 1 << 10)
    options.preallocationBytes = chunk
    return options
  }

  /// `count` batches of one record each, with payloads LZ4 cannot shrink much.
  static func batches(_ count: Int, seed: UInt64, payload: Int = 300) -> [[NewRecord]] {
    var random = SeededGenerator(seed: seed)
    return (0..<count).map { index in [NewRecord(timestamp: Int64(index), payload: random.bytes(payload))] }
  }

  static func records(_ batches: [[NewRecord]], from first: UInt64 = 1) -> [JournalRecord] {
    zip(first..., batches.flatMap { $0 }).map {
      JournalRecord(sequence: $0, timestamp: $1.timestamp, payload: $1.payload)
    }
  }

  /// What a crash of a live writer leaves: `batches` appended under `options`, then the journal's
  /// files copied into `copy` (preallocated zeros and all) before it is closed. Returns the copied
  /// journal's path.
  static func liveCopy(
    _ name: String, options: JournalOptions, batches: [[NewRecord]], into copy: TemporaryDirectory
  ) async throws -> String {
    let dir = TemporaryDirectory(name)
    let journal = try Journal(directory: dir.path, options: options)
    for batch in batches { try await journal.append(batch) }
    let path = copy.appending("j")
    try Files.copyDirectory(dir.path, to: path)
    journal.close()
    return path
  }

  /// Sizes of a journal's segment files and the ends of their frames.
  static func lengths(_ directory: String) throws -> [(size: Int, used: Int)] {
    try JournalFixtures.segments(directory).map {
      let bytes = try Files.read(directory + "/" + $0)
      return (bytes.count, JournalFixtures.usedLength(bytes))
    }
  }

  @Test(arguments: [0, 4 << 10, 16 << 10])
  func sealedSegmentsAndClosedJournalsEndAtTheirLastFrame(chunk: Int) async throws {
    let dir = TemporaryDirectory("prealloc-lengths")
    let journal = try Journal(directory: dir.path, options: Self.options(chunk: chunk))
    for batch in Self.batches(600, seed: 1) { try await journal.append(batch) }
    let live = try Self.lengths(dir.path)
    #expect(live.count > 2, "the journal should have rolled")
    for (size, used) in live.dropLast() { #expect(size == used, "a sealed segment has no zeros") }
    let active = live.last!
    if chunk == 0 {
      #expect(active.size == active.used, "without preallocation the file ends at its last frame")
    } else {
      #expect(active.size > active.used, "the active segment is preallocated")
      #expect(active.size % chunk == 0 || active.size == 64 << 10, "in whole chunks, up to the segment's target")
    }
    journal.close()
    for name in JournalFixtures.segments(dir.path) {
      // `frames(of:)` expects the last frame to end exactly at the end of the file.
      let frames = try JournalFixtures.frames(of: try Files.read(dir.appending(name)))
      #expect(!frames.isEmpty, "\(name)")
    }
    #expect(try JournalFixtures.readAll(dir.path) == Self.records(Self.batches(600, seed: 1)))
  }

  @Test(arguments: [Durability.always, .batched, .none])
  func aCopyTakenWhileTheWriterIsLiveReopensWithEveryAcknowledgedRecord(durability: Durability) async throws {
    // What a crash leaves: the files of a live writer, preallocated zeros and all.
    let batches = Self.batches(300, seed: 2)
    let copy = TemporaryDirectory("prealloc-crash")
    let path = try await Self.liveCopy("prealloc-live", options: Self.options(durability), batches: batches, into: copy)

    // Under `none` the space is allocated (`fallocate`) for the mapping frames are stored through.
    let expected = Self.records(batches)
    let reopened = try Self.expectLiveCopyIsSound(path, holds: expected, reopenedWith: Self.options(durability))
    let more = Self.batches(50, seed: 3)
    for batch in more { try await reopened.append(batch) }
    reopened.close()
    for (size, used) in try Self.lengths(path) { #expect(size == used) }
    #expect(try JournalFixtures.readAll(path) == expected + Self.records(more, from: UInt64(expected.count + 1)))
  }

  /// The files of a live writer copied at `path` (what a crash leaves, preallocated zeros and
  /// all) read to the zeros, verify sound with the zeros reported as preallocated space, and
  /// reopen with `options` cleanly at the last record; returns the reopened journal.
  static func expectLiveCopyIsSound(
    _ path: String, holds expected: [JournalRecord], reopenedWith options: JournalOptions
  )
    throws -> Journal
  {
    let copied = try Self.lengths(path)
    #expect(copied.last!.size > copied.last!.used, "the copy holds preallocated zeros")
    #expect(try JournalFixtures.readAll(path) == expected, "a reader stops at the zeros")
    let verification = try JournalReader(directory: path).verify()
    #expect(verification.isSound && verification.unfinishedTail == nil, "\(verification.problems)")
    #expect(verification.preallocatedBytes == Int64(copied.last!.size - copied.last!.used))

    let reopened = try Journal(directory: path, options: options)
    #expect(reopened.recovery.isClean, "\(reopened.recovery.movedAside)")
    #expect(!FileManager.default.fileExists(atPath: path + "/" + Layout.quarantineName))
    #expect(reopened.lastSequence == UInt64(expected.count))
    return reopened
  }

  /// A journal under `durability` with 20 small batches in a segment preallocated in 4 KiB
  /// chunks, and one append larger than a chunk (so it must extend the file, zeros first).
  static func nearlyFull(_ durability: Durability, _ dir: TemporaryDirectory, _ faults: FaultInjectingFileIO)
    async throws -> (Journal, before: [[NewRecord]], large: [NewRecord], segment: String)
  {
    var options = Self.options(durability, segmentBytes: 1 << 20, chunk: 4 << 10)
    options.io = faults
    let journal = try Journal(directory: dir.path, options: options)
    let before = Self.batches(20, seed: 4)
    for batch in before { try await journal.append(batch) }
    let segment = try #require(JournalFixtures.segments(dir.path).last)
    #expect(Files.size(dir.appending(segment)) > JournalFixtures.usedLength(try Files.read(dir.appending(segment))))
    return (journal, before, Self.batches(1, seed: 5, payload: 9000)[0], segment)
  }

  @Test(
    arguments: [FaultInjectingFileIO.Fault.writeError(ENOSPC), .shortWrite(bytes: 100, thenErrno: ENOSPC)],
    [Durability.always, .batched])
  func aChunkThatDoesNotFitLeavesTheAppendToGrowTheFileItself(
    fault: FaultInjectingFileIO.Fault, durability: Durability
  ) async throws {
    // Space for the append's frames but not for a chunk of zeros: the append must not fail
    // (without preallocation it would not), and the segment preallocates no more.
    let dir = TemporaryDirectory("prealloc-enospc")
    let faults = FaultInjectingFileIO()
    let (journal, before, large, segment) = try await Self.nearlyFull(durability, dir, faults)
    let used = JournalFixtures.usedLength(try Files.read(dir.appending(segment)))
    let bytesBefore = Array(try Files.read(dir.appending(segment)).prefix(used))
    faults.arm(fault)
    let range = try await journal.append(large)
    #expect(faults.struck == 1)
    #expect(range == UInt64(before.count + 1)...UInt64(before.count + 1))
    var bytes = try Files.read(dir.appending(segment))
    #expect(Array(bytes.prefix(used)) == bytesBefore, "the frames before stay as they were")
    #expect(bytes.count == JournalFixtures.usedLength(bytes), "the frames grew the file; no zeros after them")
    let more = Self.batches(30, seed: 12)
    for batch in more { try await journal.append(batch) }
    bytes = try Files.read(dir.appending(segment))
    #expect(bytes.count == JournalFixtures.usedLength(bytes), "no more zeros in this segment")
    journal.close()
    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options())
    #expect(reopened.recovery.isClean)
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path) == Self.records(before + [large] + more))
  }

  @Test(
    arguments: [FaultInjectingFileIO.Fault.writeError(ENOSPC), .shortWrite(bytes: 100, thenErrno: ENOSPC)],
    [Durability.always, .batched])
  func aFullDiskFailsTheAppendWithNothingOfItWritten(fault: FaultInjectingFileIO.Fault, durability: Durability)
    async throws
  {
    let dir = TemporaryDirectory("prealloc-full")
    let faults = FaultInjectingFileIO()
    let (journal, before, large, segment) = try await Self.nearlyFull(durability, dir, faults)
    let used = JournalFixtures.usedLength(try Files.read(dir.appending(segment)))
    let bytesBefore = Array(try Files.read(dir.appending(segment)).prefix(used))
    let lastBefore = journal.lastSequence
    faults.arm(fault)  // the zeros
    faults.arm(.writeError(ENOSPC))  // then the frames
    do {
      try await journal.append(large)
      Issue.record("the append should have failed under \(fault)")
    } catch let error as JournalError {
      #expect(error.code == .io, "\(error)")
      #expect(error.errno == ENOSPC, "\(error)")
      #expect(error.file == segment, "\(error)")
      #expect(error.offset == Int64(used), "\(error): where the frames would have gone")
    }
    #expect(faults.struck == 2)
    #expect(journal.lastSequence == lastBefore)
    #expect(journal.failure == nil, "a full disk does not stop the journal")
    #expect(try Files.read(dir.appending(segment)) == bytesBefore, "the zeros are cut, and nothing of the append stays")

    faults.disarm()
    let range = try await journal.append(large)
    #expect(range == (lastBefore + 1)...(lastBefore + 1), "the retry gets the number the failed append would have had")
    journal.close()
    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options())
    #expect(reopened.recovery.isClean)
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path) == Self.records(before + [large]))
  }

  @Test func aCursorAtTheZerosSeesFramesWrittenOverThemLater() async throws {
    // The cursor's read-ahead holds the zeros after the last frame; the writer then fills them
    // in place (the file does not grow), and the cursor must read the new frames from the file.
    let dir = TemporaryDirectory("prealloc-cursor")
    let journal = try Journal(directory: dir.path, options: Self.options(segmentBytes: 1 << 20, chunk: 256 << 10))
    let first = Self.batches(10, seed: 6, payload: 100)
    for batch in first { try await journal.append(batch) }
    let cursor = try JournalReader(directory: dir.path).records()
    #expect(try JournalFixtures.readAll(cursor) == Self.records(first))
    let segment = try #require(JournalFixtures.segments(dir.path).last)
    let size = Files.size(dir.appending(segment))
    for round in 0..<5 {
      let more = Self.batches(7, seed: 7 + UInt64(round), payload: 100)
      for batch in more { try await journal.append(batch) }
      let from = UInt64(first.count + round * 7 + 1)
      #expect(try JournalFixtures.readAll(cursor) == Self.records(more, from: from), "round \(round)")
    }
    #expect(Files.size(dir.appending(segment)) == size, "the frames went into preallocated space")
    journal.close()
  }

  @Test func largeGroupsAndUnmappedAppendsWithoutSyncGrowTheFileThemselves() async throws {
    for (durability, payload) in [(Durability.none, 100), (.always, 100 << 10)] {
      let dir = TemporaryDirectory("prealloc-large")
      var options = Self.options(durability, segmentBytes: 4 << 20, chunk: 64 << 10)
      options.frameTargetBytes = 1 << 20
      // Under `none` with `pwrite` (a mapping allocates ahead: MappedAppendTests).
      options.mapsActiveSegment = false
      let journal = try Journal(directory: dir.path, options: options)
      for batch in Self.batches(20, seed: 10, payload: payload) {
        try await journal.append(batch)
        let (size, used) = try Self.lengths(dir.path).last!
        #expect(size == used, "\(durability), \(payload)-byte records: no zeros ahead")
      }
      journal.close()
    }
  }

  @Test func aFollowerReadsAcrossRollsAndChunksWhileTheWriterAppends() async throws {
    let dir = TemporaryDirectory("prealloc-follow")
    let journal = try Journal(
      directory: dir.path, options: Self.options(.batched, segmentBytes: 48 << 10, chunk: 8 << 10))
    let batches = Self.batches(700, seed: 8, payload: 200)
    let follower = try FollowTests.follow(dir.path, from: 1, count: batches.count)
    let late = try FollowTests.follow(dir.path, from: 350, count: batches.count - 349)
    for batch in batches { try await journal.append(batch) }
    #expect(JournalFixtures.segments(dir.path).count > 2, "the follower should cross segment rolls")
    let expected = Self.records(batches)
    #expect(try await follower.value == expected)
    #expect(try await late.value == Array(expected[349...]))
    journal.close()
  }

  @Test func repairMovesTheDamagedFramesAsideButNotTheZerosAfterThem() async throws {
    let batches = Self.batches(40, seed: 11)
    let copy = TemporaryDirectory("prealloc-repair-copy")
    let path = try await Self.liveCopy(
      "prealloc-repair", options: Self.options(segmentBytes: 1 << 20), batches: batches, into: copy)
    // A crashed writer's segment, with a flipped byte in a frame in its middle.
    let segment = try #require(JournalFixtures.segments(path).last)
    var bytes = try Files.read(path + "/" + segment)
    let used = JournalFixtures.usedLength(bytes)
    try #require(bytes.count > used)
    let frames = try JournalFixtures.frames(of: Array(bytes.prefix(used)))
    let damaged = frames[20]
    bytes[damaged.offset + Layout.batchHeaderSize + 3] ^= 0x40
    try Files.write(bytes, to: path + "/" + segment)

    let report = try Journal.repair(directory: path)
    #expect(report.moved.count == 1)
    #expect(report.moved.first?.offset == Int64(damaged.offset))
    #expect(report.moved.first?.length == Int64(used - damaged.offset), "the frames from the damage on, not the zeros")
    let moved = try Files.read(path + "/" + report.moved.first!.movedTo)
    #expect(moved == Array(bytes[damaged.offset..<used]))
    #expect(Files.size(path + "/" + segment) == damaged.offset)
    #expect(try JournalFixtures.readAll(path) == Array(Self.records(batches).prefix(20)))
  }

  @Test func zerosAtTheEndOfASealedSegmentAreDamage() async throws {
    let dir = TemporaryDirectory("prealloc-sealed")
    let journal = try Journal(directory: dir.path, options: Self.options(segmentBytes: 8 << 10))
    for batch in Self.batches(100, seed: 9) { try await journal.append(batch) }
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 2)
    let sealed = dir.appending(segments[0])
    let end = Files.size(sealed)
    try Files.write(try Files.read(sealed) + [UInt8](repeating: 0, count: 5000), to: sealed)

    let reading = #expect(throws: JournalError.self) { _ = try JournalFixtures.readAll(dir.path) }
    #expect(reading?.code == .corrupt && reading?.file == segments[0] && reading?.offset == Int64(end))
    #expect(reading?.message.contains("not the last") == true, "\(String(describing: reading))")
    let verification = try JournalReader(directory: dir.path).verify()
    #expect(verification.problems.map(\.offset) == [Int64(end)], "\(verification.problems)")
    #expect(verification.problems.first?.file == segments[0])
    let opening = #expect(throws: JournalError.self) { _ = try Journal(directory: dir.path, options: Self.options()) }
    #expect(opening?.code == .corrupt && opening?.file == segments[0], "\(String(describing: opening))")
  }
}
