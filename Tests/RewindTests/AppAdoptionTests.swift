import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// A small pantry, written as an app adopting Rewind would write it from the documentation: items
/// filed under the shelf they stand on, and one value store of preferences whose apply function
/// sets what the event says, as the documentation's examples do.
enum Pantry {
  struct Item: StoreRecord, Codable {
    var id: Identifier
    var name: String
    var shelf: String
    var groupKeys: [String] { [shelf] }
  }

  struct Preferences: Codable, Equatable, Sendable {
    var unit: String
  }

  struct ItemStocked: Event {
    static let name = "pantry.item.stocked"
    var id: Identifier
    var name: String
    var shelf: String
  }

  struct ItemMoved: Event {
    static let name = "pantry.item.moved"
    var id: Identifier
    var shelf: String
  }

  struct ItemUsedUp: Event {
    static let name = "pantry.item.usedUp"
    var id: Identifier
  }

  struct PreferencesSet: Event {
    static let name = "pantry.preferences.set"
    var preferences: Preferences
  }

  struct State: SnapshotModel {
    var items = Store<Item>(name: "items")
    var preferences = ValueStore(name: "preferences", initial: Preferences(unit: "g"))

    static func registerEvents(in registry: inout EventRegistry<State>) {
      registry.register(ItemStocked.self) { state, event, context in
        state.items.insert(Item(id: event.id, name: event.name, shelf: event.shelf), context: &context)
      }
      registry.register(ItemMoved.self) { state, event, context in
        state.items.update(id: event.id, context: &context) { $0.shelf = event.shelf }
      }
      registry.register(ItemUsedUp.self) { state, event, context in
        state.items.remove(id: event.id, context: &context)
      }
      registry.register(PreferencesSet.self) { state, event, context in
        state.preferences.set(event.preferences, context: &context)
      }
    }
  }

  static func open(_ directory: String) throws -> Manager<State> {
    try Manager<State>(
      directory: directory, options: JournalOptions(durability: .always),
      clock: .stepping(from: 1_800_000_000_000_000_000), ids: .sequential())
  }

  @discardableResult
  static func stock(_ manager: Manager<State>, _ name: String, on shelf: String) async throws -> Identifier {
    try await manager.perform(.user) { _, command in
      let id = command.newID()
      command.record(ItemStocked(id: id, name: name, shelf: shelf))
      return id
    }
  }

  static func setPreferences(_ manager: Manager<State>, unit: String) async throws {
    try await manager.perform(.user) { _, command in
      command.record(PreferencesSet(preferences: Preferences(unit: unit)))
    }
  }
}

@Suite struct AppAdoptionTests {
  /// A value store set to the value it holds changes nothing, so, as for a record replaced by an
  /// equal one, it touches nothing: no key in the committed change, no entry in the value
  /// store's blame (which lists the events that changed it), an effect with no key.
  @Test(.timeLimit(.minutes(10))) func settingAValueStoreToItsValueTouchesNothing() async throws {
    let temporary = TemporaryDirectory()
    let manager = try Pantry.open(temporary.path)
    var changes = manager.changes().makeAsyncIterator()
    try await Pantry.setPreferences(manager, unit: "kg")
    #expect(try #require(await changes.next()).keys == [.value("preferences")])
    try await Pantry.setPreferences(manager, unit: "kg")  // the same value: no change
    #expect(try #require(await changes.next()).keys == [])
    try await Pantry.setPreferences(manager, unit: "g")
    #expect(try #require(await changes.next()).keys == [.value("preferences")])
    manager.close()

    let machine = try TimeMachine<Pantry.State>(directory: temporary.path)
    #expect(try machine.blame(\.preferences).map(\.event.envelope.sequence) == [1, 3])
    #expect(try machine.blame(entity: "preferences").map(\.event.envelope.sequence) == [1, 3])
    #expect(try #require(try machine.effect(of: 2)).keys == [])
    #expect(try #require(try machine.effect(of: 3)).records.map(\.change) == [.updated])
  }
}

