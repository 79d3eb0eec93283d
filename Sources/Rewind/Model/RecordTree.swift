/// An ordered map from keys to values with structural sharing: the storage of `Store`.
///
/// A B+ tree of small nodes. Copying a tree copies one reference; a change afterwards copies only
/// the nodes on the path to the changed key (at most a few dozen entries each), never the whole
/// map. So a time machine can keep the state at thousands of points of a history for the cost of
/// what changed between them, where a `Dictionary` would copy every record at the first change
/// after each kept state. Iteration is in key order, so no caller has to sort.
///
/// Nodes are changed in place only when uniquely referenced (`isKnownUniquelyReferenced`), as the
/// standard library's copy-on-write collections do; a shared node is never changed.
///
/// Shape: leaves hold up to `maxLeafWidth` sorted keys with their values; an inner node holds up to
/// `maxWidth` children, each with a separator key, such that every key of child `i - 1` is below
/// separator `i` and every key of child `i` is at least separator `i` (separator 0 is unused).
/// A full node splits in two. Removing never merges nodes: a node is dropped when it empties and
/// the root steps down while it has one child, so the height stays that of the largest size the
/// tree has had, and lookups stay logarithmic in it.
@usableFromInline
struct RecordTree<Key: Comparable, Value>: @unchecked Sendable {
  // `@unchecked`: nodes are reference types changed only while uniquely referenced, as above; a
  // node visible to two trees (and so possibly to two threads) is only ever read.

  /// The most children of an inner node.
  @usableFromInline static var maxWidth: Int { 32 }
  /// The most entries of a leaf: fewer than an inner node's children, since changing a record
  /// after a copy copies its whole leaf (values included, with their references).
  @usableFromInline static var maxLeafWidth: Int { 16 }

  /// A node: one allocation holding its header (count, kind), its keys, and a leaf's values or an
  /// inner node's children, all inline after the header. A lookup's binary search reads the keys
  /// from the node itself, and the child or value it finds lies in the same allocation, so a walk
  /// from the root misses the cache about once per level instead of twice (no separate array of
  /// children or values to follow). Keys, values and children `0..<count` are initialized.
  ///
  /// A node has room for `slots` entries (its header says). A node made to grow (a new root, a
  /// split's halves, a tree built in bulk) has `maxSlots`: one more than a node may keep, so a full
  /// node can take the entry that makes it split. A copy of a shared node (see `copy(room:)`) has
  /// room for what it holds and the one change it is made for: copies are what states sharing a
  /// tree keep (a time machine's keyframes hold a path of them per change), and once shared a node
  /// never changes, so room for more would be memory nobody uses. A copy that must take more
  /// grows to `maxSlots` first (`grown()`).
  ///
  /// Layout of the tail (the buffer's elements, counted in keys): `slots` keys, then, at the next
  /// address aligned for them, `slots` values (a leaf) or `slots` child references (an inner node).
  ///
  /// Reached only through `RecordTree`'s methods, which never overlap two accesses to one node,
  /// and only through the buffer's pointers (no dynamic exclusivity checks).
  @usableFromInline
  final class Node: ManagedBuffer<NodeFields, Key> {
    /// Entries a node made to grow has room for: one more than it may keep.
    @inlinable static func maxSlots(isLeaf: Bool) -> Int { (isLeaf ? maxLeafWidth : maxWidth) + 1 }

    /// The buffer's elements (counted in keys) that hold `slots` keys and, aligned after them, as
    /// many values or children.
    @inlinable static func elementCapacity(isLeaf: Bool, slots: Int) -> Int {
      let payload =
        isLeaf
        ? MemoryLayout<Value>.alignment - 1 + slots * MemoryLayout<Value>.stride
        : MemoryLayout<Node>.alignment - 1 + slots * MemoryLayout<Node>.stride
      let keyStride = MemoryLayout<Key>.stride
      return slots + (payload + keyStride - 1) / keyStride
    }

    /// The bytes the allocation of a node with room for `slots` entries requests: the object
    /// header (two words), the node header, then the elements, each part at its alignment.
    static func allocationBytes(isLeaf: Bool, slots: Int) -> Int {
      func aligned(_ offset: Int, _ alignment: Int) -> Int { (offset + alignment - 1) / alignment * alignment }
      let header = aligned(2 * MemoryLayout<Int>.size, MemoryLayout<NodeFields>.alignment)
      let elements = aligned(header + MemoryLayout<NodeFields>.size, MemoryLayout<Key>.alignment)
      return elements + elementCapacity(isLeaf: isLeaf, slots: slots) * MemoryLayout<Key>.stride
    }

    /// The bytes this node's allocation requested.
    var allocationBytes: Int { Self.allocationBytes(isLeaf: isLeaf, slots: slots) }

