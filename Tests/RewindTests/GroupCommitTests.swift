import Glibc
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

private func makeManager(
  _ directory: String, io: FaultInjectingFileIO? = nil, limits: JournalLimits = JournalLimits()
) throws -> Manager<Ledger> {
  var options = JournalOptions(durability: .always)
  if let io { options.io = io }
  options.limits = limits
  return try Manager<Ledger>(
    directory: directory, options: options, clock: .stepping(from: 1_700_000_000_000_000_000), ids: .sequential())
}

/// A `makeManager` over a fresh journal, in `temporary.appending("journal")`, with one account
/// opened for `owner`: what most tests here start from.
private func openedLedger(owner: String, limits: JournalLimits = JournalLimits()) async throws -> (
  temporary: TemporaryDirectory, manager: Manager<Ledger>, id: Identifier
) {
  let temporary = TemporaryDirectory()
  let manager = try makeManager(temporary.appending("journal"), limits: limits)
  return (temporary, manager, try await manager.openAccount(owner: owner))
}

/// Holds the first append it sees until `waiting` commands queue behind it, then runs `then`
/// before every later append. Returns a signal set once the first append is being held.
private func installHook(
  on manager: Manager<Ledger>, waiting: Int, then: @escaping @Sendable () async -> Void = {}
) -> Signal {
  let calls = Locked(0)
  let held = Signal("the first append held")
  manager.beforeAppend.withLock {
    $0 = { [weak manager] in
      let call = calls.withLock { calls in
        calls += 1
        return calls
      }
      guard call == 1 else { return await then() }
      held.set()
      do { try await manager?.waitUntil(waitingCommands: waiting) } catch { Issue.record(error) }
    }
  }
  return held
}

/// Commands that arrive while an append is in flight validate one after another against the state
/// their predecessors leave, and go to the journal together in one append.
@Test(.timeLimit(.minutes(10))) func waitingCommandsShareOneAppendAndStaySerial() async throws {
  let (temporary, manager, id) = try await openedLedger(owner: "shared")
  let directory = temporary.appending("journal")
  var changes = manager.changes().makeAsyncIterator()
  let held = installHook(on: manager, waiting: 5)

  let first = Task { try await increment(manager, id) }
  try await held.wait()
  let followers = (0..<5).map { _ in Task { try await increment(manager, id) } }
  var results = [try await first.value]
  for follower in followers { results.append(try await follower.value) }

  #expect(results.sorted() == [1, 2, 3, 4, 5, 6])
  #expect(manager.journalAppendCount == 3)  // the opening, the first increment, the five followers
  #expect(manager.state.accounts.find(id: id)?.balance == 6)
  var ranges: [ClosedRange<UInt64>] = []
  var commandIDs: Set<Identifier> = []
  for _ in 0..<6 {
    let change = try #require(await changes.next())
    ranges.append(change.sequences)
    commandIDs.insert(change.commandID)
    #expect(change.keys == [.record("accounts", id)])
  }
  #expect(ranges == (2...7).map { $0...$0 })
  #expect(commandIDs.count == 6)
  manager.close()
  let events = try Replay.events(of: Ledger.self, directory: directory)
  #expect(events.dropFirst().compactMap { ($0.event as? BalanceSet)?.balance } == [1, 2, 3, 4, 5, 6])
  #expect(try Replay.rebuild(Ledger.self, directory: directory).state == manager.state)
}

