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