/// The rest of the first hour with the pantry: reopening, replay, snapshots and time travel, each
/// checked against what the documentation says.
@Suite struct AppAdoptionWalkthroughTests {
  /// Writes `count` commands: stock an item, move every third one, use up every fifth one.
  private func fill(_ manager: Manager<Pantry.State>, commands count: Int) async throws -> [Identifier] {
    var ids: [Identifier] = []
    for index in 0..<count {
      switch index % 5 {
      case 4 where !ids.isEmpty:
        let id = ids.removeFirst()
        try await manager.perform(.user) { _, command in command.record(Pantry.ItemUsedUp(id: id)) }
      case 2 where !ids.isEmpty:
        let id = ids[ids.count / 2]
        try await manager.perform(.sync) { _, command in
          command.record(Pantry.ItemMoved(id: id, shelf: "s\(index % 3)"))
        }
      default:
        ids.append(try await Pantry.stock(manager, "item \(index)", on: "s\(index % 4)"))
      }
    }
    return ids
  }

  @Test(.timeLimit(.minutes(10))) func reopeningReplayingAndTravellingAgree() async throws {
    let temporary = TemporaryDirectory()
    var manager = try Pantry.open(temporary.path)
    _ = try await fill(manager, commands: 60)
    let (state, last) = manager.current
    #expect(StateInspector.cacheProblems(in: state).isEmpty)
    manager.close()
    await #expect(throws: ManagerError.self) { try await Pantry.stock(manager, "late", on: "s0") }

    manager = try Pantry.open(temporary.path)
    #expect(manager.current.state == state)
    #expect(manager.current.lastSequence == last)
    #expect(manager.startupReport.snapshotSequence == nil)
    manager.close()

    #expect(try Replay.rebuild(Pantry.State.self, directory: temporary.path).state == state)
    #expect(try Replay.run(Pantry.State.self, directory: temporary.path).state == state)
    let written = try Snapshots.update(Pantry.State.self, directory: temporary.path, every: 10, keep: 2)
    #expect(SnapshotStore(journal: temporary.path).sequences() == [50, 60])
    #expect(written == [50, 60])

    manager = try Pantry.open(temporary.path)
    #expect(manager.startupReport.snapshotSequence == 60)
    #expect(manager.current.state == state)
    manager.close()

    let machine = try TimeMachine<Pantry.State>(directory: temporary.path, keyframeInterval: 8)
    #expect(try machine.jump(to: .max) == state)
    #expect(machine.position == last)
    for target in stride(from: UInt64(0), through: last, by: 7) {
      #expect(
        try machine.state(at: target)
          == Replay.rebuild(Pantry.State.self, directory: temporary.path, through: target).state)
    }
    let fifth = try #require(try machine.event(at: 5))
    #expect(try machine.state(atTime: fifth.envelope.timestamp) == machine.state(at: 5))
    #expect(try machine.sequence(atTime: fifth.envelope.timestamp) == 5)
    #expect(try machine.sequence(atTime: fifth.envelope.timestamp - 1) == 4)

