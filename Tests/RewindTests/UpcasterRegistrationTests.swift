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

@Suite struct UpcasterRegistrationTests {
  /// The trap names the upcaster's types and the versions it joins, so the mistake is found
  /// without a debugger.
  @Test func anUpcasterThatSkipsAVersionIsRefusedNamingIt() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = try? Replay.rebuild(SkippingUpcasterLedger.self, directory: "/nonexistent/rewind-upcaster-test")
    }
    let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(message.contains("DepositedV1 (account.deposited v1) to Deposited (account.deposited v3)"), "\(message)")
  }
}
