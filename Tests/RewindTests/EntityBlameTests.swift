import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// `blame(entity:)` reports the record of the store the id was found in, not a record with the
/// same id's text in a store declared before it.
@Test func entityBlameReadsTheStoreItFound() throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let command = Identifier(high: 1, low: 6)
  let journal = try Journal(directory: directory)
  try journal.appendAndWait(
    try [
      ShelfPlaced(crate: true, id: 1, label: "crate one"),
      ShelfPlaced(crate: false, id: 1, label: "box one"),
      ShelfPlaced(crate: true, id: 1, label: "crate one, relabelled"),
    ].map { NewRecord(timestamp: 1, payload: try EventRecord.encode($0, origin: .user, commandID: command)) })
  journal.close()

  let machine = try TimeMachine<Shelves>(directory: directory)
  let entries = try machine.blame(entity: "1")
  #expect(entries.map(\.event.envelope.sequence) == [1, 3])
  #expect(entries.map(\.store) == ["crates", "crates"])
  #expect(entries.map { ($0.after as? Shelved)?.label } == ["crate one", "crate one, relabelled"])
  // The other store that holds a record of that id's text is named (blame said nothing of it: a
  // library user's walkthrough, Dec 7); an id one store holds names none.
  let named = try machine.blameNamingOtherStores(entity: "1")
  #expect(named.entries.map(\.event.envelope.sequence) == [1, 3] && named.otherStores == ["boxes"])
  #expect(try machine.blameNamingOtherStores(entity: "2").otherStores.isEmpty)
  // The other store's events, asked for by its name (`rewind blame --collection`): there was no
  // way to list them once the note named them.
  let boxes = try machine.blameNamingOtherStores(entity: "1", in: "boxes")
  #expect(boxes.entries.map(\.event.envelope.sequence) == [2] && boxes.entries.map(\.store) == ["boxes"])
  #expect(boxes.entries.map { ($0.after as? Shelved)?.label } == ["box one"])
  #expect(boxes.otherStores == ["crates"])
  let crates = try machine.blameNamingOtherStores(entity: "1", in: "crates")
  #expect(crates.entries.map(\.event.envelope.sequence) == [1, 3] && crates.otherStores == ["boxes"])
  #expect(try machine.blameNamingOtherStores(entity: "2", in: "boxes").entries.isEmpty)
}

/// An id that counts how often it is formatted.
struct CountedID: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
  static let formatted = Locked(0)
  var raw: Int
  var description: String {
    Self.formatted.withLock { $0 += 1 }
    return "counted-\(raw)"
  }
  static func < (a: CountedID, b: CountedID) -> Bool { a.raw < b.raw }
}

struct CountedItems: SnapshotModel {
  var items = Store<CountedItem>(name: "items")

  static func registerEvents(in registry: inout EventRegistry<CountedItems>) {
    registry.register(CountedSet.self) { model, event, context in
      let id = CountedID(raw: event.id)
      if model.items.contains(id: id) {
        model.items.update(id: id, context: &context) { $0.value = event.value }
      } else {
        model.items.insert(CountedItem(id: id, value: event.value), context: &context)
      }
    }
  }
}

struct CountedItem: StoreRecord, Codable {
  var id: CountedID
  var value: Int
}

struct CountedSet: Event {
  static let name = "counted.set"
  var id: Int
  var value: Int
}

/// `blame(entity:)` finds the record after each matching event by its id: it formats the ids
/// of the records the events touched, once each, not every record's id after every match (which
/// made blaming an entity edited n times among m records cost n × m).
@Test func entityBlameFormatsOnlyTheTouchedIds() throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let journal = try Journal(directory: directory)
  let placed = (0..<200).map { CountedSet(id: $0, value: 0) }
  let edits = (1...300).map { CountedSet(id: 199, value: $0) }  // the last id: found after all others
  try journal.appendAndWait(
    try (placed + edits).enumerated().map { index, event in
      let command = Identifier(high: 1, low: UInt64(index + 1))
      return NewRecord(timestamp: 1, payload: try EventRecord.encode(event, origin: .user, commandID: command))
    })
  journal.close()

  let machine = try TimeMachine<CountedItems>(directory: directory)
  let before = CountedID.formatted.withLock { $0 }
  let entries = try machine.blame(entity: "counted-199")
  let formatted = CountedID.formatted.withLock { $0 } - before
  #expect(entries.count == 301)
  #expect(entries.map { ($0.after as? CountedItem)?.value } == [0] + (1...300).map { $0 })
  #expect(entries.allSatisfy { $0.store == "items" })
  #expect(
    formatted <= placed.count + edits.count, "\(formatted) ids formatted for \(placed.count + edits.count) events")
}

/// `rewind debug`'s `find entity` took `blame(entity:)`'s list, which replays the whole history
/// at each call (seconds on a long journal). `nextEvent(touchingEntity:)` replays on from the
/// state at the machine's position and stops at the first event that touched the entity, in
/// whichever store (here a box and then crates share the id 7).
@Test func theNextEventTouchingAnEntityIsFoundFromThePosition() throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let journal = try Journal(directory: directory)
  // Boxes 1...19 and 0 first, then crates of the same ids, placed and relabelled in turn.
  let events = (1...300).map { ShelfPlaced(crate: $0 > 20, id: $0 % 20, label: "label \($0)") }
  try journal.appendAndWait(
    try events.enumerated().map { index, event in
      let command = Identifier(high: 2, low: UInt64(index + 1))
      return NewRecord(timestamp: 1, payload: try EventRecord.encode(event, origin: .user, commandID: command))
    })
  journal.close()

  let machine = try TimeMachine<Shelves>(directory: directory)
  for position: UInt64 in [0, 6, 7, 8, 26, 150, 287, 288, 300] {
    try machine.jump(to: position)
    var applied = 0
    machine.progress = { applied = max(applied, $0.recordsApplied) }
    let found = try machine.nextEvent(touchingEntity: "7")
    machine.progress = nil
    let expected = (position + 1..<301).first { $0 % 20 == 7 }
    #expect(found?.envelope.sequence == expected, "after \(position)")
    #expect(applied <= Int((expected ?? 300) - position), "after \(position): \(applied) records applied")
    #expect(machine.position == position, "the machine does not move")
  }
  try machine.jump(to: 0)
  #expect(try machine.nextEvent(touchingEntity: "7", through: 6) == nil)
  #expect(try machine.nextEvent(touchingEntity: "20") == nil, "no id 20 was placed")
}
