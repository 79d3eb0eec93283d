import Foundation
import Rewind
import RewindCLI
import RewindJournal
import RewindTestSupport
import Testing

// A ledger written from the README and the DocC articles alone, as an app other than Notebook
// would: accounts with balances in a currency (typed ids, sets and dictionaries in records and
// events), transfers from several origins and many tasks at once, a value store of settings,
// accounts grouped by currency, an upcaster for a deposit whose schema changed (the journal written
// by the older app's model), an invariant that bisect finds broken, and the ledger registered with
// the tool, whose replay-level commands are run on its journal.

struct AccountID: EntityIdentifier {
  var raw: Identifier
  init(_ raw: Identifier) { self.raw = raw }
}

struct Account: StoreRecord, Codable {
  var id: AccountID
  var owner: String
  var currency: String
  var balance: Int
  var tags: Set<String>
  var limits: [String: Int]
  var groupKeys: [String] { [currency] }
}

extension Account {
  /// A new account as `opened` makes it (the same event in either version of the ledger).
  init(opened event: AccountOpened) {
    self.init(
      id: event.id, owner: event.owner, currency: event.currency, balance: 0, tags: event.tags, limits: event.limits)
  }
}

struct LedgerSettings: Codable, Equatable, Sendable {
  var feesByCurrency: [String: Int] = [:]
  var frozen: Set<AccountID> = []
}

struct AccountOpened: Event {
  static let name = "ledger.accountOpened"
  var id: AccountID
  var owner: String
  var currency: String
  var tags: Set<String>
  var limits: [String: Int]
}

/// Version 1 of a deposit: an amount in cents, nothing else.
struct DepositedV1: Event {
  static let name = "ledger.deposited"
  var account: AccountID
  var cents: Int
}

/// Version 2 renamed the amount and added a memo.
struct Deposited: Event {
  static let name = "ledger.deposited"
  static let version: UInt32 = 2
  var account: AccountID
  var amount: Int
  var memo: String
}

struct Transferred: Event {
  static let name = "ledger.transferred"
  var from: AccountID
  var to: AccountID
  var amount: Int
}

struct AccountTagged: Event {
  static let name = "ledger.tagged"
  var account: AccountID
  var tags: Set<String>
}

struct SettingsChanged: Event {
  static let name = "ledger.settingsChanged"
  var settings: LedgerSettings
}

extension Origin {
  static let bank = Origin("bank")
}

struct InsufficientFunds: Error {}
struct UnknownAccount: Error {}

/// The ledger as the app knows it today.
struct Ledger: SnapshotModel {
  var accounts = Store<Account>(name: "accounts")
  var settings = ValueStore(name: "settings", initial: LedgerSettings())

  static func registerEvents(in registry: inout EventRegistry<Ledger>) {
    registry.register(AccountOpened.self) { ledger, event, context in
      ledger.accounts.insert(Account(opened: event), context: &context)
    }
    registry.register(Deposited.self) { ledger, event, context in
      ledger.accounts.update(id: event.account, context: &context) { $0.balance += event.amount }
    }
    registry.registerUpcaster(from: DepositedV1.self, to: Deposited.self) { old in
      Deposited(account: old.account, amount: old.cents, memo: "")
    }
    registry.register(Transferred.self) { ledger, event, context in
      ledger.accounts.update(id: event.from, context: &context) { $0.balance -= event.amount }
      ledger.accounts.update(id: event.to, context: &context) { $0.balance += event.amount }
    }
    registry.register(AccountTagged.self) { ledger, event, context in
      ledger.accounts.update(id: event.account, context: &context) { $0.tags.formUnion(event.tags) }
    }
    registry.register(SettingsChanged.self) { ledger, event, context in
      ledger.settings.set(event.settings, context: &context)
    }
  }

  static let noNegativeBalance = Invariant<Ledger>("no negative balance", everyRecordOf: \.accounts) { account, _ in
    account.balance >= 0
  }

  static let registration = ModelRegistration(
    Ledger.self, name: "ledger", invariants: [noNegativeBalance],
    queries: [
      ModelQuery("balances") { state in
        Dictionary(uniqueKeysWithValues: state.accounts.all().map { ($0.owner, $0.balance) })
      }
    ])
}

