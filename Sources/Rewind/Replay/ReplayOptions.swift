/// How far a replay goes.
public enum ReplayTarget: Sendable, Equatable {
  /// Every record written so far.
  case end
  /// Through this sequence number (or the end, if the journal is shorter).
  case sequence(UInt64)
  /// Through the last record before the first one stamped later than this (ns since 1970).
  /// With timestamps that never decrease (a manager's clock), that is every record stamped at or
  /// before it.
  case time(Int64)
}

/// How replay runs.
public struct ReplayOptions: Sendable {
  /// Records per batch handed from the reading thread to the applying one; less than 1 counts as
  /// 1. Default 256.
  public var recordsPerBatch = 256
  /// Batches that may wait to be applied; with `recordsPerBatch` this bounds replay's memory
  /// beyond the state: about twice `recordsPerBatch × batchesInFlight` records at most (the
  /// batches waiting, up to as many applied ones waiting for the reading thread to destroy what
  /// their applies left in their events, and the batch the reading thread holds while it waits
  /// for room). The reading thread decodes a batch itself
  /// while at least a quarter of them wait, and otherwise leaves it to the applying thread. 0 (or
  /// less) reads and decodes on the applying thread. Default 8.
  public var batchesInFlight = 8
  /// Start from the newest usable snapshot at or before the target. Default true.
  public var useSnapshots = true
  /// Compare the digests of checkpoint records written by the same model code with the rebuilt
  /// state. Default true.
  public var verifyCheckpoints = true
  /// Compare the state replay rebuilds at each usable snapshot of this model code it passes
  /// (one whose file is whole and whose state bytes hash to its recorded digest) with that
  /// digest (`ReplayReport.snapshotDivergences`). Default false; `Replay.verify` sets it.
  public var verifySnapshots = false
  /// Call the progress callback after this many records (and once at the end). Default 10 000.
  public var progressInterval = 10_000

  public init() {}
}

/// Where a replay is, for a progress callback.
public struct ReplayProgress: Sendable, Equatable {
  /// The last sequence number applied.
  public var sequence: UInt64
  /// The sequence number replay goes to.
  public var target: UInt64
  /// Records applied so far by this replay (not counting what a snapshot covered).
  public var recordsApplied: Int
}

/// What a replay did.
public struct ReplayReport: Sendable {
  /// The last sequence number applied; the state is the one after it.
  public var lastSequence: UInt64 = 0
  /// The snapshot replay started from, or nil for the empty state.
  public var snapshotSequence: UInt64?
  /// Snapshots that were skipped, with why (none of them changed the result).
  public var skippedSnapshots: [SnapshotProblem] = []
  public var recordsApplied = 0
  /// Checkpoints whose digest was compared with the rebuilt state: `rewind.checkpoint` records
  /// and marks whose digest record came.
  public var checkpointsVerified = 0
  /// Checkpoints not compared: written by other model code (another fingerprint), or digests
  /// whose mark was given up (more than 64 later marks were waiting for their digests: replay
  /// holds the state of at most 64 marks at once, so that marks whose writer stopped before their
  /// digest do not each hold a state to the end).
  public var checkpointsSkipped = 0
  /// The first checkpoint whose digest differs from the rebuilt state, if any: the one at the
  /// earliest state (a mark's digest may come after later checkpoints).
  public var firstDivergence: CheckpointDivergence?
  /// Marks of this model code (`CheckpointMark`) with no digest record by the end of the replay,
  /// in order: the writer ended before it appended the digest, or the digest lies past where
  /// replay stopped. Harmless: nothing was claimed about those states.
  public var unfinishedCheckpoints: [UInt64] = []
  /// `CheckpointDigest` records of this model code naming no mark of this code before them: a
  /// sequence number replay passed that is not such a mark, or one at or after the digest record
  /// itself (a digest follows its mark). The journal is not what its writer wrote.
  public var strayCheckpointDigests: [UInt64] = []
  /// Snapshots whose recorded digest was compared with the rebuilt state at their sequence
  /// number (`ReplayOptions.verifySnapshots`).
  public var snapshotsVerified = 0
  /// Those whose state is not the one replay rebuilt there, in sequence order: replay and time
  /// travel starting from one would give a state the journal does not.
  public var snapshotDivergences: [SnapshotDivergence] = []
}
