import Foundation
import Testing

@testable import Rewind

/// `RecordTree` against a `Dictionary` doing the same thing, with copies kept along the way that
/// must not change when the tree they were copied from does.
@Suite struct RecordTreeTests {
  /// Random inserts, replacements, changes in place and removals (also of absent keys) over a key range small enough
  /// for every kind to happen often; every 500 steps a copy is kept, and at the end every kept copy
  /// must still hold exactly what the dictionary held at that moment.
  @Test(arguments: [1, 2, 3])
  func behavesLikeADictionaryAndCopiesStayPut(seed: UInt64) {
    var random = SeededRandom(seed: seed)
    var tree = RecordTree<Int, String>()
    var model: [Int: String] = [:]
    var kept: [(RecordTree<Int, String>, [Int: String])] = []
    for step in 0..<20_000 {
      let key = Int(random.next() % 3_000)
      switch random.next() % 10 {
      case 0..<5:
        let value = "\(key)@\(step)"
        #expect(tree.updateValue(value, forKey: key) == model.updateValue(value, forKey: key))
      case 5..<7:
        let changed = tree.modifyValue(forKey: key) { value -> String in
          value += "+\(step)"
          return value
        }
        model[key]? += "+\(step)"
        #expect(changed == model[key])
      default:
        #expect(tree.removeValue(forKey: key) == model.removeValue(forKey: key))
      }
      #expect(tree.count == model.count)
      if step % 500 == 0 { kept.append((tree, model)) }
    }
    for (copy, expected) in kept + [(tree, model)] {
      #expect(copy.count == expected.count)
      #expect(copy.keys == expected.keys.sorted())
      #expect(copy.values == expected.keys.sorted().map { expected[$0]! })
      for key in stride(from: -1, through: 3_001, by: 7) { #expect(copy[key] == expected[key]) }
    }
  }

  @Test func removingEverythingLeavesAnEmptyTreeThatStillWorks() {
    var tree = RecordTree<Int, Int>()
    for key in 0..<1_000 { tree.updateValue(key * 2, forKey: key) }
    let full = tree
    for key in (0..<1_000).reversed() { #expect(tree.removeValue(forKey: key) == key * 2) }
    #expect(tree.isEmpty)
    #expect(tree.root == nil)
    #expect(tree[5] == nil)
    #expect(tree.removeValue(forKey: 5) == nil)
    tree.updateValue(7, forKey: 3)
    #expect(tree.keys == [3])
    #expect(full.count == 1_000)
    #expect(full[999] == 1_998)
  }

  @Test func equalityComparesContentsNotShape() {
    var ascending = RecordTree<Int, Int>()
    var descending = RecordTree<Int, Int>()
    for key in 0..<500 { ascending.updateValue(key, forKey: key) }
    for key in (0..<500).reversed() { descending.updateValue(key, forKey: key) }
    #expect(ascending == descending)
    descending.updateValue(-1, forKey: 250)
    #expect(ascending != descending)
    descending.updateValue(250, forKey: 250)
    descending.removeValue(forKey: 499)
    #expect(ascending != descending)
  }

  /// A change after a copy copies the path to the changed key, not the other nodes.
  @Test func aChangeAfterACopySharesTheUntouchedNodes() throws {
    var tree = RecordTree<Int, Int>()
    for key in 0..<10_000 { tree.updateValue(key, forKey: key) }
    let before = tree
    tree.updateValue(-5, forKey: 5)
    let old = try #require(before.root)
    let new = try #require(tree.root)
    #expect(old !== new)
    #expect(old.children.count == new.children.count)
    #expect(old.children.first !== new.children.first)
    #expect(old.children.last === new.children.last)
    #expect(before[5] == 5)
    #expect(tree[5] == -5)
  }

  @Test func aChangeInPlaceAfterACopyCopiesOnlyItsPath() throws {
    var tree = RecordTree<Int, Int>()
    for key in 0..<10_000 { tree.updateValue(key, forKey: key) }
    let before = tree
    #expect(tree.modifyValue(forKey: 20_000) { $0 += 1 } == nil)
    #expect(tree.root === before.root)  // an absent key copies nothing
    tree.modifyValue(forKey: 5) { $0 = -5 }
    let old = try #require(before.root)
    let new = try #require(tree.root)
    #expect(old !== new)
    #expect(old.children.first !== new.children.first)
    #expect(old.children.last === new.children.last)
    #expect(before[5] == 5)
    #expect(tree[5] == -5)
  }
}

/// Decoding a `Store` builds its tree and grouping cache in one pass from records in id order, and
/// still accepts any order of distinct ids.
@Suite struct StoreDecodingTests {
  struct Item: StoreRecord, Codable {
    var id: Int
    var groups: [String]
    var groupKeys: [String] { groups }
  }

  func store(_ items: [Item]) -> Store<Item> {
    var store = Store<Item>(name: "items")
    var context = ApplyContext(recording: false)
    for item in items { store.insert(item, context: &context) }
    return store
  }

  @Test func decodingInIDOrderRebuildsRecordsAndCache() throws {
    var random = SeededRandom(seed: 7)
    let names = ["a", "b", "c", "d"]
    let items = (0..<2_000).map { id in
      Item(id: id * 3, groups: (0..<Int(random.next() % 3)).map { _ in names[Int(random.next() % 4)] })
    }
    let original = store(items.shuffled(using: &random))
    let decoded = try JSONDecoder().decode(Store<Item>.self, from: JSONEncoder().encode(original))
    #expect(decoded == original)
    #expect(decoded.cacheProblems().isEmpty)
    for name in names { #expect(decoded.records(inGroup: name) == original.records(inGroup: name)) }
    #expect(decoded.groupCounts().map(\.count) == original.groupCounts().map(\.count))
  }

  @Test func decodingAcceptsAnyOrderButNotADuplicateID() throws {
    let shuffled =
      #"{"name":"items","records":[{"id":5,"groups":["x"]},{"id":1,"groups":[]},{"id":3,"groups":["x","x"]}]}"#
    let decoded = try JSONDecoder().decode(Store<Item>.self, from: Data(shuffled.utf8))
    #expect(decoded.all().map(\.id) == [1, 3, 5])
    #expect(decoded.records(inGroup: "x").map(\.id) == [3, 5])
    #expect(decoded.cacheProblems().isEmpty)
    let twice = #"{"name":"items","records":[{"id":1,"groups":[]},{"id":1,"groups":["x"]}]}"#
    #expect(throws: DecodingError.self) { try JSONDecoder().decode(Store<Item>.self, from: Data(twice.utf8)) }
  }
}