/// The ledger as an older version of the app wrote it: deposits at version 1.
struct LedgerV1: Model {
  var accounts = Store<Account>(name: "accounts")

  static func registerEvents(in registry: inout EventRegistry<LedgerV1>) {
    registry.register(AccountOpened.self) { ledger, event, context in
      ledger.accounts.insert(Account(opened: event), context: &context)
    }
    registry.register(DepositedV1.self) { ledger, event, context in
      ledger.accounts.update(id: event.account, context: &context) { $0.balance += event.cents }
    }
  }
}

extension Manager where M == Ledger {
  @discardableResult
  func open(_ owner: String, _ currency: String, tags: Set<String> = [], origin: Origin = .user) async throws
    -> AccountID
  {
    try await perform(origin) { _, command in
      let id = AccountID(command.newID())
      command.record(AccountOpened(id: id, owner: owner, currency: currency, tags: tags, limits: ["daily": 500]))
      return id
    }
  }

  func deposit(_ amount: Int, to account: AccountID, origin: Origin = .bank) async throws {
    try await perform(origin) { ledger, command in
      guard ledger.accounts.contains(id: account) else { throw UnknownAccount() }
      command.record(Deposited(account: account, amount: amount, memo: "deposit"))
    }
  }

  /// A transfer that checks the balance; `checked: false` is the bug a sync job once had.
  func transfer(_ amount: Int, from: AccountID, to: AccountID, origin: Origin = .user, checked: Bool = true)
    async throws
  {
    try await perform(origin) { ledger, command in
      guard let source = ledger.accounts.find(id: from), ledger.accounts.contains(id: to) else {
        throw UnknownAccount()
      }
      guard !checked || source.balance >= amount else { throw InsufficientFunds() }
      command.record(Transferred(from: from, to: to, amount: amount))
    }
  }
}

@Suite struct FirstUserLedgerTests {
  @Test func versionOneDepositsAreUpcastOnReplay() async throws {
    let directory = TemporaryDirectory("ledger")
    let path = directory.path
    let alice = AccountID(Identifier(high: 0, low: 1))
    do {
      let old = try Manager<LedgerV1>(directory: path, clock: .stepping(from: 0), ids: .sequential())
      try await old.perform(.user) { _, command in
        command.record(AccountOpened(id: alice, owner: "alice", currency: "EUR", tags: ["x"], limits: [:]))
      }
      try await old.perform(.bank) { _, command in command.record(DepositedV1(account: alice, cents: 250)) }
      old.close()
    }
    let manager = try Manager<Ledger>(
      directory: path, clock: .stepping(from: 1_000_000_000), ids: .sequential(prefix: 1))
    #expect(manager.state.accounts.find(id: alice)?.balance == 250)
    try await manager.deposit(100, to: alice)
    #expect(manager.state.accounts.find(id: alice)?.balance == 350)
    let events = try Replay.events(of: Ledger.self, directory: path)
    #expect(events.map(\.envelope.version) == [1, 1, 2])
    #expect(events[1].event.isEqual(to: Deposited(account: alice, amount: 250, memo: "")))
    manager.close()
    #expect(try Replay.rebuild(Ledger.self, directory: path).state == manager.state)
  }

  /// Sets of equal content whose iteration orders differ (one with room for many more elements)
  /// must encode to the same bytes and digest alike.
  @Test func setsAndDictionariesEncodeAlikeWhateverTheirOrder() throws {
    let tags = (0..<40).map { "tag\($0)" }
    let small = Set(tags)
    var large = Set<String>(minimumCapacity: 4_096)
    for tag in tags.reversed() { large.insert(tag) }
    #expect(small == large)
    let limits = Dictionary(uniqueKeysWithValues: tags.map { ($0, $0.count) })
    var roomy = [String: Int](minimumCapacity: 4_096)
    for tag in tags.reversed() { roomy[tag] = tag.count }
    let id = AccountID(Identifier(high: 7, low: 7))
    let a = AccountOpened(id: id, owner: "o", currency: "EUR", tags: small, limits: limits)
    let b = AccountOpened(id: id, owner: "o", currency: "EUR", tags: large, limits: roomy)
    #expect(try FieldEncoder().encode(a) == FieldEncoder().encode(b))
    var frozenSmall = LedgerSettings()
    frozenSmall.frozen = Set((0..<40).map { AccountID(Identifier(high: 0, low: UInt64($0))) })
    var frozenLarge = LedgerSettings()
    frozenLarge.frozen.reserveCapacity(4_096)
    for id in frozenSmall.frozen.sorted().reversed() { frozenLarge.frozen.insert(id) }
    #expect(try FieldEncoder().encode(frozenSmall) == FieldEncoder().encode(frozenLarge))
  }