/// When a shared append fails, every command in it fails and none is visible; each can be retried.
@Test(.timeLimit(.minutes(10))) func aFailedSharedAppendFailsEveryCommandInIt() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let io = FaultInjectingFileIO()
  let manager = try makeManager(directory, io: io)
  let id = try await manager.openAccount(owner: "shared")
  var changes = manager.changes().makeAsyncIterator()
  let firstDone = Signal("the first increment committed")
  let held = installHook(on: manager, waiting: 3) {
    // The next holder stages the followers while the writer may still be writing the first
    // append: arm the fault only once that one is committed.
    do { try await firstDone.wait() } catch { Issue.record(error) }
    io.arm(.writeError(ENOSPC))
  }

  let first = Task {
    defer { firstDone.set() }
    return try await increment(manager, id)
  }
  try await held.wait()
  let followers = (0..<3).map { _ in Task { try await increment(manager, id) } }
  #expect(try await first.value == 1)
  for follower in followers {
    let error = await #expect(throws: ManagerError.self) { try await follower.value }
    #expect(error?.code == .appendFailed)
  }
  #expect(manager.state.accounts.find(id: id)?.balance == 1)
  #expect(manager.lastSequence == 2)
  manager.beforeAppend.withLock { $0 = nil }

  #expect(try await increment(manager, id) == 2)  // a retry validates against the committed state
  let seen = [try #require(await changes.next()), try #require(await changes.next())]
  #expect(seen.map(\.sequences) == [2...2, 3...3])
  manager.close()
  #expect(try Replay.rebuild(Ledger.self, directory: directory).state == manager.state)
}

/// Commands that queue at the gate while its holder is busy are staged by the next holder in one
/// turn, in arrival order, and go to the journal as one append: two turns and two appends for
/// six commands, not one of each per command.
@Test func commandsWaitingAtTheGateAreStagedInOneTurn() async throws {
  let (temporary, manager, id) = try await openedLedger(owner: "shared")
  let directory = temporary.appending("journal")
  let turnsBefore = manager.gateTurnCount
  let appendsBefore = manager.journalAppendCount
  let held = installHook(on: manager, waiting: 5)

  let first = Task { try await increment(manager, id) }
  try await held.wait()
  var followers: [Task<Int, any Error>] = []
  for index in 1...5 {
    followers.append(Task { try await increment(manager, id) })
    // Each follower queues before the next starts, so they arrive in order. Not the fifth: the
    // hook lets the turn go on once five wait, and the next holder takes them off the queue, so a
    // check for five waiting could come too late and never see it.
    if index < 5 { try await manager.waitUntil(waitingCommands: index) }
  }
  #expect(try await first.value == 1)
  var results: [Int] = []
  for follower in followers { results.append(try await follower.value) }

  #expect(results == [2, 3, 4, 5, 6])  // arrival order
  #expect(manager.gateTurnCount - turnsBefore == 2)
  #expect(manager.journalAppendCount - appendsBefore == 2)
  #expect(manager.lastSequence == 7)
  manager.close()
  let events = try Replay.events(of: Ledger.self, directory: directory)
  #expect(events.dropFirst().compactMap { ($0.event as? BalanceSet)?.balance } == [1, 2, 3, 4, 5, 6])
}

