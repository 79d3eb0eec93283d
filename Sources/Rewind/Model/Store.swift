/// A record a `Store` can hold: identified by a stable, ordered id; optionally filed under group
/// keys (a note under its tags), which the store's grouping cache indexes.
///
/// `==` must compare every field readers care about (the synthesized one does): a record replaced
/// by one it calls equal, or changed into one, touches nothing, so change streams, caches built on
/// them, blame and an event's effect see no change. The grouping cache does not depend on it: a
/// change of a record's group keys is filed whatever `==` says. Swift compares strings by
/// canonical equivalence: a string changed only in its Unicode form (`é` composed, or `e` and a
/// combining accent) is equal, so that change touches nothing either, though the record's bytes
/// (in snapshots and digests) change.
///
/// The id's `<` must be a strict total order that agrees with `==`: of two unequal ids, exactly one
/// sorts before the other. The store is a search tree, and an id it cannot place would be stored
/// twice or missed. `Identifier` and the integer types qualify; `String` does not, across Unicode
/// forms (`"cafe\u{301}"` and `"caf\u{E9}s"` are unequal, yet neither sorts before the other). A
/// store stops the process, naming both ids, when a new id does not sort strictly between its
/// neighbours. Group keys are hashed, not searched, and need only `Hashable` to agree with `==`.
public protocol StoreRecord: Identifiable, Sendable, Equatable
where ID: Comparable & Sendable & CustomStringConvertible {
  associatedtype GroupKey: Hashable & Comparable & Sendable & CustomStringConvertible = NoGroupKey
  /// The groups this record belongs to (duplicates are ignored).
  var groupKeys: [GroupKey] { get }

  /// Not API: the store of `records`, given in strictly increasing id order, with its grouping
  /// cache; nil if the ids are not strictly increasing. Use the default implementation.
  ///
  /// A requirement, not a function of `Store`, so that each record type's conformance carries a
  /// copy specialized for it: a decoded store is built through `Decodable`'s witness, where
  /// generic code looks up metadata and allocates at each hash and append (about 3,600
  /// instructions a record for the Notebook model's notes, against 1,200 specialized).
  static func _store(named name: String, sortedRecords records: [Self]) -> Store<Self>?
}

extension StoreRecord {
  @inlinable public static func _store(named name: String, sortedRecords records: [Self]) -> Store<Self>? {
    Store(name: name, sortedRecords: records)
  }
}

/// The group key of records that are not grouped.
public enum NoGroupKey: Hashable, Comparable, Sendable, CustomStringConvertible {
  public var description: String { switch self {} }
}

extension StoreRecord where GroupKey == NoGroupKey {
  public var groupKeys: [NoGroupKey] { [] }
}

/// A generic collection of records by id: `all()`, `find(id:)`, `insert`, `remove`; the small set
/// every query builds on. Filtering lives in static queries on the record type.
///
/// The store keeps one cache: which records are in each group, and how many. It is updated on every
/// insert and remove from exactly the groups the change entered or left, so it always equals the
/// same answer computed from `all()` (the coherence tests check this after every command).
///
/// Reading is free for anyone holding the value; changing it needs the `ApplyContext` that only the
/// apply path has. Every change records the keys it touched: the record's key and each group it
/// entered or left.
///
/// The apply path is `@inlinable`, so an app's `Store<Note>` is specialized in the app's module
/// rather than run through generic metadata at every insert (replay spends most of its time here).
public struct Store<Record: StoreRecord>: Sendable, Equatable {
  /// Names this store in `ChangeKey`s, diffs, blame and the `rewind` tool: unique among the
  /// model's stores and value stores. Two that share one are a programming error: a manager,
  /// replay, a time machine or a `rewind` tool's registration of the model stops the process
  /// (a precondition) as it first reads the model's stores.
  public let name: String
  /// The records by id, in a tree that shares unchanged nodes between copies of the store: a
  /// copy (a time machine's keyframe, say) costs what changes after it, not the whole store.
  @usableFromInline var records = RecordTree<Record.ID, Record>()
  /// The grouping cache: the ids filed under each group key, shared the same way.
  @usableFromInline var groups: [Record.GroupKey: RecordTree<Record.ID, Void>] = [:]

  public init(name: String) { self.name = name }

