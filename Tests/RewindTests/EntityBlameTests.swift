import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// Two stores whose ids are integers, so the same id's text can name a record in each.
struct Shelves: SnapshotModel {
  var boxes = Store<Shelved>(name: "boxes")
  var crates = Store<Shelved>(name: "crates")

  static func registerEvents(in registry: inout EventRegistry<Shelves>) {
    registry.register(ShelfPlaced.self) { model, event, context in
      let item = Shelved(id: event.id, label: event.label)
      if event.crate {
        if model.crates.contains(id: event.id) {
          model.crates.update(id: event.id, context: &context) { $0.label = event.label }
        } else {
          model.crates.insert(item, context: &context)
        }
      } else {
        model.boxes.insert(item, context: &context)
      }
    }
  }
}

struct Shelved: StoreRecord, Codable {
  var id: Int
  var label: String
}

struct ShelfPlaced: Event {
  static let name = "shelf.placed"
  var crate: Bool
  var id: Int
  var label: String
}

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
}
