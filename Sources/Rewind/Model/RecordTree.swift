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

  /// A node. Its properties skip the runtime's exclusivity checks (6% of replay's instructions):
  /// they are only reached through `RecordTree`'s methods, which never overlap two accesses.
  @usableFromInline
  final class Node {
    @exclusivity(unchecked) @usableFromInline var keys: [Key]
    /// A leaf's values, parallel to `keys`; empty in an inner node.
    @exclusivity(unchecked) @usableFromInline var values: [Value]
    /// An inner node's children, parallel to `keys` (the separators); empty in a leaf.
    @exclusivity(unchecked) @usableFromInline var children: [Node]
    @usableFromInline let isLeaf: Bool

    @inlinable init(keys: [Key], values: [Value], children: [Node], isLeaf: Bool) {
      self.keys = keys
      self.values = values
      self.children = children
      self.isLeaf = isLeaf
    }

    @inlinable func copy() -> Node { Node(keys: keys, values: values, children: children, isLeaf: isLeaf) }
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
      return Node(keys: Array(keys[start..<end]), values: Array(values[start..<end]), children: [], isLeaf: true)
    }
    while level.count > 1 {
      level = stride(from: 0, to: level.count, by: width).map { start in
        let children = Array(level[start..<min(start + width, level.count)])
        return Node(keys: children.map { $0.keys[0] }, values: [], children: children, isLeaf: false)
      }
    }
    root = level[0]
    count = keys.count
  }

  @inlinable var isEmpty: Bool { count == 0 }

  // MARK: Reading

  @inlinable subscript(key: Key) -> Value? {
    guard var node = root else { return nil }
    while !node.isLeaf { node = node.children[Self.childIndex(node.keys, key)] }
    let index = Self.lowerBound(node.keys, key)
    return index < node.keys.count && node.keys[index] == key ? node.values[index] : nil
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
      for index in node.keys.indices { try body(node.keys[index], node.values[index]) }
    } else {
      for child in node.children { try visit(child, body) }
    }
  }

  // MARK: Changing

  /// Sets the value for `key`; returns the value it replaced, if any.
  @inlinable @discardableResult
  mutating func updateValue(_ value: Value, forKey key: Key) -> Value? {
    guard root != nil else {
      root = Node(keys: [key], values: [value], children: [], isLeaf: true)
      count = 1
      return nil
    }
    let (old, split) = Self.insert(value, forKey: key, into: &root!)
    if let split, let left = root {
      root = Node(keys: [left.keys[0], split.keys[0]], values: [], children: [left, split], isLeaf: false)
    }
    if old == nil { count += 1 }
    return old
  }

  /// Removes `key`; returns its value, or nil (changing nothing, copying nothing) if absent.
  @inlinable @discardableResult
  mutating func removeValue(forKey key: Key) -> Value? {
    guard self[key] != nil, root != nil else { return nil }
    let old = Self.remove(key, from: &root!)
    count -= 1
    while let node = root, !node.isLeaf, node.children.count <= 1 { root = node.children.first }
    if root?.keys.isEmpty == true { root = nil }
    return old
  }

  @inlinable static func insert(_ value: Value, forKey key: Key, into node: inout Node) -> (Value?, Node?) {
    if !isKnownUniquelyReferenced(&node) { node = node.copy() }
    if node.isLeaf {
      let index = lowerBound(node.keys, key)
      if index < node.keys.count && node.keys[index] == key {
        let old = node.values[index]
        node.values[index] = value
        return (old, nil)
      }
      node.keys.insert(key, at: index)
      node.values.insert(value, at: index)
    } else {
      let index = childIndex(node.keys, key)
      let (old, split) = insert(value, forKey: key, into: &node.children[index])
      guard let split else { return (old, nil) }
      node.keys.insert(split.keys[0], at: index + 1)
      node.children.insert(split, at: index + 1)
    }
    guard node.keys.count > (node.isLeaf ? maxLeafWidth : maxWidth) else { return (nil, nil) }
    let half = node.keys.count / 2
    let right = Node(
      keys: Array(node.keys[half...]), values: node.isLeaf ? Array(node.values[half...]) : [],
      children: node.isLeaf ? [] : Array(node.children[half...]), isLeaf: node.isLeaf)
    node.keys.removeSubrange(half...)
    if node.isLeaf { node.values.removeSubrange(half...) } else { node.children.removeSubrange(half...) }
    return (nil, right)
  }

  /// Removes `key`, which is present under `node`.
  @inlinable static func remove(_ key: Key, from node: inout Node) -> Value {
    if !isKnownUniquelyReferenced(&node) { node = node.copy() }
    if node.isLeaf {
      let index = lowerBound(node.keys, key)
      node.keys.remove(at: index)
      return node.values.remove(at: index)
    }
    let index = childIndex(node.keys, key)
    let old = remove(key, from: &node.children[index])
    if node.children[index].keys.isEmpty {
      node.children.remove(at: index)
      node.keys.remove(at: index)
    }
    return old
  }

  // MARK: Searching a node

  /// The first index whose key is not below `key`.
  @inlinable static func lowerBound(_ keys: [Key], _ key: Key) -> Int {
    var low = 0
    var high = keys.count
    while low < high {
      let middle = (low + high) / 2
      if keys[middle] < key { low = middle + 1 } else { high = middle }
    }
    return low
  }

  /// The child of an inner node whose range holds `key`: the last separator at or below it (the
  /// first child when there is none).
  @inlinable static func childIndex(_ keys: [Key], _ key: Key) -> Int {
    var low = 1
    var high = keys.count
    while low < high {
      let middle = (low + high) / 2
      if key < keys[middle] { high = middle } else { low = middle + 1 }
    }
    return low - 1
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
