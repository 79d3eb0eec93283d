/// What a command body sees and produces: its id, time and origin (recorded in every event), new
/// identifiers from the manager's source, and the events it records.
///
/// Recording nothing makes the command a no-op that writes nothing.
public struct Command: Sendable {
  public let id: Identifier
  /// When the command ran, from the manager's clock; every event of the command carries it.
  public let timestamp: Int64
  public let origin: Origin
  private let ids: IdentifierSource
  @usableFromInline var events: [any Event] = []

  init(id: Identifier, timestamp: Int64, origin: Origin, ids: IdentifierSource) {
    self.id = id
    self.timestamp = timestamp
    self.origin = origin
    self.ids = ids
  }

  /// A new identifier from the manager's source. Record it in an event; never derive it in apply.
  public func newID() -> Identifier { ids.next() }

  /// Adds `event` to the command. All of a command's events are appended in one atomic batch.
  ///
  /// Inlinable, so that the event is boxed where its type is known: it is moved into the box.
  /// Unspecialized, the event was copied into the box through its value witnesses and the
  /// original destroyed.
  @inlinable public mutating func record<E: Event>(_ event: consuming E) { events.append(event) }

  /// The events recorded so far.
  public var recorded: [any Event] { events }
}
