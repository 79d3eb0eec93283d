public import RewindJournal
internal import RewindLocking
internal import Synchronization

/// Where the gate holder leaves a command's outcome for the command's task: the error its
/// staging threw, or its completion (the body's value goes to memory `perform` owns).
///
/// Not generic over the body's result: unspecialized code would look up the metadata of
/// `StageSlot<R>` and `Result<R, any Error>` at run time, several hash-table searches per command.
///
/// `@unchecked Sendable`: written by the gate holder before it wakes the command's task (or
/// settles its completion, which wakes it), read by that task only after it wakes.
private final class StageSlot: @unchecked Sendable {
  var failure: (any Error)?
  /// Whether the body's value was stored.
  var staged = false
  var completion: Completion?
}

/// Set when a command's task is cancelled while it waits at the gate.
final class CancelFlag: Sendable {
  private let flag = Atomic(false)
  var isCancelled: Bool { flag.load(ordering: .relaxed) }
  func cancel() { flag.store(true, ordering: .relaxed) }
}

/// One journal append in flight: its commands and, once the journal answered, the outcome.
///
/// Outside `Manager` (and so not generic over its model, which it does not use): unspecialized
/// code of `Manager<M>` looks the metadata of each generic type it touches up at run time, a
/// hash-table search each time.
private struct Flight: Sendable {
  var commands: [Staged]
  /// The sequence number the append was made to start at: how the journal's answer names it.
  var first: UInt64
  var outcome: Result<ClosedRange<UInt64>, JournalError>?
}

/// An append taken out of `Manager.guarded.flights` once the journal answered: its commands, to be
/// resolved outside the lock, and the error they fail with (nil if it was published).
private struct SettledFlight {
  var commands: [Staged]
  var failure: ManagerError?

  func resolve() {
    // By index: a `for … in` loop would copy each command (retaining its references) first.
    for index in commands.indices { commands[index].completion.resolve(failingWith: failure) }
  }
}

/// A command that passed validation and waits for its batch's append. (Not generic, as `Flight`.)
private struct Staged: Sendable {
  var id: Identifier
  var origin: Origin
  var timestamp: Int64
  var events: [any Event]
  var records: [NewRecord]
  var bytes: Int
  var completion: Completion
}

/// A gate holder waiting for every append in flight to settle (`recover()`). In an object: an
/// optional of it is tested with a pointer comparison, where an optional `CheckedContinuation` (whose
/// layout this module does not know) is tested through run-time metadata, on every settle.
private final class DrainWaiter: Sendable {
  let continuation: CheckedContinuation<Void, Never>
  init(_ continuation: CheckedContinuation<Void, Never>) { self.continuation = continuation }
}

/// One change stream a manager publishes to: one of `changes()` (unbounded) or one of
/// `changes(bufferingAtMost:)` (ended with `ChangeStreamError` when its buffer is full).
private enum Observer: Sendable {
  case unbounded(AsyncStream<CommittedChange>.Continuation)
  case bounded(AsyncThrowingStream<CommittedChange, any Error>.Continuation, limit: Int)

  /// Hands `change` to the stream. Returns false if a bounded stream's buffer was full: the
  /// change was not delivered, and the stream must get no other, only its end.
  func deliver(_ change: CommittedChange) -> Bool {
    switch self {
    case .unbounded(let continuation):
      continuation.yield(change)
      return true
    case .bounded(let continuation, _):
      if case .dropped = continuation.yield(change) { return false }
      return true
    }
  }

  /// Ends the stream without an error: the manager closed. A bounded stream's reader still gets
  /// what it buffered first.
  func finish() {
    switch self {
    case .unbounded(let continuation): continuation.finish()
    case .bounded(let continuation, _): continuation.finish()
    }
  }

  /// Ends a bounded stream whose buffer was full when the change starting at `sequence` came:
  /// its reader gets what it buffered, then `ChangeStreamError` (`.fellBehind`). Called while
  /// holding `Manager.guarded` (so that no later change reaches it first): the termination
  /// handler, which takes that lock, is removed first (the caller takes the observer out itself).
  func fellBehind(at sequence: UInt64) {
    guard case .bounded(let continuation, let limit) = self else { return }
    continuation.onTermination = nil
    continuation.finish(throwing: ChangeStreamError(.fellBehind, lastDelivered: sequence - 1, limit: limit))
  }
}

/// What `Manager.guarded` holds: all but the model.
private struct Guarded: Sendable {
  var lastSequence: UInt64
  var stopped: ManagerError?
  /// Set by `close()`: new change streams end at once. Apart from `stopped`, which keeps an
  /// earlier reason (lost durability) when there is one.
  var closed = false
  /// The change streams `publish` feeds, by the key `attach` gave them. A stream whose reader
  /// stopped is taken out by its termination handler; a bounded one that fell behind, by
  /// `publish` as it ends it; every one by `close()`.
  var observers: [Int: Observer] = [:]
  var nextObserver = 0
  /// Appends handed to the journal and not yet published, in sequence order.
  var flights: [Flight] = []
  /// Set when an append failed; the commands validated after it fail too. Cleared by the gate
  /// holder once every append in flight has settled.
  var broken = false
  /// Runs on a command's thread right after `admit` let it in, before it looks at what is in
  /// flight: for tests that let an append fail in between (`setAfterAdmit`).
  var afterAdmit: (@Sendable () -> Void)?
  /// A gate holder waiting for `flights` to empty.
  var drained: DrainWaiter?
}

/// What only the gate holder touches: the commands validated but not yet handed to the journal
/// (the model they leave behind is `Manager.working`).
private struct Pipeline: Sendable {
  var commands: [Staged] = []
  var bytes = 0
  /// How many of `commands` the working copy includes.
  var applied = 0
  /// Whether `Manager.working` holds a working copy (else it holds an empty model): a flag, not an
  /// optional model, whose copies and checks would go through run-time metadata.
  var hasWorking = false
  /// Commands in a row that found nothing in flight or staged.
  var quietCommands = 0
  /// The sequence number the next append starts at, if every append before it succeeds.
  var nextSequence: UInt64
}

