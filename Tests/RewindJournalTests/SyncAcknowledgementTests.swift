import Foundation
import RewindTestSupport
import Synchronization
import Testing

@testable import RewindJournal

/// Under `always`, an append is acknowledged only once the `fdatasync` covering it has ended,
/// and `close()` waits for a sync in flight and the acknowledgement that follows it.
///
/// Syncs are held in `FaultInjectingFileIO` (no timing): each test waits for a sync to be held
/// before it looks.
@Suite struct SyncAcknowledgementTests {
  /// One append's outcome, set by its completion.
  final class Outcome: Sendable {
    let result = Locked<Result<ClosedRange<UInt64>, JournalError>?>(nil)
    let faults: FaultInjectingFileIO
    private let done = DispatchSemaphore(value: 0)

    init(_ faults: FaultInjectingFileIO) { self.faults = faults }

    var completion: @Sendable (Result<ClosedRange<UInt64>, JournalError>) -> Void {
      { [self] outcome in
        result.withLock { $0 = outcome }
        done.signal()
        faults.poke()
      }
    }

    var isDone: Bool { result.withLock { $0 != nil } }

    func wait() async throws -> Result<ClosedRange<UInt64>, JournalError> {
      try await onOwnThread { [self] in
        try done.wait(for: "the append's completion")
        done.signal()
        return result.withLock { $0! }
      }
    }
  }

  static func records(_ tag: Int) -> [NewRecord] { FaultInjectionTests.records(tag) }

  /// A journal under `always` with three acknowledged appends of three records each.
  static func journal(_ dir: TemporaryDirectory, _ faults: FaultInjectingFileIO, segmentBytes: Int = 64 << 20)
    async throws -> (Journal, [NewRecord])
  {
    let journal = try Journal(
      directory: dir.path, options: FaultInjectionTests.options(faults, .always, segmentBytes: segmentBytes))
    var acknowledged: [NewRecord] = []
    for tag in 0..<3 {
      try await journal.append(records(tag))
      acknowledged += records(tag)
    }
    return (journal, acknowledged)
  }

