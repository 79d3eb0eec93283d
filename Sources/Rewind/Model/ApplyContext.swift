/// The capability to change a store, and the record of which keys an event touched.
///
/// Only Rewind creates one, while applying a committed (or replayed) event, and it cannot be
/// copied; so a store can change only on the apply path. Code that merely holds a model value
/// (a reader, a query) has no way to get one.
public struct ApplyContext: ~Copyable {
  @usableFromInline var touched: Set<ChangeKey> = []
  /// The ids of the records touched, with their stores' names, in the order touched, when
  /// `keepsRecordIDs` (else empty): for a check that asks only the records an event touched
  /// (`TimeMachine.firstFailure(of:through:)`), which cannot find a record from its id's text. A record
  /// kept here is not also named in `touched` (naming its key would format its id).
  @usableFromInline var touchedRecordIDs: [(store: String, id: any Sendable)] = []
  /// Whether touched keys are kept. Replay, which never reports them, turns this off: naming a key
  /// formats the record's id, which costs more than applying most events.
  @usableFromInline let isRecording: Bool
  /// Whether `touchedRecordIDs` is kept (only while recording).
  @usableFromInline let keepsRecordIDs: Bool

  /// Package-wide so that the benchmarks can time a store's changes alone; apps cannot make one.
  package init(recording: Bool = true, keepingRecordIDs: Bool = false) {
    isRecording = recording || keepingRecordIDs
    keepsRecordIDs = keepingRecordIDs
  }

  /// Marks a key as touched by hand (for state that is not in a `Store`).
  public mutating func touch(_ key: ChangeKey) { if isRecording { touched.insert(key) } }

  @inlinable @inline(__always) mutating func touch(record store: String, _ id: some CustomStringConvertible & Sendable)
  {
    guard isRecording else { return }
    if keepsRecordIDs {
      touchedRecordIDs.append((store, id))
    } else {
      touched.insert(.record(store, id))
    }
  }

  @inlinable @inline(__always) mutating func touch(group store: String, _ key: some CustomStringConvertible) {
    if isRecording { touched.insert(.group(store, key)) }
  }
}
