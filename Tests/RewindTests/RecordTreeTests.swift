import Foundation
import RewindTestSupport
import Testing

@testable import Rewind

/// `RecordTree` against a `Dictionary` doing the same thing, with copies kept along the way that
/// must not change when the tree they were copied from does.
@Suite struct RecordTreeTests {
  /// A node's two searches, on every count up to an inner node's width, for keys below, between,
  /// equal to and above the stored ones, against a linear count.
  @Test func nodeSearchesAgreeWithCounting() {
    typealias Node = RecordTree<Int, Void>.Node
    for count in 0...RecordTree<Int, Void>.maxWidth {
      let keys = (0..<count).map { $0 * 10 }
      var stored = keys
      stored.withUnsafeMutableBufferPointer { buffer in
        let base = buffer.baseAddress ?? UnsafeMutablePointer<Int>.allocate(capacity: 1)
        for key in -5...(count * 10 + 5) {
          let below = keys.filter { $0 < key }.count
          #expect(Node.lowerBound(key, in: base, count: count) == below, "lowerBound(\(key)) of \(count)")
          // Separators are keys 1..<count: the answer is how many of them are at or below `key`.
          let separators = keys.dropFirst().filter { $0 <= key }.count
          #expect(Node.childIndex(key, in: base, count: count) == separators, "childIndex(\(key)) of \(count)")
        }
        if buffer.baseAddress == nil { base.deallocate() }
      }
    }
  }

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

  /// `updateValue` inserts in place in one walk when every node on the path is unique and the leaf
  /// has room, and otherwise goes the recursive way (a shared node, a full leaf, a copied leaf
  /// with no room): in increasing, decreasing and alternating order, with a copy kept before each
  /// batch, the tree must hold what a dictionary holds and the copies what they held.
  @Test(arguments: [0, 1, 2])
  func insertsInPlaceOrByTheRecursionAgree(order: Int) {
    var tree = RecordTree<Int, String>()
    var model: [Int: String] = [:]
    var kept: [(RecordTree<Int, String>, [Int: String])] = []
    for batch in 0..<40 {
      kept.append((tree, model))
      for step in 0..<97 {
        let n = batch * 97 + step
        let key = order == 0 ? n : order == 1 ? 10_000 - n : (n % 2 == 0 ? n : 10_000 - n)
        #expect(tree.updateValue("\(key)", forKey: key) == model.updateValue("\(key)", forKey: key))
        if step % 13 == 0 {
          // A replacement of a key already there, often in a leaf a copy shares.
          let old = (key / 2) * 2
          #expect(tree.updateValue("\(old)!", forKey: old) == model.updateValue("\(old)!", forKey: old))
        }
      }
      #expect(tree.count == model.count)
    }
    for (copy, expected) in kept + [(tree, model)] {
      #expect(copy.keys == expected.keys.sorted())
      #expect(copy.values == expected.keys.sorted().map { expected[$0]! })
    }
  }

  /// `removeValue` removes in place in one walk when every node on the path is unique and the
  /// leaf keeps a key, and otherwise goes the recursive way (a shared node, a leaf that empties):
  /// removing every key (and absent ones) in increasing, decreasing and alternating order, with a
  /// copy kept every 100 removals, the tree must hold what a dictionary holds, the copies what
  /// they held, and the tree end empty.
  @Test(arguments: [0, 1, 2])
  func removalsInPlaceOrByTheRecursionAgree(order: Int) {
    var tree = RecordTree<Int, String>()
    var model: [Int: String] = [:]
    for key in 0..<3_000 {
      tree.updateValue("\(key)", forKey: key)
      model[key] = "\(key)"
    }
    var kept: [(RecordTree<Int, String>, [Int: String])] = []
    for n in 0..<3_000 {
      if n % 100 == 0 { kept.append((tree, model)) }
      let key = order == 0 ? n : order == 1 ? 2_999 - n : (n % 2 == 0 ? n / 2 : 2_999 - n / 2)
      #expect(tree.removeValue(forKey: key) == model.removeValue(forKey: key))
      #expect(tree.removeValue(forKey: key) == nil)  // absent now
      #expect(tree.count == model.count)
    }
    #expect(tree.isEmpty && tree.root == nil)
    for (copy, expected) in kept {
      #expect(copy.keys == expected.keys.sorted())
      #expect(copy.values == expected.keys.sorted().map { expected[$0]! })
    }
  }