/// In a turn that stages several commands, one whose body throws and one whose task was
/// cancelled while it waited fail alone: nothing of them is written, and the commands around
/// them validate, commit and are announced in order as if they had not been there.
@Test(.timeLimit(.minutes(10))) func aCommandFailingInASharedTurnLeavesTheOthersAlone() async throws {
  let (temporary, manager, id) = try await openedLedger(owner: "shared")
  let directory = temporary.appending("journal")
  var changes = manager.changes().makeAsyncIterator()
  let turnsBefore = manager.gateTurnCount
  let held = installHook(on: manager, waiting: 4)

  let first = Task { try await increment(manager, id) }
  try await held.wait()
  let second = Task { try await increment(manager, id) }
  try await manager.waitUntil(waitingCommands: 1)
  let rejected = Task {
    try await manager.perform(.user) { _, command in
      command.record(BalanceSet(account: id, balance: 1_000))
      throw LedgerError(reason: "rejected")
    }
  }
  try await manager.waitUntil(waitingCommands: 2)
  let cancelled = Task { try await increment(manager, id) }
  try await manager.waitUntil(waitingCommands: 3)
  cancelled.cancel()
  let last = Task { try await increment(manager, id) }

  #expect(try await first.value == 1)
  #expect(try await second.value == 2)
  await #expect(throws: LedgerError(reason: "rejected")) { try await rejected.value }
  await #expect(throws: CancellationError.self) { try await cancelled.value }
  #expect(try await last.value == 3)
  #expect(manager.gateTurnCount - turnsBefore == 2)
  #expect(manager.state.accounts.find(id: id)?.balance == 3)
  var seen: [ClosedRange<UInt64>] = []
  for _ in 0..<3 { seen.append(try #require(await changes.next()).sequences) }
  #expect(seen == [2...2, 3...3, 4...4])
  manager.close()
  let events = try Replay.events(of: Ledger.self, directory: directory)
  #expect(events.dropFirst().compactMap { ($0.event as? BalanceSet)?.balance } == [1, 2, 3])
}

/// Holds an increment's append while a second increment, then the command `refused` records,
/// then a third increment queue at the gate, so that all three are served in one turn and share
/// one append. The three increments commit as if the refused command had not been there (the
/// balance and the journal's `BalanceSet`s are 1, 2, 3). Returns what the refused command threw.
private func refuseAmongIncrements(
  _ manager: Manager<Ledger>, directory: String, account id: Identifier,
  _ refused: @escaping @Sendable (inout Command) -> Void
) async throws -> ManagerError? {
  let held = installHook(on: manager, waiting: 3)
  let first = Task { try await increment(manager, id) }
  try await held.wait()
  let small = Task { try await increment(manager, id) }
  try await manager.waitUntil(waitingCommands: 1)
  let refusing = Task { try await manager.perform(.user) { _, command in refused(&command) } }
  try await manager.waitUntil(waitingCommands: 2)
  let last = Task { try await increment(manager, id) }

  #expect(try await first.value == 1)
  #expect(try await small.value == 2)
  let error = await #expect(throws: ManagerError.self) { try await refusing.value }
  #expect(try await last.value == 3)
  #expect(manager.state.accounts.find(id: id)?.balance == 3)
  #expect(manager.lastSequence == 4)
  manager.close()
  let events = try Replay.events(of: Ledger.self, directory: directory)
  #expect(events.dropFirst().compactMap { ($0.event as? BalanceSet)?.balance } == [1, 2, 3])
  return error
}

/// A command whose event is larger than the journal accepts fails alone, before it is staged, as
/// too large (retrying it would fail the same way); the commands sharing its turn and append are
/// journaled as if it had not been there.
@Test func anOversizedCommandFailsAloneAndTheOthersInItsTurnCommit() async throws {
  let (temporary, manager, id) = try await openedLedger(
    owner: "shared", limits: JournalLimits(maxRecordBytes: 4096, maxBatchBytes: 64 << 10))
  let directory = temporary.appending("journal")
  let error = try await refuseAmongIncrements(manager, directory: directory, account: id) { command in
    command.record(Deposited(account: id, amount: 100, memo: String(repeating: "m", count: 5000)))
  }
  #expect(error?.code == .tooLarge)
  #expect(error?.message.contains("4096") == true)
}

/// An event the model does not register, as one that cannot be encoded (TheFunnel.md,
/// "Failure").
private struct NotInTheLedger: Event {
  static let name = "ledger.not-registered"
  var note: String
}

/// A command that records an event its model does not register fails alone, before it is staged,
/// as one that cannot be encoded does (both are refused where its events are encoded); the
/// commands sharing its turn and append are journaled as if it had not been there, and nothing of
/// it is (not the registered event it recorded first either).
@Test func anUnencodableCommandFailsAloneAndTheOthersInItsTurnCommit() async throws {
  let (temporary, manager, id) = try await openedLedger(owner: "shared")
  let directory = temporary.appending("journal")
  let error = try await refuseAmongIncrements(manager, directory: directory, account: id) { command in
    command.record(Deposited(account: id, amount: 100, memo: "before"))
    command.record(NotInTheLedger(note: "refused"))
  }
  #expect(error?.code == .unregisteredEvent)
  #expect(try !Replay.events(of: Ledger.self, directory: directory).contains { $0.event is Deposited })
}

/// A command whose events fit one record each but not one batch is too large too.
@Test func aCommandLargerThanABatchIsTooLarge() async throws {
  let (temporary, manager, id) = try await openedLedger(
    owner: "shared", limits: JournalLimits(maxRecordBytes: 4096, maxBatchBytes: 16 << 10))
  defer { withExtendedLifetime(temporary) {} }
  let error = await #expect(throws: ManagerError.self) {
    try await manager.perform(.user) { _, command in
      for _ in 0..<8 { command.record(Deposited(account: id, amount: 1, memo: String(repeating: "m", count: 3000))) }
    }
  }
  #expect(error?.code == .tooLarge)
  #expect(error?.message.contains("16384") == true)
  #expect(manager.lastSequence == 1)
  try await manager.deposit(1, into: id)  // the manager goes on
  #expect(manager.state.accounts.find(id: id)?.balance == 1)
  manager.close()
}

/// The journal counts an append of several commands as that many callers when it gathers its next
/// group (under `always`, it waits about a sync for as many to be back; under `batched`, it stops
/// lingering once they are): each command's caller comes back on its own.
@Test(.timeLimit(.minutes(10))) func anAppendOfBatchedCommandsCountsEachCommandsCaller() async throws {
  let (temporary, manager, id) = try await openedLedger(owner: "shared")
  defer { withExtendedLifetime(temporary) {} }
  #expect(manager.journalLastGroupWaiters == 1)
  let held = installHook(on: manager, waiting: 5)
  let first = Task { try await increment(manager, id) }
  try await held.wait()
  let followers = (0..<5).map { _ in Task { try await increment(manager, id) } }
  _ = try await first.value
  for follower in followers { _ = try await follower.value }
  #expect(manager.journalAppendCount == 3)  // the opening, the first increment, the five followers
  // The five followers' append, alone or in one group with the first increment's.
  #expect([5, 6].contains(manager.journalLastGroupWaiters), "\(manager.journalLastGroupWaiters)")
  manager.close()
}

/// More commands waiting at the gate than one append or one turn takes (4,096 each): the holder
/// stages 4,096, sends them as one append and passes the gate on; the next holder stages the
/// rest. Nothing is lost or reordered by the split, and no frame holds more than 4,096 records.
@Test(.timeLimit(.minutes(10))) func moreWaitingCommandsThanOneAppendTakesAreSplit() async throws {
  let (temporary, manager, id) = try await openedLedger(owner: "many")
  let directory = temporary.appending("journal")
  let appendsBefore = manager.journalAppendCount
  let turnsBefore = manager.gateTurnCount
  let waiting = Manager<Ledger>.maximumBatchCommands + 904
  let held = installHook(on: manager, waiting: waiting)
  let first = Task { try await increment(manager, id) }
  try await held.wait()
  let followers = (0..<waiting).map { _ in Task { try await increment(manager, id) } }
  var results = [try await first.value]
  for follower in followers { results.append(try await follower.value) }
  #expect(results.sorted() == Array(1...(waiting + 1)))
  // The first increment, then 4,096 of the waiting ones, then the other 904.
  #expect(manager.journalAppendCount - appendsBefore == 3)
  #expect(manager.gateTurnCount - turnsBefore >= 3, "\(manager.gateTurnCount - turnsBefore) turns")
  #expect(manager.state.accounts.find(id: id)?.balance == waiting + 1)
  manager.close()
  var sizes: [Int] = []
  for name in Files.list(directory).filter({ $0.hasSuffix(".lz4") }) {
    sizes += segmentFrames(in: try Files.read(directory + "/" + name)).map { Int($0.header.recordCount) }
  }
  #expect(sizes.max() == Manager<Ledger>.maximumBatchCommands, "\(sizes)")
  #expect(sizes.suffix(2) == [Manager<Ledger>.maximumBatchCommands, 904], "\(sizes)")
  #expect(try Replay.rebuild(Ledger.self, directory: directory).state == manager.state)
}
