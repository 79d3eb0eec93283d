/// Bytes moved out of the journal's data into its `quarantine/` folder: by recovery (a torn
/// tail) or by an explicit repair. Nothing is deleted; the file named here holds those bytes.
public struct QuarantinedBytes: Sendable, Equatable, CustomStringConvertible {
  /// The segment the bytes came from (file name inside the journal directory).
  public var segment: String
  /// Where they started in that segment.
  public var offset: Int64
  /// How many bytes were moved.
  public var length: Int64
  /// Where they are now, relative to the journal directory.
  public var movedTo: String
  /// Why they were moved.
  public var reason: String
  /// The sequence numbers the moved batches declared, as far as their headers could be read.
  public var sequences: ClosedRange<UInt64>?

  public var description: String {
    var text = "moved \(length) bytes of \(segment) from byte offset \(offset) to \(movedTo): \(reason)"
    if let sequences { text += " (declared sequences \(sequences.lowerBound)-\(sequences.upperBound))" }
    return text
  }
}

/// What opening a journal for writing found and did.
public struct RecoveryReport: Sendable, Equatable {
  /// Torn tails moved aside: the incomplete last frame of a crash, never committed data.
  public var movedAside: [QuarantinedBytes] = []
  /// Index entries that had to be rebuilt (the index is derived data).
  public var indexEntriesRebuilt: Int = 0
  /// Why the index was rebuilt, if it was ("missing", "stale", "damaged").
  public var indexRepairReason: String?
  /// The last sequence number in the journal after recovery (0 when empty).
  public var lastSequence: UInt64 = 0

  /// True when nothing had to be moved aside.
  public var isClean: Bool { movedAside.isEmpty }
}
