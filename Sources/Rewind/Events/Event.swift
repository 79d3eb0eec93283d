/// One schema version of an event: what the journal may hold under `name` at `version`.
/// Old versions only need to decode; an upcaster turns them into the next version.
public protocol EventVersion: Decodable, Sendable {
  /// The stable name, such as `note.created`. Never reused for a different meaning.
  static var name: String { get }
  /// The schema version this type decodes, from 1.
  static var version: UInt32 { get }
}

extension EventVersion {
  public static var version: UInt32 { 1 }
}

/// A typed fact, named in the past tense (`NoteCreated`), in its current schema version.
///
/// An event carries everything that was nondeterministic when it was made (identifiers, times,
/// choices), so applying it is a pure function of the state and the event.
///
/// Avoid `Dictionary` fields: their encoding order is not stable, so equal events could encode
/// differently.
public protocol Event: EventVersion, Encodable, Equatable {}

extension Event {
  /// Whether `other` is the same event (same type, equal values).
  public func isEqual(to other: any Event) -> Bool {
    guard let other = other as? Self else { return false }
    return self == other
  }
}

/// Where an event sits in the journal and where it came from.
public struct Envelope: Sendable, Equatable, Hashable {
  /// Gapless from 1, across every command.
  public var sequence: UInt64
  /// Nanoseconds since 1970-01-01T00:00:00Z, from the manager's injected clock.
  public var timestamp: Int64
  public var name: String
  /// The schema version it was written with (before any upcasting).
  public var version: UInt32
  public var origin: Origin
  /// The command that produced it; every event of one command shares it.
  public var commandID: Identifier

  public init(sequence: UInt64, timestamp: Int64, name: String, version: UInt32, origin: Origin, commandID: Identifier)
  {
    self.sequence = sequence
    self.timestamp = timestamp
    self.name = name
    self.version = version
    self.origin = origin
    self.commandID = commandID
  }
}

/// An event as committed: its envelope and its value (upcast to the current version).
public struct RecordedEvent: Sendable, CustomStringConvertible {
  public var envelope: Envelope
  public var event: any Event

  public init(envelope: Envelope, event: any Event) {
    self.envelope = envelope
    self.event = event
  }

  public var description: String {
    "#\(envelope.sequence) \(envelope.name) v\(envelope.version) (\(envelope.origin)): \(event)"
  }
}