    // Blame, diff and an invariant, against states rebuilt one by one.
    var states: [Pantry.State] = []
    for n in 0...last {
      states.append(try Replay.rebuild(Pantry.State.self, directory: temporary.path, through: n).state)
    }
    let first = try #require(states[1].items.all().first?.id)
    let blamed = try machine.blame(\.items, id: first)
    let expected = (1...Int(last)).filter { states[$0].items.find(id: first) != states[$0 - 1].items.find(id: first) }
    #expect(blamed.map(\.event.envelope.sequence) == expected.map(UInt64.init))
    let diff = try machine.diff(from: 10, to: 20)
    let changed = Set(
      states[20].items.all().map(\.id).filter { states[10].items.find(id: $0) != states[20].items.find(id: $0) }
        + states[10].items.all().map(\.id).filter { states[20].items.find(id: $0) == nil })
    let listed = diff.changes(in: "items").map { [$0.inserted, $0.updated, $0.removed].joined().map(\.id) } ?? []
    #expect(Set(listed) == Set(changed.map(\.description)))
    let fewShelves = Invariant<Pantry.State>("at most 3 items on shelf s1") { $0.items.count(inGroup: "s1") <= 3 }
    let failing = try #require(states.firstIndex { !fewShelves.holds($0) }.map(UInt64.init))
    #expect(try machine.firstFailure(of: fewShelves) == failing)
    let nonBlank = Invariant<Pantry.State>("names are not blank", everyRecordOf: \.items) { item, _ in
      !item.name.isEmpty
    }
    #expect(try machine.firstFailure(of: nonBlank) == nil)
  }
}

/// `Snapshots.update` on a journal long past its newest snapshot writes only the snapshots its
/// pruning keeps: turning snapshots on for an app with a long history (or after a change of model
/// code makes every snapshot stale) costs one replay and `keep` snapshots, not a whole state
/// written and synced at every multiple of the interval, then removed.
@Suite struct SnapshotCatchUpTests {
  @Test(.timeLimit(.minutes(10))) func catchingUpWritesOnlyTheSnapshotsItKeeps() async throws {
    let temporary = TemporaryDirectory()
    let manager = try Pantry.open(temporary.path)
    for index in 0..<60 { try await Pantry.stock(manager, "item \(index)", on: "s\(index % 3)") }
    let store = SnapshotStore(journal: temporary.path)
    #expect(try Snapshots.update(Pantry.State.self, directory: temporary.path, every: 10, keep: 2) == [50, 60])
    #expect(store.sequences() == [50, 60])
    // From the snapshot at 60 to 100: the newest three files are to be 80, 90 and 100.
    for index in 60..<100 { try await Pantry.stock(manager, "item \(index)", on: "s\(index % 3)") }
    #expect(try Snapshots.update(Pantry.State.self, directory: temporary.path, every: 10, keep: 3) == [80, 90, 100])
    #expect(store.sequences() == [80, 90, 100])
    // Each kept file is the state after its records: a replay from it rebuilds the live state.
    #expect(try Replay.run(Pantry.State.self, directory: temporary.path).report.snapshotSequence == 100)
    for sequence in store.sequences() {
      var options = ReplayOptions()
      options.useSnapshots = false
      let replayed = try Replay.run(
        Pantry.State.self, directory: temporary.path, to: .sequence(sequence), options: options)
      let found = store.latest(Pantry.State.self, atOrBefore: sequence, lastSequence: 100)
      #expect(found.snapshot?.sequence == sequence)
      #expect(found.snapshot?.state == replayed.state)
    }
    // Nothing new past the newest multiple: nothing written, nothing removed.
    #expect(try Snapshots.update(Pantry.State.self, directory: temporary.path, every: 10, keep: 3) == [])
    #expect(store.sequences() == [80, 90, 100])
    manager.close()
  }

  /// A snapshot file past the journal's end (a sign of records lost, which `verify` reports and
  /// the next manager moves aside) counted among the newest `keep`: `update` wrote nothing and
  /// pruned every snapshot of the journal's own records, and so at each later call. It is left
  /// alone now, and the newest `keep` at or before the end are written and kept.
  @Test func aSnapshotPastTheEndPushesOutNone() async throws {
    let temporary = TemporaryDirectory()
    let manager = try Pantry.open(temporary.path)
    for index in 0..<20 { try await Pantry.stock(manager, "item \(index)", on: "s\(index % 3)") }
    let store = SnapshotStore(journal: temporary.path)
    #expect(try Snapshots.update(Pantry.State.self, directory: temporary.path, every: 10, keep: 2) == [10, 20])
    for index in 20..<30 { try await Pantry.stock(manager, "item \(index)", on: "s\(index % 3)") }
    manager.close()
    let folder = temporary.path + "/" + SnapshotStore.folderName + "/"
    try Files.write(Files.read(folder + SnapshotStore.fileName(20)), to: folder + SnapshotStore.fileName(50))

    #expect(try Snapshots.update(Pantry.State.self, directory: temporary.path, every: 10, keep: 1) == [30])
    #expect(store.sequences() == [30, 50], "the newest of the journal's kept, the one past its end left alone")
    #expect(try Replay.run(Pantry.State.self, directory: temporary.path).report.snapshotSequence == 30)
  }
}

