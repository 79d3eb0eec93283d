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
    // Held until the count ends: the census knows a node by its address, which a state made by a
    // lazy sequence and dropped could free for another node.
    let states = Array(states)
    var census = StorageCensus()
    for state in states { census.add(state) }
    return census.footprint
  }

  public var description: String { "\(nodes) nodes (\(leaves) leaves), \(bytes) bytes" }
}

/// Walks trees, counting each node the first time it is reached. A node is known by its address,
/// so the states walked must stay alive until the census ends (a freed node's address can be
/// another's). Walking state after state along a history (`TimeMachine.prepare(memoryLimit:through:)`)
/// costs what each one added: a node reached before is shared, and so is everything under it.
/// Measured there (the benchmark's 1M-event history): the first version, which kept
/// `ObjectIdentifier`s in a `Set` and read each child as a reference, added 60–80% to `prepare`;
/// reading the children's addresses without retaining them (each retain wrote to a shared
/// child's header, far away in memory), then `AddressSet`, bring it to about 25%.
struct StorageCensus {
  /// The addresses of the nodes reached (`UInt(bitPattern: ObjectIdentifier(node))`).
  private var seen = AddressSet()
  private(set) var footprint = StorageFootprint()

  /// Counts the nodes of `state`'s stores that no earlier walk reached: it costs what is new.
  mutating func add<M: Model>(_ state: M) {
    for store in StateInspector.stores(of: state) { store.addStorage(to: &self) }
  }

  /// Whether the node at `address` is reached for the first time (then it is marked reached):
  /// a walk asks before it touches the node, most of which are shared and far apart in memory.
  mutating func enter(_ address: UInt) -> Bool { seen.insert(address) }

  /// `enter` for each of up to 64 addresses; bit `i` of the result is set when `addresses[i]`
  /// was new.
  mutating func enter(_ addresses: UnsafeBufferPointer<UInt>) -> UInt64 { seen.insert(addresses) }

  /// Counts a node `enter` found new.
  mutating func count(bytes: Int, isLeaf: Bool) {
    footprint.nodes += 1
    footprint.bytes += bytes
    if isLeaf { footprint.leaves += 1 }
  }
}

extension RecordTree {
  /// Counts the nodes of this tree that `census` has not reached yet.
  func addStorage(to census: inout StorageCensus) {
    guard let root else { return }
    Self.addStorage(of: root, to: &census)
  }

  private static func addStorage(of node: Node, to census: inout StorageCensus) {
    guard census.enter(UInt(bitPattern: ObjectIdentifier(node))) else { return }
    addStorage(ofNew: node, to: &census)
  }

  /// Counts `node`, which `census` has just entered, and what is new under it. A child is
  /// looked up by its address before it is touched: retaining it to look, as reading it as a
  /// reference does, wrote to every shared child's header, most of a walk's time.
  private static func addStorage(ofNew node: Node, to census: inout StorageCensus) {
    let isLeaf = node.isLeaf
    census.count(bytes: node.allocationBytes, isLeaf: isLeaf)
    guard !isLeaf else { return }
    let count = node.keyCount
    let new = withUnsafeTemporaryAllocation(of: UInt.self, capacity: count) { addresses in
      // The references' bits, their objects' addresses: loaded as integers, nothing is retained.
      node.withChildren { children in
        for index in 0..<count {
          addresses[index] = UInt(bitPattern: UnsafeRawPointer(children + index).load(as: UnsafeRawPointer.self))
        }
      }
      return census.enter(UnsafeBufferPointer(addresses))
    }
    for index in 0..<count where new & (1 << index) != 0 { addStorage(ofNew: node.child(at: index), to: &census) }
  }
}

/// A set of object addresses (never 0), for `StorageCensus`: open addressing with linear
/// probing, at most half full, each address's first slot chosen by its Fibonacci hash. One
/// slot read per look-up where `Set` reads its bitmap and then the slot.
struct AddressSet {
  private var slots = [UInt](repeating: 0, count: 1 << 10)
  /// log2 of the slot count.
  private var bits = 10
  private(set) var count = 0

  /// Adds `address` (not 0: it marks an empty slot); returns whether it was not there yet.
  mutating func insert(_ address: UInt) -> Bool {
    precondition(address != 0, "0 marks an empty slot")
    if (count + 1) * 2 > slots.count { grow() }
    let added = slots.withUnsafeMutableBufferPointer { Self.place(address, in: $0, bits: bits) }
    if added { count += 1 }
    return added
  }

  /// `insert` for each of up to 64 addresses; bit `i` of the result is set when `addresses[i]` was
  /// not there yet. First each address's first slot is read, all of them before any is searched
  /// further: the reads do not wait on each other, so the cache misses of a node's children
  /// overlap instead of coming one after another, and an address found there (most, at most half
  /// full) needs nothing more.
  mutating func insert(_ addresses: UnsafeBufferPointer<UInt>) -> UInt64 {
    precondition(addresses.count <= 64 && !addresses.contains(0), "at most 64 addresses, none 0")
    while (count + addresses.count) * 2 > slots.count { grow() }
    let bits = bits
    var added: UInt64 = 0
    var inserted = 0
    slots.withUnsafeMutableBufferPointer { slots in
      var found: UInt64 = 0
      for (index, address) in addresses.enumerated() where slots[Self.first(address, bits: bits)] == address {
        found |= 1 << index
      }
      for (index, address) in addresses.enumerated() where found & (1 << index) == 0 {
        if Self.place(address, in: slots, bits: bits) {
          added |= 1 << index
          inserted += 1
        }
      }
    }
    count += inserted
    return added
  }

  /// The slot where the search for `address` starts, among `1 << bits`.
  private static func first(_ address: UInt, bits: Int) -> Int {
    Int(truncatingIfNeeded: (UInt64(address) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - bits))
  }

  private static func place(_ address: UInt, in slots: UnsafeMutableBufferPointer<UInt>, bits: Int) -> Bool {
    let mask = slots.count - 1
    var index = first(address, bits: bits)
    while true {
      let held = slots[index]
      if held == address { return false }
      if held == 0 {
        slots[index] = address
        return true
      }
      index = (index + 1) & mask
    }
  }

  private mutating func grow() {
    let old = slots
    bits += 1
    slots = [UInt](repeating: 0, count: 1 << bits)
    slots.withUnsafeMutableBufferPointer { slots in
      for address in old where address != 0 { _ = Self.place(address, in: slots, bits: bits) }
    }
  }
}
