internal import RewindJournal

/// Writing snapshots: on demand, or following a policy of every N records.
///
/// Snapshots are written from a replay of the journal (from the newest usable snapshot), never
/// from a live model, so each one is the state after exactly the records it names, and writing
/// one never holds up a manager's commands.
public enum Snapshots {
  /// Writes a snapshot of the state after the journal's last record, unless the replay that
  /// rebuilt it found a checkpoint of this model code whose digest differs
  /// (`ReplayReport.firstDivergence`): such a state is not the one the journal's writer had, and
  /// a snapshot would carry it past the checkpoint that shows it, so that every later replay
  /// starting from it reported nothing. When the newest usable snapshot already holds that state
  /// (the replay started from it at the journal's end), nothing is written.
  /// - Returns: its sequence number and digest (nil for an empty journal).
  /// - Throws: `DivergedState` (nothing written) for a divergence; what replaying the journal
  ///   throws (`JournalError`, `ReplayError`), and what `SnapshotStore.write(_:at:)` throws
  ///   (`EncodingError` for a state holding the double -0.0, which no snapshot can hold exactly;
  ///   `JournalError`, `SystemCallError` from the disk).
  @discardableResult
  public static func take<M: SnapshotModel>(
    _ type: M.Type, directory: String, progress: ((ReplayProgress) -> Void)? = nil
  ) throws -> (sequence: UInt64, digest: StateDigest)? {
    try takeNotingWrite(type, directory: directory, progress: progress).map { ($0.sequence, $0.digest) }
  }

  /// `take(_:directory:progress:)`, saying also whether a file was written (`written` false: the
  /// newest usable snapshot already held the last state), for `rewind snapshot` to tell.
  package static func takeNotingWrite<M: SnapshotModel>(
    _ type: M.Type, directory: String, progress: ((ReplayProgress) -> Void)?
  ) throws -> (sequence: UInt64, digest: StateDigest, written: Bool)? {
    // The last record's digest as the replay read it.
    let digests = RecordDigests(of: [], last: true)
    let outcome = try Replay.run(
      M.self, directory: directory, to: .end, options: ReplayOptions(), progress: progress, digests: digests)
    let last = outcome.report.lastSequence
    guard last > 0 else { return nil }
    if let divergence = outcome.report.firstDivergence { throw DivergedState(divergence: divergence) }
    if outcome.report.snapshotSequence == last {
      // The replay applied nothing: the snapshot it started from is this state. Written again, the
      // file would name the record as the journal holds it now, not as a replay read it (and a
      // file of format 1, which names none, would pass for one checked).
      return (last, try StateDigest.of(outcome.state), false)
    }
    let digest = try SnapshotStore(journal: directory).write(outcome.state, at: last, lastRecord: digests.digest(last))
    return (last, digest, true)
  }

  /// A snapshot not written: the replay that rebuilt its state found a checkpoint of this model
  /// code whose digest differs (an apply function, the journal or the snapshot replay started
  /// from is not what the checkpoint's writer had). `rewind verify` replays the whole journal
  /// from the empty state and names each.
  public struct DivergedState: Error, Sendable, CustomStringConvertible {
    public var divergence: CheckpointDivergence

    public var description: String {
      "\(divergence); no snapshot was written, as it would carry that state past the checkpoint that shows it"
    }
  }