/// The one funnel through which a model changes.
///
/// A manager owns one model and its journal. Each command goes through four steps in arrival
/// order: validate against the current state (the command body), append all of its events to the
/// journal in one atomic batch, apply them to the live model, and notify observers with one
/// settled `CommittedChange`. Nothing is visible before the append is acknowledged.
///
/// Guarantees:
/// - A body that throws, or records no event, writes nothing and changes nothing. If it read
///   commands not yet acknowledged, its error or value is delivered only once they are
///   journaled; if they fail, it throws `.appendFailed` instead (`.stopped` when their failure
///   stopped the manager, `.closed` when it was closed before they were journaled).
/// - If the append fails, the model, its queries and observers show no change, and the command
///   throws `ManagerError` (`.appendFailed`); retrying it is safe.
/// - If the journal reports that durability is lost (a failed fsync), the command throws
///   `.durabilityLost` and every later command throws `.stopped` (`.closed` once the manager is
///   closed); likewise, after `.appendFailed`, if the journal accepts no more appends at all
///   (`Journal.failure`).
/// - A command whose events are larger than the journal's limits (`JournalLimits`) throws
///   `.tooLarge` before it is staged: it writes nothing, and the commands around it are unaffected.
///   So does one that records an event its model does not register (`.unregisteredEvent`), or
///   one that cannot be encoded (`.encodingFailed`).
/// - Commands never interleave: each validates against the state left by every command before it,
///   and none can run while another is half-way (see `SerialGate`).
/// - Commands are applied and announced strictly in sequence order, each only after its append.
///   Each change stream gets every change from its subscription on; a bounded one
///   (`changes(bufferingAtMost:)`) whose reader falls behind ends with `ChangeStreamError`
///   instead, without slowing the commands or the other streams.
///
/// Pipelining and group commit: the serial gate is held only to validate, encode and hand a
/// command to the journal, not while the journal writes it. A command that arrives while earlier
/// ones are still being written validates against the state they will leave (kept in a private
/// working copy, invisible to readers), so concurrent commands reach the journal together and
/// share its frames and fsyncs. The next holder of the gate validates every command queued there
/// meanwhile in one turn and hands them to the journal as one append (see `SerialGate`). Each
/// command's events stay contiguous, and observers get one change per command.
///
/// A command validated against a command that then fails is not valid either: each append is
/// made on the condition that it starts where its predecessors end
/// (`Journal.append(_:expectingFirstSequence:)`), so once one fails, every append queued behind it
/// fails too (`.appendFailed`, also after `.durabilityLost`: they were not written) and nothing of
/// them is visible. The next command waits for those to settle and
/// validates against the committed state.
///
/// Reads skip the manager's funnel: `state` returns the current model value, which queries read;
/// `current` returns it with its sequence number.
///
/// `Sendable`: `guarded` (last sequence, stop reason, observers, appends in flight) with `live`
/// (the model; taken only while holding `guarded`, or alone to read it), and `pipeline`
/// (commands validated but not yet handed to the journal) with `working` (the working copy) are
/// behind locks (`Lock`, `LockedValue`); `pipeline` and `working` are only used by the holder of
/// `gate`. The gate holder's command body reads `live` or `working` without its lock, at a moment
/// when no other thread writes it (see `prepareValidationState`). `journal`, `tables`, `clock`,
/// `ids` and `limits` are immutable or thread-safe.
///
/// The state behind `guarded` and `pipeline` is not generic over the model (see `Flight`); only
/// `live` and `working` are, each in an object of its own (see `LockedValue`).
public final class Manager<M: Model>: Sendable {
  private let guarded: Lock<Guarded>
  /// The live model. Changed only while holding `guarded` too (publishing), so a holder of
  /// `guarded` sees it consistent with `flights` and `lastSequence`.
  private let live: LockedValue<M>
  /// The live model plus every command in flight and `pipeline.commands[..<applied]` when
  /// `pipeline.hasWorking`; else an empty model (the live model is then the state to validate
  /// against). Gate holder only.
  private let working: LockedValue<M>
  private let pipeline: Lock<Pipeline>

  /// Most commands in one append.
  static var maximumBatchCommands: Int { 4096 }
  /// Most commands one gate turn stages before passing the gate on.
  static var maximumTurnCommands: Int { 4096 }
  /// Commands in a row that must find nothing in flight before the working copy is dropped.
  static var quietCommandsBeforeDroppingCopy: Int { 1024 }

  private let journal: Journal
  /// The journal's identity (what `maintain` checks a snapshot policy's directory against).
  var journalID: JournalID { journal.id }
  /// The journal's directory (what `maintain` reads back the records before it began from).
  var journalDirectory: String { journal.directory }
  /// The registry's tables (not generic over the model, unlike the registry: see `EventTables`).
  private let tables: EventTables
  private let clock: TimeSource
  private let ids: IdentifierSource
  /// Most payload bytes (plus a per-record allowance) in one append: half the journal's limit.
  private let batchBudget: Int
  /// The journal's limits: a command they refuse fails alone, before it is staged (`encode`).
  private let limits: JournalLimits
  private let gate = SerialGate()
  /// Journal appends made, for tests of group commit.
  private let appends = Counter(0)
  /// Turns at the gate, for tests that commands waiting together are served in one turn.
  private let turns = Counter(0)
  /// Observers `attach` attached, for tests that wait for a job to subscribe.
  private let attached = Counter(0)
  /// Runs before each append, for tests that need a batch to form.
  let beforeAppend = Lock<(@Sendable () async -> Void)?>(nil)

  /// Sets what runs on a command's thread right after it is admitted (nil: nothing), for tests.
  func setAfterAdmit(_ hook: (@Sendable () -> Void)?) { guarded.withLock { $0.afterAdmit = hook } }
  /// Held by `close()` while it takes the change streams and ends them: a second `close()` meanwhile
  /// finds none left to end, and must not return before the first has ended them.
  private let endingStreams = Lock<Void>(())

  /// Opens the journal in `directory` for writing (creating it if needed, unless
  /// `options.createIfMissing` is false) and rebuilds the model by replaying its records: from the
  /// newest usable snapshot when the model is a `SnapshotModel` (`startupReport` says which, and
  /// which it skipped), else from the first record.
  /// - Throws: `JournalError` if the journal cannot be opened (or a snapshot past its end cannot
  ///   be moved aside), `ReplayError` if a record does not decode as one of the model's events.
  ///   When opening had moved a torn tail aside or found committed records missing before the
  ///   start-up failed, the error's `openingRecovery` holds that report (`recovery` is never
  ///   returned then, and nothing else says the records are gone).
  public init(
    directory: String, options: JournalOptions = JournalOptions(), clock: TimeSource = .system,
    ids: IdentifierSource = .random
  ) throws {
    let journal = try Journal(directory: directory, options: options)
    let registry = M.makeRegistry()
    let replayed: Replay.Result<M>
    var recovery = journal.recovery
    do {
      replayed = try Replay.rebuild(registry: registry, reader: Replay.reader(directory), usingSnapshots: true)
      recovery.movedAside += try SnapshotStore(journal: directory, io: options.io).setAside(
        after: replayed.lastSequence)
    } catch {
      journal.close()
      throw Self.carrying(recovery, error)
    }
    self.journal = journal
    self.recovery = recovery
    self.tables = registry.tables
    self.clock = clock
    self.ids = ids
    self.batchBudget = max(1, options.limits.maxBatchBytes / 2)
    self.limits = options.limits
    self.guarded = Lock(Guarded(lastSequence: replayed.lastSequence))
    self.live = LockedValue(replayed.state)
    self.working = LockedValue(M())
    self.pipeline = Lock(Pipeline(nextSequence: replayed.lastSequence + 1))
    self.startupReport = replayed.report
  }

