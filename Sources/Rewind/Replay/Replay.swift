internal import RewindJournal

/// Rebuilding a model from its journal: read every record, decode it (upcasting old versions),
/// apply it. Applying is pure, so the same journal always rebuilds the same state.
public enum Replay {
  /// A rebuilt state and the last sequence number applied to it.
  public struct Result<M: Model>: Sendable {
    public var state: M
    public var lastSequence: UInt64
  }

  /// Rebuilds `M` from the journal in `directory`, through `sequence` (or to the end).
  /// - Throws: `ReplayError` locating the first record that is not a known event;
  ///   `JournalError` if the journal cannot be read.
  public static func rebuild<M: Model>(_ type: M.Type, directory: String, through sequence: UInt64 = .max) throws
    -> Result<M>
  {
    try rebuild(registry: M.makeRegistry(), reader: JournalReader(directory: directory), through: sequence)
  }

  /// Every event in the journal in `directory`, decoded and upcast, with its envelope.
  public static func events<M: Model>(of type: M.Type, directory: String) throws -> [RecordedEvent] {
    let registry = M.makeRegistry()
    let cursor = try JournalReader(directory: directory).records(from: 1)
    var events: [RecordedEvent] = []
    while let record = try cursor.next() {
      events.append(try decode(record, registry: registry))
    }
    return events
  }

  static func rebuild<M: Model>(registry: EventRegistry<M>, reader: JournalReader, through sequence: UInt64 = .max)
    throws -> Result<M>
  {
    var state = M()
    var last: UInt64 = 0
    let cursor = try reader.records(from: 1)
    var context = ApplyContext()
    while let record = try cursor.next(), record.sequence <= sequence {
      let recorded = try decode(record, registry: registry)
      registry.apply(recorded.event, to: &state, context: &context)
      context.touched.removeAll(keepingCapacity: true)
      last = record.sequence
    }
    return Result(state: state, lastSequence: last)
  }

  static func decode<M: Model>(_ record: JournalRecord, registry: EventRegistry<M>) throws -> RecordedEvent {
    let header: EventRecord.Header
    do {
      header = try EventRecord.header(of: record.payload)
    } catch {
      throw ReplayError(.malformedRecord, sequence: record.sequence, underlying: error.description)
    }
    let event = try registry.decode(header, payload: record.payload, sequence: record.sequence)
    let envelope = Envelope(
      sequence: record.sequence, timestamp: record.timestamp, name: header.name, version: header.version,
      origin: header.origin,
      commandID: header.commandID)
    return RecordedEvent(envelope: envelope, event: event)
  }
}