    /// An empty node with room for `slots` entries (`maxSlots` unless given).
    @inlinable static func makeEmpty(isLeaf: Bool, slots: Int? = nil) -> Node {
      let slots = slots ?? maxSlots(isLeaf: isLeaf)
      let buffer = Node.create(minimumCapacity: elementCapacity(isLeaf: isLeaf, slots: slots)) { _ in
        NodeFields(count: 0, isLeaf: isLeaf, slots: slots)
      }
      let node = unsafeDowncast(buffer, to: Node.self)
      node.withUnsafeMutablePointers { _, keys in
        let tail = Self.tail(keys, slots: slots)
        if isLeaf {
          _ = tail.alignedUp(for: Value.self).bindMemory(to: Value.self, capacity: slots)
        } else {
          _ = tail.alignedUp(for: Node.self).bindMemory(to: Node.self, capacity: slots)
        }
      }
      return node
    }

    @inlinable static func tail(_ keys: UnsafeMutablePointer<Key>, slots: Int) -> UnsafeMutableRawPointer {
      UnsafeMutableRawPointer(keys + slots)
    }

    /// A leaf's values, after its keys' slots (`fields` its header).
    @inlinable @inline(__always) static func values(
      after keys: UnsafeMutablePointer<Key>, _ fields: UnsafeMutablePointer<NodeFields>
    ) -> UnsafeMutablePointer<Value> {
      tail(keys, slots: Int(fields.pointee.slots)).alignedUp(for: Value.self).assumingMemoryBound(to: Value.self)
    }

    /// An inner node's children, after its keys' slots (`fields` its header).
    @inlinable @inline(__always) static func children(
      after keys: UnsafeMutablePointer<Key>, _ fields: UnsafeMutablePointer<NodeFields>
    ) -> UnsafeMutablePointer<Node> {
      tail(keys, slots: Int(fields.pointee.slots)).alignedUp(for: Node.self).assumingMemoryBound(to: Node.self)
    }

    /// The slot of this inner node's child under which `key` falls: the next step of the loops
    /// that walk down in place (`modify`, `insertInPlace`, `removeInPlace`).
    @inlinable @inline(__always) func childSlot(_ key: Key) -> UnsafeMutablePointer<Node> {
      withUnsafeMutablePointers { fields, keys in
        Node.children(after: keys, fields) + Node.childIndex(key, in: keys, count: fields.pointee.count)
      }
    }

    /// A leaf holding `keys` with `values` (parallel), in order.
    @inlinable static func leaf(keys: some Collection<Key>, values: some Collection<Value>) -> Node {
      make(isLeaf: true, keys: keys, entries: values)
    }

    /// An inner node holding `children` under the separators `keys` (parallel), in order.
    @inlinable static func inner(keys: some Collection<Key>, children: some Collection<Node>) -> Node {
      make(isLeaf: false, keys: keys, entries: children)
    }

    /// A node holding `keys` with their payload entries (a leaf's values or an inner node's
    /// children, whichever `isLeaf` says), in order, with room for `slots` entries (`maxSlots`
    /// unless given).
    @inlinable static func make<Entry>(
      isLeaf: Bool, keys: some Collection<Key>, entries: some Collection<Entry>, slots: Int? = nil
    ) -> Node {
      let slots = slots ?? maxSlots(isLeaf: isLeaf)
      precondition(keys.count == entries.count && keys.count <= slots, "node overfilled")
      let node = makeEmpty(isLeaf: isLeaf, slots: slots)
      node.withParts { fields, stored, payload in
        let slots = payload.assumingMemoryBound(to: Entry.self)
        var index = 0
        for (key, entry) in zip(keys, entries) {
          (stored + index).initialize(to: key)
          (slots + index).initialize(to: entry)
          index += 1
        }
        fields.pointee.count = index
      }
      return node
    }

    /// A full node of `keys` and `entries` (parallel), copied in one call each: no iterator per
    /// element, which counts where this code runs unspecialized (a store being decoded, whose
    /// record type the decoder does not know). `RecordTree(sortedKeys:values:)`'s builder.
    @inlinable static func make<Entry>(
      isLeaf: Bool, keys: UnsafeBufferPointer<Key>, entries: UnsafeBufferPointer<Entry>
    ) -> Node {
      precondition(keys.count == entries.count && keys.count <= maxSlots(isLeaf: isLeaf), "node overfilled")
      let node = makeEmpty(isLeaf: isLeaf, slots: maxSlots(isLeaf: isLeaf))
      node.withParts { fields, stored, payload in
        if let base = keys.baseAddress { stored.initialize(from: base, count: keys.count) }
        if let base = entries.baseAddress {
          payload.assumingMemoryBound(to: Entry.self).initialize(from: base, count: entries.count)
        }
        fields.pointee.count = keys.count
      }
      return node
    }

    deinit {
      withParts { fields, stored, payload in
        let count = fields.pointee.count
        stored.deinitialize(count: count)
        if fields.pointee.isLeaf {
          payload.assumingMemoryBound(to: Value.self).deinitialize(count: count)
        } else {
          payload.assumingMemoryBound(to: Node.self).deinitialize(count: count)
        }
      }
    }