  /// `error` with `recovery` attached when it is worth telling (not clean): a start-up that
  /// fails after the opening recovered would otherwise lose the only report of what it moved
  /// aside or found missing. The two error types start-up throws carry it; any other passes as is.
  private static func carrying(_ recovery: RecoveryReport, _ error: any Error) -> any Error {
    guard !recovery.isClean else { return error }
    switch error {
    case var error as JournalError:
      error.openingRecovery = recovery
      return error
    case var error as ReplayError:
      error.openingRecovery = recovery
      return error
    default: return error
    }
  }

  deinit {
    let observers = guarded.withLock { Array($0.observers.values) }
    journal.close()
    for observer in observers { observer.finish() }
  }

  /// The current model. A value: later commands do not change the copy you hold. To know which
  /// sequence number it stands at, read `current` instead (not `lastSequence` after it).
  public var state: M { live.read { $0.pointee } }

  /// What opening found and did: the journal's `Journal.recovery` (a torn tail moved aside,
  /// committed records found missing, the index rebuilt), and the snapshot files past the
  /// journal's last record that were moved into `quarantine/` before any append
  /// (`SnapshotStore.setAside(after:)`). An app may log it; `isClean` is false if anything moved
  /// or went missing.
  public let recovery: RecoveryReport

  /// What the start-up replay did: the snapshot it started from (if any), the records it applied,
  /// and every snapshot it skipped with why (missing, corrupt, foreign, stale, of another history,
  /// beyond the journal).
  /// Skipped snapshots cost time, never correctness; an app may log them.
  public let startupReport: ReplayReport

  /// The sequence number of the last applied event; 0 for an empty journal. Read alone, it may
  /// already be past (or not yet at) a `state` read just before or after: `current` reads both
  /// together.
  public var lastSequence: UInt64 { guarded.withLock { $0.lastSequence } }

  /// The current model and the sequence number of its last event, read together: the state is
  /// exactly the journal's records through `lastSequence` applied. What to pair with a sequence
  /// number (a snapshot, `SnapshotStore.write(_:at:)`; a digest to compare with a replay):
  /// `state` and `lastSequence` read one after the other can straddle a publish, pairing a state
  /// with a sequence number before or after it.
  public var current: (state: M, lastSequence: UInt64) {
    // `publish` changes both while holding `guarded` (and `live` within it): held here too, in
    // the same order, for the copy of the model and the number.
    guarded.withLock { guarded in (live.read { $0.pointee }, guarded.lastSequence) }
  }

  /// Why the manager refuses commands, if it does.
  public var stopReason: ManagerError? { guarded.withLock { $0.stopped } }

  /// How many observers (`changes()` and `changes(bufferingAtMost:)` streams) are attached.
  var observerCount: Int { guarded.withLock { $0.observers.count } }

  /// Returns once `changes()` and `changes(bufferingAtMost:)` have attached `count` observers
  /// since the manager opened (including any that ended since), woken by the one that makes them
  /// as many: for tests that wait for a job to subscribe.
  /// - Throws: `WaitGaveUp` if it had not attached as many within `testWaitBound`.
  func waitUntil(observersAttached count: Int) async throws {
    if await attached.wait(untilAtLeast: Int64(count)) { return }
    throw WaitGaveUp(waitingFor: "\(count) observers attached", saw: "\(attached.advance(by: 0)) attached")
  }

  /// How many commands wait for their turn to validate.
  var waitingCommands: Int { gate.waiterCount }

  /// Returns once `waitingCommands` is at least `count`, woken by the command that makes them
  /// as many (for tests, which must not spin on the thread pool to see it).
  /// - Throws: `WaitGaveUp` if they were not as many within `testWaitBound`.
  func waitUntil(waitingCommands count: Int) async throws {
    if await gate.wait(forWaiters: count) { return }
    throw WaitGaveUp(waitingFor: "\(count) commands waiting at the gate", saw: "\(waitingCommands) wait")
  }

  /// How many journal appends this manager has made.
  var journalAppendCount: Int { Int(appends.advance(by: 0)) }

  /// The callers the journal counted for the last group of appends it took to write (for tests:
  /// each append counts the commands batched into it).
  var journalLastGroupWaiters: Int { journal.lastGroupWaiters }

  /// Returns once `journalAppendCount` is at least `count`, woken by the append that makes them
  /// as many (for tests).
  /// - Throws: `WaitGaveUp` if they were not as many within `testWaitBound`.
  func waitUntil(journalAppends count: Int) async throws {
    if await appends.wait(untilAtLeast: Int64(count)) { return }
    throw WaitGaveUp(waitingFor: "\(count) journal appends", saw: "\(journalAppendCount) made")
  }

  /// How many turns at the gate this manager's commands have taken.
  var gateTurnCount: Int { Int(turns.advance(by: 0)) }

  /// Whether the gate holder keeps a working copy of the model (commands overlapped lately), for
  /// tests of when it is dropped. Read outside the gate, it may change at once.
  var holdsWorkingCopy: Bool { pipeline.withLock { $0.hasWorking } }

  /// The committed changes from now on, one per command, in commit order; ends when the manager
  /// is closed (at once if it is closed already), after the changes of the appends in flight.
  ///
  /// Buffered without bound: a reader that stops reading while holding the stream (a stuck view,
  /// a forgotten task) keeps every later change in memory, for as long as the manager commits.
  /// A reader that may fall behind should use `changes(bufferingAtMost:)`, whose stream ends
  /// with an error instead.
  public func changes() -> AsyncStream<CommittedChange> {
    let (stream, continuation) = AsyncStream.makeStream(of: CommittedChange.self, bufferingPolicy: .unbounded)
    if let id = attach(.unbounded(continuation)) {
      continuation.onTermination = { [weak self] _ in self?.detach(id) }
    }
    return stream
  }

  /// The committed changes from now on, one per command, in commit order, as `changes()`, with
  /// at most `limit` of them waiting unread.
  ///
  /// A commit that finds `limit` changes waiting ends the stream: its reader gets the changes
  /// waiting, then `ChangeStreamError` (`.fellBehind`) with the last sequence number it was
  /// delivered, and no later change (the manager lets go of the stream, so it holds at most
  /// `limit` changes, until the reader reads or releases them). What the reader keeps up to
  /// date is then stale: it subscribes again and catches up from the manager's `current` state
  /// or the journal (see `ChangeStreamError`). The commands and other streams are not affected.
  ///
  /// A reader waiting in `next()` takes each change as it comes: `limit` bounds how far it may
  /// lag behind the commits, in changes (commands), not in events.
  ///
  /// Ends without an error when the manager is closed (at once if it is closed already), after
  /// the changes it buffered and those of the appends in flight, as `changes()`.
  /// - Precondition: `limit` is at least 1.
  public func changes(bufferingAtMost limit: Int) -> AsyncThrowingStream<CommittedChange, any Error> {
    precondition(limit > 0, "a change stream buffers at least 1 change, not \(limit)")
    let (stream, continuation) = AsyncThrowingStream.makeStream(
      of: CommittedChange.self, throwing: (any Error).self, bufferingPolicy: .bufferingOldest(limit))
    if let id = attach(.bounded(continuation, limit: limit)) {
      continuation.onTermination = { [weak self] _ in self?.detach(id) }
    }
    return stream
  }

