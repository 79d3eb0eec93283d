/// One committed command, as observers see it: its events and every key they touched. Sent once,
/// after the whole command is journaled and applied; never for a part of a command.
public struct CommittedChange: Sendable, CustomStringConvertible {
  public var commandID: Identifier
  public var origin: Origin
  public var sequences: ClosedRange<UInt64>
  public var events: [RecordedEvent]
  /// Sorted, without duplicates.
  public var keys: [ChangeKey]

  public var description: String {
    "command \(commandID) (\(origin)) #\(sequences.lowerBound)-\(sequences.upperBound): \(events.map(\.envelope.name)) touching \(keys)"
  }
}
