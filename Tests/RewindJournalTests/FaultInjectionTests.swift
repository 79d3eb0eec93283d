import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Injected I/O faults through the one system-call seam: a failed append is a typed error,
/// nothing half-written stays or is acknowledged, and the journal reopens cleanly.
@Suite struct FaultInjectionTests {
  static func options(_ faults: FaultInjectingFileIO, _ durability: Durability = .none, segmentBytes: Int = 64 << 20)
    -> JournalOptions
  {
    var options = JournalFixtures.options(durability, segmentBytes: segmentBytes)
    options.io = faults
    return options
  }

  static func records(_ tag: Int, count: Int = 3) -> [NewRecord] {
    (0..<count).map {
      NewRecord(
        timestamp: Int64(tag), payload: Array("record \(tag).\($0) ".utf8) + [UInt8](repeating: 7, count: tag % 90))
    }
  }

  static let writeFaults: [FaultInjectingFileIO.Fault] = [
    .writeError(ENOSPC), .writeError(EIO), .shortWrite(bytes: 10, thenErrno: ENOSPC),
    .shortWrite(bytes: 0, thenErrno: EIO),
  ]

  @Test(arguments: writeFaults, [Durability.none, .always])
  func aFailedWriteLeavesNothingAndCanBeRetried(fault: FaultInjectingFileIO.Fault, durability: Durability) async throws
  {
    let dir = TemporaryDirectory("faults")
    let faults = FaultInjectingFileIO()
    var options = Self.options(faults, durability)
    // Under `none` frames are stored through a mapping, which no write fault reaches; `pwrite`
    // stays its fallback (a full disk, no `fallocate`), tested here. MappedAppendTests has the
    // mapping's own faults.
    options.mapsActiveSegment = false
    let journal = try Journal(directory: dir.path, options: options)
    var acknowledged: [NewRecord] = []
    for tag in 0..<5 {
      try await journal.append(Self.records(tag))
      acknowledged += Self.records(tag)
    }
    let segment = try #require(JournalFixtures.segments(dir.path).last)
    // The frames' end: the preallocated zeros after it go with a failed write, and come back with the next.
    let sizeBefore = JournalFixtures.usedLength(try Files.read(dir.appending(segment)))
    #expect(
      (Files.size(dir.appending(segment)) > sizeBefore) == (durability != .none), "the writer preallocates under syncs")
    let lastBefore = journal.lastSequence

    faults.arm(fault)
    let failing = Self.records(100, count: 4)
    do {
      try await journal.append(failing)
      Issue.record("the append should have failed under \(fault)")
    } catch let error as JournalError {
      #expect(error.code == .io, "\(error)")
      #expect(error.errno != nil, "\(error)")
    }
    #expect(faults.struck == 1)
    #expect(journal.lastSequence == lastBefore)
    #expect(Files.size(dir.appending(segment)) == sizeBefore, "the partial write is undone")
    #expect(journal.failure == nil, "a failed write that was undone does not stop the journal")