    /// Calls `body` with the header, the keys and the (aligned) start of the values or children.
    @inlinable func withParts<Result>(
      _ body: (UnsafeMutablePointer<NodeFields>, UnsafeMutablePointer<Key>, UnsafeMutableRawPointer) throws -> Result
    ) rethrows -> Result {
      try withUnsafeMutablePointers { fields, keys in
        let isLeaf = fields.pointee.isLeaf
        let tail = Self.tail(keys, slots: Int(fields.pointee.slots))
        return try body(fields, keys, isLeaf ? tail.alignedUp(for: Value.self) : tail.alignedUp(for: Node.self))
      }
    }

    /// A leaf's values (`0..<keyCount` initialized).
    @inlinable func withValues<Result>(_ body: (UnsafeMutablePointer<Value>) throws -> Result) rethrows -> Result {
      try withUnsafeMutablePointers { fields, keys in try body(Self.values(after: keys, fields)) }
    }

    /// An inner node's children (`0..<keyCount` initialized).
    @inlinable func withChildren<Result>(_ body: (UnsafeMutablePointer<Node>) throws -> Result) rethrows -> Result {
      try withUnsafeMutablePointers { fields, keys in try body(Self.children(after: keys, fields)) }
    }

    @inlinable var isLeaf: Bool { withUnsafeMutablePointerToHeader { $0.pointee.isLeaf } }
    @inlinable var keyCount: Int { withUnsafeMutablePointerToHeader { $0.pointee.count } }
    /// Entries this node has room for.
    @inlinable var slots: Int { withUnsafeMutablePointerToHeader { Int($0.pointee.slots) } }
    @inlinable func key(at index: Int) -> Key { withUnsafeMutablePointerToElements { $0[index] } }
    @inlinable func child(at index: Int) -> Node { withChildren { $0[index] } }
    @inlinable func value(at index: Int) -> Value { withValues { $0[index] } }
    /// An inner node's children, parallel to the keys (the separators); empty in a leaf.
    @inlinable var children: [Node] {
      isLeaf ? [] : withChildren { Array(UnsafeBufferPointer(start: $0, count: keyCount)) }
    }
    /// A leaf's values, parallel to the keys; empty in an inner node.
    @inlinable var values: [Value] {
      isLeaf ? withValues { Array(UnsafeBufferPointer(start: $0, count: keyCount)) } : []
    }
    /// The keys, as an array (for copying and splitting, not for lookups).
    @inlinable var keys: [Key] {
      withUnsafeMutablePointers { fields, stored in
        Array(UnsafeBufferPointer(start: stored, count: fields.pointee.count))
      }
    }

    /// A copy of this node with room for its entries and `room` more (at most `maxSlots`).
    @inlinable func copy(room: Int = 0) -> Node {
      withParts { fields, stored, payload in
        let count = fields.pointee.count
        let isLeaf = fields.pointee.isLeaf
        let slots = min(count + room, Self.maxSlots(isLeaf: isLeaf))
        let keys = UnsafeBufferPointer(start: stored, count: count)
        if isLeaf {
          let values = UnsafeBufferPointer(start: payload.assumingMemoryBound(to: Value.self), count: count)
          return Node.make(isLeaf: true, keys: keys, entries: values, slots: slots)
        }
        let children = UnsafeBufferPointer(start: payload.assumingMemoryBound(to: Node.self), count: count)
        return Node.make(isLeaf: false, keys: keys, entries: children, slots: slots)
      }
    }

    /// This node's entries moved into a new node with room for `maxSlots`, leaving this one
    /// empty. Only for a node nothing else references (a copy about to take one entry more than
    /// it has room for).
    @inlinable func grown() -> Node {
      withParts { fields, stored, payload in
        let count = fields.pointee.count
        let isLeaf = fields.pointee.isLeaf
        let grown = Node.makeEmpty(isLeaf: isLeaf)
        grown.withParts { grownFields, grownKeys, grownPayload in
          grownKeys.moveInitialize(from: stored, count: count)
          if isLeaf {
            grownPayload.assumingMemoryBound(to: Value.self).moveInitialize(
              from: payload.assumingMemoryBound(to: Value.self), count: count)
          } else {
            grownPayload.assumingMemoryBound(to: Node.self).moveInitialize(
              from: payload.assumingMemoryBound(to: Node.self), count: count)
          }
          grownFields.pointee.count = count
        }
        fields.pointee.count = 0
        return grown
      }
    }

    /// The first index whose key is not below `key`.
    ///
    /// Searched by halving the range without branching on the comparisons (see `childIndex`).
    @inlinable @inline(__always) func lowerBound(_ key: Key) -> Int {
      withUnsafeMutablePointers { fields, stored in Self.lowerBound(key, in: stored, count: fields.pointee.count) }
    }