  @Test func concurrentTransfersFromManyTasksKeepTheMoneyAndTheInvariant() async throws {
    let directory = TemporaryDirectory("ledger")
    let path = directory.path
    let manager = try Manager<Ledger>(directory: path, clock: .stepping(from: 0), ids: .sequential())
    var accounts: [AccountID] = []
    for (index, currency) in ["EUR", "USD", "EUR", "CHF", "USD", "EUR"].enumerated() {
      let id = try await manager.open("owner\(index)", currency)
      try await manager.deposit(100, to: id)
      accounts.append(id)
    }
    let changes = manager.changes()
    let ids = accounts
    let origins: [Origin] = [.user, .sync, .automation, .bank]
    let accepted = try await withThrowingTaskGroup(of: Int.self) { group in
      for task in 0..<8 {
        group.addTask {
          var random = SeededGenerator(seed: UInt64(task))
          var accepted = 0
          for _ in 0..<25 {
            let from = ids[Int.random(in: 0..<ids.count, using: &random)]
            let to = ids[Int.random(in: 0..<ids.count, using: &random)]
            do {
              try await manager.transfer(
                Int.random(in: 1...60, using: &random), from: from, to: to, origin: origins[task % origins.count])
              accepted += 1
            } catch is InsufficientFunds {}
          }
          return accepted
        }
      }
      return try await group.reduce(0, +)
    }
    let (state, last) = manager.current
    #expect(state.accounts.all().map(\.balance).reduce(0, +) == 600)
    #expect(state.accounts.allSatisfy { $0.balance >= 0 })
    #expect(state.accounts.count(inGroup: "EUR") == 3)
    #expect(state.accounts.records(inGroup: "USD").map(\.owner) == ["owner1", "owner4"])
    #expect(state.accounts.cacheProblems().isEmpty)
    #expect(last == 12 + UInt64(accepted))
    var seen = 0
    for await change in changes {
      #expect(change.events.count == 1)
      seen += 1
      if seen == accepted { break }
    }
    manager.close()
    let rebuilt = try Replay.rebuild(Ledger.self, directory: path)
    #expect(rebuilt.state == state)
    #expect(try StateDigest.of(rebuilt.state) == StateDigest.of(state))
    #expect(try TimeMachine<Ledger>(directory: path).firstFailure(of: Ledger.noNegativeBalance) == nil)
  }