    faults.disarm()
    let range = try await journal.append(failing)
    #expect(range == (lastBefore + 1)...(lastBefore + 4), "the retry gets the numbers the failed append would have had")
    acknowledged += failing
    journal.close()

    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options())
    #expect(reopened.recovery.isClean)
    #expect(reopened.lastSequence == UInt64(acknowledged.count))
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == acknowledged.map(\.payload))
  }

  /// Under the durable policies the cut that undoes a failed write is synced before the failure
  /// is reported: writeback may already have flushed the frames, and a power loss would then
  /// bring them back as committed. A cut that cannot be synced leaves the outcome unknown.
  @Test(arguments: [Durability.none, .always, .batched(maxDelay: .milliseconds(1))], [false, true])
  func theCutAfterAFailedWriteIsSynced(durability: Durability, syncFails: Bool) async throws {
    let dir = TemporaryDirectory("faults-cut")
    let faults = FaultInjectingFileIO()
    var options = Self.options(faults, durability)
    options.mapsActiveSegment = false
    let journal = try Journal(directory: dir.path, options: options)
    defer { journal.close() }
    try await journal.append(Self.records(1))
    let syncsBefore = faults.counts.syncs
    faults.arm(.writeError(EIO))
    let synced = durability != .none
    if syncFails { faults.arm(.syncError(EIO), mayNotStrike: !synced) }
    let error = await #expect(throws: JournalError.self) { try await journal.append(Self.records(2)) }
    #expect(faults.counts.syncs - syncsBefore == (synced ? 1 : 0), "\(durability)")
    // The write fault struck (with `pwrite`, not the mapping), and so did the sync fault where
    // there is a sync; under `none` it stays armed: nothing was synced.
    #expect(faults.struck == (synced && syncFails ? 2 : 1), "\(durability)")
    #expect(faults.unstruck == (!synced && syncFails ? 1 : 0), "\(durability)")
    if synced && syncFails {
      #expect(error?.code == .durabilityLost, "\(String(describing: error))")
      #expect(journal.failure?.code == .durabilityLost, "the journal stops")
    } else {
      #expect(error?.code == .io, "\(String(describing: error))")
      #expect(journal.failure == nil, "a failed write that was undone does not stop the journal")
    }
  }

  /// A roll whose new segment cannot be opened stops the journal; closing it afterwards must not
  /// close the old segment's descriptor a second time: by then that number may be another file's
  /// (a test's, an app's), which the second close would take from under it.
  @Test func aRollThatCannotOpenTheNewSegmentClosesNothingTwice() async throws {
    let dir = TemporaryDirectory("faults-roll")
    let io = SegmentOpenFailingIO()
    var options = JournalFixtures.options(.none, segmentBytes: JournalOptions.minimumSegmentTargetBytes)
    options.io = io
    let journal = try Journal(directory: dir.path, options: options)
    try await journal.append(Self.records(0))
    io.armed.withLock { $0 = true }
    var failed = false
    for tag in 1..<200 where !failed {  // until a roll fails
      do { try await journal.append(Self.records(tag)) } catch { failed = true }
    }
    #expect(failed && journal.failure != nil)
    journal.close()
    let (opened, closedTwice) = io.descriptors.withLock { ($0.opened, $0.closedTwice) }
    #expect(opened > 0)
    #expect(closedTwice.isEmpty, "descriptors closed again after they were closed: \(closedTwice)")
  }

  @Test(arguments: [Durability.always, .batched])
  func aFailedSyncLosesDurabilityForGood(durability: Durability) async throws {
    let dir = TemporaryDirectory("sync-fault")
    let faults = FaultInjectingFileIO()
    let journal = try Journal(directory: dir.path, options: Self.options(faults, durability))
    var acknowledged: [NewRecord] = []
    for tag in 0..<5 {
      try await journal.append(Self.records(tag))
      acknowledged += Self.records(tag)
    }
    faults.arm(.syncError(EIO))
    let segment = try #require(JournalFixtures.segments(dir.path).last)
    let end = JournalFixtures.usedLength(try Files.read(dir.appending(segment)))
    do {
      try await journal.append(Self.records(50))
      Issue.record("the append should have failed")
    } catch let error as JournalError {
      #expect(error.code == .durabilityLost, "\(error)")
      // Located: the appends whose fate is unknown, and where they were written.
      let first = UInt64(acknowledged.count) + 1
      #expect(error.sequences == first...(first + UInt64(Self.records(50).count) - 1), "\(error)")
      #expect(error.file == segment && error.offset == Int64(end), "\(error)")
      #expect(error.description.contains("these appends may or may not be on disk"), "\(error)")
    }
    #expect(journal.lastSequence == UInt64(acknowledged.count))
    #expect(journal.failure?.code == .durabilityLost)
    faults.disarm()
    for tag in 51..<54 {
      do {
        try await journal.append(Self.records(tag))
        Issue.record("appends after a failed fsync must be refused")
      } catch let error as JournalError {
        #expect(error.code == .stopped, "refused, so certainly not written: \(error)")
      }
    }
    #expect(journal.lastSequence == UInt64(acknowledged.count))
    journal.close()

    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options(durability))
    #expect(reopened.lastSequence == UInt64(acknowledged.count))
    let range = try await reopened.append(Self.records(60))
    #expect(range.lowerBound == UInt64(acknowledged.count + 1))
    acknowledged += Self.records(60)
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == acknowledged.map(\.payload))
  }

  /// Records of about 1 KiB that LZ4 cannot shrink, so that segments fill at a known pace.
  static func kilobyteRecords(_ tag: Int) -> [NewRecord] {
    var state = UInt64(tag) &+ 0x9E37_79B9_7F4A_7C15
    let payload = (0..<1_000).map { _ -> UInt8 in
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return UInt8(truncatingIfNeeded: state >> 33)
    }
    return [NewRecord(timestamp: Int64(tag), payload: payload)]
  }

  /// Under `none`, each segment's data is synced once in the background when it holds three
  /// quarters of its target size, so that the fsync sealing it has little left to write.
  @Test func anEarlySyncRunsOnceForEverySegmentThatFillsThreeQuarters() async throws {
    let dir = TemporaryDirectory("early-sync")
    let faults = FaultInjectingFileIO()
    let target = 64 << 10
    let journal = try Journal(directory: dir.path, options: Self.options(faults, .none, segmentBytes: target))
    var acknowledged: [NewRecord] = []
    for tag in 0..<150 {
      let records = Self.kilobyteRecords(tag)
      try await journal.append(records)
      acknowledged += records
    }
    journal.close()
    let sizes = JournalFixtures.segments(dir.path).map { Files.size(dir.appending($0)) }
    #expect(sizes.count == 3, "150 KiB of records in segments of 64 KiB: \(sizes)")
    let filled = sizes.filter { Double($0) >= Double(target) * JournalWriter.earlySyncFraction }.count
    #expect(filled >= 2)
    // Nothing else syncs a segment's data under `none` (the seal syncs its metadata too).
    #expect(faults.segmentDataSyncs == filled)
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == acknowledged.map(\.payload))
  }

  /// An early sync that fails loses durability as the seal's own fsync failing would: the kernel
  /// reports a writeback error once per open file, so records acknowledged in the segment may read
  /// back stale once their pages leave the cache. The journal stops at the next append, with
  /// nothing of it written, where it used to acknowledge appends until the seal (up to a quarter
  /// of a segment more) and report the failure only there.
  @Test func aFailedEarlySyncStopsTheJournalAtTheNextAppend() async throws {
    let dir = TemporaryDirectory("early-sync-fault")
    let faults = FaultInjectingFileIO()
    let journal = try Journal(directory: dir.path, options: Self.options(faults, .none, segmentBytes: 64 << 10))
    faults.arm(.syncError(EIO))  // the next sync of a segment: under `none`, the early one
    let acknowledged = try await Self.appendUntilTheEarlySyncFails(journal, faults)
    let failed = await #expect(throws: JournalError.self) { try await journal.append(Self.kilobyteRecords(900)) }
    #expect(failed?.code == .durabilityLost, "\(String(describing: failed))")
    #expect(
      failed?.message.contains("the early fsync of the active segment failed") == true
        && failed?.message.contains("nothing of this append was written") == true, "\(String(describing: failed))")
    #expect(journal.lastSequence == UInt64(acknowledged.count))
    #expect(JournalFixtures.segments(dir.path).count == 1, "no segment after one whose sync failed")
    #expect(journal.failure?.code == .durabilityLost)
    let next = await #expect(throws: JournalError.self) { try await journal.append(Self.kilobyteRecords(999)) }
    #expect(next?.code == .stopped, "\(String(describing: next))")
    journal.close()
    faults.disarm()
    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options())
    #expect(reopened.lastSequence == UInt64(acknowledged.count))
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == acknowledged.map(\.payload))
  }

  /// A failed early sync that no append comes after is the closed journal's `failure`: closing
  /// used to drop it, so the journal looked as if nothing had failed.
  @Test func aFailedEarlySyncIsTheFailureOfAJournalClosedAfterIt() async throws {
    let dir = TemporaryDirectory("early-sync-fault-close")
    let faults = FaultInjectingFileIO()
    let journal = try Journal(directory: dir.path, options: Self.options(faults, .none, segmentBytes: 64 << 10))
    faults.arm(.syncError(EIO))
    _ = try await Self.appendUntilTheEarlySyncFails(journal, faults)
    journal.close()
    #expect(journal.failure?.code == .durabilityLost, "\(String(describing: journal.failure))")
    #expect(
      journal.failure?.message.contains("the journal was closed after it") == true,
      "\(String(describing: journal.failure))")
  }

  /// Appends 50 records of 1 KB to a journal of 64 KiB segments in two appends, 40 then 10, the
  /// second past three quarters of the segment, where the early sync starts (short of the seal),
  /// and waits until the armed fault has struck it and the writer has recorded the failure,
  /// appending nothing meanwhile. Returns the records acknowledged.
  static func appendUntilTheEarlySyncFails(_ journal: Journal, _ faults: FaultInjectingFileIO) async throws
    -> [NewRecord]
  {
    let acknowledged = (0..<50).flatMap { Self.kilobyteRecords($0) }
    try await journal.append(Array(acknowledged[..<40]))
    #expect(faults.struck == 0, "the early sync started before three quarters of the segment")
    try await journal.append(Array(acknowledged[40...]))
    #expect(journal.lastSequence == 50 && journal.failure == nil)
    let deadline = ContinuousClock.now + .seconds(60)
    while !journal.earlySyncHasFailed, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
    try #require(journal.earlySyncHasFailed, "the early sync did not fail within a minute")
    #expect(faults.struck == 1)
    return acknowledged
  }

  /// A workload with segment rolls under `.always`, run with its Nth write or sync call failing
  /// (on any file of the journal). A failed append is retried once; unless durability was lost,
  /// the retry succeeds. What was acknowledged must all be there after reopening, once, in order.
  static func sweepRun(_ fault: FaultInjectingFileIO.Fault?, skip n: Int) async throws -> (writes: Int, syncs: Int) {
    let dir = TemporaryDirectory("sweep")
    let faults = FaultInjectingFileIO()
    let journal = try Journal(directory: dir.path, options: Self.options(faults, .always, segmentBytes: 1 << 10))
    let context = "\(fault.map { "\($0)" } ?? "no fault") after \(n) calls"
    let atStart = faults.counts
    if let fault { faults.arm(fault, pathContains: "", skip: n) }
    var acknowledged: [NewRecord] = []
    var lost = false
    workload: for tag in 0..<24 {
      let batch = Self.records(tag, count: 1 + tag % 3)
      for attempt in 0..<2 {
        do {
          let range = try await journal.append(batch)
          #expect(range.lowerBound == UInt64(acknowledged.count + 1), "\(context)")
          acknowledged += batch
          break
        } catch let error as JournalError {
          #expect(journal.lastSequence == UInt64(acknowledged.count), "\(context)")
          if error.code == .durabilityLost {
            #expect(journal.failure?.code == .durabilityLost, "\(context)")
            lost = true
            break workload
          }
          #expect(error.code == .io, "\(context): \(error)")
          #expect(attempt == 0, "\(context): a fault strikes once, so the retry must not fail: \(error)")
          #expect(journal.failure == nil, "\(context): only lost durability stops the journal: \(error)")
        }
      }
    }
    if lost {
      await #expect(throws: JournalError.self, "\(context)") { try await journal.append(Self.records(99)) }
      #expect(journal.failure?.code == .durabilityLost, "\(context)")
    }
    let counts = (writes: faults.counts.writes - atStart.writes, syncs: faults.counts.syncs - atStart.syncs)
    if fault != nil { #expect(faults.struck == 1, "\(context): the fault should have struck") }
    journal.close()
    faults.disarm()

    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options(.always, segmentBytes: 1 << 10))
    if !lost { #expect(reopened.recovery.isClean, "\(context): \(reopened.recovery.movedAside)") }
    #expect(reopened.lastSequence == UInt64(acknowledged.count), "\(context)")
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == acknowledged.map(\.payload), "\(context)")
    return counts
  }

  @Test(arguments: [
    FaultInjectingFileIO.Fault.writeError(EIO), .writeError(ENOSPC), .shortWrite(bytes: 10, thenErrno: ENOSPC),
  ])
  func failingEveryWriteCallOfAWorkloadInTurn(fault: FaultInjectingFileIO.Fault) async throws {
    let clean = try await Self.sweepRun(nil, skip: 0)
    #expect(clean.writes > 24, "the workload should make more write calls than appends (rolls, index)")
    for n in 0..<clean.writes { _ = try await Self.sweepRun(fault, skip: n) }
  }

  @Test func failingEverySyncCallOfAWorkloadInTurn() async throws {
    let clean = try await Self.sweepRun(nil, skip: 0)
    #expect(clean.syncs > 24, "under .always every append and every roll syncs")
    for n in 0..<clean.syncs { _ = try await Self.sweepRun(.syncError(EIO), skip: n) }
  }
}

/// Fails opening a segment for writing once armed, and records which descriptors are closed
/// while not open (as far as this journal's own opens and closes say).
private final class SegmentOpenFailingIO: ForwardingFileIO {
  let base: any FileIO = PosixFileIO()
  let armed = Locked(false)
  let descriptors = Locked((open: Set<Int32>(), opened: 0, closedTwice: [Int32]()))

  func open(_ path: String, flags: Int32, mode: UInt32) throws -> Int32 {
    if flags == O_RDWR, path.hasSuffix(".lz4"), armed.withLock({ $0 }) {
      throw SystemCallError("open", path: path, errno: EMFILE)
    }
    let fd = try base.open(path, flags: flags, mode: mode)
    descriptors.withLock {
      $0.open.insert(fd)
      $0.opened += 1
    }
    return fd
  }

  func close(_ fd: Int32) {
    descriptors.withLock { if $0.open.remove(fd) == nil { $0.closedTwice.append(fd) } }
    base.close(fd)
  }
}
