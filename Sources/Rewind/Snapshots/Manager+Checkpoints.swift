/// Checkpoints through the funnel: a checkpoint is a command like any other, so it lands in the
/// journal in order, between whole commands, and the digest it records is that of the state every
/// earlier command left.
extension Manager where M: SnapshotModel {
  /// Appends a `Checkpoint` record with the digest of the current state.
  /// - Returns: the digest recorded.
  @discardableResult
  public func recordCheckpoint() async throws -> StateDigest {
    try await perform(.rewind) { state, command in
      let digest = try StateDigest.of(state)
      command.record(Checkpoint(digest: digest, fingerprint: M.fingerprint))
      return digest
    }
  }

  /// A job that follows this manager's committed changes and records a checkpoint once at least
  /// `interval` records were committed since the last one; with `snapshots`, it also keeps the
  /// snapshots of the manager's journal up to date (see `Snapshots.update`). Runs until the
  /// manager is closed or the task is cancelled. Errors end it and are thrown.
  public func maintain(checkpointEvery interval: UInt64, snapshots: SnapshotPolicy? = nil) async throws {
    precondition(interval > 0, "a checkpoint interval is at least 1")
    var since: UInt64 = 0
    var snapshotted = lastSequence
    for await change in changes() {
      if change.origin == .rewind { continue }
      since += UInt64(change.events.count)
      if since >= interval {
        since = 0
        try await recordCheckpoint()
      }
      if let snapshots, lastSequence - snapshotted >= snapshots.interval {
        snapshotted = lastSequence
        try Snapshots.update(M.self, directory: snapshots.directory, every: snapshots.interval, keep: snapshots.keep)
      }
    }
  }
}

/// Where and how often to write snapshots: every `interval` records, keeping the newest `keep`.
public struct SnapshotPolicy: Sendable {
  /// The journal directory (the manager's).
  public var directory: String
  public var interval: UInt64
  public var keep: Int

  public init(directory: String, every interval: UInt64, keep: Int = 4) {
    precondition(interval > 0, "a snapshot interval is at least 1")
    self.directory = directory
    self.interval = interval
    self.keep = keep
  }
}
