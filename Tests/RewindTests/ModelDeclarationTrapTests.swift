import Rewind
import Testing

/// A model whose upcaster skips a version: version 1 straight to version 3.
struct SkippingUpcasterLedger: Model {
  var accounts = Store<Account>(name: "accounts")
  static func registerEvents(in registry: inout EventRegistry<SkippingUpcasterLedger>) {
    registry.register(Deposited.self) { _, _, _ in }
    registry.registerUpcaster(from: DepositedV1.self, to: Deposited.self) { old in
      Deposited(account: old.account, amount: old.cents, memo: "")
    }
  }
}

/// A model that registers a second upcaster from version 1, as a copy and paste would: the
/// second (which forgets the amount) would silently replace the first.
struct TwiceUpcastLedger: Model {
  var accounts = Store<Account>(name: "accounts")
  static func registerEvents(in registry: inout EventRegistry<TwiceUpcastLedger>) {
    registry.register(Deposited.self) { _, _, _ in }
    registry.registerUpcaster(from: DepositedV1.self, to: DepositedV2.self) {
      DepositedV2(account: $0.account, amount: $0.cents)
    }
    registry.registerUpcaster(from: DepositedV2.self, to: Deposited.self) {
      Deposited(account: $0.account, amount: $0.amount, memo: "")
    }
    registry.registerUpcaster(from: DepositedV1.self, to: DepositedV2.self) {
      DepositedV2(account: $0.account, amount: 0)
    }
  }
}

/// A model with two stores of one name, one of them in a struct of its own.
struct TwiceNamedLedger: Model {
  struct Archive: Equatable, Sendable {
    var accounts = Store<Account>(name: "accounts")
  }
  var accounts = Store<Account>(name: "accounts")
  var archive = Archive()
  static func registerEvents(in registry: inout EventRegistry<TwiceNamedLedger>) {
    registry.register(Deposited.self) { _, _, _ in }
  }
}

/// Mistakes in declaring a model, refused with a trap that names them (programmer errors).
@Suite struct ModelDeclarationTrapTests {
  /// The trap names the upcaster's types and the versions it joins, so the mistake is found
  /// without a debugger.
  @Test func anUpcasterThatSkipsAVersionIsRefusedNamingIt() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = try? Replay.rebuild(SkippingUpcasterLedger.self, directory: "/nonexistent/rewind-upcaster-test")
    }
    let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(message.contains("DepositedV1 (account.deposited v1) to Deposited (account.deposited v3)"), "\(message)")
  }

  /// A second upcaster from one version would replace the first without a word, and every old
  /// record would be read by whichever came last: refused, naming the event and the version.
  @Test func anUpcasterRegisteredTwiceIsRefusedNamingIt() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = try? Replay.rebuild(TwiceUpcastLedger.self, directory: "/nonexistent/rewind-upcaster-twice-test")
    }
    let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(message.contains("upcaster from account.deposited v1 registered twice"), "\(message)")
  }

  /// Two stores of one name would share change keys, and diffs and blame would find one for the
  /// other: the model is refused where its registry is built, naming the store.
  @Test func aModelWithTwoStoresOfOneNameIsRefusedNamingIt() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = try? Replay.rebuild(TwiceNamedLedger.self, directory: "/nonexistent/rewind-store-names-test")
    }
    let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(message.contains("TwiceNamedLedger has two stores named 'accounts'"), "\(message)")
  }
}
