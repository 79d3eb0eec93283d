/// A record as stored: its place in the journal, its time, and its opaque payload.
public struct JournalRecord: Sendable, Equatable, Hashable {
  /// Gapless, from 1.
  public var sequence: UInt64
  /// Nanoseconds since 1970-01-01T00:00:00Z, as given by the appender.
  public var timestamp: Int64
  public var payload: [UInt8]

  public init(sequence: UInt64, timestamp: Int64, payload: [UInt8]) {
    self.sequence = sequence
    self.timestamp = timestamp
    self.payload = payload
  }
}

/// A record to append; the journal assigns its sequence number.
public struct NewRecord: Sendable, Equatable {
  /// Nanoseconds since 1970-01-01T00:00:00Z. Need not be monotonic: reading "since" a time starts
  /// at the first record stamped at or after it.
  public var timestamp: Int64
  public var payload: [UInt8]

  public init(timestamp: Int64, payload: [UInt8]) {
    self.timestamp = timestamp
    self.payload = payload
  }
}
