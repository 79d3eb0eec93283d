import Dispatch
import Foundation
import RewindTestSupport
import Synchronization
import Testing

@testable import RewindJournal

/// Under `batched`, the writer lingers for more appends unless as many callers wait as waited for
/// the last group: an append counts the callers its appender says wait for it (a manager's append,
/// the commands batched into it), not one.
@Test(.timeLimit(.minutes(10))) func batchedStopsLingeringOnceTheLastGroupsCallersWait() async throws {
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
  let waitsBefore = journal.gatheringWaits.waits
  let again = try await TimedAppend.run(on: journal, [small], expectedFirst: 2, waiters: 3)
  #expect(again.range == 2...2)
  #expect(journal.gatheringWaits.waits == waitsBefore, "lingered \(again.seconds) s for the callers already there")
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
@Test(.timeLimit(.minutes(10))) func alwaysWaitsForTheLastGroupsCallersBeforeSyncing() async throws {
  let temporary = TemporaryDirectory()
  let faults = FaultInjectingFileIO()
  var options = JournalOptions(durability: .always)
  options.io = faults
  // The wait lasts about as long as the last sync took: held below for 2 s, so that the append
  // bringing the rest 100 ms later finds the writer still waiting on a loaded machine.
  options.alwaysGatherLimit = .seconds(60)
  let journal = try Journal(directory: temporary.appending("journal"), options: options)
  defer { journal.close() }

  // On a thread of its own: the pauses must not wait for the cooperative pool, which the rest of
  // the suite can keep busy for longer than the writer waits.
  let seen = try await onOwnThread { () throws -> AlwaysGathering in
    // A group of one append that three callers wait for, its sync held for 2 s.
    faults.holdSyncs()
    let first = PendingAppendOutcome(on: journal, [NewRecord(timestamp: 1, payload: [1])], expectedFirst: 1, waiters: 3)
    try faults.waitForHeldSyncs(1)
    Thread.sleep(forTimeInterval: 2)
    faults.stopHoldingSyncs()
    let firstOutcome = try first.waitHere()
    let firstWaiters = journal.lastGroupWaiters
    let syncsBefore = faults.segmentDataSyncs
    let waitsBefore = journal.gatheringWaits
    // One of the three callers is back; the other two, in one append, 100 ms later.
    let one = PendingAppendOutcome(on: journal, [NewRecord(timestamp: 2, payload: [2])], expectedFirst: 2, waiters: 1)
    Thread.sleep(forTimeInterval: 0.1)
    let two = PendingAppendOutcome(on: journal, [NewRecord(timestamp: 3, payload: [3])], expectedFirst: 3, waiters: 2)
    let (oneOutcome, twoOutcome) = (try one.waitHere(), try two.waitHere())
    let waitsAfter = journal.gatheringWaits
    return AlwaysGathering(
      first: firstOutcome, firstWaiters: firstWaiters, one: oneOutcome, two: twoOutcome,
      lastWaiters: journal.lastGroupWaiters, syncs: faults.segmentDataSyncs - syncsBefore,
      waits: waitsAfter.waits - waitsBefore.waits, waitsToTheLimit: waitsAfter.toTheLimit - waitsBefore.toTheLimit)
  }
  #expect(try seen.first.result.get() == 1...1)
  #expect(seen.firstWaiters == 3)
  #expect(try seen.one.result.get() == 2...2)
  #expect(try seen.two.result.get() == 3...3)
  #expect(seen.lastWaiters == 3, "the append one caller waits for was synced without the other two")
  #expect(seen.syncs == 1)
  // They ended the wait: it would otherwise have lasted about 1.9 s more.
  #expect(seen.waits == 1, "the writer waited \(seen.waits) times for the callers")
  #expect(seen.waitsToTheLimit == 0, "acknowledged \(seen.two.seconds) s after the rest of the callers were back")
}

/// What `alwaysWaitsForTheLastGroupsCallersBeforeSyncing` saw.
private struct AlwaysGathering: Sendable {
  var first: AppendOutcome
  var firstWaiters: Int
  var one: AppendOutcome
  var two: AppendOutcome
  /// The callers of the group that held the last two appends.
  var lastWaiters: Int
  /// The segment's data syncs for the last two appends.
  var syncs: Int
  /// The writer's gathering waits for the last two appends, and those that ran to their limit.
  var waits: Int
  var waitsToTheLimit: Int
}

/// An append's outcome, and how long after it was queued it came.
private struct AppendOutcome: Sendable {
  var result: Result<ClosedRange<UInt64>, JournalError>
  var seconds: Double
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

  /// Whether the outcome has come.
  var isDone: Bool { outcome.withLock { $0 != nil } }

  /// The outcome, blocking this thread until it comes.
  /// - Throws: `WaitGaveUp` if it did not come within `testWaitBound`.
  func waitHere() throws -> AppendOutcome {
    try done.wait(for: "the acknowledgement of the append at \(expectedFirst)")
    done.signal()
    let (result, end) = outcome.withLock { $0! }
    let elapsed = end - start
    return AppendOutcome(
      result: result,
      seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
  }

  /// The range it was written at, and how long after it was queued that came.
  func wait() async throws -> (range: ClosedRange<UInt64>, seconds: Double) {
    let outcome = try await onOwnThread { [self] in try waitHere() }
    return (try outcome.result.get(), outcome.seconds)
  }
}

/// Under `batched`, a producer that waits for each append gets no group of more than itself:
/// after two lingers that gathered nothing, the writer writes such groups at once, lingering
/// only before every sixteenth to notice producers that have come; once a linger gathers one,
/// it lingers before every group again.
@Test(.timeLimit(.minutes(10))) func batchedStopsLingeringForALoneProducerAndLooksAgainNowAndThen() async throws {
  let temporary = TemporaryDirectory()
  let journal = try Journal(
    directory: temporary.appending("journal"), options: JournalOptions(durability: .batched(maxDelay: .seconds(8))))
  defer { journal.close() }
  let record = NewRecord(timestamp: 1, payload: [1])
  var next: UInt64 = 1
  func append(waiters: Int = 1) async throws -> Double {
    let appended = try await TimedAppend.run(on: journal, [record], expectedFirst: next, waiters: waiters)
    #expect(appended.range == next...next)
    next += 1
    return appended.seconds
  }

  // Two lingers of an eighth of the delay (1 s) that gather nothing.
  for _ in 0..<2 {
    let seconds = try await append()
    #expect(seconds >= 0.75, "written after \(seconds) s: the first appends linger")
  }
  // Then fifteen groups without lingering, and the sixteenth lingers again: while it does, a
  // second producer's append arrives, and the linger gathers it. On a thread of its own, so that
  // the pause does not wait for the cooperative pool longer than the writer lingers.
  let waitsBeforeTheFifteen = journal.gatheringWaits.waits
  for _ in 0..<15 { _ = try await append() }
  #expect(journal.gatheringWaits.waits == waitsBeforeTheFifteen, "the lone producer's fifteen groups lingered")
  let probing = next
  let (probe, second) = try await onOwnThread { () throws -> (AppendOutcome, AppendOutcome) in
    let probe = PendingAppendOutcome(on: journal, [record], expectedFirst: probing, waiters: 1)
    Thread.sleep(forTimeInterval: 0.1)
    let second = PendingAppendOutcome(on: journal, [record], expectedFirst: probing + 1, waiters: 1)
    return (try probe.waitHere(), try second.waitHere())
  }
  #expect(try probe.result.get() == probing...probing)
  #expect(try second.result.get() == (probing + 1)...(probing + 1))
  #expect(probe.seconds >= 0.75, "the sixteenth group did not linger (written after \(probe.seconds) s)")
  #expect(journal.lastGroupWaiters == 2)
  next += 2
  // A linger gathered something: lone appends linger again, after a group of two (as before)
  // and after a group of one, until two lingers in a row have gathered nothing.
  for index in 0..<2 {
    let seconds = try await append()
    #expect(seconds >= 0.75, "lone append \(index) after the gathering linger was written after \(seconds) s")
  }
  let waitsBeforeTheLast = journal.gatheringWaits.waits
  let seconds = try await append()
  #expect(
    journal.gatheringWaits.waits == waitsBeforeTheLast,
    "after two lingers that gathered nothing, the lone producer's group lingered (\(seconds) s)")
}

/// A group written without lingering (a lone producer under `batched`, after two lingers that
/// gathered nothing) is still acknowledged only once its sync has returned: the skip leaves out
/// the wait, not the fsync (DESIGN.md, durability).
@Test(.timeLimit(.minutes(10))) func batchedWithoutLingeringStillAcknowledgesAfterTheSync() async throws {
  let temporary = TemporaryDirectory()
  let faults = FaultInjectingFileIO()
  var options = JournalOptions(durability: .batched(maxDelay: .seconds(8)))
  options.io = faults
  let journal = try Journal(directory: temporary.appending("journal"), options: options)
  defer { journal.close() }
  let record = NewRecord(timestamp: 1, payload: [1])
  // Two lingers of 1 s that gather nothing: the next group goes without one.
  for sequence: UInt64 in 1...2 {
    let appended = try await TimedAppend.run(on: journal, [record], expectedFirst: sequence, waiters: 1)
    #expect(appended.range == sequence...sequence)
  }
  let seen = try await onOwnThread {
    () throws -> (held: Double, doneWhileHeld: Bool, syncs: Int, waits: Int, outcome: AppendOutcome) in
    let syncsBefore = faults.segmentDataSyncs
    let waitsBefore = journal.gatheringWaits.waits
    faults.holdSyncs()
    let start = ContinuousClock.now
    let third = PendingAppendOutcome(on: journal, [record], expectedFirst: 3, waiters: 1)
    try faults.waitForHeldSyncs(1)
    let held = start.duration(to: .now)
    Thread.sleep(forTimeInterval: 0.2)
    let doneWhileHeld = third.isDone
    faults.stopHoldingSyncs()
    let outcome = try third.waitHere()
    return (
      Double(held.components.seconds) + Double(held.components.attoseconds) / 1e18, doneWhileHeld,
      faults.segmentDataSyncs - syncsBefore, journal.gatheringWaits.waits - waitsBefore, outcome
    )
  }
  #expect(seen.waits == 0, "the third append lingered: its sync began \(seen.held) s after it was queued")
  #expect(!seen.doneWhileHeld, "acknowledged while its sync was held")
  #expect(seen.syncs == 1)
  #expect(try seen.outcome.result.get() == 3...3)
  journal.close()
  #expect(try JournalFixtures.readAll(temporary.appending("journal")).map(\.sequence) == [1, 2, 3])
}