    /// `lowerBound` of the `count` keys from `stored` on. A function of its own, always inlined:
    /// written inside the closure, the search stayed a function of its own, called (through a
    /// thunk, as the specializations for several key types were merged) on every step of a walk.
    @inlinable @inline(__always)
    static func lowerBound(_ key: Key, in stored: UnsafeMutablePointer<Key>, count: Int) -> Int {
      var length = count
      guard length > 0 else { return 0 }
      // Every key before `first` is below `key`; the answer lies in `first ... first + length`.
      var first = stored
      while length > 1 {
        let half = length &>> 1
        if first[half] < key { first += half }
        length &-= half
      }
      return first - stored + (first[0] < key ? 1 : 0)
    }

    /// The index of `key`, or nil if this leaf does not hold it.
    @inlinable func index(of key: Key) -> Int? {
      let index = lowerBound(key)
      return index < keyCount && self.key(at: index) == key ? index : nil
    }

    /// The child of an inner node whose range holds `key`: the last separator at or below it (the
    /// first child when there is none).
    ///
    /// Every walk from the root asks each inner node on its path, so this is replay's most frequent
    /// search (about 3.7 a record in a 40,000-note store). The range is halved without branching on
    /// the comparison (the compiler makes it a conditional move): the loop runs ⌈log₂ count⌉ times
    /// whatever the key, and costs about two thirds of the instructions of the textbook search,
    /// which kept two bounds and a midpoint and branched on every comparison.
    @inlinable @inline(__always) func childIndex(_ key: Key) -> Int {
      withUnsafeMutablePointers { fields, stored in Self.childIndex(key, in: stored, count: fields.pointee.count) }
    }

    /// `childIndex` among the `count` keys from `stored` on (always inlined, as `lowerBound`).
    @inlinable @inline(__always)
    static func childIndex(_ key: Key, in stored: UnsafeMutablePointer<Key>, count: Int) -> Int {
      // The separators are keys `1..<count`; the answer is how many of them are at or below
      // `key`. Every separator before `first` is; the answer lies in `first ... first + length`
      // (counted from separator 1).
      var length = count &- 1
      guard length > 0 else { return 0 }
      var first = stored + 1
      while length > 1 {
        let half = length &>> 1
        if !(key < first[half]) { first += half }
        length &-= half
      }
      return first - stored - (key < first[0] ? 1 : 0)
    }

    /// Stops the process unless `key`, new to the `count` keys from `stored` on, sorts strictly
    /// between the keys it is to land between at `index`. The tree's searches take `<` for a
    /// strict total order that agrees with `==`: a key that `<` does not order against a neighbour
    /// it is unequal to (`String`'s `<` across Unicode forms: neither `"cafe\u{301}"` nor
    /// `"caf\u{E9}s"` sorts before the other) would be filed where later searches miss it, and a
    /// record stored twice, or lost to `find`, `update` and `remove`. Stopping with both keys named,
    /// as `Dictionary` stops on a key type whose hashing breaks its contract, is better than that.
    /// Checked where a key is new to a leaf (two comparisons); a `<` that is not transitive can still
    /// slip by, which `StoreRecord`'s contract rules out.
    @inlinable @inline(__always)
    static func checkOrder(of key: Key, in stored: UnsafeMutablePointer<Key>, count: Int, at index: Int) {
      if index < count && !(key < stored[index]) { unordered(key, stored[index]) }
      if index > 0 && !(stored[index - 1] < key) { unordered(stored[index - 1], key) }
    }

    @usableFromInline @inline(never)
    static func unordered(_ a: Key, _ b: Key) -> Never {
      preconditionFailure(
        "the keys \(String(reflecting: a)) and \(String(reflecting: b)) of a Store are unequal, yet `<` does not "
          + "order them: a StoreRecord's id needs a `<` that is a strict total order agreeing with `==` "
          + "(String's is not across Unicode forms)")
    }

    /// Inserts `key` with the payload entry `entry` (a leaf's value or an inner node's child) at
    /// `index`.
    @inlinable func insert<Entry>(_ key: Key, _ entry: consuming Entry, at index: Int) {
      // Moved into the closure through an optional: a closure cannot consume a parameter.
      var entry = Optional(entry)
      withParts { fields, stored, payload in
        let count = fields.pointee.count
        precondition(count < Int(fields.pointee.slots), "node overfilled")
        let entries = payload.assumingMemoryBound(to: Entry.self)
        (stored + index + 1).moveInitialize(from: stored + index, count: count - index)
        (stored + index).initialize(to: key)
        (entries + index + 1).moveInitialize(from: entries + index, count: count - index)
        (entries + index).initialize(to: entry.take().unsafelyUnwrapped)
        fields.pointee.count = count + 1
      }
    }

    /// Removes the key and the payload entry at `index`; returns the entry.
    @inlinable func remove<Entry>(at index: Int, as _: Entry.Type) -> Entry {
      withParts { fields, stored, payload in
        let count = fields.pointee.count
        let entries = payload.assumingMemoryBound(to: Entry.self)
        (stored + index).deinitialize(count: 1)
        (stored + index).moveInitialize(from: stored + index + 1, count: count - index - 1)
        let entry = (entries + index).move()
        (entries + index).moveInitialize(from: entries + index + 1, count: count - index - 1)
        fields.pointee.count = count - 1
        return entry
      }
    }