  /// The merged walk of `values(forSortedKeys:)` against a lookup per key, on trees of one leaf to
  /// three levels (built in bulk, and grown by random inserts and removals, so nodes are of every
  /// fill), for wanted keys that are all, some, none or one of the stored ones, below and above them.
  @Test(arguments: [0, 1, 15, 16, 17, 600, 20_000])
  func valuesForSortedKeysAgreeWithALookupPerKey(size: Int) {
    var random = SeededRandom(seed: UInt64(size) + 1)
    let bulk = RecordTree(sortedKeys: (0..<size).map { $0 * 3 }, values: (0..<size).map { "v\($0 * 3)" })!
    var grown = RecordTree<Int, String>()
    for _ in 0..<(size * 2) {
      let key = Int(random.next() % UInt64(max(size * 3, 1)))
      if random.next() % 4 == 0 { grown.removeValue(forKey: key) } else { grown.updateValue("v\(key)", forKey: key) }
    }
    for tree in [bulk, grown] {
      let all = Array(-2...(size * 3 + 2))
      var wantedLists: [[Int]] = [[], all, tree.keys, [size * 3 + 7], [-1], [size * 3 / 2]]
      for percent in [1, 10, 50, 90] {
        wantedLists.append(all.filter { _ in random.next() % 100 < UInt64(percent) })
      }
      for wanted in wantedLists {
        let expected = wanted.compactMap { tree[$0] }
        #expect(tree.values(forSortedKeys: wanted) == expected, "\(wanted.count) wanted of \(tree.count)")
      }
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

  /// Removing an absent key changes nothing, and copies nothing in a tree that shares its nodes.
  @Test func removingAnAbsentKeyChangesAndCopiesNothing() {
    var tree = RecordTree<Int, Int>()
    for key in stride(from: 0, to: 10_000, by: 2) { tree.updateValue(key, forKey: key) }
    #expect(tree.removeValue(forKey: 7) == nil)
    #expect(tree.removeValue(forKey: 10_001) == nil)
    #expect(tree.count == 5_000)
    #expect(tree.keys == Array(stride(from: 0, to: 10_000, by: 2)))
    let before = tree
    #expect(tree.removeValue(forKey: 5_001) == nil)
    #expect(tree.root === before.root)
    #expect(tree.removeValue(forKey: 5_000) == 5_000)
    #expect(tree.root !== before.root)
    #expect(before[5_000] == 5_000)
    #expect(tree.count == 4_999)
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

/// The nodes hold keys, values and children inline in one allocation, laid out by hand: every
/// value put in must be released exactly once when the last tree holding it goes, whatever the
/// alignment of keys and values.
@Suite struct RecordTreeMemoryTests {
  /// Counts its live instances.
  final class Tracked: Equatable {
    static let live = Locked(0)
    let number: Int
    init(_ number: Int) {
      self.number = number
      Self.live.withLock { $0 += 1 }
    }
    deinit { Self.live.withLock { $0 -= 1 } }
    static func == (a: Tracked, b: Tracked) -> Bool { a.number == b.number }
  }

  /// A one-byte key beside a value aligned to 8 and 24 bytes long: the values start after the
  /// keys at an address rounded up for them.
  struct Wide: Equatable {
    var a: Int
    var b: Int16
    var c: Int
  }

  @Test func everyValueIsReleasedOnceWhenTheTreesGo() {
    var random = SeededRandom(seed: 11)
    do {
      var tree = RecordTree<UInt16, Tracked>()
      var model: [UInt16: Int] = [:]
      var kept: [(RecordTree<UInt16, Tracked>, [UInt16: Int])] = []
      for step in 0..<6_000 {
        let key = UInt16(random.next() % 1_500)
        switch random.next() % 10 {
        case 0..<6:
          #expect(tree.updateValue(Tracked(step), forKey: key)?.number == model.updateValue(step, forKey: key))
        case 6:
          let replaced = tree.modifyValue(forKey: key) { value -> Int in
            let old = value.number
            value = Tracked(-step)
            return old
          }
          #expect(replaced == model[key])
          if model[key] != nil { model[key] = -step }
        default:
          #expect(tree.removeValue(forKey: key)?.number == model.removeValue(forKey: key))
        }
        if step % 1_000 == 0 { kept.append((tree, model)) }
      }
      for (copy, expected) in kept + [(tree, model)] {
        #expect(copy.keys == expected.keys.sorted())
        #expect(copy.values.map(\.number) == expected.keys.sorted().map { expected[$0]! })
      }
      #expect(Tracked.live.withLock { $0 } > 0)
    }
    #expect(Tracked.live.withLock { $0 } == 0)
  }

  @Test func smallKeysWithWideValuesAndVoidValues() {
    var wide = RecordTree<UInt8, Wide>()
    var set = RecordTree<UInt8, Void>()
    for key in UInt8(0)...UInt8(250) where key % 3 != 0 {
      wide.updateValue(Wide(a: Int(key) * 1_000, b: Int16(key), c: -Int(key)), forKey: key)
      set.updateValue((), forKey: key)
    }
    let copy = wide
    for key in stride(from: UInt8(1), through: 250, by: 5) {
      wide.modifyValue(forKey: key) { $0.c += 1 }
      set.removeValue(forKey: key)
    }
    for key in UInt8(0)...UInt8(250) {
      let present = key % 3 != 0
      #expect(copy[key] == (present ? Wide(a: Int(key) * 1_000, b: Int16(key), c: -Int(key)) : nil))
      let changed = present && key % 5 == 1
      #expect(wide[key]?.c == (present ? -Int(key) + (changed ? 1 : 0) : nil))
      #expect((set[key] != nil) == (present && !changed))
    }
    #expect(set.count == set.keys.count)
    let rebuilt = RecordTree<UInt8, Wide>(sortedKeys: copy.keys, values: copy.values)
    #expect(rebuilt == copy)
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

/// A store's `insert`, which moves the record into its tree.
@Suite struct StoreInsertTests {
  typealias Item = StoreDecodingTests.Item

  /// `insert` moves the record into the tree and, when it replaces one, compares the old record
  /// with the one stored: an equal one touches nothing, a changed one its record and the groups
  /// it entered or left.
  @Test func insertTouchesOnlyWhatAReplacementChanged() {
    var store = Store<Item>(name: "items")
    var context = ApplyContext()
    #expect(store.insert(Item(id: 1, groups: ["a", "b"]), context: &context) == nil)
    #expect(context.touched == [.record("items", 1), .group("items", "a"), .group("items", "b")])
    context.touched = []
    #expect(store.insert(Item(id: 1, groups: ["a", "b"]), context: &context)?.groups == ["a", "b"])
    #expect(context.touched.isEmpty)
    #expect(store.insert(Item(id: 1, groups: ["b", "c"]), context: &context)?.groups == ["a", "b"])
    #expect(context.touched == [.record("items", 1), .group("items", "a"), .group("items", "c")])
    #expect(store.find(id: 1)?.groups == ["b", "c"])
    #expect(store.records(inGroup: "a").isEmpty && store.records(inGroup: "c").map(\.id) == [1])
    #expect(store.count == 1 && store.cacheProblems().isEmpty)
  }
}

/// A store's `allSatisfy`, which walks the tree's leaves instead of copying `all()`.
@Suite struct StoreAllSatisfyTests {
  typealias Item = StoreDecodingTests.Item

  /// Over stores of one leaf and of several levels, with the predicate false of no record, of the
  /// first, of one in the middle and of the last: the answer is `all().allSatisfy`'s, and the
  /// records asked are those of `all()`, in id order, up to the first the predicate is false of.
  @Test(arguments: [0, 1, 7, 2_500])
  func agreesWithAllAndStopsAtTheFirstFailure(count: Int) {
    var random = SeededRandom(seed: UInt64(count))
    var store = Store<Item>(name: "items")
    var context = ApplyContext(recording: false)
    for id in (0..<count).map({ $0 * 2 }).shuffled(using: &random) {
      store.insert(Item(id: id, groups: []), context: &context)
    }
    let all = store.all().map(\.id)
    for failing in [nil, all.first, all.dropFirst(all.count / 2).first, all.last] {
      var asked: [Int] = []
      let holds = store.allSatisfy { item in
        asked.append(item.id)
        return item.id != failing
      }
      #expect(
        holds == all.allSatisfy { $0 != failing }, "count \(count), failing at \(failing.map(String.init) ?? "none")")
      let expected = failing.map { id in Array(all.prefix { $0 != id }) + [id] } ?? all
      #expect(asked == expected, "count \(count), failing at \(failing.map(String.init) ?? "none")")
    }
  }
}

/// A store's grouping cache after a record with many group keys changes: the same as a store built
/// afresh from the records, and the change touches exactly the groups entered or left.
@Suite struct StoreRefileTests {
  typealias Item = StoreDecodingTests.Item

  /// Among 1,000 tags, a record's tags go from all of them (some twice) to random subsets (with
  /// duplicates), to a few, and back to many; a second record keeps some of the same tags. After
  /// each change, every group equals that of a fresh store, and the touched keys are the record
  /// and the symmetric difference of the old and new tags.
  @Test func manyGroupKeysAreRefiledAsAFreshStoreFilesThem() throws {
    var random = SeededRandom(seed: 11)
    let tags = (0..<1_000).map { "t\($0)" }
    var items = [
      Item(id: 1, groups: tags + tags.prefix(10)),
      Item(id: 2, groups: (0..<300).map { _ in tags[Int(random.next() % 1_000)] }),
    ]
    var store = Store<Item>(name: "items")
    var context = ApplyContext(recording: false)
    for item in items { store.insert(item, context: &context) }

    let sizes = [600, 1_200, 3, 8, 9, 0, 1_000, 400]
    for size in sizes {
      let groups = (0..<size).map { _ in tags[Int(random.next() % 1_000)] }
      var recording = ApplyContext()
      #expect(store.update(id: 1, context: &recording) { $0.groups = groups })
      let changed = Set(items[0].groups).symmetricDifference(Set(groups))
      var expected: Set<ChangeKey> = Set(changed.map { ChangeKey.group("items", $0) })
      expected.insert(.record("items", 1))
      #expect(recording.touched == expected, "size \(size)")
      items[0].groups = groups

      let fresh = try #require(Store<Item>(name: "items", sortedRecords: items))
      #expect(store == fresh, "size \(size)")
      #expect(store.cacheProblems().isEmpty, "size \(size)")
      let mismatched = tags.filter { store.records(inGroup: $0) != fresh.records(inGroup: $0) }
      #expect(mismatched.isEmpty, "size \(size)")
    }

    var recording = ApplyContext()
    #expect(store.remove(id: 1, context: &recording) != nil)
    var expected: Set<ChangeKey> = Set(Set(items[0].groups).map { ChangeKey.group("items", $0) })
    expected.insert(.record("items", 1))
    #expect(recording.touched == expected)
    let fresh = try #require(Store<Item>(name: "items", sortedRecords: [items[1]]))
    #expect(store == fresh)
    #expect(store.groupCounts().map(\.count) == fresh.groupCounts().map(\.count))
  }
}
