public import RewindJournal
internal import Synchronization

/// The one funnel through which a model changes.
///
/// A manager owns one model and its journal. Each command goes through four steps in arrival
/// order: validate against the current state (the command body), append all of its events to the
/// journal in one atomic batch, apply them to the live model, and notify observers with one
/// settled `CommittedChange`. Nothing is visible before the append is acknowledged.
///
/// Guarantees:
/// - A body that throws, or records no event, writes nothing and changes nothing.
/// - If the append fails, the model, its queries and observers show no change, and the command
///   throws `ManagerError` (`.appendFailed`); retrying it is safe.
/// - If the journal reports that durability is lost (a failed fsync), the command throws
///   `.durabilityLost` and every later command throws `.stopped`.
/// - Commands never interleave: each validates against the state left by every command before it,
///   and none can run while another is half-way (see `SerialGate`).
///
/// Group commit: while one batch is being appended, the commands that arrive meanwhile validate
/// one after another against the state their predecessors leave (kept in a private working copy,
/// invisible to readers), and then go to the journal together in one append. Each command's events
/// stay contiguous, and observers still get one change per command. If that append fails, every
/// command in it fails and nothing of them is visible.
///
/// Reads skip the manager's funnel: `state` returns the current model value, which queries read.
///
/// `Sendable`: `guarded` (model, last sequence, stop reason, observers) and `batch` (commands
/// validated but not yet appended) are behind `Mutex`es; `batch` is only used by the holder of
/// `gate`. `journal`, `registry`, `clock`, `ids` and `limits` are immutable or thread-safe.
public final class Manager<M: Model>: Sendable {
  private struct Guarded: Sendable {
    var model: M
    var lastSequence: UInt64
    var stopped: ManagerError?
    var observers: [Int: AsyncStream<CommittedChange>.Continuation] = [:]
    var nextObserver = 0
  }

  /// A command that passed validation and waits for its batch's append.
  private struct Staged: Sendable {
    var id: Identifier
    var origin: Origin
    var timestamp: Int64
    var events: [any Event]
    var records: [NewRecord]
    var bytes: Int
    var completion: Completion
    /// Set once the command is applied to a working copy.
    var keys: [ChangeKey]?
  }

  /// Commands validated but not yet appended, and the model they leave behind.
  private struct Batch: Sendable {
    var commands: [Staged] = []
    /// The live model plus `commands[..<applied]`; made only when a later command has to
    /// validate against them.
    var working: M?
    var applied = 0
    var bytes = 0
  }

  /// Most commands in one append.
  static var maximumBatchCommands: Int { 4096 }

  private let journal: Journal
  private let registry: EventRegistry<M>
  private let clock: TimeSource
  private let ids: IdentifierSource
  /// Most payload bytes (plus a per-record allowance) in one append: half the journal's limit.
  private let batchBudget: Int
  private let gate = SerialGate()
  private let guarded: Mutex<Guarded>
  private let batch = Mutex(Batch())
  /// Journal appends made, for tests of group commit.
  private let appends = Counter(0)
  /// Runs before each append, for tests that need a batch to form.
  let beforeAppend = Mutex<(@Sendable () async -> Void)?>(nil)

  /// Opens the journal in `directory` for writing (creating it if needed) and rebuilds the model
  /// by replaying every record in it.
  /// - Throws: `JournalError` if the journal cannot be opened, `ReplayError` if a record does
  ///   not decode as one of the model's events.
  public init(
    directory: String, options: JournalOptions = JournalOptions(), clock: TimeSource = .system,
    ids: IdentifierSource = .random
  ) throws {
    let journal = try Journal(directory: directory, options: options)
    let registry = M.makeRegistry()
    let replayed: Replay.Result<M>
    do {
      replayed = try Replay.rebuild(registry: registry, reader: journal.reader())
    } catch {
      journal.close()
      throw error
    }
    self.journal = journal
    self.registry = registry
    self.clock = clock
    self.ids = ids
    self.batchBudget = max(1, options.limits.maxBatchBytes / 2)
    self.guarded = Mutex(Guarded(model: replayed.state, lastSequence: replayed.lastSequence))
    self.startupReport = replayed.report
  }

  deinit {
    let observers = guarded.withLock { Array($0.observers.values) }
    journal.close()
    for observer in observers { observer.finish() }
  }

  /// The current model. A value: later commands do not change the copy you hold.
  public var state: M { guarded.withLock { $0.model } }