  @Test func noAppendIsAcknowledgedBeforeItsSyncEnds() async throws {
    let dir = TemporaryDirectory("sync-ack")
    let faults = FaultInjectingFileIO()
    let (journal, acknowledgedBefore) = try await Self.journal(dir, faults)
    var acknowledged = acknowledgedBefore
    faults.holdSyncs()
    let first = Outcome(faults)
    journal.enqueue(Self.records(10), expectedFirst: nil, completion: first.completion)
    _ = try await onOwnThread { try faults.waitForHeldSyncs(1) }
    let second = Outcome(faults)
    journal.enqueue(Self.records(11), expectedFirst: nil, completion: second.completion)
    #expect(!first.isDone && !second.isDone, "nothing is acknowledged while the sync covering it runs")
    #expect(journal.lastSequence == 9, "lastSequence moves only with acknowledgements")

    faults.releaseSync()
    #expect(try await first.wait().get() == 10...12)
    // The append queued while the first sync ran waits for a sync of its own.
    let heldAgain = try await onOwnThread { try faults.waitForHeldSyncs(1, unless: { second.isDone }) }
    #expect(heldAgain, "the second append needs a sync that began after it was written")
    #expect(!second.isDone)
    faults.stopHoldingSyncs()
    #expect(try await second.wait().get() == 13...15)
    acknowledged += Self.records(10) + Self.records(11)
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == acknowledged.map(\.payload))
  }

  /// A failed sync leaves its own group's outcome unknown (`durabilityLost`), but appends queued
  /// behind that group were never written: they fail with `stopped`, so that their callers can
  /// tell "maybe written" from "certainly not written" (they used to get `durabilityLost` too).
  @Test(arguments: [Durability.always, .batched(maxDelay: .milliseconds(1))])
  func appendsQueuedBehindAFailedSyncAreRefusedAsNotWritten(durability: Durability) async throws {
    let dir = TemporaryDirectory("sync-fail-queued")
    let faults = FaultInjectingFileIO()
    let journal = try Journal(directory: dir.path, options: FaultInjectionTests.options(faults, durability))
    var acknowledged: [NewRecord] = []
    for tag in 0..<3 {
      try await journal.append(Self.records(tag))
      acknowledged += Self.records(tag)
    }
    faults.holdSyncs()
    let failing = Outcome(faults)
    journal.enqueue(Self.records(10), expectedFirst: nil, completion: failing.completion)
    _ = try await onOwnThread { try faults.waitForHeldSyncs(1) }
    let queued = [Outcome(faults), Outcome(faults)]
    journal.enqueue(Self.records(11), expectedFirst: nil, completion: queued[0].completion)
    journal.enqueue(Self.records(12), expectedFirst: 16, completion: queued[1].completion)
    faults.arm(.syncError(EIO))
    faults.stopHoldingSyncs()

    let lost = try await failing.wait()
    #expect(throws: JournalError.self) { try lost.get() }
    if case .failure(let error) = lost { #expect(error.code == .durabilityLost, "\(error)") }
    for outcome in queued {
      guard case .failure(let error) = try await outcome.wait() else {
        Issue.record("an append queued behind a failed sync was acknowledged")
        continue
      }
      #expect(error.code == .stopped, "\(error)")
      #expect(error.description.contains("nothing of this append was written"), "\(error)")
      #expect(error.description.contains("durabilityLost"), "names the failure that stopped the journal: \(error)")
    }
    #expect(journal.failure?.code == .durabilityLost, "the journal's failure stays the one that stopped it")
    #expect(faults.struck == 1)
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == acknowledged.map(\.payload))
  }

  @Test func closeWaitsForTheSyncInFlightAndItsAcknowledgement() async throws {
    let dir = TemporaryDirectory("pipelined-close")
    let faults = FaultInjectingFileIO()
    let (journal, acknowledgedBefore) = try await Self.journal(dir, faults)
    var acknowledged = acknowledgedBefore
    faults.holdSyncs()
    let first = Outcome(faults)
    journal.enqueue(Self.records(10), expectedFirst: nil, completion: first.completion)
    _ = try await onOwnThread { try faults.waitForHeldSyncs(1) }
    let returned = Atomic<Bool>(false)
    let closed = Task {
      try await onOwnThread {
        journal.close()
        returned.store(true, ordering: .releasing)
      }
    }
    // Once the close has begun, it must not return while the sync is held: a close that did not
    // wait would return at once (the pause gives it the time to; a close that waits never does).
    let deadline = ContinuousClock.now + .seconds(60)
    while !journal.isClosing, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
    try #require(journal.isClosing, "close() did not begin within a minute")
    try await Task.sleep(for: .milliseconds(100))
    let returnedWhileHeld = returned.load(ordering: .acquiring)
    #expect(!returnedWhileHeld, "close() returned while the sync in flight was held")
    #expect(!first.isDone)
    faults.stopHoldingSyncs()
    try await closed.value
    #expect(first.isDone, "close() returns only after the sync in flight ended and its group was acknowledged")
    #expect(try first.result.withLock { try $0?.get() } == 10...12)
    acknowledged += Self.records(10)
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == acknowledged.map(\.payload))
  }

  /// A segment removed under a writer (here with the journal's directory) still takes writes and
  /// syncs, and they go with it on close: under `always` and `batched` the append is not
  /// acknowledged but fails as `.durabilityLost`, and the journal stops. A journal whose
  /// directory was only renamed is still whole there, and goes on.
  @Test(arguments: [Durability.always, .batched(maxDelay: .milliseconds(1))], [false, true])
  func anAppendSyncedIntoARemovedSegmentIsNotAcknowledged(durability: Durability, renamed: Bool) async throws {
    let parent = TemporaryDirectory("sync-removed")
    let path = parent.appending("journal")
    let journal = try Journal(directory: path, options: JournalOptions(durability: durability))
    defer { journal.close() }
    try await journal.append(Self.records(0))
    if renamed {
      try FileManager.default.moveItem(atPath: path, toPath: parent.appending("moved"))
    } else {
      try FileManager.default.removeItem(atPath: path)
    }
    do {
      let appended = try await journal.append(Self.records(1))
      #expect(renamed, "acknowledged \(appended) into a removed segment")
      journal.close()
      #expect(
        try JournalFixtures.readAll(parent.appending("moved")).map(\.payload)
          == (Self.records(0) + Self.records(1)).map(\.payload))
    } catch let error as JournalError {
      #expect(!renamed, "\(error)")
      #expect(error.code == .durabilityLost, "\(error)")
      #expect(error.message.contains("the active segment was removed"), "\(error)")
      let next = await #expect(throws: JournalError.self) { try await journal.append(Self.records(2)) }
      #expect(next?.code == .stopped, "\(String(describing: next))")
    }
  }

  /// A segment removed alone (the directory stays) when the next group seals it: going on in a
  /// new segment would leave a gap before it that opening refuses and repair will not pass, with
  /// every append after it acknowledged. The seal fails the group as `.durabilityLost` under
  /// every policy, and the journal stops.
  @Test(arguments: [Durability.none, .always])
  func aRollOverARemovedSegmentStopsTheJournal(durability: Durability) async throws {
    let dir = TemporaryDirectory("sync-removed-roll")
    var options = JournalOptions(durability: durability)
    options.segmentTargetBytes = 4 << 10
    let journal = try Journal(directory: dir.path, options: options)
    defer { journal.close() }
    let small = [NewRecord(timestamp: 1, payload: [UInt8](repeating: 1, count: 1_000))]
    try await journal.append(small)
    let segment = try #require(JournalFixtures.segments(dir.path).last)
    try FileManager.default.removeItem(atPath: dir.appending(segment))
    let large = [NewRecord(timestamp: 2, payload: [UInt8](repeating: 2, count: 4_000))]
    let error = await #expect(throws: JournalError.self) { try await journal.append(large) }
    #expect(error?.code == .durabilityLost, "\(String(describing: error))")
    #expect(error?.file == segment, "\(String(describing: error))")
    #expect(JournalFixtures.segments(dir.path).isEmpty, "no segment after the removed one")
    let next = await #expect(throws: JournalError.self) { try await journal.append(small) }
    #expect(next?.code == .stopped, "\(String(describing: next))")
  }
}
