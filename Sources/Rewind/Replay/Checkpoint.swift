/// The checkpoint record of format 1 (`rewind.checkpoint` v1): the digest of the state after every
/// record before it, and the fingerprint of the code that computed it, in one record.
///
/// A manager no longer writes it: computing the digest inside the funnel made every command wait
/// for it. It writes a `CheckpointMark` and, once the digest is computed outside the funnel, a
/// `CheckpointDigest` naming the mark. Journals that hold this record keep verifying as before.
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

  /// The names of every record Rewind writes about the journal itself: this one, the mark and the
  /// digest. None of them changes the state; audit tools show them as checkpoint records.
  public static let recordNames = [Checkpoint.name, CheckpointMark.name, CheckpointDigest.name]
}

/// Where a checkpoint is taken (`rewind.checkpoint.mark` v1): the state it stands for is the one
/// after every record before it. Written through the funnel, so it lands between whole commands;
/// it holds no digest, so it costs the funnel a record, not a hash of the state. The digest
/// follows later in a `CheckpointDigest` naming this record's sequence number; a mark with none
/// (the process ended first) is harmless.
public struct CheckpointMark: Event {
  public static let name = "rewind.checkpoint.mark"
  /// Hex fingerprint of the model code that took the mark (and will compute its digest).
  public var fingerprint: String

  public init(fingerprint: StateDigest) {
    self.fingerprint = fingerprint.description
  }
}

/// The digest of the state at a `CheckpointMark` (`rewind.checkpoint.digest` v1), computed outside
/// the funnel and appended after it: any records may lie between the mark and this one.
public struct CheckpointDigest: Event {
  public static let name = "rewind.checkpoint.digest"
  /// The sequence number of the mark: the digest is that of the state after records `1..<mark`.
  public var mark: UInt64
  /// Hex digest of that state.
  public var digest: String
  /// Hex fingerprint of the model code that computed `digest` (the mark's).
  public var fingerprint: String

  public init(mark: UInt64, digest: StateDigest, fingerprint: StateDigest) {
    self.mark = mark
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
  /// The checkpoint's sequence number (a `rewind.checkpoint` record's, or a mark's); the state
  /// compared is the one after `sequence - 1`.
  public var sequence: UInt64
  public var recorded: String
  public var replayed: StateDigest
  /// For a mark, the sequence number of the `CheckpointDigest` record holding `recorded`; nil for
  /// a `rewind.checkpoint` record, which holds its digest itself.
  public var digestSequence: UInt64?

  public init(sequence: UInt64, recorded: String, replayed: StateDigest, digestSequence: UInt64? = nil) {
    self.sequence = sequence
    self.recorded = recorded
    self.replayed = replayed
    self.digestSequence = digestSequence
  }

  public var description: String {
    let checkpoint =
      digestSequence.map { "checkpoint marked at sequence \(sequence) (digest at sequence \($0))" }
      ?? "checkpoint at sequence \(sequence)"
    return "\(checkpoint) recorded digest \(recorded) for the state through \(sequence - 1), "
      + "but replay rebuilt \(replayed): an apply function or the journal changed at or before \(sequence - 1)"
  }
}