  /// A history with an overdraft a sync job let through, a snapshot and a checkpoint; the time
  /// machine finds the overdraft, and the tool's replay-level commands work on the journal.
  @Test func timeTravelAndTheToolFindTheOverdraft() async throws {
    let directory = TemporaryDirectory("ledger")
    let path = directory.path
    let manager = try Manager<Ledger>(directory: path, clock: .stepping(from: 0), ids: .sequential())
    let alice = try await manager.open("alice", "EUR", tags: ["vip"])  // 1
    let bob = try await manager.open("bob", "EUR")  // 2
    try await manager.deposit(100, to: alice)  // 3
    try await manager.transfer(30, from: alice, to: bob)  // 4
    await #expect(throws: InsufficientFunds.self) { try await manager.transfer(500, from: bob, to: alice) }
    // 5
    try await manager.perform(.automation) { _, command in
      command.record(SettingsChanged(settings: LedgerSettings(feesByCurrency: ["EUR": 1, "USD": 2], frozen: [bob])))
    }
    let snapshot = try #require(try Snapshots.take(Ledger.self, directory: path))
    #expect(snapshot.sequence == 5)
    // 6
    try await manager.perform(.user) { _, command in command.record(AccountTagged(account: bob, tags: ["new", "b"])) }
    let checkpoint = try await manager.recordCheckpoint()  // mark 7, digest 8
    try await manager.transfer(50, from: bob, to: alice, origin: .sync, checked: false)  // 9: bob at -20
    try await manager.deposit(5, to: alice)  // 10
    manager.close()

    let verified = try Replay.verify(Ledger.self, directory: path)
    #expect(verified.firstDivergence == nil)
    #expect(verified.checkpointsVerified == 1)
    #expect(try StateDigest.of(Replay.rebuild(Ledger.self, directory: path, through: 6).state) == checkpoint)
    let fromSnapshot = try Replay.run(Ledger.self, directory: path, to: .sequence(6))
    #expect(fromSnapshot.report.snapshotSequence == 5)
    #expect(try fromSnapshot.state == Replay.rebuild(Ledger.self, directory: path, through: 6).state)

    let machine = try TimeMachine<Ledger>(directory: path)
    #expect(try machine.bisect(Ledger.noNegativeBalance) == 9)
    #expect(try machine.firstFailure(of: Ledger.noNegativeBalance) == 9)
    #expect(try machine.jump(to: 4).accounts.find(id: bob)?.balance == 30)
    #expect(try machine.step(by: -1).accounts.find(id: bob)?.balance == 0)
    let diff = try machine.diff(from: 3, to: 9)
    let accountChanges = try #require(diff.changes(in: "accounts"))
    #expect(accountChanges.updated.map(\.id) == [alice.description, bob.description])
    #expect(diff.changes(in: "settings")?.updated.count == 1)
    let bobs = try machine.blame(\.accounts, id: bob)
    #expect(bobs.map(\.event.envelope.sequence) == [2, 4, 6, 9])
    #expect(bobs.last?.after?.balance == -20)
    #expect(try machine.blame(\.settings).map(\.event.envelope.sequence) == [5])
    #expect(try machine.blame(entity: bob.description.uppercased()).map(\.event.envelope.sequence) == [2, 4, 6, 9])
    let effect = try #require(try machine.effect(of: 9))
    #expect(effect.keys == [.record("accounts", alice), .record("accounts", bob)])
    let fourth = try #require(try machine.event(at: 4))
    #expect(try machine.sequence(atTime: fourth.envelope.timestamp) == 4)
    #expect(try machine.state(atTime: fourth.envelope.timestamp) == machine.state(at: 4))

    // The tool, with the ledger registered as the README shows.
    let tool = RewindTool(models: [Ledger.registration])
    func run(_ arguments: [String]) async -> (code: Int32, out: String, err: String) {
      let out = Locked("")
      let err = Locked("")
      let code = await tool.run(
        arguments,
        output: .init(out: { text in out.withLock { $0 += text } }, err: { text in err.withLock { $0 += text } }))
      return (code, out.withLock { $0 }, err.withLock { $0 })
    }
    let replay = await run(["replay", path, "--to", "6", "--json"])
    #expect(replay.code == 0, "\(replay.err)")
    #expect(replay.out.hasPrefix(#"{"model":"ledger","seq":6,"digest":"\#(checkpoint)","#), "\(replay.out)")
    #expect(await run(["replay", path, "--to", "6", "--json"]).out == replay.out)
    let diffRun = await run(["diff", path, "3", "9"])
    #expect(diffRun.code == 0, "\(diffRun.err)")
    #expect(diffRun.out.hasPrefix("accounts: 0 inserted, 2 updated, 0 removed (from 3 to 9)"), "\(diffRun.out)")
    #expect(diffRun.out.contains("settings: 0 inserted, 1 updated, 0 removed"), "\(diffRun.out)")
    let blame = await run(["blame", path, bob.description.uppercased()])
    #expect(blame.code == 0, "\(blame.err)")
    #expect(blame.out.hasPrefix("\(bob) in accounts: 4 events"), "\(blame.out)")
    let bisect = await run(["bisect", path, "--invariant", "no negative balance"])
    #expect(bisect.code == 1, "\(bisect.err)")
    #expect(bisect.out.hasPrefix("invariant 'no negative balance' first fails at sequence 9"), "\(bisect.out)")
    let verify = await run(["verify", path, "--model", "ledger"])
    #expect(verify.code == 0, "\(verify.err)")
    #expect(
      verify.out.contains("ledger rebuilt through sequence 10, 1 checkpoint and 1 snapshot verified"), "\(verify.out)")
  }
}
