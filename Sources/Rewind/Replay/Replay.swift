internal import RewindJournal

/// Rebuilding a model from its journal: read every record, decode it (upcasting old versions),
/// apply it. Applying is pure, so the same journal always rebuilds the same state, whatever the
/// batch sizes, segment boundaries, snapshots, process or machine.
///
/// Replay streams: records are read and decompressed on a second thread into a bounded queue (see
/// `ReplayOptions`) while the calling thread applies them, so memory is the state plus a fixed
/// buffer whatever the journal's length. Each batch is decoded by whichever thread has time: the
/// reading one while it is ahead, the applying one otherwise.
///
/// Replay (like time travel and snapshots) reads a journal whatever limits it was written with
/// (`JournalLimits.largest`).
public enum Replay {
  /// A rebuilt state and the last sequence number applied to it.
  public struct Result<M: Model>: Sendable {
    public var state: M
    public var lastSequence: UInt64
    /// What replay did: the snapshot it started from, the snapshots it skipped and why.
    public var report = ReplayReport()
  }

  /// A rebuilt state and what replay did to get it.
  public struct Outcome<M: Model>: Sendable {
    public var state: M
    public var report: ReplayReport
  }

  /// Rebuilds `M` from the journal in `directory`, through `sequence` (or to the end), without
  /// snapshots. A `sequence` inside a command of several events stops inside it: the state holds
  /// the command's earlier events only. Only the records through `sequence` need to be intact:
  /// damage after them is not read.
  /// - Throws: `ReplayError` locating the first record that is not a known event;
  ///   `JournalError` if the journal cannot be read (damage through `sequence` located).
  public static func rebuild<M: Model>(_ type: M.Type, directory: String, through sequence: UInt64 = .max) throws
    -> Result<M>
  {
    try rebuild(registry: M.makeRegistry(), reader: reader(directory), through: sequence, usingSnapshots: false)
  }

  /// Rebuilds `M` from the journal in `directory` up to `target`, starting from the newest usable
  /// snapshot (skipped snapshots are listed in the report), verifying checkpoints on the way and
  /// calling `progress` every `options.progressInterval` records.
  ///
  /// Only the records up to the target need to be intact: a target before damage that hides the
  /// journal's end (a damaged frame, committed records gone at the end) is replayed; one at or
  /// past it throws the journal's error locating the damage, never a state short of the target.
  /// - Throws: `ReplayError`, `JournalError`.
  public static func run<M: SnapshotModel>(
    _ type: M.Type, directory: String, to target: ReplayTarget = .end, options: ReplayOptions = ReplayOptions(),
    progress: ((ReplayProgress) -> Void)? = nil
  ) throws -> Outcome<M> {
    try run(type, directory: directory, to: target, options: options, progress: progress, digests: nil)
  }

