import Glibc
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// `Manager.changes(bufferingAtMost:)`: a reader that keeps up gets every change; one that falls
/// behind gets what its stream buffered, then `ChangeStreamError` saying where it stopped, without
/// slowing the commands or the other streams; closing ends the stream without an error.
@Suite struct ChangeStreamTests {
  private func open(_ directory: String, io: FaultInjectingFileIO? = nil) throws -> Manager<Ledger> {
    var options = JournalOptions(durability: .always)
    if let io { options.io = io }
    return try Manager<Ledger>(
      directory: directory, options: options, clock: .stepping(from: 1_700_000_000_000_000_000), ids: .sequential())
  }

  /// Opens `count` accounts in one command: one change of `count` events.
  private func openAccounts(_ manager: Manager<Ledger>, count: Int) async throws {
    try await manager.perform(.user) { _, command in
      for index in 0..<count { command.record(AccountOpened(id: command.newID(), owner: "o\(index)", labels: [])) }
    }
  }

  /// The changes `changes` holds until it ends, and the error it ends with (nil if it ends
  /// normally). Only for a stream that ends: the manager closed, or the stream fell behind.
  private func drain(_ changes: AsyncThrowingStream<CommittedChange, any Error>) async -> (
    sequences: [ClosedRange<UInt64>], error: (any Error)?
  ) {
    var sequences: [ClosedRange<UInt64>] = []
    do {
      for try await change in changes { sequences.append(change.sequences) }
      return (sequences, nil)
    } catch {
      return (sequences, error)
    }
  }

  /// A stream of one change at most, read after each command: each change finds the buffer
  /// empty, so the reader gets every one, in order; closing then ends the stream, no error.
  @Test(.timeLimit(.minutes(10))) func aReaderThatKeepsUpGetsEveryChangeInOrder() async throws {
    let temporary = TemporaryDirectory()
    let manager = try open(temporary.path)
    let id = try await manager.openAccount(owner: "a")
    var changes = manager.changes(bufferingAtMost: 1).makeAsyncIterator()
    for balance in 1...20 {
      #expect(try await increment(manager, id) == balance)
      let change = try #require(try await changes.next())
      #expect(change.sequences == UInt64(balance + 1)...UInt64(balance + 1))
      #expect((change.events.first?.event as? BalanceSet)?.balance == balance)
    }
    #expect(manager.observerCount == 1)
    manager.close()
    #expect(try await changes.next() == nil)
  }

  /// A reader that stops reading gets the `limit` changes (not events) that waited, then
  /// `fellBehind` naming the last sequence number it got. The commands succeed, and an unbounded
  /// stream and a larger bounded one get every change; the manager lets go of the full stream.
  @Test(.timeLimit(.minutes(10))) func aReaderThatStopsReadingGetsItsBufferThenFellBehind() async throws {
    let temporary = TemporaryDirectory()
    let manager = try open(temporary.path)
    let stuck = manager.changes(bufferingAtMost: 2)
    let unbounded = manager.changes()
    let roomy = manager.changes(bufferingAtMost: 10)
    #expect(manager.observerCount == 3)

    let id = try await manager.openAccount(owner: "a")  // 1
    try await openAccounts(manager, count: 3)  // 2...4: the stream is full
    try await manager.deposit(5, into: id)  // 5: not delivered to it
    try await manager.deposit(6, into: id)  // 6
    #expect(manager.lastSequence == 6)
    #expect(manager.state.accounts.find(id: id)?.balance == 11)
    try #require(manager.observerCount == 2, "the full stream was let go of")

    let (sequences, error) = await drain(stuck)
    #expect(sequences == [1...1, 2...4])
    let lagged = try #require(error as? ChangeStreamError, "\(String(describing: error))")
    #expect(lagged.code == .fellBehind)
    #expect(lagged.lastDelivered == 4)
    #expect(lagged.limit == 2)
    #expect(lagged.description.contains("from sequence 5"), "\(lagged)")

    try await manager.deposit(7, into: id)  // 7: still committed and announced to the others
    manager.close()
    var seen: [ClosedRange<UInt64>] = []
    for await change in unbounded { seen.append(change.sequences) }
    let expected: [ClosedRange<UInt64>] = [1...1, 2...4, 5...5, 6...6, 7...7]
    #expect(seen == expected)
    let roomyDrained = await drain(roomy)
    #expect(roomyDrained.sequences == expected)
    #expect(roomyDrained.error == nil)
  }

