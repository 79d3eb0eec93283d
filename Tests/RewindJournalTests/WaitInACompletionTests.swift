import Dispatch
import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Calls that wait for the journal's writer, made in an append's completion: the thread that runs
/// a completion is the one writing its group (the writer thread, or under `none` a caller's thread
/// that wrote it as its leader), and it writes nothing else until the completion returns.
/// `appendAndWait` there fails at once with `.calledFromCompletion` (it used to wait for ever);
/// an async append from a task started there waits elsewhere and is made.
@Suite struct WaitInACompletionTests {
  static func record(_ tag: UInt8) -> NewRecord { NewRecord(timestamp: Int64(tag), payload: [tag, tag]) }

  /// What an `appendAndWait` in the completion of an append got, and on which thread it ran.
  private final class Answer: Sendable {
    let outcome = Locked<Result<ClosedRange<UInt64>, any Error>?>(nil)
    let thread = Locked<pthread_t?>(nil)
    let done = DispatchSemaphore(value: 0)
  }

  /// Queues record 1 with a completion that calls `appendAndWait([record 2])`.
  private static func enqueueWaitingCompletion(_ journal: Journal) -> Answer {
    let answer = Answer()
    journal.enqueue([record(1)], expectedFirst: nil) { _ in
      answer.thread.withLock { $0 = pthread_self() }
      answer.outcome.withLock { $0 = Result { try journal.appendAndWait([record(2)]) } }
      answer.done.signal()
    }
    return answer
  }

  /// Waits for the completion's `appendAndWait` to return. If it does not (it waits for itself),
  /// the journal is left open for good: closing it would wait for the stuck thread too.
  private static func awaitAnswer(_ answer: Answer, of journal: Journal) async throws {
    do {
      try await onOwnThread { try answer.done.wait(for: "the appendAndWait in the completion to return") }
    } catch {
      _ = Unmanaged.passRetained(journal)
      throw error
    }
  }

  /// After the refused call, the journal goes on: the next append, from a thread that is not
  /// writing, is made, and the journal holds records 1 and 3 only.
  private static func expectRefusedAndGoingOn(_ answer: Answer, journal: Journal, dir: TemporaryDirectory) async throws
  {
    let outcome = try #require(answer.outcome.withLock { $0 })
    guard case .failure(let error as JournalError) = outcome else {
      Issue.record("the appendAndWait in the completion was not refused by the journal: \(outcome)")
      return
    }
    #expect(error.code == .calledFromCompletion, "\(error)")
    #expect(error.description.contains("appendAndWait was called in an append's completion"), "\(error)")
    #expect(journal.lastSequence == 1)
    let next = try await onOwnThread { try journal.appendAndWait([record(3)]) }
    #expect(next == 2...2)
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == [[1, 1], [3, 3]])
  }

  /// Under `always` the writer thread writes every group and runs its completions: an
  /// `appendAndWait` there waited for the writer thread, which waited in it (hangs without the
  /// change, until `testWaitBound` gives up).
  @Test(.timeLimit(.minutes(10))) func anAppendAndWaitOnTheWriterThreadFailsAtOnce() async throws {
    let dir = TemporaryDirectory("wait-on-writer")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(.always))
    let answer = Self.enqueueWaitingCompletion(journal)
    journal.lead()
    try await Self.awaitAnswer(answer, of: journal)
    try await Self.expectRefusedAndGoingOn(answer, journal: journal, dir: dir)
  }

  /// Under `none` a caller's thread that finds the writer idle writes the queued append itself
  /// (`lead()`) and runs its completion while it still holds the writing: an `appendAndWait`
  /// there queued its append behind that write and waited for a writer that was itself (hangs
  /// without the change). A writer thread that has not reached its first wait yet may take the
  /// append first (then the completion runs there, and is refused the same way): try again until
  /// the leader ran it.
  @Test(.timeLimit(.minutes(10))) func anAppendAndWaitOnTheLeaderThatWroteTheAppendFailsAtOnce() async throws {
    for _ in 0..<50 {
      let dir = TemporaryDirectory("wait-on-leader")
      let journal = try Journal(directory: dir.path, options: JournalFixtures.options(.none))
      let answer = Self.enqueueWaitingCompletion(journal)
      let leader = Locked<pthread_t?>(nil)
      let led = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        leader.withLock { $0 = pthread_self() }
        journal.lead()
        led.signal()
      }
      try await Self.awaitAnswer(answer, of: journal)
      try await onOwnThread { try led.wait(for: "the lead to return") }
      let onLeader = answer.thread.withLock { thread in
        leader.withLock { leader in
          guard let thread, let leader else { return false }
          return pthread_equal(thread, leader) != 0
        }
      }
      try await Self.expectRefusedAndGoingOn(answer, journal: journal, dir: dir)
      if onLeader { return }
    }
    Issue.record("the writer thread wrote the append every time: the leader's case was not reached")
  }

  /// An async `append` from a task started in a completion is made, on the writer thread's
  /// completion (`always`) as on a leader's (`none`): the task waits elsewhere, and the thread
  /// that ran the completion goes on to write it.
  @Test(.timeLimit(.minutes(10))) func anAppendFromATaskStartedInACompletionIsMade() async throws {
    for durability in [Durability.always, .none] {
      let dir = TemporaryDirectory("task-in-completion")
      let journal = try Journal(directory: dir.path, options: JournalFixtures.options(durability))
      let started = Locked<Task<ClosedRange<UInt64>, any Error>?>(nil)
      let done = DispatchSemaphore(value: 0)
      journal.enqueue([Self.record(1)], expectedFirst: nil) { _ in
        started.withLock { $0 = Task { try await journal.append([Self.record(2)]) } }
        done.signal()
      }
      journal.lead()
      try await onOwnThread { try done.wait(for: "the completion to run") }
      let task = try #require(started.withLock { $0 })
      #expect(try await boundedValue(of: task) == 2...2, "\(durability)")
      journal.close()
      #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == [[1, 1], [2, 2]], "\(durability)")
    }
  }
}
