import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Review of mapped appends (FORMAT.md, "Mapped appends"): paths where the writer's bookkeeping
/// of the space it allocated could fall out of step with the file.
@Suite struct MappedAppendReviewTests {
  @Test func aRollThatFailsAfterCuttingTheSegmentLeavesLaterStoresInsideTheFile() async throws {
    // A roll cuts the segment back to its last frame, then creating the next segment fails (not
    // fatal: the append fails, the journal goes on). A smaller append that needs no roll is
    // stored into the same segment: the writer must allocate again first, as the cut took the
    // space it had allocated; stored past the end of the file it would be lost (in the file's
    // last page) or raise SIGBUS (past it).
    let dir = TemporaryDirectory("mapped-review-roll")
    let faults = FaultInjectingFileIO()
    let target = 64 << 10
    let journal = try Journal(directory: dir.path, options: MappedAppendTests.options(faults, segmentBytes: target))
    var batches: [[NewRecord]] = []
    for batch in MappedAppendTests.batches(400, seed: 41) {
      guard try PreallocationTests.lengths(dir.path).last!.used + 2_500 < target else { break }
      try await journal.append(batch)
      batches.append(batch)
    }
    let (size, used) = try PreallocationTests.lengths(dir.path).last!
    #expect(size > used, "space allocated ahead of the frames")

    faults.arm(.renameError(ENOSPC))
    let large = MappedAppendTests.batches(1, seed: 42, payload: 4_000)[0]
    do {
      try await journal.append(large)
      Issue.record("the roll should have failed")
    } catch let error as JournalError {
      #expect(error.code != .durabilityLost, "\(error)")
    }
    #expect(faults.struck == 1)
    #expect(journal.failure == nil, "a roll that failed before the next segment existed is not fatal")
    #expect(JournalFixtures.segments(dir.path).count == 1)

    let after = MappedAppendTests.batches(4, seed: 43)
    for batch in after { try await journal.append(batch) }
    batches += after
    #expect(JournalFixtures.segments(dir.path).count == 1, "small enough to need no roll")
    let expected = MappedAppendTests.records(batches)
    #expect(try JournalFixtures.readAll(dir.path) == expected, "acknowledged appends are in the file")
    journal.close()
    // The failed rename left the next segment's temporary file, which reopening moves aside.
    for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name.hasSuffix(".tmp") {
      try FileManager.default.removeItem(atPath: dir.appending(name))
    }
    try MappedAppendTests.expectClosed(dir.path, holds: expected)
  }

