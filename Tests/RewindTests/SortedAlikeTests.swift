import RewindTestSupport
import Testing

@testable import Rewind

/// Orders that came from hash order: sorted by `String`'s `<`, which is no strict weak order across
/// Unicode forms (neither `"e\u{301}" < "\u{E9}a"` nor the reverse in Swift 6.3), a set's or a
/// dictionary's elements came out in an order that depended on the order they came in, so on the
/// process's hash seed: a change's keys, `show`'s groups, a store's group counts (the Notebook's
/// tag index) and the events the auto-tagger records.
@Suite struct SortedAlikeTests {
  /// Strings in two Unicode forms (no two equal), and two in one form.
  static let strings = ["e\u{301}", "\u{E9}a", "caf\u{E9}s", "cafe\u{301}", "b", "e"]

  /// In whatever order they come: one order (a plain sort gave four over these 720).
  @Test func stringsComeOutInOneOrderWhateverOrderTheyCameIn() {
    let orders = Set(permutations(Self.strings).map { sortedAlike($0).map { Array($0.unicodeScalars) } })
    #expect(orders.count == 1, "\(orders)")
    let keys = Set(
      permutations(Self.strings).map {
        sortedAlike($0.map { ChangeKey.group("notes", $0) }).map(\.key.utf8).map(Array.init)
      })
    #expect(keys.count == 1, "\(keys)")
  }

  struct Tagged: StoreRecord, Codable {
    var id: Int
    var tags: [String]
    var groupKeys: [String] { tags }
  }

  /// A store's group counts and cache check, with its records inserted in every order (each order
  /// its own dictionary history): one order of groups.
  @Test func groupCountsComeOutInOneOrderWhateverOrderTheRecordsCameIn() {
    let records = Self.strings.enumerated().map { Tagged(id: $0.offset, tags: [$0.element]) }
    var counts: Set<[[Unicode.Scalar]]> = []
    for order in permutations(records) {
      var store = Store<Tagged>(name: "tagged")
      var context = ApplyContext(recording: false)
      for record in order { _ = store.insert(record, context: &context) }
      counts.insert(store.groupCounts().map { Array($0.key.unicodeScalars) })
      #expect(store.cacheProblems().isEmpty)
    }
    #expect(counts.count == 1, "\(counts)")
  }
}