  /// Adds `observer` to the streams that `publish` feeds and returns its key for `detach`; ends
  /// it at once, returning nil, if the manager is closed.
  private func attach(_ observer: Observer) -> Int? {
    let id: Int? = guarded.withLock { guarded in
      if guarded.closed { return nil }
      guarded.nextObserver += 1
      guarded.observers[guarded.nextObserver] = observer
      return guarded.nextObserver
    }
    guard let id else {
      observer.finish()
      return nil
    }
    _ = attached.advance(by: 1)
    return id
  }

  /// Takes the observer `attach` keyed `id` out, if it is still in: its stream's termination
  /// handler (its reader stopped, or the stream ended or was let go of). It takes `guarded`, so
  /// no stream that has one may end while `guarded` is held: `close()` ends them after letting
  /// go of it, and `Observer.fellBehind` removes the handler first.
  private func detach(_ id: Int) {
    _ = guarded.withLock { $0.observers.removeValue(forKey: id) }
  }

  /// Runs one command: `body` validates against the current model and records events; they are
  /// journaled as one batch, applied, and announced. Returns what `body` returns once the events
  /// are committed.
  ///
  /// `body` must only read the model and record events: it may run against a state that includes
  /// commands not yet acknowledged (if those fail, so does this one, also when it recorded nothing
  /// or threw: its value or error is delivered only once they are journaled). It must not call
  /// back into this manager's commands (it would wait for itself).
  ///
  /// `body` may run on another command's task: the task that holds the manager's gate stages
  /// every command waiting there (see `SerialGate`). So it must depend only on the model and on
  /// what it captures, not on its task: task-local values read in it may be that task's, and it
  /// should not check cancellation (`Task.isCancelled`, `Task.checkCancellation()`): the manager
  /// checks this call's task before the body runs, and a gate holder whose task is cancelled hands
  /// the commands waiting behind it on to their own tasks, but a cancellation that reaches the
  /// holder while the body runs would look like this call's.
  ///
  /// Cancellation counts only until validation: a task cancelled before its body runs (waiting at
  /// the gate, or cancelled already) throws `CancellationError` once its turn comes, and nothing
  /// is written; one cancelled later, while its events are being journaled or synced, still waits
  /// for the outcome and reports it (its value if they are committed).
  /// - Throws: whatever `body` throws (nothing written); `CancellationError` if the task was
  ///   cancelled before validation (nothing written); `ManagerError`:
  ///   - `.tooLarge`, `.unregisteredEvent` or `.encodingFailed` when its events are over the
  ///     journal's limits, not registered by the model, or cannot be encoded (before it is
  ///     staged: nothing written, the commands around it unaffected);
  ///   - `.appendFailed` when its append, or that of a command it read, could not be journaled
  ///     (nothing written; retrying is safe);
  ///   - `.durabilityLost` when the journal lost durability while writing it (it may or may not
  ///     be on disk); `.stopped` for every command after that, or after the journal stopped
  ///     accepting appends; `.closed` once the manager is closed.
  @discardableResult
  public func perform<R: Sendable>(_ origin: Origin, _ body: (M, inout Command) throws -> R) async throws -> R {
    // A free gate: this task holds it and stages its own command at once, with nothing to hand
    // to another task (no ticket, no slot for the outcome, no cancellation handler: there is no
    // wait to cancel, and a task cancelled already fails before validation, as it would in one).
    if gate.tryEnter() {
      // `stage`'s steps inline: each asynchronous call costs a frame from the task's allocator and
      // a hop back to the executor, and the asynchronous steps are rarely needed.
      do {
        if try admit(cancelled: Task.isCancelled) { await recover() }
      } catch {
        if !leaveQuietGate() { await serveTurn(first: nil) }
        journal.lead()
        throw error
      }
      // The body's value in a plain constant: an optional, tuple or `Result` of the generic `R`
      // would have its metadata looked up at run time (about 330 instructions each time) and be
      // copied and destroyed through it, in this unspecialized code. Set outside any `do` whose
      // `catch` suspends: the compiler then builds it in this function's result, where otherwise
      // it took two buffers of `R`'s size from the task's allocator.
      // Commands still unpublished: the state to validate against includes them, and a command
      // that records nothing or throws must wait for them (see `performAfterUnpublished`).
      if prepareValidationState() { return try await performAfterUnpublished(origin, body) }
      var staged: Staged?
      let result = try validateHolding(origin, &staged, working: false, body)
      var completion: Completion?
      if let bytes = staged?.bytes {
        if overflows(adding: bytes) { await flush() }
        completion = add(&staged)
      }
      if !leaveQuietGate() { await serveTurn(first: nil) }
      // Write what was handed over on this thread, unless a write is under way (it takes it next).
      journal.lead()
      if let completion {
        // Usually settled by the write just made: read it without an asynchronous call.
        if try !completion.isSettled() { try await completion.wait() }
      }
      return result
    }
    // The gate holder may stage this command on its own task while this one waits: `body` is
    // used only until the ticket's staging work has run, while this call is suspended in the gate.
    return try await withoutActuallyEscaping(body) { body in
      let slot = StageSlot()
      // The body's value, once staged.
      let value = UnsafeMutablePointer<R>.allocate(capacity: 1)
      defer { value.deallocate() }
      func staged() throws -> R {
        if let failure = slot.failure {
          _ = try slot.completion?.isSettled()  // the failure of a command the body read, if any
          throw failure
        }
        precondition(slot.staged, "a command left the gate without being staged")
        return value.move()
      }
      let cancelled = CancelFlag()
      let ticket = GateTicket { [self] in
        var initialized = false
        var predecessor: Completion?
        do {
          let completion = try await stage(origin, cancelled: cancelled.isCancelled, after: &predecessor) {
            value.initialize(to: try body($0, &$1))
            initialized = true
          }
          slot.staged = true
          slot.completion = completion
          return completion
        } catch {
          if initialized { value.deinitialize(count: 1) }  // the body ran, a later step failed
          slot.failure = error
          // The error stands only once what the body read is journaled.
          slot.completion = follower(of: predecessor)
          return slot.completion
        }
      }
      let role = await withTaskCancellationHandler {
        await gate.enter(ticket)
      } onCancel: {
        cancelled.cancel()
      }
      switch role {
      case .hold:
        await serveTurn(first: ticket)
        journal.lead()
        if slot.failure != nil, let completion = slot.completion {
          if try !completion.isSettled() { try await completion.wait() }
        }
        let result = try staged()
        if let completion = slot.completion {
          if try !completion.isSettled() { try await completion.wait() }
        }
        return result
      case .done:
        let result = try staged()
        _ = try slot.completion?.isSettled()
        return result
      }
    }
  }

