import Rewind
import RewindTestSupport

/// A small model for the manager's tests: accounts with balances and labels.
struct Account: StoreRecord {
  var id: Identifier
  var owner: String
  var balance: Int
  var labels: [String]
  var groupKeys: [String] { labels }
}

struct AccountOpened: Event {
  static let name = "account.opened"
  var id: Identifier
  var owner: String
  var labels: [String]
}

/// Version 3: an amount in cents and a memo.
struct Deposited: Event {
  static let name = "account.deposited"
  static let version: UInt32 = 3
  var account: Identifier
  var amount: Int
  var memo: String
}

/// Version 1 called the amount `cents`.
struct DepositedV1: Event {
  static let name = "account.deposited"
  static let version: UInt32 = 1
  var account: Identifier
  var cents: Int
}

/// Version 2 renamed it `amount`; version 3 added the memo.
struct DepositedV2: Event {
  static let name = "account.deposited"
  static let version: UInt32 = 2
  var account: Identifier
  var amount: Int
}

/// Carries the balance the command computed, so interleaved commands would lose updates.
struct BalanceSet: Event {
  static let name = "account.balanceSet"
  var account: Identifier
  var balance: Int
}

extension BalanceSet: FieldCodable {
  func encodeFields(into writer: inout FieldWriter) {
    writer.write(account, for: "account")
    writer.write(balance, for: "balance")
  }

  init(fields reader: inout FieldReader) throws {
    account = try reader.read(Identifier.self, for: "account")
    balance = try reader.read(Int.self, for: "balance")
  }
}

struct AccountClosed: Event {
  static let name = "account.closed"
  var id: Identifier
}

struct Ledger: Model {
  var accounts = Store<Account>(name: "accounts")

  static func registerEvents(in registry: inout EventRegistry<Ledger>) {
    registry.register(AccountOpened.self) { $0.apply($1, context: &$2) }
    registry.register(Deposited.self) { $0.apply($1, context: &$2) }
    registry.register(BalanceSet.self) { $0.apply($1, context: &$2) }
    registry.register(AccountClosed.self) { $0.apply($1, context: &$2) }
    registry.registerUpcaster(from: DepositedV1.self, to: DepositedV2.self) {
      DepositedV2(account: $0.account, amount: $0.cents)
    }
    registry.registerUpcaster(from: DepositedV2.self, to: Deposited.self) {
      Deposited(account: $0.account, amount: $0.amount, memo: "")
    }
  }

  mutating func apply(_ event: AccountOpened, context: inout ApplyContext) {
    accounts.insert(Account(id: event.id, owner: event.owner, balance: 0, labels: event.labels), context: &context)
  }
  mutating func apply(_ event: Deposited, context: inout ApplyContext) {
    accounts.update(id: event.account, context: &context) { $0.balance += event.amount }
  }
  mutating func apply(_ event: BalanceSet, context: inout ApplyContext) {
    accounts.update(id: event.account, context: &context) { $0.balance = event.balance }
  }
  mutating func apply(_ event: AccountClosed, context: inout ApplyContext) {
    accounts.remove(id: event.id, context: &context)
  }
}

struct LedgerError: Error, Equatable {
  var reason: String
}

extension Manager where M == Ledger {
  @discardableResult
  func openAccount(owner: String, labels: [String] = []) async throws -> Identifier {
    try await perform(.user) { _, command in
      let id = command.newID()
      command.record(AccountOpened(id: id, owner: owner, labels: labels))
      return id
    }
  }

  func deposit(_ amount: Int, into account: Identifier, origin: Origin = .user) async throws {
    try await perform(origin) { ledger, command in
      guard ledger.accounts.contains(id: account) else { throw LedgerError(reason: "no account \(account)") }
      command.record(Deposited(account: account, amount: amount, memo: "deposit"))
    }
  }
}

/// One command that sets account `id`'s balance to one more than it was (`BalanceSet`), and
/// returns it: the manager's tests' smallest command that reads the state it validates against.
/// `ran` counts the times its body ran (a retry runs it again).
func increment(_ manager: Manager<Ledger>, _ id: Identifier, ran: Locked<Int>? = nil) async throws -> Int {
  try await manager.perform(.user) { ledger, command in
    ran?.withLock { $0 += 1 }
    let balance = (ledger.accounts.find(id: id)?.balance ?? 0) + 1
    command.record(BalanceSet(account: id, balance: balance))
    return balance
  }
}