  /// The store of `records`, given in strictly increasing id order, with its grouping cache; nil
  /// if the ids are not strictly increasing (found before any group is built). Builds the trees
  /// bottom-up: the records', then each group's from one pass over the records. A key a record
  /// names twice is filed once: found among a few keys by comparing, among many through a set
  /// (linear time).
  @inlinable init?(name: String, sortedRecords records: [Record]) {
    self.name = name
    guard let tree = RecordTree(sortedKeys: records.map { $0.id }, values: records) else { return nil }
    self.records = tree
    var grouped: [Record.GroupKey: [Record.ID]] = [:]
    for record in records {
      let keys = record.groupKeys
      if keys.count <= 8 {
        for index in keys.indices where !keys[..<index].contains(keys[index]) { file(record.id, under: keys[index]) }
      } else {
        var seen = Set<Record.GroupKey>()
        for key in keys where seen.insert(key).inserted { file(record.id, under: key) }
      }
    }
    // One hash lookup, and the group changed through its index (the `default:` subscript's
    // accessor allocates a frame at each call).
    func file(_ id: Record.ID, under key: Record.GroupKey) {
      if let slot = grouped.index(forKey: key) {
        grouped.values[slot].append(id)
      } else {
        grouped[key] = [id]
      }
    }
    // Each group's ids came in the records' order, strictly increasing, each once.
    groups = grouped.mapValues { ids in
      guard let group = RecordTree(sortedKeys: ids, values: Array(repeating: (), count: ids.count)) else {
        preconditionFailure("a group's ids out of order in store \(name)")
      }
      return group
    }
  }

  @inlinable public var count: Int { records.count }
  @inlinable public var isEmpty: Bool { records.isEmpty }

  /// Every record, in id order.
  @inlinable public func all() -> [Record] { records.values }

  @inlinable public func find(id: Record.ID) -> Record? { records[id] }

  /// Whether `predicate` is true of every record, asked in id order up to the first record it is
  /// false of: `all().allSatisfy(predicate)` without the array of every record that `all()` makes.
  /// For a check run often over a large store (an invariant that `rewind bisect --linear` asks
  /// after every record).
  @inlinable public func allSatisfy(_ predicate: (Record) throws -> Bool) rethrows -> Bool {
    try records.allSatisfy(predicate)
  }

  /// Stores are equal when their names and records are (and so, when coherent, their caches).
  @inlinable public static func == (a: Store, b: Store) -> Bool {
    a.name == b.name && a.records == b.records && a.groups.count == b.groups.count
      && a.groups.allSatisfy { key, ids in
        b.groups[key].map { other in other.root === ids.root || other.keys == ids.keys } ?? false
      }
  }

  @inlinable public func contains(id: Record.ID) -> Bool { records.contains(id) }

  // MARK: The grouping cache

  /// The records filed under `key`, in id order. Answered from the cache: the group's ids, in
  /// order, matched to the records in one walk of the records' tree.
  @inlinable public func records(inGroup key: Record.GroupKey) -> [Record] {
    guard let ids = groups[key] else { return [] }
    return records.values(forSortedKeys: ids.keys)
  }

  /// Every group with its number of records, in key order. Answered from the cache, each key as
  /// the group's first record (in id order) holds it.
  ///
  /// Group keys that are equal but written differently (a tag in two Unicode forms that compare
  /// equal, held by two records) share one group, which the cache files under the form that
  /// entered it first. That form depends on the order of the changes that led to the state (a
  /// store read from a snapshot has the first record's), so it is not what is returned: the
  /// first record's form depends on the records alone.
  @inlinable public func groupCounts() -> [(key: Record.GroupKey, count: Int)] {
    sortedAlike(groups.map { key, ids in (key: form(of: key, in: ids), count: ids.count) }, by: { $0.key < $1.key }) {
      Array($0.key.description.utf8)
    }
  }

  /// `key` as the first record of its group (`ids`) holds it: one walk down the group's tree and
  /// one down the records'.
  @inlinable func form(of key: Record.GroupKey, in ids: RecordTree<Record.ID, Void>) -> Record.GroupKey {
    guard let first = ids.firstKey, let record = records[first] else { return key }
    return record.groupKeys.first { $0 == key } ?? key
  }

  /// How many records are filed under `key`. Answered from the cache.
  @inlinable public func count(inGroup key: Record.GroupKey) -> Int { groups[key]?.count ?? 0 }

