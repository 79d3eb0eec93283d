import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// A model whose state refuses to be encoded once a `Refuse` event has set its flag: an encoding
/// failure other than the double -0.0 (which a snapshot cannot hold exactly, and which
/// `Snapshots.update` passes over by design).
struct Refusing: SnapshotModel {
  struct Flag: Codable, Equatable, Sendable {
    var refused = false

    init(refused: Bool = false) { self.refused = refused }
    init(from decoder: any Decoder) throws { refused = try decoder.singleValueContainer().decode(Bool.self) }
    func encode(to encoder: any Encoder) throws {
      guard !refused else {
        throw EncodingError.invalidValue(
          refused, EncodingError.Context(codingPath: encoder.codingPath, debugDescription: "this state refuses"))
      }
      var container = encoder.singleValueContainer()
      try container.encode(refused)
    }
  }
  struct Refuse: Event { static let name = "refusing.refuse" }
  struct Tick: Event { static let name = "refusing.tick" }

  var flag = ValueStore<Flag>(name: "flag", initial: Flag())
  var ticks = ValueStore<Int>(name: "ticks", initial: 0)

  static func registerEvents(in registry: inout EventRegistry<Refusing>) {
    registry.register(Refuse.self) { model, _, context in model.flag.set(Flag(refused: true), context: &context) }
    registry.register(Tick.self) { model, _, context in model.ticks.set(model.ticks.value + 1, context: &context) }
  }
}

@Suite struct SnapshotUpdateFailureTests {
  /// `update` passed over every `EncodingError` as if it were the -0.0 it is meant for: a model
  /// whose states cannot be encoded at all got `[]` back, no snapshot and no word of why. Only
  /// -0.0 is passed over now; the rest is thrown.
  @Test func anEncodingFailureOtherThanNegativeZeroIsThrown() async throws {
    let temporary = TemporaryDirectory()
    let manager = try Manager<Refusing>(directory: temporary.path, options: JournalOptions(durability: .none))
    for _ in 0..<4 { try await manager.perform(.user) { _, command in command.record(Refusing.Tick()) } }
    try await manager.perform(.user) { _, command in command.record(Refusing.Refuse()) }
    for _ in 0..<5 { try await manager.perform(.user) { _, command in command.record(Refusing.Tick()) } }
    manager.close()

    // Through 4 the state encodes: a snapshot at 2 and 4; from 5 on it refuses, and says why.
    let error = #expect(throws: EncodingError.self) {
      try Snapshots.update(Refusing.self, directory: temporary.path, every: 2, keep: 10)
    }
    #expect("\(String(describing: error))".contains("this state refuses"))
    #expect(SnapshotStore(journal: temporary.path).sequences() == [2, 4])
  }
}
