/// Reads a journal directory, also while a writer appends to it. Takes no lock and writes nothing.
///
/// A reader sees every batch whose frame is completely written; an incomplete frame at the very
/// end of the journal is treated as not yet written. Damage anywhere else is an error that
/// names the segment, byte offset and sequence numbers.
public struct JournalReader: Sendable {
  public let directory: String
  public let limits: JournalLimits
  package let io: any FileIO

  /// - Throws: `JournalError` `.notAJournal` or `.badManifest` when `directory` holds no journal.
  public init(directory: String, limits: JournalLimits = JournalLimits()) throws {
    try self.init(directory: directory, limits: limits, io: PosixFileIO())
  }

  package init(directory: String, limits: JournalLimits = JournalLimits(), io: any FileIO) throws {
    self.directory = directory
    self.limits = limits
    self.io = io
    _ = try JournalDirectory(path: directory, io: io)
  }

  /// The journal's identity.
  public var id: JournalID {
    get throws { try JournalDirectory(path: directory, io: io).journalID }
  }

  /// Every record from `sequence` on (all of them by default), in order.
  public func records(from sequence: UInt64 = 1) throws -> JournalCursor {
    try JournalCursor(reader: self, start: .sequence(max(sequence, 1)))
  }

  /// Every record from the first one stamped at or after `timestamp` (ns since 1970) on.
  public func records(since timestamp: Int64) throws -> JournalCursor {
    try JournalCursor(reader: self, start: .time(timestamp))
  }

  /// The record with sequence number `sequence`, or nil if the journal does not reach it yet.
  public func record(_ sequence: UInt64) throws -> JournalRecord? {
    let cursor = try records(from: sequence)
    guard let record = try cursor.next(), record.sequence == sequence else { return nil }
    return record
  }

  /// The last sequence number written so far (0 when empty).
  public func lastSequence() throws -> UInt64 {
    let cursor = try records(from: .max)
    return try cursor.lastSequenceReached()
  }

  /// Records from `sequence` on, waiting for new ones as they are committed, every
  /// `pollInterval`. Ends only with an error or when the consuming task is cancelled.
  public func follow(from sequence: UInt64 = 1, pollInterval: Duration = .milliseconds(10)) -> JournalFollower {
    JournalFollower(reader: self, start: sequence, pollInterval: pollInterval)
  }

  /// Loads the sparse index, keeping the entries that fit the segments as they are now.
  package func loadIndex(_ layout: JournalDirectory) -> SparseIndex {
    var sizes: [UInt64: Int64] = [:]
    for first in layout.segments {
      if let file = try? layout.open(segment: first) { sizes[first] = file.size }
    }
    return SparseIndex.load(directory: directory, journalID: layout.journalID, segments: sizes, io: io).0
  }
}
