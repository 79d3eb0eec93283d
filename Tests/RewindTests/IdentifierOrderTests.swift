import RewindTestSupport
import Testing

@testable import Rewind

/// `Identifier`'s order is that of `(high, low)`, unsigned, whatever way `<` computes it; a store's
/// tree searches by it.
@Suite struct IdentifierOrderTests {
  private let halves: [UInt64] = [0, 1, 2, 0x7FFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0000, .max - 1, .max]

  @Test func ordersByHighThenLowUnsigned() {
    let ids = halves.flatMap { high in halves.map { Identifier(high: high, low: $0) } }
    for a in ids {
      for b in ids {
        #expect((a < b) == ((a.high, a.low) < (b.high, b.low)), "\(a) < \(b)")
      }
    }
  }

  /// Random identifiers (some sharing a high half) found in a tree as in a dictionary, and listed
  /// in order.
  @Test func aTreeOfIdentifiersFindsEachAndListsThemInOrder() {
    var random = SeededRandom(seed: 7)
    var tree = RecordTree<Identifier, Int>()
    var model: [Identifier: Int] = [:]
    for step in 0..<5_000 {
      let id = Identifier(high: random.next() % 4 == 0 ? 42 : random.next(), low: random.next())
      tree.updateValue(step, forKey: id)
      model[id] = step
    }
    #expect(tree.keys == model.keys.sorted { ($0.high, $0.low) < ($1.high, $1.low) })
    for (id, value) in model { #expect(tree[id] == value) }
    #expect(tree[Identifier(high: 42, low: 0)] == model[Identifier(high: 42, low: 0)])
  }
}
