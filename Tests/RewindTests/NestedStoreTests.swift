import Rewind
import RewindTestSupport
import Testing

/// A model that keeps its stores in a struct of their own, beside a plain counter: time travel
/// and the inspector find stores there too.
struct Cellar: SnapshotModel {
  struct Racks: Codable, Equatable, Sendable {
    var bottles = Store<Bottle>(name: "bottles")
    var temperature = ValueStore(name: "temperature", initial: 12)
  }
  var racks = Racks()
  var opened = 0
  static func registerEvents(in registry: inout EventRegistry<Cellar>) {
    registry.register(BottleLaid.self) { cellar, event, context in
      cellar.racks.bottles.insert(Bottle(id: event.id, wine: event.wine, region: event.region), context: &context)
    }
    registry.register(BottleRelabelled.self) { cellar, event, context in
      cellar.racks.bottles.update(id: event.id, context: &context) { $0.wine = event.wine }
    }
    registry.register(TemperatureSet.self) { cellar, event, context in
      cellar.racks.temperature.set(event.degrees, context: &context)
    }
  }
}

struct Bottle: StoreRecord, Codable {
  var id: Identifier
  var wine: String
  var region: String
  var groupKeys: [String] { [region] }
}

struct BottleLaid: Event {
  static let name = "cellar.bottleLaid"
  var id: Identifier
  var wine: String
  var region: String
}

struct BottleRelabelled: Event {
  static let name = "cellar.bottleRelabelled"
  var id: Identifier
  var wine: String
}

struct TemperatureSet: Event {
  static let name = "cellar.temperatureSet"
  var degrees: Int
}

@Suite struct NestedStoreTests {
  /// Laid (1), relabelled (2), then the temperature set (3).
  static func cellar(in directory: TemporaryDirectory) async throws -> Identifier {
    let manager = try Manager<Cellar>(directory: directory.path, clock: .stepping(from: 0), ids: .sequential())
    let id = Identifier(high: 0, low: 42)
    try await manager.perform(.user) { _, command in
      command.record(BottleLaid(id: id, wine: "Chasselas", region: "Lavaux"))
    }
    try await manager.perform(.user) { _, command in command.record(BottleRelabelled(id: id, wine: "Dézaley")) }
    try await manager.perform(.automation) { _, command in command.record(TemperatureSet(degrees: 11)) }
    manager.close()
    return id
  }

  @Test func diffAndEffectSeeStoresInANestedStruct() async throws {
    let directory = TemporaryDirectory("nested")
    let id = try await Self.cellar(in: directory)
    let machine = try TimeMachine<Cellar>(directory: directory.path)
    let diff = try machine.diff(from: 0, to: 3)
    #expect(diff.collections.map(\.name) == ["bottles", "temperature"])
    #expect(diff.changes(in: "bottles")?.inserted.first?.after(as: Bottle.self)?.wine == "Dézaley")
    #expect(diff.changes(in: "temperature")?.updated.first?.after(as: Int.self) == 11)
    let effect = try #require(try machine.effect(of: 2))
    #expect(effect.records.map(\.change) == [.updated])
    #expect((effect.records.first?.after as? Bottle)?.wine == "Dézaley")
    let blame = try machine.blame(entity: id.description)
    #expect(blame.map(\.event.envelope.sequence) == [1, 2])
    #expect((blame.last?.after as? Bottle)?.wine == "Dézaley")
    #expect(try machine.blame(entity: "temperature").map { $0.after as? Int } == [11])
  }

  @Test func inspectorAndFootprintSeeStoresInANestedStruct() async throws {
    let directory = TemporaryDirectory("nested")
    let id = try await Self.cellar(in: directory)
    let state = try Replay.rebuild(Cellar.self, directory: directory.path).state
    #expect(StateInspector.collections(of: state).map(\.name) == ["bottles", "temperature"])
    #expect(StateInspector.record(id.description, in: state)?.store == "bottles")
    #expect(StateInspector.records(in: "temperature", of: state)?.first as? Int == 11)
    #expect(StorageFootprint.of([state]).nodes > 0)
    let machine = try TimeMachine<Cellar>(directory: directory.path, keyframeInterval: 1)
    _ = try machine.jump(to: 3)
    #expect(machine.keyframeFootprint.nodes > 0)
  }
}