  /// A full stream ends at the change that found it full also when that change is one of several
  /// commands published from one append: it gets no change of that append after it.
  @Test(.timeLimit(.minutes(10))) func aSharedAppendEndsAFullStreamAtTheChangeThatFoundItFull() async throws {
    let temporary = TemporaryDirectory()
    let manager = try open(temporary.path)
    let id = try await manager.openAccount(owner: "shared")  // 1
    let stuck = manager.changes(bufferingAtMost: 2)
    var all = manager.changes().makeAsyncIterator()
    let calls = Locked(0)
    let held = Signal("the first append held")
    manager.beforeAppend.withLock {
      $0 = { [weak manager] in
        let call = calls.withLock { calls in
          calls += 1
          return calls
        }
        guard call == 1 else { return }
        held.set()
        do { try await manager?.waitUntil(waitingCommands: 4) } catch { Issue.record(error) }
      }
    }
    let first = Task { try await increment(manager, id) }  // 2, alone
    try await held.wait()
    let followers = (0..<4).map { _ in Task { try await increment(manager, id) } }  // 3...6, one append
    #expect(try await first.value == 1)
    var results: [Int] = []
    for follower in followers { results.append(try await follower.value) }
    #expect(results.sorted() == [2, 3, 4, 5])
    #expect(manager.journalAppendCount == 3)
    try #require(manager.observerCount == 1, "the full stream was let go of")

    let (sequences, error) = await drain(stuck)
    #expect(sequences == [2...2, 3...3])
    #expect((error as? ChangeStreamError)?.lastDelivered == 3, "\(String(describing: error))")
    for sequence in UInt64(2)...6 {
      let change = try #require(await all.next())
      #expect(change.sequences == sequence...sequence)
    }
    manager.close()
  }

  /// Closing ends a bounded stream without an error, after the changes it holds (also a full
  /// one); a stream asked for after `close()` ends at once, also after lost durability (entry 41).
  @Test(.timeLimit(.minutes(10))) func closingEndsABoundedStreamWithoutAnError() async throws {
    let temporary = TemporaryDirectory()
    let io = FaultInjectingFileIO()
    let manager = try open(temporary.path, io: io)
    let roomy = manager.changes(bufferingAtMost: 5)
    let full = manager.changes(bufferingAtMost: 2)
    let id = try await manager.openAccount(owner: "a")
    try await manager.deposit(1, into: id)
    io.arm(.syncError(EIO))
    let lost = await #expect(throws: ManagerError.self) { try await manager.deposit(1, into: id) }
    #expect(lost?.code == .durabilityLost)
    manager.close()
    #expect(manager.observerCount == 0)

    for stream in [roomy, full] {
      let (sequences, error) = await drain(stream)
      #expect(sequences == [1...1, 2...2])
      #expect(error == nil, "\(String(describing: error))")
    }
    let late = await drain(manager.changes(bufferingAtMost: 1))
    #expect(late.sequences.isEmpty)
    #expect(late.error == nil, "\(String(describing: late.error))")
    #expect(manager.observerCount == 0)
  }

  /// A reader that stops reading by leaving its loop detaches its bounded stream, as with
  /// `changes()`: the manager no longer feeds it.
  @Test(.timeLimit(.minutes(10))) func aReaderThatLeavesItsLoopDetachesItsStream() async throws {
    let temporary = TemporaryDirectory()
    let manager = try open(temporary.path)
    let reader = Task { () -> ClosedRange<UInt64>? in
      for try await change in manager.changes(bufferingAtMost: 4) { return change.sequences }
      return nil
    }
    try await manager.waitUntil(observersAttached: 1)
    _ = try await manager.openAccount(owner: "a")
    #expect(try await boundedValue(of: reader) == 1...1)
    #expect(manager.observerCount == 0)
    manager.close()
  }

  /// A limit below 1 is a programmer's error: it traps, saying so.
  @Test func aLimitBelowOneTraps() async {
    let zero = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let temporary = TemporaryDirectory()
      let manager = try Manager<Ledger>(directory: temporary.path)
      _ = manager.changes(bufferingAtMost: 0)
      manager.close()
    }
    let negative = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let temporary = TemporaryDirectory()
      let manager = try Manager<Ledger>(directory: temporary.path)
      _ = manager.changes(bufferingAtMost: -1)
      manager.close()
    }
    for (result, limit) in [(zero, 0), (negative, -1)] {
      let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
      #expect(message.contains("a change stream buffers at least 1 change, not \(limit)"), "\(message)")
    }
  }
}