    /// Moves the entries from `start` on into a new node (the right half of a split).
    @inlinable func split(at start: Int) -> Node {
      withParts { fields, stored, payload in
        let count = fields.pointee.count
        let isLeaf = fields.pointee.isLeaf
        let right = Node.makeEmpty(isLeaf: isLeaf)
        right.withParts { rightFields, rightKeys, rightPayload in
          rightKeys.moveInitialize(from: stored + start, count: count - start)
          if isLeaf {
            rightPayload.assumingMemoryBound(to: Value.self).moveInitialize(
              from: payload.assumingMemoryBound(to: Value.self) + start, count: count - start)
          } else {
            rightPayload.assumingMemoryBound(to: Node.self).moveInitialize(
              from: payload.assumingMemoryBound(to: Node.self) + start, count: count - start)
          }
          rightFields.pointee.count = count - start
        }
        fields.pointee.count = start
        return right
      }
    }
  }

  /// A node's header: its number of entries, its kind and the entries it has room for (at most
  /// `maxWidth + 1`; stored in 16 bits so that the header takes no more space than count and kind).
  @usableFromInline
  struct NodeFields {
    @usableFromInline var count: Int
    @usableFromInline let isLeaf: Bool
    @usableFromInline let slots: UInt16

    @inlinable init(count: Int, isLeaf: Bool, slots: Int) {
      self.count = count
      self.isLeaf = isLeaf
      self.slots = UInt16(slots)
    }
  }

  @usableFromInline var root: Node?
  @usableFromInline private(set) var count = 0

  @inlinable init() {}

  /// A tree of `keys` (strictly increasing) and their `values`, built bottom-up in one pass with
  /// full nodes, or nil if the keys are not strictly increasing.
  @inlinable init?(sortedKeys keys: [Key], values: [Value]) {
    precondition(keys.count == values.count, "one value per key")
    for index in keys.indices.dropFirst() where !(keys[index - 1] < keys[index]) { return nil }
    guard !keys.isEmpty else { return }
    let width = Self.maxWidth
    var level = keys.withUnsafeBufferPointer { keys in
      values.withUnsafeBufferPointer { values in
        stride(from: 0, to: keys.count, by: Self.maxLeafWidth).map { start in
          let range = start..<min(start + Self.maxLeafWidth, keys.count)
          return Node.make(
            isLeaf: true, keys: UnsafeBufferPointer(rebasing: keys[range]),
            entries: UnsafeBufferPointer(rebasing: values[range]))
        }
      }
    }
    while level.count > 1 {
      level = level.withUnsafeBufferPointer { level in
        stride(from: 0, to: level.count, by: width).map { start in
          let children = UnsafeBufferPointer(rebasing: level[start..<min(start + width, level.count)])
          let separators = children.map { $0.key(at: 0) }
          return separators.withUnsafeBufferPointer { Node.make(isLeaf: false, keys: $0, entries: children) }
        }
      }
    }
    root = level[0]
    count = keys.count
  }

  @inlinable var isEmpty: Bool { count == 0 }

  // MARK: Reading

  @inlinable subscript(key: Key) -> Value? {
    guard var node = root else { return nil }
    while !node.isLeaf { node = node.child(at: node.childIndex(key)) }
    guard let index = node.index(of: key) else { return nil }
    return node.value(at: index)
  }

  /// Whether `key` is in the tree (its value is not copied).
  @inlinable func contains(_ key: Key) -> Bool {
    guard let root else { return false }
    return Self.find(key, under: root)
  }

  /// Calls `body` with every entry, in key order.
  @inlinable func forEachEntry(_ body: (Key, Value) throws -> Void) rethrows {
    guard let root else { return }
    try Self.visit(root, body)
  }

  /// Whether `predicate` is true of every value, asked in key order up to the first that fails,
  /// leaf by leaf: without building the array of every value that `values` makes.
  @inlinable func allSatisfy(_ predicate: (Value) throws -> Bool) rethrows -> Bool {
    guard let root else { return true }
    return try Self.allSatisfy(under: root, predicate)
  }

  @inlinable static func allSatisfy(under node: Node, _ predicate: (Value) throws -> Bool) rethrows -> Bool {
    let count = node.keyCount
    if node.isLeaf {
      return try node.withValues { values in
        for index in 0..<count where try !predicate(values[index]) { return false }
        return true
      }
    }
    for index in 0..<count where try !allSatisfy(under: node.child(at: index), predicate) { return false }
    return true
  }

  /// Every value, in key order.
  @inlinable var values: [Value] {
    var result: [Value] = []
    result.reserveCapacity(count)
    forEachEntry { _, value in result.append(value) }
    return result
  }