  /// One turn at the gate: stages the holder's command and every command waiting behind it, in
  /// arrival order, hands them to the journal (one append, unless they overflow a batch), and
  /// passes the gate on. Each waiting command's task is woken once its outcome is settled (at
  /// once if it failed validation or recorded nothing against the committed state; once the
  /// commands it read are resolved if it did so against unpublished ones).
  ///
  /// The commands' bodies run on this task, so a cancelled one serves no other: it puts the
  /// tickets it has not staged back at the head of the gate's queue and passes the gate to the
  /// first of them, whose own task serves them.
  private func serveTurn(first: GateTicket?) async {
    _ = turns.advance(by: 1)
    // Without a first ticket, the holder staged its own command already (and counts as one).
    var tickets: [GateTicket]
    if let first {
      tickets = [first] + gate.takeWaiters(max: Self.maximumTurnCommands - 1)
    } else {
      tickets = gate.takeWaiters(max: Self.maximumTurnCommands - 1)
    }
    let served = first == nil ? 1 : 0
    var index = 0
    turn: while true {
      while index < tickets.count {
        let ticket = tickets[index]
        // A command's body runs on this task: one that is cancelled (its own command was, or its
        // caller's task after its command was validated) stages no other, whose body would see that
        // cancellation as its own. The next of them takes the gate and stages them on its task.
        if ticket !== first, Task.isCancelled {
          gate.putBack(tickets[index...])
          break turn
        }
        let completion = await ticket.runStage()
        if ticket !== first {
          if let completion {
            completion.whenResolved { ticket.resume(.done) }
          } else {
            ticket.resume(.done)
          }
        }
        if pipeline.withLock({ $0.commands.count >= Self.maximumBatchCommands }) { await flush() }
        index += 1
      }
      // Commands that arrived while these were staged join the same append.
      let room = Self.maximumBatchCommands - pipeline.withLock { $0.commands.count }
      guard room > 0 else { break }
      let more = gate.takeWaiters(max: min(room, Self.maximumTurnCommands - served - tickets.count))
      if more.isEmpty { break }
      tickets += more
    }
    await flush()
    gate.leave()
  }

  /// Validates and encodes one command and adds it to the open batch. Holder of the gate only.
  /// `body` runs the command's body and keeps its value (not generic over it, see `StageSlot`).
  /// Returns the command's completion; for a command that recorded nothing, nil, or if it read
  /// unpublished commands, the `follower()` of the last of them (`predecessor`, which is also
  /// set for a body that throws).
  private func stage(
    _ origin: Origin, cancelled: Bool, after predecessor: inout Completion?,
    _ body: (M, inout Command) throws -> Void
  ) async throws -> Completion? {
    if try admit(cancelled: cancelled) { await recover() }
    let pipelined = prepareValidationState()
    if pipelined { predecessor = lastUnpublished() }
    var staged: Staged?
    try validate(origin, &staged, working: pipelined, body)
    guard let bytes = staged?.bytes else { return follower(of: predecessor) }
    // A command that would overflow the batch sends the batch before it on its way first. It was
    // validated against that batch, so if the batch fails, it fails too.
    if overflows(adding: bytes) { await flush() }
    return add(&staged)
  }

  /// Ends the turn of a holder that staged its own command, when no command arrived meanwhile:
  /// sends the batch and passes the gate on (a command that arrives after the check gets the gate
  /// from `leave`). False, changing nothing, when commands wait or an append hook is set: then
  /// `serveTurn` must serve them.
  private func leaveQuietGate() -> Bool {
    guard !gate.hasWaiters, beforeAppend.withLock({ $0 }) == nil else { return false }
    _ = turns.advance(by: 1)
    if let batch = takeBatch() { send(batch) }
    gate.leave()
    return true
  }

  /// `stage`'s first step: throws if the manager stopped or the command was cancelled; true if an
  /// append failed since the last command, so that `recover()` must run before validating.
  private func admit(cancelled: Bool) throws -> Bool {
    // The stop reason is copied out only when there is one: a copy of an optional error and its
    // release, or even a tuple holding one (copied by `memcpy`), cost more than the rest of this step.
    let (isStopped, broken, hooked) = guarded.withLock { guarded -> (Bool, Bool, Bool) in
      let hooked = if case .some = guarded.afterAdmit { true } else { false }
      if case .none = guarded.stopped { return (false, guarded.broken, hooked) }
      return (true, guarded.broken, hooked)
    }
    if isStopped, case (let stopped?, let closed) = guarded.withLock({ ($0.stopped, $0.closed) }) {
      // Closed says closed, also when the manager had stopped before (`stopReason` keeps why).
      if stopped.code == .closed { throw stopped }
      if closed { throw ManagerError(.closed, "the manager is closed (it had stopped after: \(stopped))") }
      throw ManagerError(.stopped, "the manager accepts no more commands after: \(stopped)")
    }
    if cancelled { throw CancellationError() }
    if hooked, let hook = guarded.withLock({ $0.afterAdmit }) { hook() }
    return broken
  }

  /// `perform`'s fast path for a command that validates against the working copy: commands
  /// before it are still unpublished, and may yet fail. One that records events is appended on
  /// the condition that they succeed; one that records nothing or throws writes nothing, so it is
  /// made to wait for the last of them (`lastUnpublished()`) instead: it returns its value, or
  /// throws its error, only once that one is journaled, and throws `appendFailed` if it is not
  /// (`stopped` when the manager stopped, `closed` when it was closed: `Completion.follower()`).
  /// Out of `perform`, so that the `do`/`catch` around the body's value costs nothing there.
  @inline(never)
  private func performAfterUnpublished<R: Sendable>(
    _ origin: Origin, _ body: (M, inout Command) throws -> R
  ) async throws -> R {
    let predecessor = lastUnpublished()
    var staged: Staged?
    let result: R
    do {
      result = try validateHolding(origin, &staged, working: true, body)
    } catch {
      // The gate is left. The error stands only once what the body read is journaled.
      if let follower = follower(of: predecessor) { try await follower.wait() }
      throw error
    }
    var completion: Completion?
    if let bytes = staged?.bytes {
      if overflows(adding: bytes) { await flush() }
      completion = add(&staged)
    } else {
      completion = follower(of: predecessor)
    }
    if !leaveQuietGate() { await serveTurn(first: nil) }
    journal.lead()
    if let completion {
      if try !completion.isSettled() { try await completion.wait() }
    }
    return result
  }

