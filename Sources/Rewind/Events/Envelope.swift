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