  /// What the start-up replay did: the snapshot it started from (if any), the records it applied,
  /// and every snapshot it skipped with why (missing, corrupt, foreign, stale, beyond the journal).
  /// Skipped snapshots cost time, never correctness; an app may log them.
  public let startupReport: ReplayReport

  /// The sequence number of the last applied event; 0 for an empty journal.
  public var lastSequence: UInt64 { guarded.withLock { $0.lastSequence } }

  /// Why the manager refuses commands, if it does.
  public var stopReason: ManagerError? { guarded.withLock { $0.stopped } }

  /// How many observers (`changes()` streams) are attached, for tests that wait for a job.
  var observerCount: Int { guarded.withLock { $0.observers.count } }

  /// How many commands wait for their turn to validate.
  var waitingCommands: Int { gate.waiterCount }

  /// How many journal appends this manager has made.
  var journalAppendCount: Int { Int(appends.advance(by: 0)) }

  /// The committed changes from now on, one per command, in commit order. Buffered without bound;
  /// ends when the manager is closed.
  public func changes() -> AsyncStream<CommittedChange> {
    let (stream, continuation) = AsyncStream.makeStream(of: CommittedChange.self, bufferingPolicy: .unbounded)
    let id: Int? = guarded.withLock { guarded in
      if guarded.stopped?.code == .closed { return nil }
      guarded.nextObserver += 1
      guarded.observers[guarded.nextObserver] = continuation
      return guarded.nextObserver
    }
    guard let id else {
      continuation.finish()
      return stream
    }
    continuation.onTermination = { [weak self] _ in
      _ = self?.guarded.withLock { $0.observers.removeValue(forKey: id) }
    }
    return stream
  }

  /// Runs one command: `body` validates against the current model and records events; they are
  /// journaled as one batch, applied, and announced. Returns what `body` returns once the events
  /// are committed.
  ///
  /// `body` must only read the model and record events: it may run against a state that includes
  /// commands not yet acknowledged (if those fail, so does this one). It must not call back into
  /// this manager's commands (it would wait for itself).
  /// - Throws: whatever `body` throws (nothing written); `ManagerError`; `CancellationError` if the
  ///   task was cancelled before validation (nothing written).
  @discardableResult
  public func perform<R: Sendable>(_ origin: Origin, _ body: (M, inout Command) throws -> R) async throws -> R {
    await gate.enter()
    let outcome: Result<(R, Completion?), any Error>
    do {
      outcome = .success(try await stage(origin, body))
    } catch {
      outcome = .failure(error)
    }
    // Leave the batch to the next waiter, who adds to it; the last one in line commits it.
    if !gate.hasWaiters || batch.withLock({ $0.commands.count >= Self.maximumBatchCommands || $0.bytes >= batchBudget })
    {
      await flush()
    }
    gate.leave()
    let (result, completion) = try outcome.get()
    try await completion?.wait()
    return result
  }

  /// Validates and encodes one command and adds it to the open batch. Holder of the gate only.
  private func stage<R>(_ origin: Origin, _ body: (M, inout Command) throws -> R) async throws -> (R, Completion?) {
    if let stopped = guarded.withLock({ $0.stopped }) {
      throw stopped.code == .closed
        ? stopped : ManagerError(.stopped, "the manager accepts no more commands after: \(stopped)")
    }
    try Task.checkCancellation()

    var command = Command(id: ids.next(), timestamp: clock.now(), origin: origin, ids: ids)
    // The snapshot lives only inside this closure, so applying later can mutate in place.
    let result = try { (command: inout Command) in try body(validationState(), &command) }(&command)
    if command.events.isEmpty { return (result, nil) }

    var records: [NewRecord] = []
    records.reserveCapacity(command.events.count)
    var bytes = 0
    for event in command.events {
      let encoded: [UInt8]?
      do {
        encoded = try registry.encode(event, origin: origin, commandID: command.id)
      } catch {
        throw ManagerError(.encodingFailed, "\(type(of: event).name) could not be encoded: \(error)")
      }
      guard let payload = encoded else {
        throw ManagerError(
          .unregisteredEvent, "\(type(of: event)) (\(type(of: event).name)) is not registered with \(M.self)")
      }
      bytes += payload.count + 32
      records.append(NewRecord(timestamp: command.timestamp, payload: payload))
    }

    // A command that would overflow the batch waits for the batch before it to commit. It was
    // validated against that batch, so if the batch fails, it fails too.
    if batch.withLock({ !$0.commands.isEmpty && $0.bytes + bytes > batchBudget }), let failure = await flush() {
      throw failure
    }
    let completion = Completion()
    batch.withLock { batch in
      batch.commands.append(
        Staged(
          id: command.id, origin: origin, timestamp: command.timestamp, events: command.events, records: records,
          bytes: bytes, completion: completion))
      batch.bytes += bytes
    }
    return (result, completion)
  }

