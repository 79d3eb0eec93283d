public import RewindJournal

/// A journal record that replay cannot turn into an event, located by sequence number.
public struct ReplayError: Error, Sendable, Equatable, CustomStringConvertible {
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }
    public var description: String { name }

    /// No registered event has this name, or no upcaster chain leads from this version.
    public static let unknownEvent = Code("unknownEvent")
    /// The name and version are known, but the fields do not decode as that type.
    public static let undecodableEvent = Code("undecodableEvent")
    /// The payload does not follow the record layout at all.
    public static let malformedRecord = Code("malformedRecord")
    /// Records handed to replay (`Replay.rebuild(_:records:)`) skip or repeat a sequence number:
    /// the record may be a good event, in the wrong place.
    public static let outOfSequence = Code("outOfSequence")
  }

  public var code: Code
  public var sequence: UInt64
  public var name: String?
  public var version: UInt32?
  public var underlying: String?
  /// What opening the journal for writing had moved aside or found missing before this error,
  /// when something had been: set by `Manager.init`, as `JournalError.openingRecovery` is.
  public var openingRecovery: RecoveryReport?

  public init(_ code: Code, sequence: UInt64, name: String? = nil, version: UInt32? = nil, underlying: String? = nil) {
    self.code = code
    self.sequence = sequence
    self.name = name
    self.version = version
    self.underlying = underlying
  }

  public var description: String {
    var text: String
    switch code {
    case .unknownEvent:
      text = "unknown event \(name ?? "?") version \(version.map(String.init) ?? "?") at sequence \(sequence)"
      text += ": no registered type or upcaster reads it; register one, or replay with code that knows it"
    case .undecodableEvent:
      text = "event \(name ?? "?") version \(version.map(String.init) ?? "?") at sequence \(sequence) does not decode"
    case .outOfSequence:
      text = "record at sequence \(sequence) is out of sequence"
    default:
      text = "record at sequence \(sequence) is not an event record"
    }
    if let underlying { text += " (\(underlying))" }
    text += openingRecovery?.toldAfterAnError ?? ""
    return text
  }
}
