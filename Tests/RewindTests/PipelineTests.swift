import Dispatch
import Glibc
import RewindJournal
import RewindTestSupport
import Synchronization
import Testing

@testable import Rewind

/// A flag that tasks wait for without polling: `wait()` suspends until `set()` (or returns at
/// once after it).
private final class Signal: Sendable {
  private let state = Mutex<(isSet: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

  func set() {
    let waiters = state.withLock { state in
      state.isSet = true
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in waiters { waiter.resume() }
  }

  func wait() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let isSet = state.withLock { state in
        if !state.isSet { state.waiters.append(continuation) }
        return state.isSet
      }
      if isSet { continuation.resume() }
    }
  }
}

/// A `FileIO` whose next segment write, once armed, waits until the test releases it, then
/// writes or fails with ENOSPC: it holds one append in the journal's writer while later commands
/// queue behind it.
private final class HoldingFileIO: ForwardingFileIO {
  private struct State {
    var armed = false
    var fail = false
  }
  let base: any FileIO = PosixFileIO()
  private let state = Mutex(State())
  private let release = DispatchSemaphore(value: 0)
  /// Set when the armed write starts being held.
  private let held = Signal()

  func holdNextWrite() { state.withLock { $0.armed = true } }
  /// Returns once the armed write is held (at once if it was held before).
  func waitUntilHolding() async { await held.wait() }
  func releaseWrite(failing: Bool) {
    state.withLock { $0.fail = failing }
    release.signal()
  }

  func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws -> Int {
    let hold = state.withLock { state -> Bool in
      guard state.armed, path.hasSuffix(".lz4") else { return false }
      state.armed = false
      return true
    }
    if hold {
      held.set()
      release.wait()
      if state.withLock({ $0.fail }) { throw SystemCallError("pwrite", path: path, errno: ENOSPC) }
    }
    return try base.pwrite(fd, bytes, at: offset, path: path)
  }

}

/// Runs tasks on a thread of its own. The held command runs here: its append is written on its
/// caller's thread, and a write held there must not block a thread of the cooperative pool.
private final class OwnThreadExecutor: TaskExecutor, @unchecked Sendable {
  private let queue = DispatchQueue(label: "rewind.tests.held-append")

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
  }
}

private func makeManager(_ directory: String, io: HoldingFileIO) throws -> Manager<Ledger> {
  var options = JournalOptions(durability: .always)
  options.io = io
  return try Manager<Ledger>(
    directory: directory, options: options, clock: .stepping(from: 1_700_000_000_000_000_000), ids: .sequential())
}

private func increment(_ manager: Manager<Ledger>, _ id: Identifier) async throws -> Int {
  try await manager.perform(.user) { ledger, command in
    let balance = (ledger.accounts.find(id: id)?.balance ?? 0) + 1
    command.record(BalanceSet(account: id, balance: balance))
    return balance
  }
}

/// Holds the first increment's append in the writer, then starts `behind` more increments, each
/// once the one before it has been handed to the journal (so each is its own append, queued
/// behind the held one). Returns the tasks, first the held one.
private func queueBehindAHeldAppend(
  _ manager: Manager<Ledger>, _ id: Identifier, io: HoldingFileIO, behind: Int
) async -> [Task<Int, any Error>] {
  let appendsBefore = manager.journalAppendCount
  io.holdNextWrite()
  var tasks = [Task(executorPreference: OwnThreadExecutor()) { try await increment(manager, id) }]
  await io.waitUntilHolding()
  for index in 1...behind {
    tasks.append(Task { try await increment(manager, id) })
    await manager.waitUntil(journalAppends: appendsBefore + 1 + index)
  }
  return tasks
}

// The time limits catch a deadlock (a command waiting forever behind a held write). They are
// generous because the limit runs on the wall clock: alone each test takes milliseconds, but in
// the full parallel suite on two cores every `await` here queues behind CPU-bound tests. The
// tests wait for what they need by signals (`Signal`, `Manager.waitUntil`), each wait one
// wake-up: spinning with `Task.yield()` needed a turn of the thread pool per look, and took
// 320-406 s (past an earlier limit of 5 minutes), then past 10 minutes, in full runs on a
// machine whose load was 12-18, with no deadlock.

