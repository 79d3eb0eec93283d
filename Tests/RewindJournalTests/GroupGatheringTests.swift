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

/// One append made through the package's `enqueue(notifying:)`, timed from the call to its
/// acknowledgement.
private enum TimedAppend {
  static func run(
    on journal: Journal, _ records: [NewRecord], expectedFirst: UInt64, waiters: Int
  ) async throws -> (range: ClosedRange<UInt64>, seconds: Double) {
    let outcome = Mutex<(Result<ClosedRange<UInt64>, JournalError>, ContinuousClock.Instant)?>(nil)
    let done = DispatchSemaphore(value: 0)
    let start = ContinuousClock.now
    journal.enqueue(records, expectedFirst: expectedFirst, waiters: waiters) { _, result in
      outcome.withLock { $0 = (result, .now) }
      done.signal()
    }
    journal.lead()
    let acknowledged = try await onOwnThread { done.wait(timeout: .now() + 60) == .success }
    try #require(acknowledged, "the append at \(expectedFirst) was not acknowledged within a minute")
    let (result, end) = try #require(outcome.withLock { $0 })
    let elapsed = end - start
    return (try result.get(), Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
  }
}
