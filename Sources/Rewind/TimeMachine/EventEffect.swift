/// What one recorded event did to the state, found by applying it, with change recording on, to the
/// state before it: every key its apply touched, and each touched record before and after.
/// `TimeMachine.effect(of:)` makes one; `rewind show` prints it.
public struct EventEffect: Sendable {
  public var event: RecordedEvent
  /// Every key the apply touched (records, groups of a grouping cache, value stores), sorted.
  public var keys: [ChangeKey]
  /// Each record and value store among `keys`, in key order, with its value before and after.
  public var records: [TouchedRecord]
}

/// A record (or value store) an event touched, before and after it.
public struct TouchedRecord: Sendable, CustomStringConvertible {
  public enum Change: String, Sendable, Equatable {
    /// Absent before, present after.
    case inserted
    /// Present before and after, with a different value.
    case updated
    /// Present before, absent after.
    case removed
    /// Touched, but equal before and after (or absent both times).
    case unchanged
  }

  public var store: String
  /// The record's id (its `description`); empty for a value store.
  public var id: String
  public var before: (any Sendable)?
  public var after: (any Sendable)?
  public var change: Change

  public var description: String { "\(id.isEmpty ? store : "\(store)/\(id)") \(change.rawValue)" }
}

extension TimeMachine {
  /// What the event at `sequence` did: the state after `sequence - 1` with the event applied
  /// through the model's registry, recording the keys it touched. Does not move the machine.
  /// Nil for 0, a sequence number past `lastSequence`, or a checkpoint (which changes nothing).
  /// - Throws: `ReplayError` when a record up to `sequence` does not decode; `JournalError`.
  public func effect(of sequence: UInt64) throws -> EventEffect? {
    guard sequence > 0, sequence <= lastSequence, let recorded = try event(at: sequence) else { return nil }
    let before = try state(at: sequence - 1)
    var after = before
    var context = ApplyContext(recording: true)
    M.makeRegistry().apply(recorded.event, to: &after, context: &context)
    let keys = sortedAlike(context.touched)
    // What changed, record by record, as `diff` finds it; a touched record it does not list is
    // unchanged (or absent both times).
    let diff = StateDiff.between(before, after, from: sequence - 1, to: sequence)
    let storesAfter = StateInspector.stores(of: after)
    let records = keys.filter { $0.kind != .group }.map { key in
      let id = key.kind == .value ? "" : key.key
      let changes = diff.changes(in: key.store)
      let changed = [changes?.inserted, changes?.updated, changes?.removed].lazy.compactMap { $0 }.joined()
      guard let change = changed.first(where: { $0.id == id }) else {
        let value = storesAfter.first { $0.name == key.store }?.record(described: id)
        return TouchedRecord(store: key.store, id: id, before: value, after: value, change: .unchanged)
      }
      let kind: TouchedRecord.Change =
        switch change.kind {
        case .inserted: .inserted
        case .updated: .updated
        case .removed: .removed
        }
      return TouchedRecord(store: key.store, id: id, before: change.before, after: change.after, change: kind)
    }
    return EventEffect(event: recorded, keys: keys, records: records)
  }
}
