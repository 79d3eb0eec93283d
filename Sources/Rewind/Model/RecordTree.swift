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

  /// A node: one allocation holding its header (count, kind, a leaf's values or an inner node's
  /// children) and its keys inline after it, so a lookup's binary search reads the keys from the
  /// node itself instead of following a pointer to an array (one cache miss fewer per level).
  /// Keys `0..<count` are initialized; the capacity is one more than a node may keep, so a full
  /// node can take the entry that makes it split.
  ///
  /// Reached only through `RecordTree`'s methods, which never overlap two accesses to one node,
  /// and only through the buffer's pointers (no dynamic exclusivity checks).
  @usableFromInline
  final class Node: ManagedBuffer<NodeFields, Key> {
    @inlinable static func make(
      isLeaf: Bool, keys: some Collection<Key>, values: [Value], children: [Node]
    ) -> Node {
      let capacity = (isLeaf ? maxLeafWidth : maxWidth) + 1
      precondition(keys.count <= capacity, "node overfilled")
      let buffer = Node.create(minimumCapacity: capacity) { _ in
        NodeFields(count: 0, isLeaf: isLeaf, values: values, children: children)
      }
      let node = unsafeDowncast(buffer, to: Node.self)
      node.withUnsafeMutablePointers { fields, stored in
        var index = 0
        for key in keys {
          (stored + index).initialize(to: key)
          index += 1
        }
        fields.pointee.count = index
      }
      return node
    }

    deinit {
      _ = withUnsafeMutablePointers { fields, stored in stored.deinitialize(count: fields.pointee.count) }
    }

    @inlinable var isLeaf: Bool { withUnsafeMutablePointerToHeader { $0.pointee.isLeaf } }
    @inlinable var keyCount: Int { withUnsafeMutablePointerToHeader { $0.pointee.count } }
    @inlinable func key(at index: Int) -> Key { withUnsafeMutablePointerToElements { $0[index] } }
    /// An inner node's children, parallel to the keys (the separators); empty in a leaf.
    @inlinable var children: [Node] { withUnsafeMutablePointerToHeader { $0.pointee.children } }
    /// A leaf's values, parallel to the keys; empty in an inner node.
    @inlinable var values: [Value] { withUnsafeMutablePointerToHeader { $0.pointee.values } }
    /// The keys, as an array (for copying and splitting, not for lookups).
    @inlinable var keys: [Key] {
      withUnsafeMutablePointers { fields, stored in
        Array(UnsafeBufferPointer(start: stored, count: fields.pointee.count))
      }
    }

    @inlinable func copy() -> Node {
      withUnsafeMutablePointers { fields, stored in
        Node.make(
          isLeaf: fields.pointee.isLeaf, keys: UnsafeBufferPointer(start: stored, count: fields.pointee.count),
          values: fields.pointee.values, children: fields.pointee.children)
      }
    }

    /// The first index whose key is not below `key`.
    @inlinable func lowerBound(_ key: Key) -> Int {
      withUnsafeMutablePointers { fields, stored in
        var low = 0
        var high = fields.pointee.count
        while low < high {
          let middle = (low + high) / 2
          if stored[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low
      }
    }

    /// The index of `key`, or nil if this leaf does not hold it.
    @inlinable func index(of key: Key) -> Int? {
      let index = lowerBound(key)
      return index < keyCount && self.key(at: index) == key ? index : nil
    }

    /// The child of an inner node whose range holds `key`: the last separator at or below it (the
    /// first child when there is none).
    @inlinable func childIndex(_ key: Key) -> Int {
      withUnsafeMutablePointers { fields, stored in
        var low = 1
        var high = fields.pointee.count
        while low < high {
          let middle = (low + high) / 2
          if key < stored[middle] { high = middle } else { low = middle + 1 }
        }
        return low - 1
      }
    }

    @inlinable func insertKey(_ key: Key, at index: Int) {
      withUnsafeMutablePointers { fields, stored in
        let count = fields.pointee.count
        precondition(count <= (fields.pointee.isLeaf ? maxLeafWidth : maxWidth), "node overfilled")
        (stored + index + 1).moveInitialize(from: stored + index, count: count - index)
        (stored + index).initialize(to: key)
        fields.pointee.count = count + 1
      }
    }

    @inlinable func removeKey(at index: Int) {
      withUnsafeMutablePointers { fields, stored in
        let count = fields.pointee.count
        (stored + index).deinitialize(count: 1)
        (stored + index).moveInitialize(from: stored + index + 1, count: count - index - 1)
        fields.pointee.count = count - 1
      }
    }

    /// Moves the entries from `start` on into a new node (the right half of a split).
    @inlinable func split(at start: Int) -> Node {
      withUnsafeMutablePointers { fields, stored in
        let count = fields.pointee.count
        let right = Node.make(
          isLeaf: fields.pointee.isLeaf, keys: UnsafeBufferPointer(start: stored + start, count: count - start),
          values: fields.pointee.isLeaf ? Array(fields.pointee.values[start...]) : [],
          children: fields.pointee.isLeaf ? [] : Array(fields.pointee.children[start...]))
        (stored + start).deinitialize(count: count - start)
        fields.pointee.count = start
        if fields.pointee.isLeaf {
          fields.pointee.values.removeSubrange(start...)
        } else {
          fields.pointee.children.removeSubrange(start...)
        }
        return right
      }
    }
  }

  /// A node's header: its number of keys, its kind, and a leaf's values or an inner node's
  /// children (parallel to the keys).
  @usableFromInline
  struct NodeFields {
    @usableFromInline var count: Int
    @usableFromInline let isLeaf: Bool
    @usableFromInline var values: [Value]
    @usableFromInline var children: [Node]

    @inlinable init(count: Int, isLeaf: Bool, values: [Value], children: [Node]) {
      self.count = count
      self.isLeaf = isLeaf
      self.values = values
      self.children = children
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
    var level = stride(from: 0, to: keys.count, by: Self.maxLeafWidth).map { start in
      let end = min(start + Self.maxLeafWidth, keys.count)
      return Node.make(isLeaf: true, keys: keys[start..<end], values: Array(values[start..<end]), children: [])
    }
    while level.count > 1 {
      level = stride(from: 0, to: level.count, by: width).map { start in
        let children = Array(level[start..<min(start + width, level.count)])
        return Node.make(isLeaf: false, keys: children.map { $0.key(at: 0) }, values: [], children: children)
      }
    }
    root = level[0]
    count = keys.count
  }

  @inlinable var isEmpty: Bool { count == 0 }

  // MARK: Reading

  @inlinable subscript(key: Key) -> Value? {
    guard var node = root else { return nil }
    while !node.isLeaf {
      let index = node.childIndex(key)
      node = node.withUnsafeMutablePointerToHeader { $0.pointee.children[index] }
    }
    guard let index = node.index(of: key) else { return nil }
    return node.withUnsafeMutablePointerToHeader { $0.pointee.values[index] }
  }

  /// Calls `body` with every entry, in key order.
  @inlinable func forEachEntry(_ body: (Key, Value) throws -> Void) rethrows {
    guard let root else { return }
    try Self.visit(root, body)
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

  @inlinable static func visit(_ node: Node, _ body: (Key, Value) throws -> Void) rethrows {
    if node.isLeaf {
      let values = node.values
      for index in 0..<node.keyCount { try body(node.key(at: index), values[index]) }
    } else {
      for child in node.children { try visit(child, body) }
    }
  }

  // MARK: Changing

  /// Sets the value for `key`; returns the value it replaced, if any.
  @inlinable @discardableResult
  mutating func updateValue(_ value: Value, forKey key: Key) -> Value? {
    guard root != nil else {
      root = Node.make(isLeaf: true, keys: CollectionOfOne(key), values: [value], children: [])
      count = 1
      return nil
    }
    let (old, split) = Self.insert(value, forKey: key, into: &root!)
    if let split, let left = root {
      root = Node.make(
        isLeaf: false, keys: [left.key(at: 0), split.key(at: 0)], values: [], children: [left, split])
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
    guard self[key] != nil, root != nil else { return nil }
    let old = Self.remove(key, from: &root!)
    count -= 1
    while let node = root, !node.isLeaf, node.keyCount <= 1 { root = node.children.first }
    if root?.keyCount == 0 { root = nil }
    return old
  }

  @inlinable static func insert(_ value: Value, forKey key: Key, into node: inout Node) -> (Value?, Node?) {
    if !isKnownUniquelyReferenced(&node) { node = node.copy() }
    let current = node
    if current.isLeaf {
      let index = current.lowerBound(key)
      if index < current.keyCount && current.key(at: index) == key {
        return current.withUnsafeMutablePointerToHeader { fields in
          let old = fields.pointee.values[index]
          fields.pointee.values[index] = value
          return (old, nil)
        }
      }
      current.insertKey(key, at: index)
      current.withUnsafeMutablePointerToHeader { $0.pointee.values.insert(value, at: index) }
    } else {
      let index = current.childIndex(key)
      let (old, split) = current.withUnsafeMutablePointerToHeader {
        insert(value, forKey: key, into: &$0.pointee.children[index])
      }
      guard let split else { return (old, nil) }
      current.insertKey(split.key(at: 0), at: index + 1)
      current.withUnsafeMutablePointerToHeader { $0.pointee.children.insert(split, at: index + 1) }
    }
    guard current.keyCount > (current.isLeaf ? maxLeafWidth : maxWidth) else { return (nil, nil) }
    return (nil, current.split(at: current.keyCount / 2))
  }

  @inlinable static func modify<Result>(_ key: Key, in node: inout Node, _ change: (inout Value) throws -> Result)
    rethrows -> Result?
  {
    if !isKnownUniquelyReferenced(&node) {
      // Copy the rest of the path only if the key is there: an absent key changes nothing.
      guard find(key, under: node) else { return nil }
      node = node.copy()
    }
    let current = node
    if current.isLeaf {
      guard let index = current.index(of: key) else { return nil }
      return try current.withUnsafeMutablePointerToHeader { try change(&$0.pointee.values[index]) }
    }
    let index = current.childIndex(key)
    return try current.withUnsafeMutablePointerToHeader { try modify(key, in: &$0.pointee.children[index], change) }
  }

  /// Whether `key` is in the subtree under `node`.
  @inlinable static func find(_ key: Key, under node: Node) -> Bool {
    var node = node
    while !node.isLeaf { node = node.children[node.childIndex(key)] }
    return node.index(of: key) != nil
  }

  /// Removes `key`, which is present under `node`.
  @inlinable static func remove(_ key: Key, from node: inout Node) -> Value {
    if !isKnownUniquelyReferenced(&node) { node = node.copy() }
    let current = node
    if current.isLeaf {
      let index = current.lowerBound(key)
      current.removeKey(at: index)
      return current.withUnsafeMutablePointerToHeader { $0.pointee.values.remove(at: index) }
    }
    let index = current.childIndex(key)
    return current.withUnsafeMutablePointerToHeader { fields in
      let old = remove(key, from: &fields.pointee.children[index])
      if fields.pointee.children[index].keyCount == 0 {
        fields.pointee.children.remove(at: index)
        current.removeKey(at: index)
      }
      return old
    }
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