  /// Brings snapshots up to date with the policy: a snapshot at each multiple of `interval` the
  /// journal has reached beyond the newest usable snapshot that the pruning keeps, then all but the
  /// newest `keep` files at or before the journal's end removed (files past it are left alone, as
  /// `SnapshotStore.prune(keeping:through:)` says). A multiple the pruning would remove at once is
  /// not written: a journal long past its newest snapshot (snapshots turned on for an app with a
  /// long history, or every snapshot stale after a change of model code) costs one replay and at
  /// most `keep` snapshots, not one whole state written and synced per interval.
  /// A multiple where the state has no exact snapshot (it holds the double -0.0, see
  /// `SnapshotStore.write`) is passed over: it gets none, and the next multiple may.
  /// - Parameters:
  ///   - type: the model whose states are written.
  ///   - directory: the journal's directory (the snapshots go in its `snapshots/`).
  ///   - interval: a snapshot at each multiple of it.
  ///   - keep: how many of the newest files at or before the journal's end are kept.
  ///   - through: the journal's end as far as the update may read (nil: its last record). A
  ///     writer's own maintenance passes the last sequence number it committed: records past it
  ///     may be written and not acknowledged yet, and a group whose sync fails is cut off the
  ///     journal, so a snapshot past it could stand for a state that was never committed.
  /// - Precondition: `interval` and `keep` are at least 1 (keeping none would remove each
  ///   snapshot as soon as it is written).
  /// - Returns: the sequence numbers written, ascending.
  /// - Throws: what replaying the journal throws (`JournalError`, `ReplayError`); what
  ///   `SnapshotStore.write(_:at:)` throws, but for the -0.0 a state cannot be written exactly
  ///   with (that multiple is passed over): an `EncodingError` of the model's own, or for a state
  ///   whose snapshot would serve no reader (its file larger than `SnapshotStore.maxFileBytes`,
  ///   or the state read back from it not the state), a `JournalError` or `SystemCallError` from
  ///   the disk. The snapshots written before it stay.
  @discardableResult
  public static func update<M: SnapshotModel>(
    _ type: M.Type, directory: String, every interval: UInt64, keep: Int = 4, through: UInt64? = nil
  ) throws -> [UInt64] {
    try update(type, directory: directory, every: interval, keep: keep, through: through, fileLimit: nil)
  }

  /// `update(_:directory:every:keep:through:)`, writing files of at most `fileLimit` bytes (nil:
  /// `SnapshotStore.maxFileBytes`; tests give less).
  static func update<M: SnapshotModel>(
    _ type: M.Type, directory: String, every interval: UInt64, keep: Int, through: UInt64?, fileLimit: Int64?
  ) throws -> [UInt64] {
    precondition(interval > 0, "a snapshot interval is at least 1")
    precondition(keep > 0, "snapshots are pruned to at least 1, not \(keep)")
    let store = SnapshotStore(
      journal: directory, io: PosixFileIO(), fileLimit: fileLimit ?? SnapshotStore.maxFileBytes)
    var written: [UInt64] = []
    var options = ReplayOptions()
    options.verifyCheckpoints = false
    var failure: (any Error)?
    let reader = try Replay.reader(directory)
    let last = min(try reader.lastSequence(), through ?? .max)
    let found = store.latest(M.self, atOrBefore: last, lastSequence: last)
    var state = found.snapshot?.state ?? M()
    let start = found.snapshot?.sequence ?? 0
    guard last / interval > start / interval else { return [] }
    // The multiples after `start` that the pruning below keeps: those among the newest `keep`
    // files once written (a file of the same number is replaced), so among the newest `keep`
    // multiples (the `n`th multiple is `n * interval`).
    let newest = last / interval
    let lowest = max(start / interval + 1, newest - min(newest, UInt64(keep)) + 1)
    let multiples = (lowest...newest).map { $0 * interval }
    // Files past the journal's end (a sign of records lost, for `verify` to report and the next
    // writer to move aside) count for nothing here, nor in the pruning: they must not push out
    // the snapshots of the journal's own records. Nor do files whose headers name another
    // journal or other model code: a stale file counted among the newest kept a multiple from
    // being written, and the pruning then removed the one usable file. Judged by their headers
    // alone (a damaged file with a whole header still counts here); the pruning reads the files
    // it keeps whole, and counts only usable ones.
    let usable = store.newestOfCode(keep, among: store.sequences().filter { $0 <= last }, fingerprint: M.fingerprint)
    let kept = Set(Set(usable).union(multiples).sorted().suffix(keep))
    let digests = RecordDigests(of: multiples.filter(kept.contains))
    try Replay.apply(
      registry: M.makeRegistry(), reader: reader, to: &state, after: start, through: last, options: options,
      progress: nil,
      observe: nil,
      observeSequence: { sequence, state in
        guard sequence % interval == 0, failure == nil, kept.contains(sequence) else { return }
        do {
          try store.write(state, at: sequence, lastRecord: digests.digest(sequence))
          written.append(sequence)
        } catch EncodingError.invalidValue(let value as Double, _) where value == 0 && value.sign == .minus {
          // This state has no exact snapshot (it holds -0.0: `SnapshotStore.write`), and gets none.
          // Throwing would write none after it either, at this call or any later one (each
          // replays to this same state again), and end a manager's maintenance job with it.
          // Any other encoding failure is the model's (every state of it may fail alike): thrown.
        } catch {
          failure = error
        }
      }, digests: digests)
    if let failure { throw failure }
    try store.prune(keeping: keep, through: last, fingerprint: M.fingerprint)
    return written
  }
}
