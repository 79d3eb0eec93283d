/// The memory a set of model states holds in their stores' trees, each node counted once however
/// many of the states share it: what a time machine's keyframes cost (`TimeMachine.keyframeFootprint`),
/// or any states kept side by side (`StorageFootprint.of(_:)`).
///
/// `bytes` is the nodes' allocations as requested from the allocator (object header, node header,
/// keys, and a leaf's values or an inner node's children), computed from their layout, so the
/// same states give the same figure on every run. Storage the records themselves point to (a
/// string's or an array's buffer) is not counted: copies of a record share it. Nor are the
/// dictionaries of a store's grouping cache (one entry per group key), only the trees they hold.
public struct StorageFootprint: Sendable, Equatable, CustomStringConvertible {
  /// Tree nodes held, leaves and inner nodes.
  public var nodes = 0
  /// Leaves among `nodes`.
  public var leaves = 0
  /// Bytes of those nodes, as allocated.
  public var bytes = 0

  public init() {}

  /// What `states` hold together in their stores' trees, each node counted once.
  public static func of<M: Model>(_ states: some Sequence<M>) -> StorageFootprint {
    var census = StorageCensus()
    for state in states { census.add(state) }
    return census.footprint
  }

  public var description: String { "\(nodes) nodes (\(leaves) leaves), \(bytes) bytes" }
}

/// Walks trees, counting each node the first time it is reached.
struct StorageCensus {
  private var seen = Set<ObjectIdentifier>()
  private(set) var footprint = StorageFootprint()

  /// Counts the nodes of `state`'s stores that no earlier walk reached: it costs what is new.
  mutating func add<M: Model>(_ state: M) {
    for store in StateInspector.stores(of: state) { store.addStorage(to: &self) }
  }

  /// Counts `node` unless an earlier walk reached it; returns whether it is new (a node already
  /// seen is shared, and so is everything under it).
  mutating func visit(_ node: AnyObject, bytes: Int, isLeaf: Bool) -> Bool {
    guard seen.insert(ObjectIdentifier(node)).inserted else { return false }
    footprint.nodes += 1
    footprint.bytes += bytes
    if isLeaf { footprint.leaves += 1 }
    return true
  }
}

extension RecordTree {
  /// Counts the nodes of this tree that `census` has not reached yet.
  func addStorage(to census: inout StorageCensus) {
    guard let root else { return }
    Self.addStorage(of: root, to: &census)
  }

  private static func addStorage(of node: Node, to census: inout StorageCensus) {
    let isLeaf = node.isLeaf
    guard census.visit(node, bytes: node.allocationBytes, isLeaf: isLeaf), !isLeaf else { return }
    for index in 0..<node.keyCount { addStorage(of: node.child(at: index), to: &census) }
  }
}