  /// Where the grouping cache disagrees with the groups recomputed from the records, one line
  /// per group (empty when coherent). `rewind verify` reports these.
  ///
  /// A group is coherent when its cached ids are the records filed under its key, each once, and
  /// the count it answers `count(inGroup:)` with is theirs. A line names the ids found on one side
  /// only (the first few, in id order), or says the ids are right but held twice or miscounted.
  public func cacheProblems() -> [String] {
    var expected: [Record.GroupKey: Set<Record.ID>] = [:]
    records.forEachEntry { id, record in
      for key in record.groupKeys { expected[key, default: []].insert(id) }
    }
    var problems: [String] = []
    for key in sortedAlike(Set(groups.keys).union(expected.keys)) {
      let held = groups[key].map { $0.keys } ?? []
      let heldSet = Set(held)
      let wanted = expected[key] ?? []
      let counted = groups[key]?.count ?? 0
      guard heldSet != wanted || held.count != heldSet.count || counted != held.count else { continue }
      var line =
        "store \(name), group '\(key)': the cache holds \(counted) record\(counted == 1 ? "" : "s"), "
        + "recomputing from the records gives \(wanted.count)"
      func named(_ ids: Set<Record.ID>) -> String {
        let sorted = sortedAlike(ids.map(\.description))
        return sorted.prefix(3).joined(separator: ", ") + (sorted.count > 3 ? " and \(sorted.count - 3) more" : "")
      }
      let onlyHeld = heldSet.subtracting(wanted)
      let onlyWanted = wanted.subtracting(heldSet)
      if !onlyHeld.isEmpty { line += "; filed but not under this key: \(named(onlyHeld))" }
      if !onlyWanted.isEmpty { line += "; under this key but not filed: \(named(onlyWanted))" }
      if onlyHeld.isEmpty && onlyWanted.isEmpty {
        line +=
          held.count != heldSet.count
          ? "; the same ids, \(held.count - heldSet.count) of them filed twice"
          : "; the same ids, miscounted as \(counted)"
      }
      problems.append(line)
    }
    return problems
  }

  // MARK: Changing (apply path only)

  /// Inserts `record`, replacing the one with the same id; returns the replaced one. Replacing a
  /// record with an equal one touches nothing.
  ///
  /// The record is moved into the tree, not copied (a copy retains each string and array it holds,
  /// and the caller's value is then released). So it is not at hand after the move: a
  /// replacement, which is rare, compares the old record with the one stored by looking it up.
  ///
  /// Always inlined, and the replaced record matched by a `switch`: an optional record left to be
  /// destroyed (a caller's discarded nil, say) is destroyed, for some record types (a `Note`),
  /// through `Optional`'s generic value witness and the type's metadata.
  @inlinable @inline(__always) @discardableResult
  public mutating func insert(_ record: consuming Record, context: inout ApplyContext) -> Record? {
    let id = record.id
    let groupKeys = record.groupKeys
    switch records.updateValue(record, forKey: id) {
    case .none:
      // A new record (the usual insert): compared with nothing, filed under its groups only.
      refile(id, from: [], to: groupKeys, context: &context)
      context.touch(record: name, id)
      return nil
    case .some(let old):
      // No change, nothing touched. The group keys are compared too: an `==` that leaves out
      // what they derive from (one comparing ids alone) must not leave the grouping cache behind.
      if records[id] == old, old.groupKeys == groupKeys { return old }
      refile(id, from: old.groupKeys, to: groupKeys, context: &context)
      context.touch(record: name, id)
      return old
    }
  }

  /// Removes the record with `id`; returns it, or nil (touching nothing) if there was none.
  /// Always inlined, as `insert`.
  @inlinable @inline(__always) @discardableResult
  public mutating func remove(id: Record.ID, context: inout ApplyContext) -> Record? {
    switch records.removeValue(forKey: id) {
    case .none: return nil
    case .some(let old):
      refile(id, from: old.groupKeys, to: [], context: &context)
      context.touch(record: name, id)
      return old
    }
  }

