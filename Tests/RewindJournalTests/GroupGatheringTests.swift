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

/// Under `batched`, a producer that waits for each append gets no group of more than itself:
/// after two lingers that gathered nothing, the writer writes such groups at once, lingering
/// only before every sixteenth to notice producers that have come; once a linger gathers one,
/// it lingers before every group again.
@Test(.timeLimit(.minutes(2))) func batchedStopsLingeringForALoneProducerAndLooksAgainNowAndThen() async throws {
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
  // Then fifteen groups without lingering, and the sixteenth lingers again.
  for index in 0..<15 {
    let seconds = try await append()
    #expect(seconds < 0.5, "append \(index) of the lone producer waited \(seconds) s")
  }
  let probe = Mutex<(Result<ClosedRange<UInt64>, JournalError>, ContinuousClock.Instant)?>(nil)
  let probeDone = DispatchSemaphore(value: 0)
  let probeStart = ContinuousClock.now
  journal.enqueue([record], expectedFirst: next) { _, result in
    probe.withLock { $0 = (result, .now) }
    probeDone.signal()
  }
  // While it lingers, a second producer's append arrives: the linger gathers it.
  try await Task.sleep(for: .milliseconds(100))
  let second = try await TimedAppend.run(on: journal, [record], expectedFirst: next + 1, waiters: 1)
  #expect(second.range == (next + 1)...(next + 1))
  #expect(try await onOwnThread { probeDone.wait(timeout: .now() + 60) == .success })
  let (probed, end) = try #require(probe.withLock { $0 })
  #expect(try probed.get() == next...next)
  #expect(end - probeStart >= .milliseconds(750), "the sixteenth group did not linger")
  #expect(journal.lastGroupWaiters == 2)
  next += 2
  // A linger gathered something: lone appends linger again, after a group of two (as before)
  // and after a group of one, until two lingers in a row have gathered nothing.
  for index in 0..<2 {
    let seconds = try await append()
    #expect(seconds >= 0.75, "lone append \(index) after the gathering linger was written after \(seconds) s")
  }
  let seconds = try await append()
  #expect(seconds < 0.5, "after two lingers that gathered nothing, the lone producer waited \(seconds) s")
}
