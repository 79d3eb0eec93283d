/// The live state of one app model: a value made of stores, changed only by applying events.
///
/// A conforming type lists its events (and upcasters for their old versions) in
/// `registerEvents(in:)`; each event's apply function is a pure `mutating func` on the model that
/// may change stores only through the `ApplyContext` it is handed.
///
/// Keep the state in stores (`Store`, `ValueStore`), directly or in structs of the model's. A
/// plain property changed by an apply function is replayed, and written in snapshots and digests
/// by a `SnapshotModel`'s `Codable` form, but nothing records that it changed: the changes that
/// `Manager.changes()` delivers, the caches they invalidate, diffs, blame, an event's effect and
/// the `rewind` tool see stores' records only.
public protocol Model: Sendable, Equatable {
  /// The empty state, before the first event.
  init()
  /// Adds every event this model applies, and the upcasters of their old versions.
  static func registerEvents(in registry: inout EventRegistry<Self>)
}

extension Model {
  /// The model's registry, built from `registerEvents(in:)`.
  /// - Precondition: no two of the model's stores (and value stores) share a name.
  static func makeRegistry() -> EventRegistry<Self> {
    // A store's name is its records' address: in change keys, diffs, blame, snapshots' reports
    // and the tool. Two stores of one name would pass off one's records as the other's.
    var names = Set<String>()
    for store in StateInspector.stores(of: Self()) where !names.insert(store.name).inserted {
      preconditionFailure(
        "\(Self.self) has two stores named '\(store.name)': a store's name identifies its records "
          + "(change keys, diffs, blame, the rewind tool); give each store a name of its own")
    }
    var registry = EventRegistry<Self>()
    // Checkpoints ride in every model's journal; applying one changes nothing.
    registry.register(Checkpoint.self) { _, _, _ in }
    registry.register(CheckpointMark.self) { _, _, _ in }
    registry.register(CheckpointDigest.self) { _, _, _ in }
    registerEvents(in: &registry)
    return registry
  }
}
