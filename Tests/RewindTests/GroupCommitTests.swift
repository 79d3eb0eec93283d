import Glibc
import RewindJournal
import RewindTestSupport
import Synchronization
import Testing

@testable import Rewind

private func makeManager(_ directory: String, io: FaultInjectingFileIO? = nil) throws -> Manager<Ledger> {
  var options = JournalOptions(durability: .always)
  if let io { options.io = io }
  return try Manager<Ledger>(
    directory: directory, options: options, clock: .stepping(from: 1_700_000_000_000_000_000), ids: .sequential())
}

/// Holds the first append it sees until `waiting` commands queue behind it, then runs `then`
/// before every later append. Returns a flag set once the first append is being held.
private func installHook(
  on manager: Manager<Ledger>, waiting: Int, then: @escaping @Sendable () -> Void = {}
) -> Held {
  let calls = Mutex(0)
  let held = Held()
  manager.beforeAppend.withLock {
    $0 = { [weak manager] in
      let call = calls.withLock { calls in
        calls += 1
        return calls
      }
      guard call == 1 else { return then() }
      held.flag.withLock { $0 = true }
      while let manager, manager.waitingCommands < waiting { await Task.yield() }
    }
  }
  return held
}

private final class Held: Sendable {
  let flag = Mutex(false)
  var isHeld: Bool { flag.withLock { $0 } }

  func wait() async {
    while !isHeld { await Task.yield() }
  }
}

private func increment(_ manager: Manager<Ledger>, _ id: Identifier) async throws -> Int {
  try await manager.perform(.user) { ledger, command in
    let balance = (ledger.accounts.find(id: id)?.balance ?? 0) + 1
    command.record(BalanceSet(account: id, balance: balance))
    return balance
  }
}

/// Commands that arrive while an append is in flight validate one after another against the state
/// their predecessors leave, and go to the journal together in one append.
@Test func waitingCommandsShareOneAppendAndStaySerial() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let manager = try makeManager(directory)
  let id = try await manager.openAccount(owner: "shared")
  var changes = manager.changes().makeAsyncIterator()
  let held = installHook(on: manager, waiting: 5)

  let first = Task { try await increment(manager, id) }
  await held.wait()
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
@Test func aFailedSharedAppendFailsEveryCommandInIt() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let io = FaultInjectingFileIO()
  let manager = try makeManager(directory, io: io)
  let id = try await manager.openAccount(owner: "shared")
  var changes = manager.changes().makeAsyncIterator()
  let held = installHook(on: manager, waiting: 3) { io.arm(.writeError(ENOSPC)) }

  let first = Task { try await increment(manager, id) }
  await held.wait()
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
