public import Rewind
internal import RewindJournal

/// A model registered with the tool, so that the replay-level commands (replay, diff, blame,
/// bisect, debug, snapshot and the replay part of verify) can rebuild its state from a journal.
///
/// An app builds its own `rewind` by registering its models, with named invariants for
/// `rewind bisect` and named queries for `rewind debug`:
///
/// ```swift
/// let tool = RewindTool(models: [
///   ModelRegistration(Workspace.self, name: "workspace", invariants: [
///     Invariant("notes belong to notebooks", everyRecordOf: \.notes) { note, state in
///       state.notebooks.contains(id: note.notebook)
///     }
///   ])
/// ])
/// exit(await tool.runCommandLine())
/// ```
///
/// Which registration reads a journal: the one named by `--model NAME`; else the only one
/// registered; else the one whose events include every event name and version among the
/// journal's first 1,000 records; else, when none reads them all, the one that alone knows more
/// than half of their distinct event names (its replay then names the record it cannot read);
/// when several or none do, the command asks for `--model`.
public struct ModelRegistration: Sendable {
  /// The name users type (`--model NAME`) and output shows.
  public let name: String
  /// The fingerprint of the model's code and event schemas (see `SnapshotModel.fingerprint`).
  public let fingerprint: StateDigest
  /// The names of the invariants `rewind bisect --invariant NAME` knows, in registration order.
  public let invariantNames: [String]
  /// The names of the queries `query NAME` in `rewind debug` knows, in registration order.
  public let queryNames: [String]
  /// Whether the model reads events of this name and version (directly or by upcasting).
  let reads: @Sendable (String, UInt32) -> Bool
  /// Whether the model registers events of this name, at whatever version.
  let knows: @Sendable (String) -> Bool
  /// Opens a read-only time-travel session on a journal. (`open`, `replay` and `verify` are `var`
  /// so that tests can wrap them, to append to a journal between a command's steps as a live
  /// writer may.)
  var open: @Sendable (String, SessionUse) throws -> any ModelSession
  var replay: @Sendable (String, ReplayTarget, ((ReplayProgress) -> Void)?) throws -> ReplayedState
  var verify: @Sendable (String, UInt64, ((ReplayProgress) -> Void)?) throws -> ReplayVerification
  let snapshot:
    @Sendable (String, ((ReplayProgress) -> Void)?) throws -> (sequence: UInt64, digest: StateDigest, written: Bool)?

  /// Registers `M` under `name`.
  /// - Parameters:
  ///   - type: the model, whose journals the replay-level commands read.
  ///   - name: the name users type (`--model NAME`) and output shows.
  ///   - invariants: named predicates over the state, for `rewind bisect` and `check` in `rewind debug`.
  ///   - queries: named reads of the state rendered as JSON, for `query NAME` in `rewind debug`.
  /// - Precondition: the invariants' names differ, and so do the queries' (`--invariant NAME`,
  ///   `check NAME` and `query NAME` would reach only the first).
  public init<M: SnapshotModel>(
    _ type: M.Type, name: String, invariants: [Invariant<M>] = [], queries: [ModelQuery<M>] = []
  ) {
    if let repeated = firstRepeated(invariants.map(\.name)) {
      preconditionFailure("model \(name) has two invariants named '\(repeated)': only the first could be checked")
    }
    if let repeated = firstRepeated(queries.map(\.name)) {
      preconditionFailure("model \(name) has two queries named '\(repeated)': only the first could be asked")
    }
    self.name = name
    self.fingerprint = M.fingerprint
    self.invariantNames = invariants.map(\.name)
    self.queryNames = queries.map(\.name)
    let registry = M.eventRegistry
    reads = { name, version in registry.canDecode(name: name, version: version) }
    knows = { name in registry.knows(name: name) }
    open = { directory, use in
      try TypedSession<M>(directory: directory, use: use, invariants: invariants, queries: queries)
    }
    replay = { directory, target, progress in
      let outcome = try Replay.run(M.self, directory: directory, to: target, progress: progress)
      return ReplayedState(outcome.state, report: outcome.report)
    }
    verify = { directory, last, progress in
      let outcome = try Replay.verifying(M.self, directory: directory, through: last, progress: progress)
      return ReplayVerification(
        report: outcome.report, cacheProblems: StateInspector.cacheProblems(in: outcome.state))
    }
    snapshot = { directory, progress in
      try Snapshots.takeNotingWrite(M.self, directory: directory, progress: progress)
    }
  }
}

extension ModelRegistration {
  /// Rebuilds the state of the journal in `directory` up to `target` (see `Replay.run`).
  /// - Throws: `ReplayError` for a record the model cannot read; `JournalError`.
  public func replay(
    _ directory: String, to target: ReplayTarget = .end, progress: ((ReplayProgress) -> Void)? = nil
  ) throws -> ReplayedState {
    try replay(directory, target, progress)
  }

  /// Replays the journal from the empty state through `sequence` (or to the end), comparing
  /// every checkpoint of this model code and every snapshot's digest, then checks every store's
  /// cache against a recomputation (see `Replay.verify`).
  public func verify(_ directory: String, through sequence: UInt64 = .max, progress: ((ReplayProgress) -> Void)? = nil)
    throws -> ReplayVerification
  {
    try verify(directory, sequence, progress)
  }

  /// Writes a snapshot of the state after the journal's last record (nil for an empty journal;
  /// nothing is written when the newest usable snapshot already holds it, `Snapshots.take`).
  public func takeSnapshot(_ directory: String, progress: ((ReplayProgress) -> Void)? = nil) throws -> (
    sequence: UInt64, digest: StateDigest
  )? {
    try snapshot(directory, progress).map { ($0.sequence, $0.digest) }
  }
}

