package import Rewind

/// A model of two stores whose ids are integers, so the same id's text can name a record in
/// each (crates and boxes numbered alike): for the tests of what blame, `debug` and replay
/// make of ids that two stores hold.
package struct Shelves: SnapshotModel {
  package var boxes = Store<Shelved>(name: "boxes")
  package var crates = Store<Shelved>(name: "crates")

  package init() {}

  package static func registerEvents(in registry: inout EventRegistry<Shelves>) {
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

/// A record of `Shelves`.
package struct Shelved: StoreRecord, Codable {
  package var id: Int
  package var label: String

  package init(id: Int, label: String) {
    self.id = id
    self.label = label
  }
}

/// Places a box, or a crate (placed again: relabelled), in `Shelves`.
package struct ShelfPlaced: Event {
  package static let name = "shelf.placed"
  package var crate: Bool
  package var id: Int
  package var label: String

  package init(crate: Bool, id: Int, label: String) {
    self.crate = crate
    self.id = id
    self.label = label
  }
}
