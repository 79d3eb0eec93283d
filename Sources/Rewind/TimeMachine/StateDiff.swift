/// One record that differs between two states: inserted (`before` nil), removed (`after` nil) or
/// updated (both). Values are the store's record type (or a value store's value).
public struct RecordChange: Sendable, CustomStringConvertible {
  public enum Kind: Sendable, Equatable { case inserted, updated, removed }

  /// The record's id (its `description`); empty for a value store.
  public var id: String
  public var before: (any Sendable)?
  public var after: (any Sendable)?

  public var kind: Kind { before == nil ? .inserted : after == nil ? .removed : .updated }

  /// `before` as `R`, if it is one.
  public func before<R>(as type: R.Type) -> R? { before as? R }
  /// `after` as `R`, if it is one.
  public func after<R>(as type: R.Type) -> R? { after as? R }

  public var description: String {
    switch kind {
    case .inserted: "+ \(id): \(after.map { "\($0)" } ?? "")"
    case .removed: "- \(id): \(before.map { "\($0)" } ?? "")"
    case .updated: "~ \(id): \(before.map { "\($0)" } ?? "") -> \(after.map { "\($0)" } ?? "")"
    }
  }
}

/// The record-level changes of one store between two states, each list in id order.
public struct CollectionChanges: Sendable {
  public var name: String
  public var inserted: [RecordChange] = []
  public var updated: [RecordChange] = []
  public var removed: [RecordChange] = []

  public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && removed.isEmpty }
}

/// The changes between two states, per store (in the order the model declares its stores),
/// leaving out stores that did not change.
public struct StateDiff: Sendable {
  public var from: UInt64
  public var to: UInt64
  public var collections: [CollectionChanges]

  /// The changes of the store named `name`, or nil if it did not change.
  public func changes(in name: String) -> CollectionChanges? { collections.first { $0.name == name } }
}

/// A store the time machine can compare record by record and look into without knowing its
/// record type. `Store` and `ValueStore` are.
protocol ComparableCollection {
  var name: String { get }
  /// Records held (1 for a value store).
  var recordCount: Int { get }
  /// The changes from `older` (a value of the same type) to `self`.
  func changes(since older: Any) -> CollectionChanges
  /// The record whose id's `description` is `id` (a value store's value for ""), or nil.
  /// Formats every record's id: `record(id:)` finds one by its id.
  func record(described id: String) -> (any Sendable)?
  /// The record whose id is `id`, if `id` is of the store's id type (a value store's value), or nil.
  func record(id: any Sendable) -> (any Sendable)?
  /// Every record in id order (a value store: its value).
  func recordValues() -> [any Sendable]
  /// Where a cache disagrees with the same answer recomputed from the records.
  func cacheProblems() -> [String]
  /// Counts the tree nodes this store holds that `census` has not reached yet.
  func addStorage(to census: inout StorageCensus)
}

extension Store: ComparableCollection {
  var recordCount: Int { count }

  func addStorage(to census: inout StorageCensus) {
    records.addStorage(to: &census)
    for ids in groups.values { ids.addStorage(to: &census) }
  }

  func record(described id: String) -> (any Sendable)? {
    // By a tree search where the text names one id alone; else record by record (helper-221,
    // Dec 7: every `print` and every watched step listed and described the whole store).
    if let named = Self.id(named: id) { return named.flatMap { find(id: $0) } }
    return all().first { $0.id.description == id }
  }

  /// The id `text` names, for id types whose text names one id alone: an `EntityIdentifier`
  /// whose text is its `Identifier`'s, a `String`, an integer; `.some(nil)` when the text is no
  /// id's own text. Nil where only a look at each record's text can tell (any other type, or an
  /// entity identifier with a text of its own).
  private static func id(named text: String) -> Record.ID?? {
    switch Record.ID.self {
    case let type as any EntityIdentifier.Type:
      // Its text is its identifier's (as by default) when a probe's is.
      let probe = Identifier(high: 0, low: 0)
      guard type.init(probe).description == probe.description else { return nil }
      guard let raw = Identifier(text), let id = type.init(raw) as? Record.ID, id.description == text else {
        return .some(nil)
      }
      return .some(id)
    case is String.Type:
      return .some(text as? Record.ID)
    case let type as any FixedWidthInteger.Type:
      guard let id = type.init(text, radix: 10) as? Record.ID, id.description == text else { return .some(nil) }
      return .some(id)
    default:
      return nil
    }
  }

  func record(id: any Sendable) -> (any Sendable)? {
    (id as? Record.ID).flatMap { find(id: $0) }
  }

  func recordValues() -> [any Sendable] { all() }

  func changes(since older: Any) -> CollectionChanges {
    var result = CollectionChanges(name: name)
    let old = (older as? Store<Record>)?.all() ?? []
    let new = all()
    var i = 0
    var j = 0
    while i < old.count || j < new.count {
      if j == new.count || (i < old.count && old[i].id < new[j].id) {
        result.removed.append(RecordChange(id: old[i].id.description, before: old[i], after: nil))
        i += 1
      } else if i == old.count || new[j].id < old[i].id {
        result.inserted.append(RecordChange(id: new[j].id.description, before: nil, after: new[j]))
        j += 1
      } else {
        if old[i] != new[j] {
          result.updated.append(RecordChange(id: new[j].id.description, before: old[i], after: new[j]))
        }
        i += 1
        j += 1
      }
    }
    return result
  }
}

extension ValueStore: ComparableCollection {
  var recordCount: Int { 1 }
  func record(described id: String) -> (any Sendable)? { id.isEmpty || id == name ? value : nil }
  func record(id: any Sendable) -> (any Sendable)? { value }
  func recordValues() -> [any Sendable] { [value] }
  func cacheProblems() -> [String] { [] }
  func addStorage(to census: inout StorageCensus) {}

  func changes(since older: Any) -> CollectionChanges {
    var result = CollectionChanges(name: name)
    if let older = older as? ValueStore<Value>, older.value != value {
      result.updated.append(RecordChange(id: "", before: older.value, after: value))
    }
    return result
  }
}

extension StateDiff {
  /// Compares the stores of two states of a model, found by reflection over its stored properties
  /// and those of the structs among them (`StateInspector.stores(of:)`).
  static func between<M: Model>(_ old: M, _ new: M, from: UInt64, to: UInt64) -> StateDiff {
    let olds = StateInspector.stores(of: old)
    var collections: [CollectionChanges] = []
    for (index, store) in StateInspector.stores(of: new).enumerated() where index < olds.count {
      let changes = store.changes(since: olds[index])
      if !changes.isEmpty { collections.append(changes) }
    }
    return StateDiff(from: from, to: to, collections: collections)
  }
}
