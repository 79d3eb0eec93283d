import Testing

@testable import Rewind

/// A model declared `private`: the runtime names its type with an address.
private struct Hidden: SnapshotModel {
  var total = ValueStore(name: "total", initial: 0)

  static func registerEvents(in registry: inout EventRegistry<Hidden>) {
    registry.register(HiddenBumped.self) { model, event, context in
      model.total.set(model.total.value + event.by, context: &context)
    }
  }
}

private struct HiddenBumped: Event {
  static let name = "hidden.bumped"
  var by: Int
}

/// A model's fingerprint must be the same in every process: a snapshot or checkpoint is used only
/// by code of the same fingerprint. It hashed the type's qualified name, which for a `private`,
/// `fileprivate` or local type holds an address that changes from run to run, so every later
/// process skipped such a model's snapshots and checkpoints as other code's (a library user's
/// walkthrough, Dec 7).
@Suite struct FingerprintTests {
  @Test func aPrivateModelsNameHoldsNoAddress() throws {
    try #require(String(reflecting: Hidden.self).contains("(unknown context at $"), "the premise")
    #expect(Hidden.typeNameForFingerprint == "RewindTests.(unknown context).Hidden")
    #expect(!Hidden.typeNameForFingerprint.contains("$"))
  }

  @Test func aLocalModelsNameHoldsNoAddress() throws {
    struct Local: SnapshotModel {
      var total = ValueStore(name: "total", initial: 0)
      static func registerEvents(in registry: inout EventRegistry<Local>) {}
    }
    try #require(String(reflecting: Local.self).contains("$"), "the premise: \(String(reflecting: Local.self))")
    #expect(!Local.typeNameForFingerprint.contains("$"), "\(Local.typeNameForFingerprint)")
    #expect(Local.typeNameForFingerprint.hasSuffix(".Local"), "\(Local.typeNameForFingerprint)")
  }

  /// Other types' names are taken as they are, so their fingerprints (and the snapshots and
  /// checkpoints written with them) do not change.
  @Test func aVisibleModelsNameIsTakenWhole() {
    #expect(Gauge.typeNameForFingerprint == String(reflecting: Gauge.self))
    #expect(Gauge.typeNameForFingerprint == "RewindTests.Gauge")
  }
}
