import Testing

@testable import Rewind

/// What trees sharing nodes hold together (`StorageCensus`), and the room of the nodes a change
/// copies: a copy holds what it holds and the one change it was made for, not a full node's room.
@Suite struct StorageFootprintTests {
  typealias Tree = RecordTree<Int, Int>

  func footprint(_ trees: [Tree]) -> StorageFootprint {
    var census = StorageCensus()
    for tree in trees { tree.addStorage(to: &census) }
    return census.footprint
  }

  /// The nodes from the root to the leaf whose range holds `key`.
  func path(to key: Int, in tree: Tree) throws -> [Tree.Node] {
    var node = try #require(tree.root)
    var path = [node]
    while !node.isLeaf {
      node = node.child(at: node.childIndex(key))
      path.append(node)
    }
    return path
  }

  func fullRoom(_ node: Tree.Node) -> Int {
    Tree.Node.allocationBytes(isLeaf: node.isLeaf, slots: Tree.Node.maxSlots(isLeaf: node.isLeaf))
  }

  /// Even keys 0, 2, …, 39,998.
  func evenTree() -> Tree {
    var tree = Tree()
    for key in 0..<20_000 { tree.updateValue(key, forKey: key * 2) }
    return tree
  }

  @Test func aTreeAloneCountsEveryNodeOnceWithItsRoom() throws {
    let tree = evenTree()
    let alone = footprint([tree])
    var leaves: [Tree.Node] = []
    var inner: [Tree.Node] = []
    var pending = [try #require(tree.root)]
    while let node = pending.popLast() {
      if node.isLeaf { leaves.append(node) } else { inner.append(node) }
      pending += node.children
    }
    #expect(alone.leaves == leaves.count)
    #expect(alone.nodes == leaves.count + inner.count)
    #expect(alone.bytes == (leaves + inner).map(fullRoom).reduce(0, +))
    #expect(leaves.map(\.keyCount).reduce(0, +) == 20_000)
    // A copy shares everything; counting it again adds nothing.
    #expect(footprint([tree, tree, tree]) == alone)
  }

  /// A change after a copy adds the path to the changed key and nothing else, each node of it
  /// with room for exactly what it holds.
  @Test func aChangeInPlaceCopiesItsPathWithoutSpareRoom() throws {
    let before = evenTree()
    var after = before
    #expect(after.modifyValue(forKey: 10_000) { $0 = -1 } != nil)
    let path = try path(to: 10_000, in: after)
    #expect(path.count >= 3)
    for node in path { #expect(node.slots == node.keyCount) }
    let together = footprint([before, after])
    let alone = footprint([before])
    #expect(together.nodes == alone.nodes + path.count)
    #expect(together.leaves == alone.leaves + 1)
    #expect(together.bytes == alone.bytes + path.map(\.allocationBytes).reduce(0, +))
    #expect(path.map(\.allocationBytes).reduce(0, +) < path.map(fullRoom).reduce(0, +))
    #expect(before[10_000] == 5_000)
    #expect(after[10_000] == -1)
  }

  /// A new key in a shared leaf: the leaf's copy has room for that key only; a second new key in
  /// the same leaf (now unique to the tree) grows it to a full node's room, and it takes the keys
  /// that follow in place.
  @Test func anInsertCopiesWithRoomForItsKeyAndGrowsOnTheNext() throws {
    let before = evenTree()
    let first = try #require(try path(to: 10_000, in: before).last).key(at: 0)
    let count = try #require(try path(to: 10_000, in: before).last).keyCount
    #expect(count >= 3)
    var after = before
    after.updateValue(-1, forKey: first + 1)
    // Nodes are looked at through their identities and counts only: holding one would make it
    // shared, and the next change would copy it.
    func leaf(_ key: Int) throws -> (id: ObjectIdentifier, count: Int, slots: Int) {
      let node = try #require(try path(to: key, in: after).last)
      return (ObjectIdentifier(node), node.keyCount, node.slots)
    }
    let copied = try leaf(first + 1)
    #expect(copied.count == count + 1)
    #expect(copied.slots == count + 1)
    for node in try path(to: first + 1, in: after).dropLast() { #expect(node.slots == node.keyCount) }
    after.updateValue(-3, forKey: first + 3)
    let grown = try leaf(first + 3)
    #expect(grown.id != copied.id)
    #expect(grown.slots == Tree.Node.maxSlots(isLeaf: true))
    #expect(grown.count == count + 2)
    after.updateValue(-5, forKey: first + 5)
    #expect(try leaf(first + 5).id == grown.id)
    #expect(after[first + 1] == -1 && after[first + 3] == -3 && after[first + 5] == -5)
    #expect(after[first] == first / 2 && after[first + 2] == (first + 2) / 2)
    #expect(before[first + 1] == nil && before.count == 20_000 && after.count == 20_003)
  }

  /// Inserts into copies until leaves split under copied inner nodes, which grow to take the new
  /// child: every tree kept along the way still holds what it held.
  @Test func splitsUnderCopiedInnerNodesGrowThem() throws {
    var tree = evenTree()
    var kept: [(Tree, Int)] = []
    for round in 0..<40 {
      kept.append((tree, tree.count))
      // 40 new odd keys in one leaf's range: it splits, and its copied parent takes a child.
      let base = 1 + round * 997 * 2
      for offset in 0..<40 { tree.updateValue(-base - offset * 2, forKey: base + offset * 2) }
    }
    for (copy, count) in kept {
      #expect(copy.count == count)
      #expect(copy.keys.count == count)
    }
    #expect(tree.count == 20_000 + 40 * 40)
    #expect(tree[1] == -1 && tree[1 + 39 * 2] == -1 - 39 * 2 && tree[2] == 1)
    #expect(tree.keys == tree.keys.sorted())
  }
}