  /// The state a new command validates against: the live model, plus the open batch's commands.
  private func validationState() -> M {
    let live = guarded.withLock { $0.model }
    return batch.withLock { batch -> M in
      guard !batch.commands.isEmpty else { return live }
      var working = batch.working ?? live
      batch.working = nil
      applyPending(&batch, to: &working)
      batch.working = working
      return working
    }
  }

  /// Applies the batch's commands not yet in `model`, recording their keys.
  private func applyPending(_ batch: inout Batch, to model: inout M) {
    while batch.applied < batch.commands.count {
      var context = ApplyContext()
      for event in batch.commands[batch.applied].events { registry.apply(event, to: &model, context: &context) }
      batch.commands[batch.applied].keys = context.touched.sorted()
      batch.applied += 1
    }
  }

  /// Appends the open batch as one journal append, then publishes it: applies it to the live
  /// model, notifies observers (one change per command), and resolves each command. Holder of
  /// the gate only. Returns the failure, if the append failed.
  @discardableResult
  private func flush() async -> ManagerError? {
    var taken = batch.withLock { batch -> Batch in
      defer { batch = Batch() }
      return batch
    }
    guard !taken.commands.isEmpty else { return nil }
    var records: [NewRecord] = []
    records.reserveCapacity(taken.commands.reduce(0) { $0 + $1.records.count })
    for command in taken.commands { records += command.records }

    if let hook = beforeAppend.withLock({ $0 }) { await hook() }
    _ = appends.advance(by: 1)
    let sequences: ClosedRange<UInt64>
    do {
      sequences = try await journal.append(records)
    } catch {
      let failure =
        (error as? JournalError).map(refusal(for:))
        ?? ManagerError(.appendFailed, "the command's events could not be journaled: \(error)")
      for command in taken.commands { command.completion.resolve(.failure(failure)) }
      return failure
    }

    let observers = guarded.withLock { guarded in
      precondition(sequences.lowerBound == guarded.lastSequence + 1, "the journal skipped sequence numbers")
      precondition(sequences.count == records.count, "the journal numbered a different number of records")
      if var working = taken.working {
        taken.working = nil
        applyPending(&taken, to: &working)
        guarded.model = working
      } else {
        applyPending(&taken, to: &guarded.model)
      }
      guarded.lastSequence = sequences.upperBound
      return Array(guarded.observers.values)
    }

    var first = sequences.lowerBound
    for command in taken.commands {
      let count = UInt64(command.events.count)
      if !observers.isEmpty {
        var recorded: [RecordedEvent] = []
        recorded.reserveCapacity(command.events.count)
        for (offset, event) in command.events.enumerated() {
          let envelope = Envelope(
            sequence: first + UInt64(offset), timestamp: command.timestamp, name: type(of: event).name,
            version: type(of: event).version, origin: command.origin, commandID: command.id)
          recorded.append(RecordedEvent(envelope: envelope, event: event))
        }
        let change = CommittedChange(
          commandID: command.id, origin: command.origin, sequences: first...(first + count - 1), events: recorded,
          keys: command.keys ?? [])
        for observer in observers { observer.yield(change) }
      }
      first += count
      command.completion.resolve(.success(()))
    }
    return nil
  }

  /// The error for a failed append; stops the manager when durability is lost.
  private func refusal(for error: JournalError) -> ManagerError {
    switch error.code {
    case .durabilityLost:
      let failure = ManagerError(
        .durabilityLost,
        "the journal can no longer guarantee durability; the command may or may not be on disk, and no more commands are accepted",
        journalError: error)
      guarded.withLock { $0.stopped = failure }
      return failure
    case .closed:
      return ManagerError(.closed, "the manager is closed", journalError: error)
    default:
      return ManagerError(
        .appendFailed, "the command's events could not be journaled; nothing changed, and it can be retried",
        journalError: error)
    }
  }

  /// Finishes the commands already running, closes the journal and ends every change stream.
  /// Later commands throw `.closed`.
  public func close() {
    let observers = guarded.withLock { guarded in
      if guarded.stopped == nil { guarded.stopped = ManagerError(.closed, "the manager is closed") }
      defer { guarded.observers.removeAll() }
      return Array(guarded.observers.values)
    }
    journal.close()
    for observer in observers { observer.finish() }
  }
}