/// A named read of a model's state, shown as JSON by `query NAME` in `rewind debug`.
public struct ModelQuery<M: Model>: Sendable {
  public var name: String
  public var read: @Sendable (M) -> any Encodable

  public init(_ name: String, read: @escaping @Sendable (M) -> any Encodable) {
    self.name = name
    self.read = read
  }
}

/// A state rebuilt by replay, with its model type erased.
public struct ReplayedState: Sendable {
  /// What replay did: last sequence applied, snapshot used or skipped, checkpoints compared.
  public var report: ReplayReport
  /// Each store with its record count, in the order the model declares them.
  public var collections: [(name: String, count: Int)]
  /// The state's digest (`StateDigest.of`).
  public var digest: @Sendable () throws -> StateDigest
  /// The whole state as canonical JSON (`CanonicalJSON`): every store and record, fields sorted
  /// by name, records in id order.
  public var json: @Sendable () throws -> String

  init<M: SnapshotModel>(_ state: M, report: ReplayReport) {
    self.report = report
    collections = StateInspector.collections(of: state)
    digest = { try StateDigest.of(state) }
    json = { try CanonicalJSON.render(state) }
  }
}

/// What the replay part of `rewind verify` found.
public struct ReplayVerification: Sendable {
  /// `report.firstDivergence` names the first checkpoint whose digest differs.
  public var report: ReplayReport
  /// Where a store's cache differs from its recomputation at the end of the journal.
  public var cacheProblems: [String]
}

extension RewindTool.Context {
  /// The registration that reads the journal in `directory`: `--model NAME`, else the only one,
  /// else the one reading every event name and version among the journal's first 1000 records.
  /// - Throws: `UsageError` when none is registered, the name is unknown, or the choice is
  ///   ambiguous; `JournalError` when the journal cannot be read.
  func registration(for directory: String, named name: String?) throws -> ModelRegistration {
    guard !models.isEmpty else {
      throw UsageError(
        "this rewind has no registered models, so it cannot rebuild states; build your own rewind with "
          + "RewindTool(models: [...]) (see the README), or use the journal-level commands (log, verify, ...)")
    }
    if name != nil || models.count == 1 { return try registration(named: name) }
    let journal = try readers(of: directory)
    // None reads every record, but one alone knows most of the event names: the journal is its,
    // and its replay names the record it cannot read.
    let candidates = journal.readers.isEmpty && journal.knowing.count == 1 ? journal.knowing : journal.readers
    guard candidates.count == 1 else {
      let known = models.map(\.name).joined(separator: ", ")
      throw UsageError(
        candidates.isEmpty
          ? "no registered model (\(known)) reads every event of \(directory); pick one with --model NAME"
          : "several models read \(directory) (\(candidates.map(\.name).joined(separator: ", "))); "
            + "pick one with --model NAME")
    }
    return candidates[0]
  }

  /// The registration named `name` (or the only one).
  func registration(named name: String?) throws(UsageError) -> ModelRegistration {
    let known = models.map(\.name).joined(separator: ", ")
    guard let name else {
      guard models.count == 1 else { throw UsageError("pick a model with --model NAME: \(known)") }
      return models[0]
    }
    guard let found = models.first(where: { $0.name == name }) else {
      throw UsageError("unknown model '\(name)'; registered models: \(known)")
    }
    return found
  }

  /// The registrations that read every event name and version among the journal's first 1000
  /// records (`readers`: none when a record there is not an event, or none is: another app's
  /// journal, raw records), and those that register most of the event names among them (more
  /// than half, by their bytes, at whatever version: `knowing`): the journal's model when one
  /// alone does, though a record it cannot read (a newer version, an unknown name, one that is
  /// no event) stops its replay. One name in common does not make another app's journal a
  /// model's (an app's `settings.changed` beside names of its own is not a Notebook's).
  /// Damage among them (a damaged frame, a missing segment, read around as replay reads the
  /// records before it) ends the look there: the records before it choose, as only they can be
  /// replayed; damage before any record is thrown.
  /// `known` counts, for each registered model in order, the distinct names it knows of the
  /// `names` distinct event names read.
  func readers(of directory: String) throws -> (
    readers: [ModelRegistration], knowing: [ModelRegistration], known: [Int], names: Int
  ) {
    let cursor = try JournalReader(directory: directory, limits: .largest).records(
      from: 1, readingAroundMissingSegments: true)
    var candidates = models
    var names: Set<[UInt8]> = []
    var knownNames = Array(repeating: 0, count: models.count)
    var events = 0
    var records = 0
    while records < 1000, let record = try nextBeforeDamage(cursor, afterReading: records) {
      records += 1
      guard let header = try? EventRecord.header(of: record.payload) else {
        candidates = []
        continue
      }
      guard !Checkpoint.recordNames.contains(header.name) else { continue }
      events += 1
      candidates = candidates.filter { $0.reads(header.name, header.version) }
      guard names.insert(Array(header.name.utf8)).inserted else { continue }
      for (index, model) in models.enumerated() where model.knows(header.name) { knownNames[index] += 1 }
    }
    let known = models.indices.filter { knownNames[$0] * 2 > names.count }.map { models[$0] }
    return (events == 0 && records > 0 ? [] : candidates, known, knownNames, names.count)
  }

  /// The cursor's next record; nil at damage met after `read` records, which it ends the look at.
  private func nextBeforeDamage(_ cursor: JournalCursor, afterReading read: Int) throws -> JournalRecord? {
    do {
      return try cursor.next()
    } catch let error as JournalError where error.isDamage && read > 0 {
      return nil
    }
  }
}
