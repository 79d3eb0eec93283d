import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// Change streams whose readers come and go while commands from several tasks commit in shared
/// turns: a reader that subscribes again from inside its own loop, one that leaves its loop, one
/// that throws out of it, one that stops reading. Each stream must hold a gapless run of changes,
/// one per committed command, starting at the first commit after it was asked for; a command the
/// model refuses is in none; a reader reading the manager in its loop finds the change applied
/// (a state and sequence number that include it, and agree); and the readers that left are let
/// go of, while the commands go on.
@Suite struct ObserverLifecycleTests {
  struct ReaderThrew: Error {}

  /// What one reader saw: the sequence numbers of its changes, and what it found wrong when it
  /// read the manager on receiving one.
  struct Run: Sendable {
    /// `lastSequence` just before and just after the stream was asked for.
    var subscribed: ClosedRange<UInt64>
    var sequences: [ClosedRange<UInt64>] = []
    var problems: [String] = []

    /// Takes `change`, checking that the manager's current state includes it: a balance of one
    /// per deposit, the account being opened at sequence 1 and every other record a deposit.
    mutating func take(_ change: CommittedChange, from manager: Manager<Ledger>, account: Identifier) {
      sequences.append(change.sequences)
      let (state, last) = manager.current
      if last < change.sequences.upperBound {
        problems.append("got \(change.sequences) while the manager stood at \(last)")
      }
      let balance = state.accounts.find(id: account)?.balance
      if balance != Int(last) - 1 { problems.append("at \(last) the balance was \(String(describing: balance))") }
    }

    /// Whether the changes follow one another without a gap or a repeat, the first being the
    /// first committed after the subscription.
    var isGapless: Bool {
      guard let first = sequences.first else { return true }
      return subscribed.contains(first.lowerBound - 1)
        && zip(sequences, sequences.dropFirst()).allSatisfy { $0.upperBound + 1 == $1.lowerBound }
    }
  }

  @Test(.timeLimit(.minutes(10))) func readersThatComeAndGoMidStreamSeeGaplessRunsOfAppliedChanges() async throws {
    let temporary = TemporaryDirectory()
    let manager = try Manager<Ledger>(
      directory: temporary.path, options: JournalOptions(durability: .none),
      clock: .stepping(from: 1_700_000_000_000_000_000), ids: .sequential())
    let account = try await manager.openAccount(owner: "a")  // 1
    let (writers, deposits) = (4, 60)

    // Subscribes again from inside its loop, three times, each new stream read to the end by a
    // task of its own.
    let resubscriber = Task { () -> (Run, [Task<Run, Never>]) in
      var run = Run(subscribed: manager.lastSequence...manager.lastSequence)
      var children: [Task<Run, Never>] = []
      for await change in manager.changes() {
        run.take(change, from: manager, account: account)
        guard [10, 40, 120].contains(run.sequences.count) else { continue }
        let before = manager.lastSequence
        let stream = manager.changes()
        let after = manager.lastSequence
        children.append(
          Task {
            var child = Run(subscribed: before...after)
            for await change in stream { child.take(change, from: manager, account: account) }
            return child
          })
      }
      return (run, children)
    }
    let leaver = Task { () -> Run in
      var run = Run(subscribed: 1...1)
      for await change in manager.changes() {
        run.take(change, from: manager, account: account)
        if run.sequences.count == 5 { break }
      }
      return run
    }
    let thrower = Task { () throws -> Run in
      var run = Run(subscribed: 1...1)
      for await change in manager.changes() {
        run.take(change, from: manager, account: account)
        if run.sequences.count == 3 { throw ReaderThrew() }
      }
      return run
    }
    let writersDone = Signal("the writers done")
    let stalled = Task { () -> (Run, ChangeStreamError?) in
      var run = Run(subscribed: 1...1)
      let stream = manager.changes(bufferingAtMost: 1)
      do {
        try await writersDone.wait()
        for try await change in stream { run.take(change, from: manager, account: account) }
        return (run, nil)
      } catch let error as ChangeStreamError {
        return (run, error)
      } catch {
        Issue.record(error)
        return (run, nil)
      }
    }
    try await manager.waitUntil(observersAttached: 4)

    // The writers go on until the resubscriber has asked for its third stream, so that each of
    // its streams is asked for while commands commit, and gets some of them.
    let resubscribed = Locked(false)
    let refusals = Locked((tried: 0, refused: 0))
    let tasks = (0..<writers).map { writer in
      Task {
        var index = 0
        while index < deposits || !resubscribed.withLock({ $0 }) {
          try await manager.deposit(1, into: account)
          if index % 10 == writer {
            refusals.withLock { $0.tried += 1 }
            do {
              try await manager.deposit(1, into: Identifier(high: 7, low: UInt64(index)))
              Issue.record("a deposit into a missing account was accepted")
            } catch is LedgerError {
              refusals.withLock { $0.refused += 1 }
            }
          }
          index += 1
        }
      }
    }
    try await manager.waitUntil(observersAttached: 7)
    resubscribed.withLock { $0 = true }
    for task in tasks { try await task.value }
    // The last stream may have been asked for after the writers' last commit.
    for _ in 0..<3 { try await manager.deposit(1, into: account) }
    let total = manager.lastSequence
    #expect(total > UInt64(writers * deposits))
    #expect(refusals.withLock { $0.tried == $0.refused && $0.tried > 0 })

    // The reader that left and the one that threw got the first changes, and were let go of; so
    // was the one that stopped reading, at the change that found its buffer full. The
    // resubscriber and its three streams remain.
    let left = await leaver.value
    #expect(left.sequences == (2...6).map { UInt64($0)...UInt64($0) })
    let threw = await thrower.result
    #expect(throws: ReaderThrew.self) { try threw.get() }
    #expect(manager.observerCount == 4)
    writersDone.set()
    let (stalledRun, stalledError) = await stalled.value
    #expect(stalledRun.sequences == [2...2])
    #expect(stalledError?.lastDelivered == 2, "\(String(describing: stalledError))")

    manager.close()
    let (run, children) = await resubscriber.value
    var runs = [("resubscriber", run), ("leaver", left), ("stalled", stalledRun)]
    for (index, child) in children.enumerated() {
      runs.append(("stream \(index + 1) of the resubscriber", await child.value))
    }
    #expect(children.count == 3)
    for (name, run) in runs {
      #expect(run.isGapless, "\(name): \(run.sequences) after subscribing within \(run.subscribed)")
      #expect(run.problems == [], "\(name)")
      if name != "leaver" && name != "stalled" {
        #expect(run.sequences.last?.upperBound == total, "\(name): \(run.sequences)")
      }
    }
    #expect(run.sequences.count == Int(total) - 1)
  }
}