  /// `run(_:directory:to:options:progress:)`, taking the digests of the records `digests`
  /// chooses as they are read (for a snapshot of the state it returns).
  static func run<M: SnapshotModel>(
    _ type: M.Type, directory: String, to target: ReplayTarget, options: ReplayOptions,
    progress: ((ReplayProgress) -> Void)?, digests: RecordDigests?
  ) throws -> Outcome<M> {
    let reader = try reader(directory)
    let registry = M.makeRegistry()
    // Damage may hide the end: then only a target before it is replayed (`resolve`), and a replay
    // that falls short of it throws that damage.
    let readable = try reader.readableEnd()
    let end = try? readable.get()
    let last = try resolve(target, reader: reader, end: readable)
    var report = ReplayReport()
    var state = M()
    var start: UInt64 = 0
    if options.useSnapshots {
      // A snapshot after the target is not a candidate; only one after the journal's end is a problem
      // (none is, when damage hides the end: one after the target is not looked at).
      let found = SnapshotStore(journal: directory).latest(
        M.self, atOrBefore: last, lastSequence: end ?? .max)
      report.skippedSnapshots = found.problems
      if let snapshot = found.snapshot {
        state = snapshot.state
        start = snapshot.sequence
        report.snapshotSequence = start
      }
    }
    report.lastSequence = start
    let fingerprint = M.fingerprint.description
    // The state at each mark of this code whose digest has not come yet, by the mark's sequence
    // number: a copy shares the stores' nodes, so holding it costs what changes until the digest.
    // At most `maximumHeldMarks`; the oldest beyond are given up (`givenUp`), as marks left by
    // writers that stopped would otherwise each hold a state to the end.
    var marked: [UInt64: M] = [:]
    var givenUp: Set<UInt64> = []
    // The snapshots of this code replay passes, ascending, and the next one to compare.
    let snapshots =
      options.verifySnapshots
      ? SnapshotStore(journal: directory).recordedDigests(fingerprint: M.fingerprint, after: start, through: last) : []
    var nextSnapshot = 0
    // Checkpoints and snapshots are looked at only to verify them: without that, no observer, so
    // each record is applied as it is decoded (`apply`), as a manager's start-up replay wants.
    let checkAfter: ((DecodedRecord, M) throws -> Void)? = { record, state in
      func compare(_ recorded: String, at sequence: UInt64, with state: M, digestAt digestSequence: UInt64?) throws {
        report.checkpointsVerified += 1
        let digest = try StateDigest.of(state)
        // The first divergence is the one at the earliest state: a digest may come after later checkpoints.
        if digest.description != recorded, sequence < report.firstDivergence?.sequence ?? .max {
          report.firstDivergence = CheckpointDivergence(
            sequence: sequence, recorded: recorded, replayed: digest, digestSequence: digestSequence)
        }
      }
      if nextSnapshot < snapshots.count, snapshots[nextSnapshot].sequence == record.sequence {
        let (sequence, recorded) = snapshots[nextSnapshot]
        nextSnapshot += 1
        report.snapshotsVerified += 1
        let replayed = try StateDigest.of(state)
        if replayed != recorded, let problem = SnapshotStore(journal: directory).problem(M.self, at: sequence) {
          // A file readers skip (its state does not decode, or encode back to its digest): no
          // start for anyone, so no divergence either. Noted as skipped.
          report.skippedSnapshots.append(problem)
        } else if replayed != recorded {
          report.snapshotDivergences.append(
            SnapshotDivergence(
              file: SnapshotStore.fileName(sequence), sequence: sequence, recorded: recorded, replayed: replayed))
        }
      }
      guard options.verifyCheckpoints else { return }
      switch record {
      case .event: return
      case .checkpoint(let sequence, let checkpoint):
        guard checkpoint.fingerprint == fingerprint else {
          report.checkpointsSkipped += 1
          return
        }
        try compare(checkpoint.digest, at: sequence, with: state, digestAt: nil)
      case .checkpointMark(let sequence, let mark):
        // A mark applies nothing: the state after it is the one after every record before it.
        guard mark.fingerprint == fingerprint else { return }
        marked[sequence] = state
        if marked.count > maximumHeldMarks, let oldest = marked.keys.min() {
          marked.removeValue(forKey: oldest)
          givenUp.insert(oldest)
        }
      case .checkpointDigest(let sequence, let digest):
        guard digest.fingerprint == fingerprint else {
          report.checkpointsSkipped += 1
          return
        }
        if let state = marked.removeValue(forKey: digest.mark) {
          try compare(digest.digest, at: digest.mark, with: state, digestAt: sequence)
        } else if givenUp.remove(digest.mark) != nil {
          report.checkpointsSkipped += 1
        } else if digest.mark > start {
          // Not a mark of this code that replay passed (and not one before where it started): a
          // sequence that holds none, or one the digest does not follow.
          report.strayCheckpointDigests.append(sequence)
        }
      }
    }
    // Counted by `apply` and taken from its result, not by an `applied` closure: `report` is
    // captured by `checkAfter` too, so a closure changing it per record would reach it through
    // a box with a dynamic exclusivity check each time.
    let applied = try apply(
      registry: registry, reader: reader, to: &state, after: start, through: last, options: options,
      progress: progress, observe: options.verifyCheckpoints || !snapshots.isEmpty ? checkAfter : nil,
      digests: digests)
    if case .failure(let damage) = readable, applied.lastSequence < last { throw damage }
    report.lastSequence = applied.lastSequence
    report.recordsApplied += applied.count
    report.unfinishedCheckpoints = (Array(marked.keys) + givenUp).sorted()
    return Outcome(state: state, report: report)
  }

  /// Most marks whose state replay holds at once while their digests have not come (see
  /// `ReplayReport.unfinishedCheckpoints`); beyond, the oldest mark's state is given up.
  static let maximumHeldMarks = 64