  /// `predecessor.follower`, told whether this manager has stopped by the time it resolves.
  private func follower(of predecessor: Completion?) -> Completion? {
    predecessor?.follower { [weak self] in self?.guarded.withLock { $0.stopped } }
  }

  /// The completion of the last command the working copy includes that is not published yet:
  /// the last one staged, else the last one in flight; nil if every one is published. If an
  /// append failed since the working copy was made (its flights settled, the copy may include
  /// them), one that has failed already. Gate holder only, after `prepareValidationState()`.
  private func lastUnpublished() -> Completion? {
    if let last = pipeline.withLock({ $0.commands.last?.completion }) { return last }
    return guarded.withLock { guarded -> Completion? in
      if let last = guarded.flights.last?.commands.last?.completion { return last }
      guard guarded.broken else { return nil }
      let failed = Completion()
      failed.resolve(
        failingWith: ManagerError(
          .appendFailed, "an earlier command could not be journaled; nothing changed, and it can be retried"))
      return failed
    }
  }

  /// `validate` for a command that took the free gate in `perform`: if it throws, the gate is
  /// left first, without suspending (see `perform`). Nothing is staged then (the holder before it
  /// sent its batch before leaving), so there is nothing to send; a task waiting at the gate gets
  /// it and serves the queue.
  @inline(never)
  private func validateHolding<R>(
    _ origin: Origin, _ staged: inout Staged?, working: Bool, _ body: (M, inout Command) throws -> R
  ) throws -> R {
    do {
      return try validate(origin, &staged, working: working, body)
    } catch {
      _ = turns.advance(by: 1)
      if let batch = takeBatch() { send(batch) }
      gate.leave()
      journal.lead()
      throw error
    }
  }

  /// `stage`'s second step: runs the body against the state to validate against (the working copy
  /// if `working`, as `prepareValidationState()` told), encodes its events into `staged` (nil if
  /// it recorded none), and returns the body's value.
  ///
  /// Generic over the value so that it is returned as it is: `perform`'s unspecialized code
  /// holds it in a constant of type `R`, where an optional (or a tuple, or a `Result`) of `R`
  /// would have its metadata looked up at run time on every command (about 330 instructions).
  /// Never inlined: inlined into `perform`, its temporaries of type `R` (of a size known only at
  /// run time) took buffers from the task's allocator there, where a synchronous function keeps
  /// them on its stack.
  @inline(never)
  private func validate<R>(
    _ origin: Origin, _ staged: inout Staged?, working isWorking: Bool, _ body: (M, inout Command) throws -> R
  ) throws -> R {
    var command = Command(id: ids.next(), timestamp: clock.now(), origin: origin, ids: ids)
    // The body reads the state in place, without the lock and without a copy (about 450
    // instructions for the notebook's model, through its value witnesses): nothing else writes
    // it until this holder hands a batch over (see `prepareValidationState`).
    let result =
      try isWorking
      ? working.withoutLock { try body($0, &command) } : live.withoutLock { try body($0, &command) }
    staged = try encode(command, origin: origin)
    return result
  }

  /// Encodes a validated command's events; nil if it recorded none.
  private func encode(_ command: Command, origin: Origin) throws -> Staged? {
    if command.events.isEmpty { return nil }

    var records: [NewRecord] = []
    records.reserveCapacity(command.events.count)
    var bytes = 0
    // By index, so that each event is lent in place (see `EventTables.apply(_:to:context:)`).
    for index in command.events.indices {
      let encoded: [UInt8]?
      do {
        encoded = try tables.encode(command.events[index], origin: origin, commandID: command.id)
      } catch {
        let event = command.events[index]
        throw ManagerError(.encodingFailed, "\(type(of: event).name) could not be encoded: \(error)")
      }
      guard let payload = encoded else {
        let event = command.events[index]
        throw ManagerError(
          .unregisteredEvent, "\(type(of: event)) (\(type(of: event).name)) is not registered with \(M.self)")
      }
      if payload.count > limits.maxRecordBytes {
        let event = command.events[index]
        throw ManagerError(
          .tooLarge,
          "\(type(of: event).name) encodes to \(payload.count) bytes, more than the journal's limit of "
            + "\(limits.maxRecordBytes) bytes per event (JournalLimits.maxRecordBytes); nothing was written")
      }
      bytes += payload.count + 32
      records.append(NewRecord(timestamp: command.timestamp, payload: payload))
    }
    // `bytes` allows 32 bytes per record, more than its header in a frame: only a command over
    // the limit by that measure is measured exactly.
    if bytes > limits.maxBatchBytes {
      let content = records.reduce(0) { $0 + BatchCodec.contentSize(of: $1) }
      if content > limits.maxBatchBytes {
        throw ManagerError(
          .tooLarge,
          "the command's \(records.count) events take \(content) bytes in a batch, more than the journal's limit "
            + "of \(limits.maxBatchBytes) (JournalLimits.maxBatchBytes); nothing was written")
      }
    }
    return Staged(
      id: command.id, origin: origin, timestamp: command.timestamp, events: command.events, records: records,
      bytes: bytes, completion: Completion())
  }

  /// The sequence number the first record of the command being validated will get, if every
  /// command before it is journaled (if one is not, this one fails too). Only for a command body,
  /// while it runs: the gate is held then, and the commands staged before it are in `pipeline`.
  func sequenceOfValidatingCommand() -> UInt64 {
    pipeline.withLock { pipeline in
      pipeline.nextSequence + UInt64(pipeline.commands.reduce(0) { $0 + $1.records.count })
    }
  }

  /// Whether adding a command of `bytes` would overflow the open batch (which must be sent first).
  private func overflows(adding bytes: Int) -> Bool {
    pipeline.withLock { !$0.commands.isEmpty && $0.bytes + bytes > batchBudget }
  }

  /// `stage`'s last step: moves a validated command (if any) into the open batch, leaving nil, and
  /// returns its completion. Moved, not copied: a copy of a `Staged` and its destruction retain
  /// and release each of its references.
  private func add(_ staged: inout Staged?) -> Completion? {
    guard let completion = staged?.completion else { return nil }
    pipeline.withLock { pipeline in
      guard let command = staged.take() else { return }
      pipeline.bytes += command.bytes
      pipeline.commands.append(command)
    }
    return completion
  }