/// Commands handed to the journal behind one still being written are applied and announced only
/// after it, in sequence order, each validated against the state its predecessors leave.
@Test(.timeLimit(.minutes(10))) func commandsBehindAnAppendInFlightAreAppliedOnlyAfterItInOrder() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let io = HoldingFileIO()
  let manager = try makeManager(directory, io: io)
  let id = try await manager.openAccount(owner: "shared")
  var changes = manager.changes().makeAsyncIterator()

  let tasks = await queueBehindAHeldAppend(manager, id, io: io, behind: 3)
  // Nothing is visible while the first append is unresolved, though three more wait behind it.
  #expect(manager.state.accounts.find(id: id)?.balance == 0)
  #expect(manager.lastSequence == 1)
  io.releaseWrite(failing: false)

  var results: [Int] = []
  for task in tasks { results.append(try await task.value) }
  #expect(results == [1, 2, 3, 4])
  #expect(manager.state.accounts.find(id: id)?.balance == 4)
  #expect(manager.lastSequence == 5)
  var seen: [ClosedRange<UInt64>] = []
  for _ in 0..<4 { seen.append(try #require(await changes.next()).sequences) }
  #expect(seen == [2...2, 3...3, 4...4, 5...5])
  manager.close()
  let events = try Replay.events(of: Ledger.self, directory: directory)
  #expect(events.dropFirst().compactMap { ($0.event as? BalanceSet)?.balance } == [1, 2, 3, 4])
}

/// When an append fails, the commands queued behind it were validated against a state that never
/// existed: they fail too, nothing of any of them is applied, announced or journaled, and the
/// next command validates against the committed state.
@Test(.timeLimit(.minutes(10))) func commandsBehindAFailedAppendFailAndNothingOfThemIsVisible() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let io = HoldingFileIO()
  let manager = try makeManager(directory, io: io)
  let id = try await manager.openAccount(owner: "shared")
  var changes = manager.changes().makeAsyncIterator()

  let tasks = await queueBehindAHeldAppend(manager, id, io: io, behind: 3)
  #expect(manager.state.accounts.find(id: id)?.balance == 0)
  io.releaseWrite(failing: true)

  for (index, task) in tasks.enumerated() {
    let error = await #expect(throws: ManagerError.self) { try await task.value }
    #expect(error?.code == .appendFailed)
    #expect(error?.journalError?.code == (index == 0 ? .io : .sequenceConflict))
  }
  #expect(manager.state.accounts.find(id: id)?.balance == 0)
  #expect(manager.lastSequence == 1)

  #expect(try await increment(manager, id) == 1)  // validated against what was committed
  #expect(manager.lastSequence == 2)
  let change = try #require(await changes.next())  // the failed commands announced nothing
  #expect(change.sequences == 2...2)
  manager.close()
  let events = try Replay.events(of: Ledger.self, directory: directory)
  #expect(events.map(\.envelope.sequence) == [1, 2])
  #expect(events.dropFirst().compactMap { ($0.event as? BalanceSet)?.balance } == [1])
  #expect(try Replay.rebuild(Ledger.self, directory: directory).state == manager.state)
}

/// Under `none`, a batch sent in the middle of a gate turn (here: one a large command overflowed)
/// is queued without being written, and an append that failed a moment before left nothing being
/// written that would take it. The next command of the turn sees the failure and waits for every
/// append in flight to settle: it must write that batch itself, or it waits forever while holding
/// the gate.
@Test(.timeLimit(.minutes(10))) func aRecoveryInATurnWritesTheBatchSentEarlierInIt() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let io = HoldingFileIO()
  var options = JournalOptions(durability: .none)
  options.io = io
  options.mapsActiveSegment = false  // every write goes through `pwrite`, which `io` holds
  options.limits = JournalLimits(maxRecordBytes: 1024, maxBatchBytes: 2048)  // two deposits overflow a batch
  let manager = try Manager<Ledger>(
    directory: directory, options: options, clock: .stepping(from: 1_700_000_000_000_000_000), ids: .sequential())
  let id = try await manager.openAccount(owner: "shared")
  let memo = String(repeating: "m", count: 600)
  @Sendable func deposit() async throws {
    try await manager.perform(.user) { _, command in
      command.record(Deposited(account: id, amount: 1, memo: memo))
    }
  }

  let calls = Mutex(0)
  let called = Signal()  // the first deposit's batch reached the hook
  let firstDone = Signal()
  manager.beforeAppend.withLock {
    $0 = { [weak manager] in
      let call = calls.withLock { calls in
        calls += 1
        return calls
      }
      if call == 1 {  // the first deposit's batch: sent once three deposits wait at the gate
        called.set()
        await manager?.waitUntil(waitingCommands: 3)
      } else if call == 2 {
        // The next holder staged one deposit and sends it because the second overflows: let the
        // first deposit's held write fail now, and its writer finish, before this batch is queued.
        io.releaseWrite(failing: true)
        await firstDone.wait()
      }
    }
  }
  io.holdNextWrite()
  let first = Task(executorPreference: OwnThreadExecutor()) {
    defer { firstDone.set() }
    try await deposit()
  }
  await called.wait()
  var followers: [Task<Void, any Error>] = []
  for count in 1...3 {  // one after another, so that they are staged in this order
    followers.append(Task { try await deposit() })
    // Not after the third: once three wait, the first deposit's hook lets them through at once.
    if count < 3 { await manager.waitUntil(waitingCommands: count) }
  }

  let failed = await #expect(throws: ManagerError.self) { try await first.value }
  #expect(failed?.journalError?.code == .io)
  for follower in followers.prefix(2) {  // the batch sent mid-turn, and the deposit staged after it
    let error = await #expect(throws: ManagerError.self) { try await follower.value }
    #expect(error?.code == .appendFailed)
  }
  try await followers[2].value  // validated after the recovery, against the committed state
  #expect(manager.state.accounts.find(id: id)?.balance == 1)
  #expect(manager.lastSequence == 2)
  manager.close()
  #expect(try Replay.rebuild(Ledger.self, directory: directory).state == manager.state)
}
