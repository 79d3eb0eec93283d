internal import Rewind
internal import RewindJournal

/// A read-only time-travel session over one journal with the model type erased: what `diff`,
/// `blame`, `bisect` and `debug` use. Records and events come out as canonical JSON text.
protocol ModelSession: AnyObject {
  /// The journal's last sequence number as last read; while damage hides the end
  /// (`endHiddenBy`), the last one read intact before it: the session serves the records up to
  /// there, and `blame`, `bisect`, `commandEnd` and `prepare` read no further.
  var lastSequence: UInt64 { get }
  /// The damage that hid the journal's end when it was last read, or nil.
  var endHiddenBy: JournalError? { get }
  /// Where the session stands (0: the empty state).
  var position: UInt64 { get }
  /// Records the underlying time machine has applied so far.
  var recordsApplied: Int { get }
  var invariantNames: [String] { get }
  var queryNames: [String] { get }
  /// Called as records are applied (see `TimeMachine.progress`).
  var progress: ((ReplayProgress) -> Void)? { get set }

  func refresh() throws
  func move(to sequence: UInt64) throws
  /// Lays keyframes over the journal, as far as `memoryLimit` bytes of them allow
  /// (`TimeMachine.prepare(memoryLimit:through:)`); returns how far they reach.
  func prepare(memoryLimit: Int) throws -> KeyframeCoverage
  /// The last sequence number before the first record stamped after `timestamp` (with timestamps
  /// in order, the last one stamped at or before it; `ReplayTarget.time`).
  func sequence(atTime timestamp: Int64) throws -> UInt64
  func event(at sequence: UInt64) throws -> RecordedEvent?

  /// The state at `position` as canonical JSON.
  func stateJSON() throws -> String
  func collections() -> [(name: String, count: Int)]
  func digest() throws -> StateDigest
  /// The records of one store as a JSON array, or nil if there is no such store.
  func collectionJSON(_ store: String) -> String?
  /// One record (or a value store by name) at `position` as JSON, with its store and the spelling
  /// of `id` the store holds it under (`key`: an identifier typed in capitals is found by its
  /// lowercase digits); nil if absent. With `collection`, in that collection alone; without, in
  /// the first that holds it.
  func recordJSON(_ id: String, in collection: String?) -> (store: String, key: String, json: String)?
  /// The collections holding a record whose id is `id` at `position`, in the model's order.
  func collections(holding id: String) -> [String]
  func diff(from: UInt64, to: UInt64) throws -> StateDiff
  /// Every event that touched the entity `id`, in the store the first one touched (or in
  /// `collection`), and the other stores whose records of that id's text events touched too.
  func blame(_ id: String, in collection: String?) throws -> (entries: [EntityBlame], otherStores: [String])
  /// The sequence number of the first event after `position` that touched the entity `id`, in
  /// any store (`TimeMachine.nextEvent(touchingEntity:through:)`); nil when none does.
  func nextEvent(touching id: String) throws -> UInt64?
  /// What the event at `sequence` did, applied to the state before it; nil for a checkpoint.
  func effect(of sequence: UInt64) throws -> EventEffect?
  /// The last sequence number of the command whose record is at `sequence` (see
  /// `TimeMachine.commandEnd(from:through:)`).
  func commandEnd(from sequence: UInt64) throws -> UInt64
  /// Whether the invariant holds in the state after `sequence`, without moving; nil for an
  /// unknown name.
  func check(_ invariant: String, at sequence: UInt64) throws -> Bool?
  /// The first failing sequence number (the last record of a command); nil if it holds. `linear`
  /// checks after every command.
  func bisect(_ invariant: String, linear: Bool) throws -> UInt64?
  /// The query's answer at `position` as JSON; nil for an unknown name.
  func query(_ name: String) throws -> String?
}

/// What a session is for, which decides the keyframes its time machine keeps.
enum SessionUse {
  /// Moves back and forth at a user's word (`debug`): a keyframe every 1,024 records passed, up
  /// to 1,024 of them (`TimeMachine`'s defaults), so that a move back replays little. They cost
  /// about what the history changed (1.5 KB an event of the Notebook's), 1.6 GB at a million.
  case interactive
  /// One answer (`show`, `diff`, `blame`, `bisect`): the fewest keyframes a time machine keeps,
  /// so that the session holds about the state alone, as `replay` does (helper-221, Dec 7: `show`
  /// of the millionth event held 1.6 GB of keyframes it never used). Bisection keeps the last
  /// state found to hold itself (`TimeMachine.bisect`).
  case oneShot
}