  /// After a failed append: fails the commands staged since (they validated against it), waits
  /// until every append in flight has settled (those behind the failed one fail too), and starts
  /// again from the committed state. Holder of the gate only.
  private func recover() async {
    let orphans = pipeline.withLock { pipeline -> [Staged] in
      defer { pipeline.commands = [] }
      return pipeline.commands
    }
    let failure = ManagerError(
      .appendFailed,
      "an earlier command this one was validated after could not be journaled; nothing changed, and it can be retried")
    for command in orphans { command.completion.resolve(failingWith: failure) }
    // A batch sent earlier in this turn (a full batch, or one a large command overflowed) was
    // queued without being written: under `none` nothing else may write it, and the wait below
    // would never end.
    journal.lead()
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let settled = guarded.withLock { guarded -> Bool in
        if guarded.flights.isEmpty { return true }
        guarded.drained = DrainWaiter(continuation)
        return false
      }
      if settled { continuation.resume() }
    }
    let last = guarded.withLock { guarded -> UInt64 in
      guarded.broken = false
      return guarded.lastSequence
    }
    pipeline.withLock { $0 = Pipeline(nextSequence: last + 1) }
    working.withLock { $0 = M() }
  }

  /// Makes the state a new command validates against ready, and tells which it is: the live
  /// model (false) when nothing is in flight or staged, else the working copy (true) with every
  /// command so far applied.
  ///
  /// Either is then stable until this gate holder hands a batch over: only a flight changes the
  /// live model, and only the gate holder adds flights or touches the working copy. So the body
  /// reads it without a lock (readers of the live model only read it too).
  ///
  /// Making the working copy afresh copies the whole model (the live model's storage is shared
  /// until the first apply), so it is kept while commands overlap, even at moments when
  /// everything is published (it then equals the live model). It is dropped, freeing its
  /// memory, once `quietCommandsBeforeDroppingCopy` commands in a row found nothing in flight.
  private func prepareValidationState() -> Bool {
    pipeline.withLock { pipeline -> Bool in
      // Nothing staged or in flight, and an append failed since this command was admitted (its
      // `admit` found the pipeline whole, and `recover()` did not run): start again from the
      // committed state here, as `recover()` would with nothing to wait for. Otherwise this
      // command, which reads only the committed state, was sent expecting a sequence number past
      // the failed append's and failed as if it had read it.
      // One hold of `guarded` for both looks: this runs for every command.
      let (quiet, restart) = pipeline.commands.isEmpty ? nothingInFlight() : (false, nil)
      if let restart {
        pipeline = Pipeline(nextSequence: restart)
        working.withLock { $0 = M() }
      }
      if quiet {
        pipeline.quietCommands += 1
        if !pipeline.hasWorking || pipeline.quietCommands >= Self.quietCommandsBeforeDroppingCopy {
          if pipeline.hasWorking {
            working.withLock { $0 = M() }  // every command so far is published: the copy is no longer needed
            pipeline.hasWorking = false
          }
          return false
        }
      } else {
        pipeline.quietCommands = 0
      }
      working.withLock { working in
        var context = ApplyContext(recording: false)
        if !pipeline.hasWorking {
          let unpublished = guarded.withLock { guarded in
            working = live.read { $0.pointee }
            return guarded.flights.flatMap { $0.commands.map(\.events) }
          }
          for events in unpublished {
            tables.apply(events, to: &working, context: &context)
          }
          pipeline.applied = 0
        }
        while pipeline.applied < pipeline.commands.count {
          tables.apply(pipeline.commands[pipeline.applied].events, to: &working, context: &context)
          pipeline.applied += 1
        }
      }
      pipeline.hasWorking = true
      return true
    }
  }

  /// Whether nothing is in flight; and, when an append failed since (the pipeline is broken) and
  /// the manager has not stopped, the sequence number the next append starts at, the pipeline
  /// marked whole again. Gate holder only, with nothing staged.
  private func nothingInFlight() -> (Bool, restart: UInt64?) {
    guarded.withLock { guarded -> (Bool, UInt64?) in
      guard guarded.flights.isEmpty else { return (false, nil) }
      guard guarded.broken, guarded.stopped == nil else { return (true, nil) }
      guarded.broken = false
      return (true, guarded.lastSequence + 1)
    }
  }

  /// Hands the open batch to the journal as one append, conditional on its starting where the
  /// appends before it end. Holder of the gate only; returns without waiting for the journal.
  private func flush() async {
    guard let batch = takeBatch() else { return }
    if let hook = beforeAppend.withLock({ $0 }) { await hook() }
    send(batch)
  }

  /// The open batch, taken out of the pipeline with its first sequence number (the working copy
  /// brought up to date with it first); nil if it is empty. Holder of the gate only.
  private func takeBatch() -> (records: [NewRecord], commands: [Staged], first: UInt64)? {
    pipeline.withLock { pipeline -> ([NewRecord], [Staged], UInt64)? in
      guard !pipeline.commands.isEmpty else { return nil }
      let commands = pipeline.commands
      if pipeline.hasWorking {  // it must include every command handed over
        working.withLock { working in
          var context = ApplyContext(recording: false)
          for command in commands[pipeline.applied...] {
            tables.apply(command.events, to: &working, context: &context)
          }
        }
      }
      var records: [NewRecord] = []
      if commands.count == 1 {
        records = commands[0].records  // shared, not copied
      } else {
        for command in commands { records += command.records }
      }
      let first = pipeline.nextSequence
      pipeline.nextSequence += UInt64(records.count)
      pipeline.commands = []
      pipeline.bytes = 0
      pipeline.applied = 0
      return (records, commands, first)
    }
  }

  /// Hands a batch taken by `takeBatch` to the journal. Holder of the gate only.
  private func send(_ batch: (records: [NewRecord], commands: [Staged], first: UInt64)) {
    _ = appends.advance(by: 1)
    guarded.withLock { $0.flights.append(Flight(commands: batch.commands, first: batch.first)) }
    // The journal names the append by its first sequence number: the closure captures the
    // manager alone, which serves as its context (capturing the flight too allocated one).
    // Each command's caller waits for this append: the journal gathers its next group toward as
    // many callers (under `always` and `batched`), not toward one append.
    journal.enqueue(batch.records, expectedFirst: batch.first, waiters: batch.commands.count) { [self] first, outcome in
      settle(first, outcome)
    }
  }

  /// Records the journal's answer for one append (`flight`, the sequence number it was made to
  /// start at: no two appends in flight share one), then publishes every settled append at the head
  /// of the line, in sequence order: applies it to the live model, notifies observers (one change
  /// per command), and resolves each command; or fails its commands.
  ///
  /// The head of `flights` never holds an outcome between calls (it is published as it settles), so
  /// an append settling behind it only records its outcome. The appends published are taken out of
  /// `flights` whole and their commands resolved from them after the lock (no list of completions
  /// and outcomes is built for them).
  private func settle(_ flight: UInt64, _ outcome: Result<ClosedRange<UInt64>, JournalError>) {
    // Not an optional: an optional of this struct is destroyed through `Optional`'s generic value
    // witness (run-time metadata); an empty one resolves nothing.
    var first = SettledFlight(commands: [], failure: nil)
    var more: [SettledFlight] = []
    let drained = guarded.withLock { guarded -> DrainWaiter? in
      // Usually the head; at most a few appends are in flight.
      var index = 0
      while guarded.flights[index].first != flight { index += 1 }
      if index > 0 {
        guarded.flights[index].outcome = outcome
        return nil
      }
      // The journal's answer is read where it is, not copied: a copy of the `Result` (and of its
      // optional `JournalError`) goes through generic value witnesses.
      first = settleHead(with: outcome, in: &guarded)
      while !guarded.flights.isEmpty, let next = guarded.flights[0].outcome {
        more.append(settleHead(with: next, in: &guarded))
      }
      guard guarded.flights.isEmpty, let waiter = guarded.drained else { return nil }
      guarded.drained = nil
      return waiter
    }
    first.resolve()
    for settled in more { settled.resolve() }
    drained?.continuation.resume()
  }

  /// Takes the head of `flights` out with the journal's answer for it: publishes it if it succeeded,
  /// else marks the pipeline broken. Returns its commands, to be resolved outside the lock.
  private func settleHead(
    with outcome: Result<ClosedRange<UInt64>, JournalError>, in guarded: inout Guarded
  ) -> SettledFlight {
    let head = guarded.flights.removeFirst()
    switch outcome {
    case .success(let sequences):
      publish(head.commands, at: sequences, in: &guarded)
      return SettledFlight(commands: head.commands, failure: nil)
    case .failure(let error):
      let failure: ManagerError
      if error.code == .sequenceConflict && guarded.broken {
        failure = ManagerError(
          .appendFailed,
          "an earlier command this one was validated after could not be journaled; nothing changed, and it can be retried",
          journalError: error)
      } else if error.code == .stopped && guarded.broken {
        // Queued behind an append that stopped the journal (which stopped the manager): not
        // written, unlike that append's commands after `durabilityLost`, whose outcome is unknown.
        failure = ManagerError(
          .appendFailed,
          "an earlier command this one was validated after could not be journaled, and the journal accepts no more "
            + "appends; nothing of this command was written, and no more commands are accepted",
          journalError: error)
        if guarded.stopped == nil || guarded.stopped?.code == .closed { guarded.stopped = failure }
      } else {
        failure = refusal(for: error, stopping: &guarded)
      }
      guarded.broken = true
      return SettledFlight(commands: head.commands, failure: failure)
    }
  }

  /// Applies one acknowledged append's commands to the live model and announces them.
  private func publish(_ commands: [Staged], at sequences: ClosedRange<UInt64>, in guarded: inout Guarded) {
    precondition(sequences.lowerBound == guarded.lastSequence + 1, "the journal skipped sequence numbers")
    precondition(
      sequences.count == commands.reduce(0) { $0 + $1.records.count },
      "the journal numbered a different number of records")
    var first = sequences.lowerBound
    // One hold of `live` for the whole append: readers see all of its commands or none.
    // The touched keys and recorded events go only into observers' changes: with none, naming
    // and hashing them is wasted (as in replay).
    let observed = !guarded.observers.isEmpty
    live.withLock { model in
      // By index, as `SettledFlight.resolve`; the command is copied only for observers.
      for index in commands.indices {
        var context = ApplyContext(recording: observed)
        tables.apply(commands[index].events, to: &model, context: &context)
        let count = UInt64(commands[index].events.count)
        if observed {
          let command = commands[index]
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
            keys: sortedAlike(context.touched))
          // A bounded stream that is full ends here, in commit order: no later change reaches
          // it (a reader that made room meanwhile would see a gap). The manager lets go of it.
          var behind: [Int] = []
          for (id, observer) in guarded.observers where !observer.deliver(change) {
            observer.fellBehind(at: first)
            behind.append(id)
          }
          for id in behind { guarded.observers.removeValue(forKey: id) }
        }
        first += count
      }
    }
    guarded.lastSequence = sequences.upperBound
  }

  /// The error for a failed append; stops the manager when durability is lost, or when the
  /// journal accepts no more appends (`Journal.failure`).
  private func refusal(for error: JournalError, stopping guarded: inout Guarded) -> ManagerError {
    switch error.code {
    case .durabilityLost:
      let failure = ManagerError(
        .durabilityLost,
        "the journal can no longer guarantee durability; the command may or may not be on disk, and no more commands are accepted",
        journalError: error)
      if guarded.stopped == nil || guarded.stopped?.code == .closed { guarded.stopped = failure }
      return failure
    case .closed:
      return ManagerError(.closed, "the manager is closed", journalError: error)
    case .limitExceeded:
      return ManagerError(
        .tooLarge, "the command's events are larger than the journal accepts; nothing changed", journalError: error)
    case .invalidArgument:
      return ManagerError(
        .appendFailed, "the journal refused the command's events; nothing changed, and a retry fails the same way",
        journalError: error)
    default:
      if journal.failure != nil {
        // The journal accepts no more appends (say a new segment could not be opened after a
        // roll): every later command would fail the same way, so the manager stops.
        let failure = ManagerError(
          .appendFailed,
          "the command's events could not be journaled and the journal accepts no more appends; nothing changed, "
            + "and no more commands are accepted",
          journalError: error)
        if guarded.stopped == nil || guarded.stopped?.code == .closed { guarded.stopped = failure }
        return failure
      }
      return ManagerError(
        .appendFailed, "the command's events could not be journaled; nothing changed, and it can be retried",
        journalError: error)
    }
  }

  /// Settles the appends already handed to the journal (their commands finish as it says), closes
  /// the journal and ends every change stream. Commands waiting at the gate, and later ones, throw
  /// `.closed`; so do commands staged in a batch that reaches the journal after it began closing.
  /// A command being validated as `close()` begins may still reach the journal before that, and
  /// then commits as usual. Of calls from several tasks at once, each returns only once all of
  /// that is done.
  ///
  /// A manager let go of without `close()` is closed by its `deinit`, on the thread that lets go
  /// of it last: that may be the journal's writer thread, just after it answered the last command,
  /// so the directory's lock may be released a moment after the app's last reference is gone.
  /// Opening the directory again in this process meanwhile waits for that release, for up to 10
  /// seconds (on that writer thread itself it fails with `.locked` at once).
  public func close() {
    guarded.withLock { guarded in
      guarded.closed = true
      if guarded.stopped == nil { guarded.stopped = ManagerError(.closed, "the manager is closed") }
    }
    journal.close()  // settles (and announces) the appends in flight
    endingStreams.withLock { _ in
      let observers = guarded.withLock { guarded in
        defer { guarded.observers.removeAll() }
        return Array(guarded.observers.values)
      }
      // Outside `guarded`: a stream's termination handler takes it.
      for observer in observers { observer.finish() }
    }
  }
}
