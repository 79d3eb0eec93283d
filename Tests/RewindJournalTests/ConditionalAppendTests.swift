import RewindTestSupport
import Synchronization
import Testing

@testable import RewindJournal

/// `append(_:expectingFirstSequence:)` writes only where the caller expects the records to land.
@Test func aConditionalAppendWritesOnlyAtTheExpectedSequence() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let journal = try Journal(directory: directory)
  let record = NewRecord(timestamp: 1, payload: [1, 2, 3])
  #expect(try await journal.append([record, record], expectingFirstSequence: 1) == 1...2)

  for wrong: UInt64 in [1, 2, 4] {
    let error = await #expect(throws: JournalError.self) {
      try await journal.append([record], expectingFirstSequence: wrong)
    }
    #expect(error?.code == .sequenceConflict)
  }
  #expect(journal.lastSequence == 2)  // the refused appends consumed nothing
  #expect(try await journal.append([record], expectingFirstSequence: 3) == 3...3)
  journal.close()
  #expect(try JournalFixtures.readAll(directory).map(\.sequence) == [1, 2, 3])
}

/// Appends queued one after another, each expecting to follow the one before: once one is refused,
/// every one behind it is refused too, and completions arrive in the order the appends were made.
@Test func conditionalAppendsBehindARefusedOneAreRefusedInOrder() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let journal = try Journal(directory: directory)
  let record = NewRecord(timestamp: 1, payload: [7])
  let outcomes = OutcomeLog()
  // The second append expects sequence 5, not 2: it and the two that expect to follow it are refused.
  for (index, expected) in [UInt64(1), 5, 6, 7].enumerated() {
    journal.enqueue([record], expectedFirst: expected) { outcomes.add(index, $0) }
  }
  journal.enqueue([record], expectedFirst: nil) { outcomes.add(4, $0) }
  journal.close()
  #expect(outcomes.entries.map(\.0) == [0, 1, 2, 3, 4])
  #expect(outcomes.entries.map { (try? $0.1.get()) ?? 0...0 } == [1...1, 0...0, 0...0, 0...0, 2...2])
  #expect(outcomes.entries.dropFirst().prefix(3).allSatisfy { (try? $0.1.get()) == nil })
  #expect(try JournalFixtures.readAll(directory).map(\.sequence) == [1, 2])
}

private final class OutcomeLog: Sendable {
  private let log = Mutex<[(Int, Result<ClosedRange<UInt64>, JournalError>)]>([])
  func add(_ index: Int, _ outcome: Result<ClosedRange<UInt64>, JournalError>) {
    log.withLock { $0.append((index, outcome)) }
  }
  var entries: [(Int, Result<ClosedRange<UInt64>, JournalError>)] { log.withLock { $0 } }
}