  /// Changes the record with `id` in place; returns false (touching nothing) if there is none.
  /// `change` must keep the record's id (a precondition): to give a record another id, remove it
  /// and insert it anew.
  ///
  /// The record is changed where it lies in the tree, found by one walk (replay's most frequent
  /// change: an edit of one field of an existing record). Only an apply that records what it
  /// touches keeps a copy of the record before the change, to touch nothing when it is unchanged;
  /// replay keeps only its group keys, since copying the record reaches into every string it
  /// holds (a cache miss each, in a large state).
  @inlinable @discardableResult
  public mutating func update(id: Record.ID, context: inout ApplyContext, _ change: (inout Record) -> Void) -> Bool {
    let recording = context.isRecording
    let outcome = records.modifyValue(forKey: id) { record -> UpdateOutcome in
      if recording {
        let old = record
        change(&record)
        precondition(record.id == id, "Store.update changed the id of record \(id) in store \(name)")
        let (oldKeys, newKeys) = (old.groupKeys, record.groupKeys)
        // Unchanged only with the same groups, whatever `==` leaves out (see `insert`).
        if oldKeys == newKeys { return old == record ? .unchanged : .sameGroups }
        return .changed(from: oldKeys, to: newKeys)
      }
      let oldKeys = record.groupKeys
      change(&record)
      precondition(record.id == id, "Store.update changed the id of record \(id) in store \(name)")
      // Most edits keep the record's groups: compared here, while both lists are at hand, rather
      // than carried out of the walk for `refile` to find equal.
      let newKeys = record.groupKeys
      return oldKeys == newKeys ? .sameGroups : .changed(from: oldKeys, to: newKeys)
    }
    // Consumed by the switch, so that only a `.changed` outcome's keys are left to destroy: kept
    // whole, the outcome was destroyed after the switch, whatever the case, by an outlined
    // function merged across record types and reached through a thunk (two calls an update).
    switch consume outcome {
    case nil: return false
    case .unchanged?: break
    case .sameGroups?: context.touch(record: name, id)
    case .changed(let oldKeys, let newKeys)?:
      refile(id, from: oldKeys, to: newKeys, context: &context)
      context.touch(record: name, id)
    }
    return true
  }

  /// What `update` did to the record in place.
  @usableFromInline enum UpdateOutcome {
    case unchanged
    /// Changed, in the same groups.
    case sameGroups
    case changed(from: [Record.GroupKey], to: [Record.GroupKey])
  }

  /// Moves `id` from the groups in `old` to those in `new` (duplicates in either are ignored).
  /// Most changes keep a record's groups, so equal lists return at once; otherwise a handful of
  /// keys are compared pairwise, and more through sets (linear time, as the bulk builder does:
  /// pairwise, a record with a thousand tags cost a million comparisons per change).
  @inlinable mutating func refile(
    _ id: Record.ID, from old: [Record.GroupKey], to new: [Record.GroupKey], context: inout ApplyContext
  ) {
    if old == new { return }
    if old.count <= 8 && new.count <= 8 {
      for (index, key) in old.enumerated() where !new.contains(key) && !old[..<index].contains(key) {
        leave(id, key, context: &context)
      }
      for (index, key) in new.enumerated() where !old.contains(key) && !new[..<index].contains(key) {
        enter(id, key, context: &context)
      }
      return
    }
    // The same keys in the same order as above: each key's first occurrence, absent from the other list.
    let olds = Set(old)
    let news = Set(new)
    var seen = Set<Record.GroupKey>(minimumCapacity: old.count)
    for key in old where !news.contains(key) && seen.insert(key).inserted { leave(id, key, context: &context) }
    seen = Set(minimumCapacity: new.count)
    for key in new where !olds.contains(key) && seen.insert(key).inserted { enter(id, key, context: &context) }
  }

  /// Takes `id` out of group `key` (dropping the group once empty). Each group is found by one
  /// hash lookup and changed through its index (no `subscript` accessor, which hashes again to
  /// write back).
  @inlinable @inline(__always) mutating func leave(_ id: Record.ID, _ key: Record.GroupKey, context: inout ApplyContext)
  {
    if let slot = groups.index(forKey: key), groups.values[slot].removeValue(forKey: id) != nil,
      groups.values[slot].isEmpty
    {
      groups.remove(at: slot)
    }
    context.touch(group: name, key)
  }

  /// Files `id` under group `key` (making the group if needed), as `leave`.
  @inlinable @inline(__always) mutating func enter(_ id: Record.ID, _ key: Record.GroupKey, context: inout ApplyContext)
  {
    if let slot = groups.index(forKey: key) {
      groups.values[slot].updateValue((), forKey: id)
    } else {
      var ids = RecordTree<Record.ID, Void>()
      ids.updateValue((), forKey: id)
      groups[key] = ids
    }
    context.touch(group: name, key)
  }
}