final class TypedSession<M: SnapshotModel>: ModelSession {
  private let machine: TimeMachine<M>
  private let invariants: [Invariant<M>]
  private let queries: [ModelQuery<M>]

  init(directory: String, use: SessionUse, invariants: [Invariant<M>], queries: [ModelQuery<M>]) throws {
    machine =
      switch use {
      case .interactive: try TimeMachine<M>(directory: directory)
      case .oneShot: try TimeMachine<M>(directory: directory, maxKeyframes: 2)
      }
    self.invariants = invariants
    self.queries = queries
  }

  var lastSequence: UInt64 { machine.endHiddenBy == nil ? machine.lastSequence : machine.lastIntactSequence }
  var endHiddenBy: JournalError? { machine.endHiddenBy }
  /// How far the passes over the history read: the records before the damage that hides the end,
  /// or (nil) the whole journal.
  private var through: UInt64? { machine.endHiddenBy == nil ? nil : machine.lastIntactSequence }
  var position: UInt64 { machine.position }
  var recordsApplied: Int { machine.recordsApplied }
  var invariantNames: [String] { invariants.map(\.name) }
  var queryNames: [String] { queries.map(\.name) }
  var progress: ((ReplayProgress) -> Void)? {
    get { machine.progress }
    set { machine.progress = newValue }
  }

  func refresh() throws { try machine.refresh() }
  func move(to sequence: UInt64) throws { try machine.jump(to: sequence) }

  func prepare(memoryLimit: Int) throws -> KeyframeCoverage {
    try machine.prepare(memoryLimit: memoryLimit, through: through)
  }

  func sequence(atTime timestamp: Int64) throws -> UInt64 { try machine.sequence(atTime: timestamp) }

  func event(at sequence: UInt64) throws -> RecordedEvent? { try machine.event(at: sequence) }

  func stateJSON() throws -> String { try CanonicalJSON.render(machine.state) }
  func collections() -> [(name: String, count: Int)] { StateInspector.collections(of: machine.state) }
  func digest() throws -> StateDigest { try StateDigest.of(machine.state) }

  func collectionJSON(_ store: String) -> String? {
    StateInspector.records(in: store, of: machine.state).map { records in
      "[" + records.map(StateInspector.json).joined(separator: ",") + "]"
    }
  }

  func recordJSON(_ id: String, in collection: String?) -> (store: String, key: String, json: String)? {
    StateInspector.located(id, in: machine.state, store: collection).map {
      ($0.store, $0.key, StateInspector.json($0.value))
    }
  }
  func collections(holding id: String) -> [String] { StateInspector.stores(holding: id, in: machine.state) }

  func diff(from: UInt64, to: UInt64) throws -> StateDiff { try machine.diff(from: from, to: to) }
  /// An identifier typed in capitals that no event touched as typed is looked up again as the
  /// lowercase digits record keys hold (`TimeMachine.blame(entity:through:)`, as `RecordKey`).
  func blame(_ id: String, in collection: String?) throws -> (entries: [EntityBlame], otherStores: [String]) {
    try machine.blameNamingOtherStores(entity: id, in: collection, through: through)
  }
  func nextEvent(touching id: String) throws -> UInt64? {
    try machine.nextEvent(touchingEntity: id, through: through)?.envelope.sequence
  }
  func effect(of sequence: UInt64) throws -> EventEffect? { try machine.effect(of: sequence) }

  func commandEnd(from sequence: UInt64) throws -> UInt64 { try machine.commandEnd(from: sequence, through: through) }

  func check(_ invariant: String, at sequence: UInt64) throws -> Bool? {
    guard let invariant = invariants.first(where: { $0.name == invariant }) else { return nil }
    return invariant.holds(sequence == machine.position ? machine.state : try machine.state(at: sequence))
  }

  func bisect(_ invariant: String, linear: Bool) throws -> UInt64? {
    guard let invariant = invariants.first(where: { $0.name == invariant }) else { return nil }
    return linear
      ? try machine.firstFailure(of: invariant, through: through) : try machine.bisect(invariant, through: through)
  }

  func query(_ name: String) throws -> String? {
    guard let query = queries.first(where: { $0.name == name }) else { return nil }
    return try CanonicalJSON.render(query.read(machine.state))
  }
}