  /// Every key, in order.
  @inlinable var keys: [Key] {
    var result: [Key] = []
    result.reserveCapacity(count)
    forEachEntry { key, _ in result.append(key) }
    return result
  }

  /// The least key, or nil if the tree is empty: the first of the leftmost leaf.
  @inlinable var firstKey: Key? {
    guard var node = root else { return nil }
    while !node.isLeaf { node = node.child(at: 0) }
    return node.keyCount > 0 ? node.key(at: 0) : nil
  }

  /// The values of those of `keys` the tree holds, in key order; `keys` must be strictly
  /// increasing. One walk visits only the subtrees that hold a wanted key, and a leaf's entries
  /// are matched to the wanted keys by merging the two ordered lists: a grouping cache's answer
  /// (the ids of a group, in order) costs about one step per key instead of a walk from the root
  /// and a search of each node on the way per key.
  @inlinable func values(forSortedKeys keys: [Key]) -> [Value] {
    guard let root, !keys.isEmpty else { return [] }
    var result: [Value] = []
    result.reserveCapacity(keys.count)
    keys.withUnsafeBufferPointer { wanted in
      var next = 0
      Self.collect(under: root, below: nil, wanted, &next, into: &result)
    }
    return result
  }

  /// Appends the values under `node` of the wanted keys from `next` on that are below `bound`
  /// (nil: no bound), moving `next` past them. `wanted[next]` is not below the node's range.
  @inlinable static func collect(
    under node: Node, below bound: Key?, _ wanted: UnsafeBufferPointer<Key>, _ next: inout Int,
    into result: inout [Value]
  ) {
    let count = node.keyCount
    if node.isLeaf {
      var index = 0
      while next < wanted.count {
        let key = wanted[next]
        if let bound, !(key < bound) { return }
        while index < count && node.key(at: index) < key { index += 1 }
        if index < count && node.key(at: index) == key { result.append(node.value(at: index)) }
        next += 1
      }
      return
    }
    while next < wanted.count {
      let key = wanted[next]
      if let bound, !(key < bound) { return }
      // The child whose range holds the key; its range ends at the next separator, or at the
      // node's own bound after the last child.
      let child = node.childIndex(key)
      let childBound = child + 1 < count ? node.key(at: child + 1) : bound
      collect(under: node.child(at: child), below: childBound, wanted, &next, into: &result)
    }
  }

  /// Calls `body` with every value, in key order, read where it lies in its leaf (`allSatisfy`'s
  /// walk): no array of every value is built. Unspecialized code still copies each value to hand
  /// it over.
  @inlinable func forEachValueInPlace(_ body: (Value) throws -> Void) rethrows {
    _ = try allSatisfy { value in
      try body(value)
      return true
    }
  }

  @inlinable static func visit(_ node: Node, _ body: (Key, Value) throws -> Void) rethrows {
    let count = node.keyCount
    if node.isLeaf {
      for index in 0..<count { try body(node.key(at: index), node.value(at: index)) }
    } else {
      for index in 0..<count { try visit(node.child(at: index), body) }
    }
  }

  // MARK: Changing

  /// Sets the value for `key`; returns the value it replaced, if any.
  @inlinable @discardableResult
  mutating func updateValue(_ value: consuming Value, forKey key: Key) -> Value? {
    guard root != nil else {
      root = Node.leaf(keys: CollectionOfOne(key), values: CollectionOfOne(value))
      count = 1
      return nil
    }
    // Moved, never copied, into the tree: through an optional, which `insertInPlace` empties when
    // it stores the value.
    var pending = Optional(value)
    if let outcome = Self.insertInPlace(&pending, forKey: key, in: &root!) {
      if outcome == nil { count += 1 }
      // Stored: `pending` is empty. Ended by a switch, which sees that, rather than destroyed at
      // the end of its scope, which for some value types (a `Note`) calls `Optional`'s generic
      // value witness through the type's metadata.
      switch consume pending {
      case .none: break
      case .some: preconditionFailure("insertInPlace kept the value it stored")
      }
      return outcome
    }
    let (old, split) = Self.insert(pending.take().unsafelyUnwrapped, forKey: key, into: &root!)
    if let split, let left = root {
      root = Node.inner(keys: [left.key(at: 0), split.key(at: 0)], children: [left, split])
    }
    if old == nil { count += 1 }
    return old
  }

  /// Calls `change` with the value for `key` in place and returns what it returns; nil (calling
  /// nothing, copying nothing) if `key` is absent. One walk from the root: the nodes on the path
  /// are copied first where shared, as for `updateValue`. `change` must not change the key the
  /// value is stored under (the tree does not look at values).
  @inlinable
  mutating func modifyValue<Result>(forKey key: Key, _ change: (inout Value) throws -> Result) rethrows -> Result? {
    guard root != nil else { return nil }
    return try Self.modify(key, in: &root!, change)
  }