  /// The largest accepted `preallocationBytes` works under every policy: its window rounds to
  /// whole pages without overflow (above it, `Int.max` trapped there; now refused, see
  /// `JournalOptionsTests`) and allocation stops at the segment's target size.
  @Test(arguments: [Durability.none, .always])
  func theLargestPreallocationAcceptedWorks(durability: Durability) async throws {
    let dir = TemporaryDirectory("mapped-review-large-window")
    let faults = FaultInjectingFileIO()
    var options = MappedAppendTests.options(faults, segmentBytes: 64 << 10)
    options.durability = durability
    options.preallocationBytes = JournalOptions.maximumPreallocationBytes
    #expect(options.problem == nil)
    let journal = try Journal(directory: dir.path, options: options)
    let batches = MappedAppendTests.batches(400, seed: 44)
    for batch in batches { try await journal.append(batch) }
    #expect(JournalFixtures.segments(dir.path).count > 1, "the journal should have rolled")
    for (size, _) in try PreallocationTests.lengths(dir.path) { #expect(size <= 64 << 10 + 1 << 10) }
    if durability == .none { #expect(faults.segmentWrites == 0, "through the mapping") }
    journal.close()
    try MappedAppendTests.expectClosed(dir.path, holds: MappedAppendTests.records(batches))
  }

  /// A follower in this process reads what a writer in another process stores through its
  /// mapping (`journal-crash-child`, `none`, 64 KiB segments: many windows and rolls, groups
  /// mapped and written): the same page cache, and frames caught half stored read as the end
  /// for now, never as damage.
  @Test func aFollowerInThisProcessSeesWhatAWriterInAnotherStoresThroughItsMapping() async throws {
    let dir = TemporaryDirectory("mapped-review-child")
    let child = try ChildProcess(executable: try CrashTests.child(), arguments: ["append", dir.path, "none", "2"])
    #expect(try await child.waitForLine { $0.hasPrefix("open") }, "the child did not open the journal")
    let count = 20_000
    let follower = try FollowTests.follow(dir.path, from: 1, count: count)
    let seen = try await follower.value
    let acknowledged = child.lines
    try await child.kill()
    #expect(seen.count == count)
    #expect(seen.map(\.sequence) == Array(1...UInt64(seen.count)))
    var checked = 0
    for line in acknowledged {
      let parts = line.split(separator: " ")
      guard parts.count == 4, parts[0] == "ack", let first = Int(parts[1]), let last = Int(parts[2]) else { continue }
      for sequence in first...last where sequence <= seen.count {
        let payload = String(decoding: seen[sequence - 1].payload.prefix(while: { $0 != 0x2E }), as: UTF8.self)
        #expect(payload == "\(parts[3])/\(sequence - first)", "record \(sequence)")
        checked += 1
      }
    }
    #expect(checked > count / 2, "acknowledged records were checked")
    #expect(JournalFixtures.segments(dir.path).count > 2, "the child's journal rolled")
  }

  /// A crashed writer's active segment reopened by a writer of another kind: zeros written ahead
  /// under `always` (in chunks larger than the new window), space allocated for a mapping under
  /// `none` reopened under `always`, and either one with a hole after it (the file made longer
  /// without writing). Every record stays, and the journal appends on and closes clean.
  @Test(arguments: [(Durability.always, Durability.none), (.none, .always), (.none, .none)], [false, true])
  func aSegmentLeftByAnotherKindOfWriterIsAppendedTo(writers: (Durability, Durability), hole: Bool) async throws {
    let (before, after) = writers
    let batches = MappedAppendTests.batches(120, seed: 45)
    let copy = TemporaryDirectory("mapped-review-reopen")
    var options = MappedAppendTests.options(FaultInjectingFileIO(), segmentBytes: 96 << 10, window: 16 << 10)
    options.durability = before
    let path = try await PreallocationTests.liveCopy(
      "mapped-review-live", options: options, batches: batches, into: copy)
    let segment = path + "/" + JournalFixtures.segments(path).last!
    #expect(Files.size(segment) > JournalFixtures.usedLength(try Files.read(segment)), "zeros after the frames")
    if hole { #expect(truncate(segment, off_t(Files.size(segment) + (10 << 10) + 123)) == 0) }

    let faults = FaultInjectingFileIO()
    var reopenedOptions = MappedAppendTests.options(faults, segmentBytes: 96 << 10, window: 4 << 10)
    reopenedOptions.durability = after
    let reopened = try Journal(directory: path, options: reopenedOptions)
    #expect(reopened.recovery.isClean, "\(reopened.recovery.movedAside)")
    let more = MappedAppendTests.batches(400, seed: 46)
    for batch in more { try await reopened.append(batch) }
    if after == .none { #expect(faults.segmentWrites == 0, "through the mapping") }
    let expected = MappedAppendTests.records(batches + more)
    #expect(try JournalFixtures.readAll(path) == expected)
    reopened.close()
    try MappedAppendTests.expectClosed(path, holds: expected)
  }

  /// Groups of every size around the 1 KiB limit (mapped up to it, written past it), at every
  /// offset of small segments and windows: a window of less than a page (rounded to two), of a
  /// page and a half, and segments from the smallest accepted to a few windows.
  @Test(arguments: [(1, 1 << 10), (1, 4 << 10), (6 << 10, 5 << 10), (4 << 10, 9 << 10), (4 << 10, 64 << 10)])
  func groupsAroundTheLimitAtEveryOffset(window: Int, segmentBytes: Int) async throws {
    let dir = TemporaryDirectory("mapped-review-sweep")
    let faults = FaultInjectingFileIO()
    let journal = try Journal(
      directory: dir.path, options: MappedAppendTests.options(faults, segmentBytes: segmentBytes, window: window))
    var random = SeededGenerator(seed: UInt64(window ^ segmentBytes))
    var batches: [[NewRecord]] = []
    for size in 900...1_100 {
      // Incompressible, so a frame's size follows its payload's.
      let payload = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
      batches.append([NewRecord(timestamp: Int64(size), payload: payload)])
      try await journal.append(batches.last!)
    }
    #expect(faults.segmentWrites > 0 && faults.segmentWrites < batches.count, "some mapped, some written")
    let expected = MappedAppendTests.records(batches)
    #expect(try JournalFixtures.readAll(dir.path) == expected)
    journal.close()
    try MappedAppendTests.expectClosed(dir.path, holds: expected)
  }

  /// The mapping failing when the window moves (not at the segment's first store), and a roll
  /// whose cut fails (the segment keeps its allocated space and stays active): later appends go
  /// on, by `pwrite` or through the space still allocated, and nothing is lost; the segments
  /// after the next roll are stored through their mappings again.
  @Test(arguments: [
    FaultInjectingFileIO.Fault.mapError(ENOMEM), .truncateError(EIO),
  ])
  func aWindowMoveOrARollCutThatFailsLosesNothing(fault: FaultInjectingFileIO.Fault) async throws {
    let dir = TemporaryDirectory("mapped-review-move")
    let faults = FaultInjectingFileIO()
    let target = 64 << 10
    let journal = try Journal(directory: dir.path, options: MappedAppendTests.options(faults, segmentBytes: target))
    var batches: [[NewRecord]] = []
    for batch in MappedAppendTests.batches(400, seed: 47) {
      guard try PreallocationTests.lengths(dir.path).last!.used + 2_500 < target else { break }
      // The mapping fails at the first window move after a few windows. Armed once: an append
      // that moves no window leaves the fault armed, and one armed again at each of those
      // appends failed the first mapping of every later segment as well.
      if case .mapError = fault, faults.mappingCounts.maps == 3, faults.struck + faults.unstruck == 0 {
        faults.arm(fault)
      }
      try await journal.append(batch)
      batches.append(batch)
    }
    #expect(faults.mappingCounts.maps > 3, "several windows")
    if case .mapError = fault {
      #expect(faults.struck == 1 && faults.segmentWrites > 0, "the rest of the segment by pwrite")
    } else {
      faults.arm(fault)
      let large = MappedAppendTests.batches(1, seed: 48, payload: 4_000)[0]
      await #expect(throws: JournalError.self) { try await journal.append(large) }
      #expect(journal.failure == nil)
    }
    let after = MappedAppendTests.batches(4, seed: 49)
    for batch in after { try await journal.append(batch) }
    batches += after
    #expect(faults.struck == 1)
    #expect(JournalFixtures.segments(dir.path).count == 1)
    let more = MappedAppendTests.batches(300, seed: 50)
    var writesAtRoll: Int?
    for batch in more {
      try await journal.append(batch)
      if writesAtRoll == nil && JournalFixtures.segments(dir.path).count > 1 { writesAtRoll = faults.segmentWrites }
    }
    batches += more
    #expect(JournalFixtures.segments(dir.path).count > 1, "rolled after all")
    #expect(faults.segmentWrites == writesAtRoll, "the next segments store through their mappings again")
    #expect(faults.struck == 1 && faults.unstruck == 0, "the one fault struck, and only where it was meant to")
    let expected = MappedAppendTests.records(batches)
    #expect(try JournalFixtures.readAll(dir.path) == expected)
    journal.close()
    try MappedAppendTests.expectClosed(dir.path, holds: expected)
  }

  /// Space is allocated for the mapping only on file systems that write it in place (ext4, XFS,
  /// tmpfs); on btrfs a store into allocated space still reserves free space at its page fault,
  /// and a full disk turns it into SIGBUS, so `allocate` refuses there (EOPNOTSUPP) and the
  /// segment is written with `pwrite`. (Without a btrfs here, the types are checked by number.)
  @Test func allocationIsRefusedOnFileSystemsThatDoNotWriteInPlace() throws {
    for (name, type) in [("ext4", 0xEF53), ("xfs", 0x5846_5342), ("tmpfs", 0x0102_1994)] {
      #expect(PosixFileIO.allocatesInPlace(fileSystem: Int64(type)), "\(name)")
    }
    for (name, type) in [("btrfs", 0x9123_683E), ("bcachefs", 0xCA45_1A4E), ("zfs", 0x2FC1_2FC1), ("nfs", 0x6969)] {
      #expect(!PosixFileIO.allocatesInPlace(fileSystem: Int64(type)), "\(name)")
    }
    let dir = TemporaryDirectory("mapped-review-fs")
    let fd = open(dir.appending("f"), O_RDWR | O_CREAT, 0o600)
    defer { close(fd) }
    let type = try #require(fileSystemType(fd))
    // Where the tests run (ext4 here) the mapping is used, as the other tests check.
    if type == 0xEF53 { #expect(PosixFileIO.allocatesInPlace(fileSystem: type)) }
    let io = PosixFileIO()
    if PosixFileIO.allocatesInPlace(fileSystem: type) {
      try io.allocate(fd, at: 0, length: 8192, path: "f")
      #expect(Files.size(dir.appending("f")) == 8192)
    } else {
      #expect(throws: SystemCallError.self) { try io.allocate(fd, at: 0, length: 8192, path: "f") }
      #expect(Files.size(dir.appending("f")) == 0)
    }
  }
}
