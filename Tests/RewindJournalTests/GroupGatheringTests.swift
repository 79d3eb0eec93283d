import Dispatch
import RewindTestSupport
import Synchronization
import Testing

@testable import RewindJournal

/// Under `batched`, the writer lingers for more appends unless as many callers wait as waited for
/// the last group: an append counts the callers its appender says wait for it (a manager's append,
/// the commands batched into it), not one.
@Test(.timeLimit(.minutes(2))) func batchedStopsLingeringOnceTheLastGroupsCallersWait() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  var options = JournalOptions(durability: .batched(maxDelay: .seconds(16)))
  // A frame's worth ends the linger at once: the first append fills one, the others do not.
  options.frameTargetBytes = 128
  let journal = try Journal(directory: directory, options: options)
  defer { journal.close() }
  let large = NewRecord(timestamp: 1, payload: [UInt8](repeating: 1, count: 200))
  let small = NewRecord(timestamp: 2, payload: [2])

  // A group of one append that three callers wait for.
  let first = try await TimedAppend.run(on: journal, [large], expectedFirst: 1, waiters: 3)
  #expect(first.range == 1...1)
  #expect(journal.lastGroupWaiters == 3)

  // As many callers again: written without lingering (an eighth of the delay, 2 s, without arrivals).
  let again = try await TimedAppend.run(on: journal, [small], expectedFirst: 2, waiters: 3)
  #expect(again.range == 2...2)
  #expect(again.seconds < 1, "waited \(again.seconds) s for the callers already there")
  #expect(journal.lastGroupWaiters == 3)

  // Fewer callers than last time: the writer lingers for the rest until the queue stops growing.
  let fewer = try await TimedAppend.run(on: journal, [small], expectedFirst: 3, waiters: 1)
  #expect(fewer.range == 3...3)
  #expect(fewer.seconds >= 1.5, "written after \(fewer.seconds) s, without lingering for the others")
  #expect(journal.lastGroupWaiters == 1)
}

/// Under `always`, after a group that several callers waited for, the writer waits (about as long
/// as the last sync took) until as many callers wait again before it syncs, and no longer than
/// that: an append that fewer wait for is not synced alone, and the one that brings the rest
/// ends the wait. Callers, not appends: the last group was one append, so counting appends it
/// would not wait at all.
@Test(.timeLimit(.minutes(2))) func alwaysWaitsForTheLastGroupsCallersBeforeSyncing() async throws {
  let temporary = TemporaryDirectory()
  let faults = FaultInjectingFileIO()
  var options = JournalOptions(durability: .always)
  options.io = faults
  // The wait lasts about as long as the last sync took: held below for 2 s, so that the append
  // bringing the rest 100 ms later finds the writer still waiting on a loaded machine.
  options.alwaysGatherLimit = .seconds(60)
  let journal = try Journal(directory: temporary.appending("journal"), options: options)
  defer { journal.close() }

  // A group of one append that three callers wait for, its sync held for 2 s.
  faults.holdSyncs()
  let first = PendingAppendOutcome(on: journal, [NewRecord(timestamp: 1, payload: [1])], expectedFirst: 1, waiters: 3)
  _ = try await onOwnThread { try faults.waitForHeldSyncs(1) }
  try await Task.sleep(for: .seconds(2))
  faults.stopHoldingSyncs()
  #expect(try await first.wait().range == 1...1)
  #expect(journal.lastGroupWaiters == 3)
  let syncsBefore = faults.segmentDataSyncs

  // One of the three callers is back; the other two, in one append, 100 ms later.
  let one = PendingAppendOutcome(on: journal, [NewRecord(timestamp: 2, payload: [2])], expectedFirst: 2, waiters: 1)
  try await Task.sleep(for: .milliseconds(100))
  let two = PendingAppendOutcome(on: journal, [NewRecord(timestamp: 3, payload: [3])], expectedFirst: 3, waiters: 2)
  #expect(try await one.wait().range == 2...2)
  let both = try await two.wait()
  #expect(both.range == 3...3)
  #expect(journal.lastGroupWaiters == 3, "the append one caller waits for was synced without the other two")
  #expect(faults.segmentDataSyncs == syncsBefore + 1)
  // They ended the wait: it would otherwise have lasted about 1.9 s more.
  #expect(both.seconds < 1, "acknowledged \(both.seconds) s after the rest of the callers were back")
}

/// One append made through the package's `enqueue(notifying:)`, timed from the call to its
/// acknowledgement.
private enum TimedAppend {
  static func run(
    on journal: Journal, _ records: [NewRecord], expectedFirst: UInt64, waiters: Int
  ) async throws -> (range: ClosedRange<UInt64>, seconds: Double) {
    let pending = PendingAppendOutcome(on: journal, records, expectedFirst: expectedFirst, waiters: waiters)
    journal.lead()
    return try await pending.wait()
  }
}

/// An append queued through the package's `enqueue(notifying:)` (under `always` and `batched` the
/// writer thread writes it: no `lead()` is needed), and its outcome once acknowledged, timed from
/// the call.
private final class PendingAppendOutcome: Sendable {
  private let outcome = Mutex<(Result<ClosedRange<UInt64>, JournalError>, ContinuousClock.Instant)?>(nil)
  private let done = DispatchSemaphore(value: 0)
  private let start = ContinuousClock.now
  private let expectedFirst: UInt64

  init(on journal: Journal, _ records: [NewRecord], expectedFirst: UInt64, waiters: Int) {
    self.expectedFirst = expectedFirst
    journal.enqueue(records, expectedFirst: expectedFirst, waiters: waiters) { [self] _, result in
      outcome.withLock { $0 = (result, .now) }
      done.signal()
    }
  }

  func wait() async throws -> (range: ClosedRange<UInt64>, seconds: Double) {
    let acknowledged = try await onOwnThread { [done] in done.wait(timeout: .now() + 60) == .success }
    try #require(acknowledged, "the append at \(expectedFirst) was not acknowledged within a minute")
    let (result, end) = try #require(outcome.withLock { $0 })
    let elapsed = end - start
    return (try result.get(), Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
  }
}