  /// Removes `key`; returns its value, or nil (changing nothing, copying nothing) if absent.
  @inlinable @discardableResult
  mutating func removeValue(forKey key: Key) -> Value? {
    guard root != nil else { return nil }
    if let outcome = Self.removeInPlace(key, from: &root!) {
      if outcome != nil { count -= 1 }
      return outcome
    }
    guard let old = Self.remove(key, from: &root!) else { return nil }
    count -= 1
    while let node = root, !node.isLeaf, node.keyCount <= 1 {
      root = node.keyCount == 1 ? node.child(at: 0) : nil
    }
    if root?.keyCount == 0 { root = nil }
    return old
  }

  /// `updateValue`'s usual case, in one loop down the path as `modify` walks it: every node on the
  /// path uniquely referenced and the leaf with room for a new key (or holding the key already).
  /// Moves the value out of `value` into the leaf and returns the replaced value, or `.some(nil)`
  /// for a new key; returns nil, having changed nothing, when a node on the path is shared or the
  /// leaf must split or grow: `insert`'s recursion does those (about one new key in eight in a
  /// growing store, as leaves split).
  @inlinable static func insertInPlace(_ value: inout Value?, forKey key: Key, in root: inout Node) -> Value?? {
    withUnsafeMutablePointer(to: &root) { rootSlot in
      guard case (let fields, let keys, let count, let index)? = uniqueLeaf(for: key, under: rootSlot) else {
        return nil
      }
      let values = Node.values(after: keys, fields)
      if index < count && keys[index] == key {
        let old = (values + index).move()
        (values + index).initialize(to: value.take().unsafelyUnwrapped)
        return .some(old)
      }
      guard count < maxLeafWidth && count < Int(fields.pointee.slots) else { return nil }
      Node.checkOrder(of: key, in: keys, count: count, at: index)
      (keys + index + 1).moveInitialize(from: keys + index, count: count - index)
      (keys + index).initialize(to: key)
      (values + index + 1).moveInitialize(from: values + index, count: count - index)
      (values + index).initialize(to: value.take().unsafelyUnwrapped)
      fields.pointee.count = count + 1
      return .some(nil)
    }
  }

  /// The leaf where `key` belongs, for `insertInPlace` and `removeInPlace`: one loop down the path
  /// from the reference `rootSlot` points at, as `modify` walks it. Returns the leaf's header and
  /// keys, how many keys it holds and `key`'s lower bound among them; nil when a node on the path
  /// is shared (then nothing may change in place).
  ///
  /// The caller changes the leaf through these pointers, after the closure that finds them: the
  /// whole change inside that closure was a call of its own, with the leaf retained and released
  /// around it. The tree holds the leaf meanwhile.
  @inlinable @inline(__always)
  static func uniqueLeaf(for key: Key, under rootSlot: UnsafeMutablePointer<Node>) -> (
    fields: UnsafeMutablePointer<NodeFields>, keys: UnsafeMutablePointer<Key>, count: Int, index: Int
  )? {
    var slot = rootSlot
    while true {
      guard isKnownUniquelyReferenced(&slot.pointee) else { return nil }
      if slot.pointee.isLeaf {
        let (fields, keys) = slot.pointee.withUnsafeMutablePointers { ($0, $1) }
        let count = fields.pointee.count
        return (fields, keys, count, Node.lowerBound(key, in: keys, count: count))
      }
      slot = slot.pointee.childSlot(key)
    }
  }

  @inlinable static func insert(_ value: consuming Value, forKey key: Key, into node: inout Node) -> (Value?, Node?) {
    // Moved, never copied, down to the leaf: through an optional, since a closure cannot consume
    // a parameter.
    var value = Optional(value)
    if !isKnownUniquelyReferenced(&node) {
      // A leaf's copy has room for the key when it is new; an inner node's none, as a split
      // below it is rare (it grows then).
      node = node.copy(room: node.isLeaf && node.index(of: key) == nil ? 1 : 0)
    }
    // `node` itself, not a local copy of it, throughout: a copy would be retained and released
    // around every insert, since `node` may be replaced (grown) while it lives.
    if node.isLeaf {
      let index = node.lowerBound(key)
      if index < node.keyCount && node.key(at: index) == key {
        return node.withValues { values in
          let old = (values + index).move()
          (values + index).initialize(to: value.take().unsafelyUnwrapped)
          return (old, nil)
        }
      }
      node.withUnsafeMutablePointers { fields, stored in
        Node.checkOrder(of: key, in: stored, count: fields.pointee.count, at: index)
      }
      if node.keyCount == node.slots { node = node.grown() }
      node.insert(key, value.take().unsafelyUnwrapped, at: index)
    } else {
      let index = node.childIndex(key)
      let (old, split) = node.withChildren { insert(value.take().unsafelyUnwrapped, forKey: key, into: &$0[index]) }
      guard let split else { return (old, nil) }
      if node.keyCount == node.slots { node = node.grown() }
      node.insert(split.key(at: 0), split, at: index + 1)
    }
    guard node.keyCount > (node.isLeaf ? maxLeafWidth : maxWidth) else { return (nil, nil) }
    return (nil, node.split(at: node.keyCount / 2))
  }

