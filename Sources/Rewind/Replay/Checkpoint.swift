/// The record a manager appends every N events (see `PersistencePolicy`): the digest of the state
/// after every record before it, and the fingerprint of the code that computed it.
///
/// It is an ordinary journal record in the event layout (`EventRecord`) under the reserved name
/// `rewind.checkpoint`, so audit tools show it like any event. Replay recognises the name, applies
/// nothing, and (when asked) compares the digest with the state it rebuilt.
public struct Checkpoint: Event {
  public static let name = "rewind.checkpoint"
  /// Hex digest of the state after the records `1..<sequence` of this record.
  public var digest: String
  /// Hex fingerprint of the model code that computed `digest`.
  public var fingerprint: String

  public init(digest: StateDigest, fingerprint: StateDigest) {
    self.digest = digest.description
    self.fingerprint = fingerprint.description
  }
}

extension Origin {
  /// Records Rewind writes about the journal itself (checkpoints).
  public static let rewind = Origin("rewind")
}

/// Where a checkpoint's digest differs from the state replay rebuilt.
public struct CheckpointDivergence: Sendable, Equatable, CustomStringConvertible {
  /// The checkpoint record's sequence number; the state compared is the one after `sequence - 1`.
  public var sequence: UInt64
  public var recorded: String
  public var replayed: StateDigest

  public var description: String {
    "checkpoint at sequence \(sequence) recorded digest \(recorded) for the state through \(sequence - 1), "
      + "but replay rebuilt \(replayed): an apply function or the journal changed at or before \(sequence - 1)"
  }
}