  /// Replays the journal from the empty state (no snapshots) through `sequence` (or to the end)
  /// and compares every checkpoint written by this model code, and every snapshot's digest, with
  /// the rebuilt state. `report.firstDivergence` names the first checkpoint that disagrees.
  ///
  /// A live writer may append while this runs: pass the end another check of the same journal
  /// read (`rewind verify` passes the end its walk of the frames read) so that both judge the
  /// same records. Only the records through `sequence` are read: damage after them, even damage
  /// that hides the journal's end, is not looked at and throws nothing (to the end, it throws
  /// before anything is applied).
  public static func verify<M: SnapshotModel>(
    _ type: M.Type, directory: String, through sequence: UInt64 = .max,
    progress: ((ReplayProgress) -> Void)? = nil
  ) throws -> ReplayReport {
    try verifying(M.self, directory: directory, through: sequence, progress: progress).report
  }

  /// `verify`'s replay, with the state it rebuilt (which `rewind verify` checks the caches of).
  package static func verifying<M: SnapshotModel>(
    _ type: M.Type, directory: String, through sequence: UInt64, progress: ((ReplayProgress) -> Void)?
  ) throws -> Outcome<M> {
    var options = ReplayOptions()
    options.useSnapshots = false
    options.verifyCheckpoints = true
    options.verifySnapshots = true
    // To the end, a damaged one is thrown before anything is applied, as it always was.
    let target: ReplayTarget = sequence == .max ? .end : .sequence(sequence)
    return try run(M.self, directory: directory, to: target, options: options, progress: progress)
  }

  /// Every event in the journal in `directory`, decoded and upcast, with its envelope (checkpoints
  /// left out).
  public static func events<M: Model>(of type: M.Type, directory: String) throws -> [RecordedEvent] {
    try events(of: type, directory: directory, from: 1)
  }

  /// The events of the records `first...last` of the journal in `directory` (to its end, when it
  /// ends before `last`), decoded and upcast as replay decodes them, with their envelopes
  /// (checkpoints left out): what a reader of a change stream that fell behind reads to catch up
  /// ("Change streams" in the documentation), or a follower in another process reads of the
  /// records appended since it last looked.
  /// - Throws: `ReplayError` for a record the model cannot read; `JournalError` when the journal
  ///   cannot be read (damage, located).
  public static func events<M: Model>(
    of type: M.Type, directory: String, from first: UInt64, through last: UInt64 = .max
  ) throws -> [RecordedEvent] {
    let registry = M.makeRegistry()
    guard first <= last else { return [] }
    let cursor = try reader(directory).records(from: max(first, 1))
    var events: [RecordedEvent] = []
    while let record = try cursor.next(), record.sequence <= last {
      if case .event(let recorded) = try DecodedRecords.decode(record, registry: registry) {
        events.append(recorded)
      }
    }
    return events
  }

  /// A reader of the journal in `directory` for the model layer (replay, time travel, snapshots,
  /// a manager's start-up): with `JournalLimits.largest`, so that it reads every journal a writer
  /// can write, whatever limits it was written with. A reader's limits only cap what one batch
  /// makes it allocate, and that is bounded without them: a batch's frame is read only when the
  /// file holds all of it and decoded only when its checksum holds, and a header claiming more
  /// than LZ4 can decode from that frame is refused (`BatchHeader`'s plausibility check), so a
  /// damaged or hostile journal costs at most a constant times its own bytes. Smaller limits would
  /// only refuse batches that a writer with larger ones committed.
  static func reader(_ directory: String, cachingIndex: Bool = false) throws -> JournalReader {
    try JournalReader(directory: directory, limits: .largest, cachingIndex: cachingIndex)
  }