  /// `modifyValue` from the node `root` refers to: a loop down the path, not a recursion. It holds
  /// the address of the reference to the node it is at (`root`'s, then a child's slot in its
  /// parent), so that it can check that node's uniqueness and replace it by a copy in place, and
  /// reads each node through that reference without retaining it. Recursing instead cost about
  /// 110 instructions more per change in calls, saved registers and arguments (replay's updates
  /// walk four levels of a 40,000-note store).
  ///
  /// A child's slot is used after the closure that computed its address returns: it lies in the
  /// parent's allocation, which the parent's own slot keeps alive and which the walk changes only
  /// through that child slot.
  @inlinable static func modify<Result>(_ key: Key, in root: inout Node, _ change: (inout Value) throws -> Result)
    rethrows -> Result?
  {
    try withUnsafeMutablePointer(to: &root) { rootSlot in
      var slot = rootSlot
      while true {
        if !isKnownUniquelyReferenced(&slot.pointee) {
          // Copy the rest of the path only if the key is there: an absent key changes nothing.
          guard find(key, under: slot.pointee) else { return nil }
          slot.pointee = slot.pointee.copy()
        }
        // Leaves and inner nodes are searched in closures of their own: one closure holding both
        // searches was not inlined into the loop (a call a level).
        if slot.pointee.isLeaf {
          let (value, found) = slot.pointee.withUnsafeMutablePointers { fields, keys in
            let count = fields.pointee.count
            let index = Node.lowerBound(key, in: keys, count: count)
            let values = Node.values(after: keys, fields)
            return (values + index, index < count && keys[index] == key)
          }
          guard found else { return nil }
          return try change(&value.pointee)
        }
        slot = slot.pointee.childSlot(key)
      }
    }
  }

  /// Whether `key` is in the subtree under `node`.
  @inlinable static func find(_ key: Key, under node: Node) -> Bool {
    if node.isLeaf { return node.index(of: key) != nil }
    // Down through the child slots, as `modify` walks: a local holding each node on the path
    // would be retained and released at every level. `node`, which the caller holds, keeps the
    // path alive.
    var slot = node.childSlot(key)
    while !slot.pointee.isLeaf { slot = slot.pointee.childSlot(key) }
    return slot.pointee.index(of: key) != nil
  }

  /// `removeValue`'s usual case, in one loop down the path as `modify` walks it: every node on the
  /// path uniquely referenced and the leaf keeping at least one key. Returns the removed value, or
  /// `.some(nil)` if `key` is absent; returns nil, having changed nothing, when a node on the path
  /// is shared or the leaf would empty: `remove`'s recursion does those (copying the path, or
  /// dropping the emptied nodes).
  @inlinable static func removeInPlace(_ key: Key, from root: inout Node) -> Value?? {
    withUnsafeMutablePointer(to: &root) { rootSlot in
      guard case (let fields, let keys, let count, let index)? = uniqueLeaf(for: key, under: rootSlot) else {
        return nil
      }
      guard index < count && keys[index] == key else { return .some(nil) }
      guard count > 1 else { return nil }
      let values = Node.values(after: keys, fields)
      (keys + index).deinitialize(count: 1)
      (keys + index).moveInitialize(from: keys + index + 1, count: count - index - 1)
      let old = (values + index).move()
      (values + index).moveInitialize(from: values + index + 1, count: count - index - 1)
      fields.pointee.count = count - 1
      return .some(old)
    }
  }

  /// Removes `key` from under `node` and returns its value; nil (copying nothing) if absent. One
  /// walk from the root, as for `modify`.
  @inlinable static func remove(_ key: Key, from node: inout Node) -> Value? {
    if !isKnownUniquelyReferenced(&node) {
      guard find(key, under: node) else { return nil }
      node = node.copy()
    }
    let current = node
    if current.isLeaf {
      guard let index = current.index(of: key) else { return nil }
      return current.remove(at: index, as: Value.self)
    }
    let index = current.childIndex(key)
    let (old, emptied) = current.withChildren { children in
      let old = remove(key, from: &children[index])
      return (old, children[index].keyCount == 0)
    }
    if emptied { _ = current.remove(at: index, as: Node.self) }
    return old
  }
}

extension RecordTree: Equatable where Value: Equatable {
  @inlinable static func == (a: RecordTree, b: RecordTree) -> Bool {
    if a.root === b.root { return true }
    guard a.count == b.count else { return false }
    var keys: [Key] = []
    var values: [Value] = []
    keys.reserveCapacity(a.count)
    values.reserveCapacity(a.count)
    a.forEachEntry { key, value in
      keys.append(key)
      values.append(value)
    }
    var index = 0
    var equal = true
    b.forEachEntry { key, value in
      if equal, keys[index] != key || values[index] != value { equal = false }
      index += 1
    }
    return equal
  }
}
