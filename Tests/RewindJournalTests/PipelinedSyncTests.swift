import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// The sync stage under `always`: a group written while an `fdatasync` runs is acknowledged only
/// after a later sync, a failed sync fails (and truncates away) every group written since the
/// last good one, and a roll or `close()` waits for the sync in flight.
///
/// Syncs are held in `FaultInjectingFileIO` (no timing): each test waits for a sync to be held,
/// or for a write to have returned, before it looks.
@Suite struct PipelinedSyncTests {
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
        done.wait()
        done.signal()
        return result.withLock { $0! }
      }
    }
  }

  static func records(_ tag: Int, count: Int = 3, padding: Int = 0) -> [NewRecord] {
    FaultInjectionTests.records(tag, count: count).map {
      NewRecord(timestamp: $0.timestamp, payload: $0.payload + [UInt8](repeating: UInt8(tag), count: padding))
    }
  }

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

  /// Appends group 1 and waits until its sync is held, then appends group 2 and waits until it
  /// is written (while that sync is still held).
  static func writeTwoGroupsDuringOneSync(
    _ journal: Journal, _ faults: FaultInjectingFileIO, second: [NewRecord] = records(11)
  ) async throws -> (Outcome, Outcome) {
    faults.holdSyncs()
    let first = Outcome(faults)
    journal.enqueue(records(10), expectedFirst: nil, completion: first.completion)
    _ = try await onOwnThread { faults.waitForHeldSyncs(1) }
    let writes = faults.writesCompleted
    let secondOutcome = Outcome(faults)
    journal.enqueue(second, expectedFirst: nil, completion: secondOutcome.completion)
    try await onOwnThread { faults.waitForCompletedWrites(writes + 1) }
    return (first, secondOutcome)
  }

  @Test func aGroupWrittenDuringASyncIsAcknowledgedOnlyAfterALaterSync() async throws {
    let dir = TemporaryDirectory("pipelined-ack")
    let faults = FaultInjectingFileIO()
    let (journal, acknowledgedBefore) = try await Self.journal(dir, faults)
    var acknowledged = acknowledgedBefore
    let (first, second) = try await Self.writeTwoGroupsDuringOneSync(journal, faults)
    #expect(!first.isDone && !second.isDone, "nothing is acknowledged before a sync covering it ends")
    #expect(journal.lastSequence == 9, "lastSequence moves only with acknowledgements")

    // The held sync began before group 2 was written: it may acknowledge group 1 only.
    faults.releaseSync()
    let firstRange = try await first.wait().get()
    #expect(firstRange == 10...12)
    let heldAgain = try await onOwnThread { faults.waitForHeldSyncs(1, unless: { second.isDone }) }
    #expect(heldAgain, "group 2 needs a sync of its own")
    #expect(!second.isDone, "group 2 was written after the first sync began, so that sync does not cover it")

    faults.stopHoldingSyncs()
    #expect(try await second.wait().get() == 13...15)
    acknowledged += Self.records(10) + Self.records(11)
    #expect(journal.lastSequence == 15)
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == acknowledged.map(\.payload))
  }

  @Test func aFailedSyncFailsAndTruncatesTheGroupWrittenWhileItRan() async throws {
    let dir = TemporaryDirectory("pipelined-fault")
    let faults = FaultInjectingFileIO()
    let (journal, acknowledged) = try await Self.journal(dir, faults)
    let segment = try #require(JournalFixtures.segments(dir.path).last)
    let sizeBefore = Files.size(dir.appending(segment))

    let (first, second) = try await Self.writeTwoGroupsDuringOneSync(journal, faults)
    #expect(Files.size(dir.appending(segment)) > sizeBefore, "both groups are written")
    faults.arm(.syncError(EIO))
    faults.stopHoldingSyncs()
    for outcome in [first, second] {
      switch try await outcome.wait() {
      case .success(let range): Issue.record("acknowledged \(range) although the sync covering it failed")
      case .failure(let error): #expect(error.code == .durabilityLost, "\(error)")
      }
    }
    #expect(Files.size(dir.appending(segment)) == sizeBefore, "both groups are truncated away")
    #expect(journal.failure?.code == .durabilityLost)
    #expect(journal.lastSequence == 9)
    await #expect(throws: JournalError.self) { try await journal.append(Self.records(12)) }
    journal.close()

    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options(.always))
    #expect(reopened.recovery.isClean, "\(reopened.recovery.movedAside)")
    #expect(reopened.lastSequence == 9)
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == acknowledged.map(\.payload))
  }

  /// Group 2 does not fit in the active segment: the roll must wait for group 1's sync, and
  /// when that sync fails, fail without creating the next segment.
  @Test(arguments: [false, true])
  func aRollWaitsForTheSyncInFlight(syncFails: Bool) async throws {
    let dir = TemporaryDirectory("pipelined-roll")
    let faults = FaultInjectingFileIO()
    let (journal, acknowledgedBefore) = try await Self.journal(dir, faults, segmentBytes: 1 << 10)
    var acknowledged = acknowledgedBefore
    #expect(JournalFixtures.segments(dir.path).count == 1)
    faults.holdSyncs()
    let first = Outcome(faults)
    journal.enqueue(Self.records(10), expectedFirst: nil, completion: first.completion)
    _ = try await onOwnThread { faults.waitForHeldSyncs(1) }
    let second = Outcome(faults)
    let large = Self.records(11, count: 2, padding: 600)
    journal.enqueue(large, expectedFirst: nil, completion: second.completion)
    #expect(!first.isDone && !second.isDone)

    if syncFails { faults.arm(.syncError(EIO)) }
    faults.stopHoldingSyncs()
    let outcomes = (try await first.wait(), try await second.wait())
    if syncFails {
      for outcome in [outcomes.0, outcomes.1] {
        #expect(throws: JournalError.self) { try outcome.get() }
        if case .failure(let error) = outcome { #expect(error.code == .durabilityLost, "\(error)") }
      }
      #expect(JournalFixtures.segments(dir.path).count == 1, "no segment after one whose sync failed")
    } else {
      #expect(try outcomes.0.get() == 10...12)
      #expect(try outcomes.1.get() == 13...14)
      #expect(JournalFixtures.segments(dir.path).count == 2)
      acknowledged += Self.records(10) + large
    }
    journal.close()
    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options(.always, segmentBytes: 1 << 10))
    #expect(reopened.recovery.isClean, "\(reopened.recovery.movedAside)")
    reopened.close()
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
    _ = try await onOwnThread { faults.waitForHeldSyncs(1) }
    let closed = Task { try await onOwnThread { journal.close() } }
    #expect(!first.isDone)
    faults.stopHoldingSyncs()
    try await closed.value
    #expect(first.isDone, "close() returns only after the sync in flight ended and its group was acknowledged")
    #expect(try first.result.withLock { try $0?.get() } == 10...12)
    acknowledged += Self.records(10)
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == acknowledged.map(\.payload))
  }
}