  /// Replay from the empty state through `sequence`; with `usingSnapshots` (a manager's
  /// start-up, to the end), from the newest usable snapshot when `M` is a `SnapshotModel` and
  /// one exists.
  static func rebuild<M: Model>(
    registry: EventRegistry<M>, reader: JournalReader, through sequence: UInt64 = .max, usingSnapshots: Bool
  ) throws -> Result<M> {
    if usingSnapshots, sequence == .max, let snapshotType = M.self as? any SnapshotModel.Type {
      func open<S: SnapshotModel>(_: S.Type) throws -> Result<M>? {
        var options = ReplayOptions()
        options.verifyCheckpoints = false  // `verify` checks them; start-up stays fast
        let outcome = try run(S.self, directory: reader.directory, options: options)
        guard let state = outcome.state as? M else { return nil }
        return Result(state: state, lastSequence: outcome.report.lastSequence, report: outcome.report)
      }
      if let result = try open(snapshotType) { return result }
    }
    var state = M()
    var report = ReplayReport()
    let applied = try apply(
      registry: registry, reader: reader, to: &state, after: 0, through: sequence, options: ReplayOptions(),
      progress: nil, observe: nil)
    report.lastSequence = applied.lastSequence
    report.recordsApplied = applied.count
    return Result(state: state, lastSequence: report.lastSequence, report: report)
  }

  /// The last sequence number `target` includes, in a journal that ends at `end` (read from
  /// `reader` when not given). When damage hides the end, a target by sequence number is taken
  /// as given and one by time is looked for before the damage: the replay to it fails at the
  /// damage if it lies there or past it. `.end`, and a time after every record read, throw the
  /// damage.
  static func resolve(
    _ target: ReplayTarget, reader: JournalReader, end: Swift.Result<UInt64, JournalError>? = nil
  ) throws -> UInt64 {
    let end = try end ?? reader.readableEnd()
    let last = (try? end.get()) ?? .max
    switch target {
    case .end: return try end.get()
    case .sequence(let sequence): return min(sequence, last)
    case .time(let timestamp):
      if timestamp == .max { return try end.get() }
      // Read around a missing segment after the target, as the replay to it does: one the read
      // reaches throws its located error.
      let after = try reader.records(from: 1, since: timestamp + 1, readingAroundMissingSegments: true)
      guard let first = try after.next() else { return try end.get() }
      return min(first.sequence - 1, last)
    }
  }

  /// Applies records `start+1 ... last` to `state`; `digests` takes the digests of the records
  /// it chooses as they are read. `observe` sees each record with the state
  /// after it; `observeSequence` sees each record's sequence number with the state after it (for
  /// a caller that does not look at the record: records are then applied as they are decoded, as
  /// without either); `applied`, if given, gets each sequence number applied, before either
  /// observer sees it (one that throws ends the replay after that record). Returns the last
  /// sequence number applied (`start` if none) and how many records were applied.
  @discardableResult
  static func apply<M: Model>(
    registry: EventRegistry<M>, reader: JournalReader, to state: inout M, after start: UInt64, through last: UInt64,
    options: ReplayOptions, progress: ((ReplayProgress) -> Void)?,
    observe: ((DecodedRecord, M) throws -> Void)?, observeSequence: ((UInt64, M) throws -> Void)? = nil,
    applied: ((UInt64) -> Void)? = nil, digests: RecordDigests? = nil
  ) throws -> (lastSequence: UInt64, count: Int) {
    guard last > start else { return (start, 0) }
    let records = try DecodedRecords(
      registry: registry, reader: reader, first: start + 1, last: last, options: options, applyOnly: observe == nil,
      digests: digests)
    let tables = registry.tables
    var context = ApplyContext(recording: false)
    if observe == nil, observeSequence == nil, applied == nil, progress == nil {
      // Nothing to call between records (a rebuild, a manager's start-up): applied batch by batch.
      return try records.applyAll(to: &state, context: &context, after: start)
    }
    var count = 0
    var sequence = start
    while true {
      if let observe {
        guard let record = try records.next() else { break }
        sequence = record.sequence
        if case .event(let recorded) = record {
          tables.apply(recorded.event, to: &state, context: &context)
          context.touched.removeAll(keepingCapacity: true)
        }
        // Counted before it is observed: an observer that throws ends the replay after it.
        applied?(sequence)
        try observe(record, state)
      } else {
        // Nothing looks at the record afterwards: applied as it is decoded (see `applyNext`).
        guard let next = try records.applyNext(to: &state, context: &context) else { break }
        sequence = next
        context.touched.removeAll(keepingCapacity: true)
        applied?(sequence)
        try observeSequence?(next, state)
      }
      count += 1
      if let progress, count % max(1, options.progressInterval) == 0 {
        progress(ReplayProgress(sequence: sequence, target: last, recordsApplied: count))
      }
    }
    progress?(ReplayProgress(sequence: sequence, target: last, recordsApplied: count))
    return (sequence, count)
  }
}
