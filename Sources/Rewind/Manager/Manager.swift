public import RewindJournal
internal import Synchronization

/// The one funnel through which a model changes.
///
/// A manager owns one model and its journal. Each command runs alone, in arrival order, through
/// four steps: validate against the current state (the command body), append all of its events
/// to the journal in one atomic batch, apply them to the live model, and notify observers with one
/// settled `CommittedChange`. Nothing is visible before the append is acknowledged.
///
/// Guarantees:
/// - A body that throws, or records no event, writes nothing and changes nothing.
/// - If the append fails, the model, its queries and observers show no change, and the command
///   throws `ManagerError` (`.appendFailed`); retrying it is safe.
/// - If the journal reports that durability is lost (a failed fsync), the command throws
///   `.durabilityLost` and every later command throws `.stopped`.
/// - Commands never interleave, even across the append's suspension (see `SerialGate`).
///
/// Reads skip the manager's funnel: `state` returns the current model value, which queries read.
///
/// `Sendable`: `guarded` (model, last sequence, stop reason, observers) is behind a `Mutex`;
/// `journal`, `registry`, `clock` and `ids` are immutable or themselves thread-safe.
public final class Manager<M: Model>: Sendable {
  private struct Guarded: Sendable {
    var model: M
    var lastSequence: UInt64
    var stopped: ManagerError?
    var observers: [Int: AsyncStream<CommittedChange>.Continuation] = [:]
    var nextObserver = 0
  }

  private let journal: Journal
  private let registry: EventRegistry<M>
  private let clock: TimeSource
  private let ids: IdentifierSource
  private let gate = SerialGate()
  private let guarded: Mutex<Guarded>

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
    self.guarded = Mutex(Guarded(model: replayed.state, lastSequence: replayed.lastSequence))
  }

  deinit {
    let observers = guarded.withLock { Array($0.observers.values) }
    journal.close()
    for observer in observers { observer.finish() }
  }

  /// The current model. A value: later commands do not change the copy you hold.
  public var state: M { guarded.withLock { $0.model } }

  /// The sequence number of the last applied event; 0 for an empty journal.
  public var lastSequence: UInt64 { guarded.withLock { $0.lastSequence } }

  /// Why the manager refuses commands, if it does.
  public var stopReason: ManagerError? { guarded.withLock { $0.stopped } }

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
  /// journaled as one batch, applied, and announced. Returns what `body` returns.
  ///
  /// `body` must not call back into this manager's commands (it would wait for itself).
  /// - Throws: whatever `body` throws (nothing written); `ManagerError`; `CancellationError` if the
  ///   task was cancelled before the append started (nothing written).
  @discardableResult
  public func perform<R: Sendable>(_ origin: Origin, _ body: (M, inout Command) throws -> R) async throws -> R {
    await gate.enter()
    defer { gate.leave() }
    if let stopped = guarded.withLock({ $0.stopped }) {
      throw stopped.code == .closed
        ? stopped : ManagerError(.stopped, "the manager accepts no more commands after: \(stopped)")
    }
    try Task.checkCancellation()

    var command = Command(id: ids.next(), timestamp: clock.now(), origin: origin, ids: ids)
    // The snapshot lives only inside this closure, so applying below can mutate the model in place.
    let result = try { (command: inout Command) in try body(guarded.withLock { $0.model }, &command) }(&command)
    if command.events.isEmpty { return result }

    var records: [NewRecord] = []
    records.reserveCapacity(command.events.count)
    for event in command.events {
      guard registry.isRegistered(type(of: event)) else {
        throw ManagerError(
          .unregisteredEvent, "\(type(of: event)) (\(type(of: event).name)) is not registered with \(M.self)")
      }
      do {
        records.append(
          NewRecord(
            timestamp: command.timestamp, payload: try EventRecord.encode(event, origin: origin, commandID: command.id))
        )
      } catch {
        throw ManagerError(.encodingFailed, "\(type(of: event).name) could not be encoded: \(error)")
      }
    }

    let sequences: ClosedRange<UInt64>
    do {
      sequences = try await journal.append(records)
    } catch let error as JournalError {
      throw refusal(for: error)
    }

    let (keys, observers) = guarded.withLock { guarded in
      precondition(sequences.lowerBound == guarded.lastSequence + 1, "the journal skipped sequence numbers")
      var context = ApplyContext()
      for event in command.events { registry.apply(event, to: &guarded.model, context: &context) }
      guarded.lastSequence = sequences.upperBound
      return (context.touched.sorted(), Array(guarded.observers.values))
    }

    if !observers.isEmpty {
      var recorded: [RecordedEvent] = []
      recorded.reserveCapacity(command.events.count)
      for (offset, event) in command.events.enumerated() {
        let envelope = Envelope(
          sequence: sequences.lowerBound + UInt64(offset), timestamp: command.timestamp, name: type(of: event).name,
          version: type(of: event).version, origin: origin, commandID: command.id)
        recorded.append(RecordedEvent(envelope: envelope, event: event))
      }
      let change = CommittedChange(
        commandID: command.id, origin: origin, sequences: sequences, events: recorded, keys: keys)
      for observer in observers { observer.yield(change) }
    }
    return result
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
