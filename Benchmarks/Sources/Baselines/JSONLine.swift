internal import Notebook
internal import Rewind

/// One event as a line of JSON, the way an app without an event store might log it: the envelope's
/// fields and the event itself, through Foundation's Codable.
struct JSONLine: Codable {
  var sequence: UInt64
  var timestamp: Int64
  var name: String
  var version: UInt32
  var origin: String
  var command: String
  var event: any Event

  init(_ recorded: RecordedEvent) {
    sequence = recorded.envelope.sequence
    timestamp = recorded.envelope.timestamp
    name = recorded.envelope.name
    version = recorded.envelope.version
    origin = recorded.envelope.origin.name
    command = recorded.envelope.commandID.description
    event = recorded.event
  }

  private enum CodingKeys: String, CodingKey { case sequence, timestamp, name, version, origin, command, event }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(sequence, forKey: .sequence)
    try container.encode(timestamp, forKey: .timestamp)
    try container.encode(name, forKey: .name)
    try container.encode(version, forKey: .version)
    try container.encode(origin, forKey: .origin)
    try container.encode(command, forKey: .command)
    try container.encode(event, forKey: .event)
  }

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    sequence = try container.decode(UInt64.self, forKey: .sequence)
    timestamp = try container.decode(Int64.self, forKey: .timestamp)
    name = try container.decode(String.self, forKey: .name)
    version = try container.decode(UInt32.self, forKey: .version)
    origin = try container.decode(String.self, forKey: .origin)
    command = try container.decode(String.self, forKey: .command)
    guard let type = Self.eventTypes[name] else {
      throw DecodingError.dataCorruptedError(forKey: .name, in: container, debugDescription: "unknown event \(name)")
    }
    event = try Self.decode(type, from: container)
  }

  private static func decode<E: Event>(_ type: E.Type, from container: KeyedDecodingContainer<CodingKeys>) throws
    -> any Event
  {
    try container.decode(type, forKey: .event)
  }

  /// The Notebook events the workload makes, by name (current versions only).
  static let eventTypes: [String: any Event.Type] = Dictionary(
    uniqueKeysWithValues: ([
      NotebookCreated.self, NotebookRenamed.self, NoteCreated.self, NoteRetitled.self, NoteBodyEdited.self,
      NoteTagged.self, NoteUntagged.self, NoteDeleted.self,
    ] as [any Event.Type]).map { ($0.name, $0) })
}