/// A record type whose `==` compares ids alone, as many app types are written (`Identifiable`
/// values compared by identity). Its shelf is its group.
enum IdentityEqualPantry {
  struct Jar: StoreRecord {
    var id: Identifier
    var shelf: String
    var groupKeys: [String] { [shelf] }
    static func == (a: Jar, b: Jar) -> Bool { a.id == b.id }
  }

  struct JarPlaced: Event {
    static let name = "jar.placed"
    var id: Identifier
    var shelf: String
  }

  struct JarMoved: Event {
    static let name = "jar.moved"
    var id: Identifier
    var shelf: String
  }

  struct State: Model {
    var jars = Store<Jar>(name: "jars")
    static func registerEvents(in registry: inout EventRegistry<State>) {
      // A placement of a jar already placed replaces it; a move changes it in place.
      registry.register(JarPlaced.self) { state, event, context in
        state.jars.insert(Jar(id: event.id, shelf: event.shelf), context: &context)
      }
      registry.register(JarMoved.self) { state, event, context in
        state.jars.update(id: event.id, context: &context) { $0.shelf = event.shelf }
      }
    }
  }
}

@Suite struct IdentityEqualRecordTests {
  /// The grouping cache follows a record's group keys whatever its `==` says: with an observer
  /// attached (the live model then records touched keys), a jar moved or placed again on another
  /// shelf leaves the shelf it was on, in the live state as in a replay, and the change names
  /// both shelves.
  @Test(.timeLimit(.minutes(10))) func theGroupingCacheFollowsGroupKeysWhateverEqualitySays() async throws {
    let temporary = TemporaryDirectory()
    let manager = try Manager<IdentityEqualPantry.State>(
      directory: temporary.path, clock: .stepping(from: 1_800_000_000_000_000_000), ids: .sequential())
    var changes = manager.changes().makeAsyncIterator()
    let id = try await manager.perform(.user) { _, command in
      let id = command.newID()
      command.record(IdentityEqualPantry.JarPlaced(id: id, shelf: "top"))
      return id
    }
    _ = try #require(await changes.next())
    try await manager.perform(.user) { _, command in
      command.record(IdentityEqualPantry.JarMoved(id: id, shelf: "middle"))
    }
    #expect(
      try #require(await changes.next()).keys.filter { $0.kind == .group } == [
        .group("jars", "middle"), .group("jars", "top"),
      ])
    #expect(manager.state.jars.records(inGroup: "top").isEmpty)
    #expect(manager.state.jars.count(inGroup: "middle") == 1)
    try await manager.perform(.user) { _, command in
      command.record(IdentityEqualPantry.JarPlaced(id: id, shelf: "bottom"))
    }
    #expect(
      try #require(await changes.next()).keys.filter { $0.kind == .group } == [
        .group("jars", "bottom"), .group("jars", "middle"),
      ])
    #expect(StateInspector.cacheProblems(in: manager.state).isEmpty)
    #expect(manager.state.jars.groupCounts().map(\.key) == ["bottom"])
    manager.close()
    let replayed = try Replay.rebuild(IdentityEqualPantry.State.self, directory: temporary.path).state
    #expect(replayed.jars.groupCounts().map(\.key) == ["bottom"])
  }
}
