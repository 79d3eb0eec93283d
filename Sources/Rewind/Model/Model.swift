/// The live state of one app model: a value made of stores, changed only by applying events.
///
/// A conforming type lists its events (and upcasters for their old versions) in
/// `registerEvents(in:)`; each event's apply function is a pure `mutating func` on the model that
/// may change stores only through the `ApplyContext` it is handed.
public protocol Model: Sendable, Equatable {
  /// The empty state, before the first event.
  init()
  /// Adds every event this model applies, and the upcasters of their old versions.
  static func registerEvents(in registry: inout EventRegistry<Self>)
}

extension Model {
  /// The model's registry, built from `registerEvents(in:)`.
  static func makeRegistry() -> EventRegistry<Self> {
    var registry = EventRegistry<Self>()
    // Checkpoints ride in every model's journal; applying one changes nothing.
    registry.register(Checkpoint.self) { _, _, _ in }
    registry.register(CheckpointMark.self) { _, _, _ in }
    registry.register(CheckpointDigest.self) { _, _, _ in }
    registerEvents(in: &registry)
    return registry
  }
}
