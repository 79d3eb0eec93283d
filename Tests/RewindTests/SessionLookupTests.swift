import Foundation
import Testing

@testable import Rewind

/// `debug`'s `print ID` and `watch` find a record by its id's text (`Store.record(described:)`).
/// They listed the whole store and described each id to do it, at every `print` and after every
/// watched move; ids whose text names one id alone are now found by a tree search (RELIABILITY
/// 372). Each kind of id is found as before, and an absent one is not.
@Suite struct SessionLookupTests {
  struct Tagged: EntityIdentifier {
    var raw: Identifier
    init(_ raw: Identifier) { self.raw = raw }
  }

  /// An entity identifier with a text of its own: found by its text, record by record.
  struct Labelled: EntityIdentifier {
    var raw: Identifier
    init(_ raw: Identifier) { self.raw = raw }
    var description: String { "note-" + raw.description.prefix(8) }
  }

  struct Item<ID: Comparable & Sendable & CustomStringConvertible & Hashable>: StoreRecord {
    var id: ID
    var label: String
  }

  static func store<ID>(_ ids: [ID]) -> Store<Item<ID>> {
    var store = Store<Item<ID>>(name: "items")
    var context = ApplyContext(recording: false)
    for id in ids { store.insert(Item(id: id, label: "\(id)"), context: &context) }
    return store
  }

  static func label(_ found: (any Sendable)?) -> String? {
    (found as? any LabelledItem)?.itemLabel
  }

  @Test func entityIdentifiersAreFoundByTheirText() {
    let ids = (1...40).map { Tagged(Identifier(high: UInt64($0), low: UInt64($0) * 7)) }
    let store = Self.store(ids)
    for id in ids { #expect(Self.label(store.record(described: id.description)) == id.description) }
    #expect(store.record(described: Tagged(Identifier(high: 99, low: 1)).description) == nil)
    #expect(store.record(described: ids[3].description.uppercased()) == nil, "the canonical text only")
    #expect(store.record(described: "settings") == nil)
    #expect(store.record(described: "") == nil)
  }

  @Test func idsWithATextOfTheirOwnAreFoundByIt() {
    let ids = (1...20).map { Labelled(Identifier(high: UInt64($0) << 40, low: 3)) }
    let store = Self.store(ids)
    for id in ids { #expect(Self.label(store.record(described: id.description)) == id.description) }
    #expect(store.record(described: ids[0].raw.description) == nil)
  }

  @Test func stringsAndIntegersAreFoundByTheirText() {
    let strings = Self.store(["a", "b", "settings", "42", "Zürich"])
    for id in ["a", "b", "settings", "42", "Zürich"] { #expect(Self.label(strings.record(described: id)) == id) }
    #expect(strings.record(described: "c") == nil)
    let integers = Self.store([-3, 0, 7, 42, Int.max])
    for id in [-3, 0, 7, 42, Int.max] { #expect(Self.label(integers.record(described: "\(id)")) == "\(id)") }
    for text in ["042", "+7", "8", "x", "", "99999999999999999999"] {
      #expect(integers.record(described: text) == nil, "\(text)")
    }
    let small = Self.store([UInt8(1), 200])
    #expect(Self.label(small.record(described: "200")) == "200")
    #expect(small.record(described: "300") == nil)
  }
}

protocol LabelledItem { var itemLabel: String { get } }
extension SessionLookupTests.Item: LabelledItem { var itemLabel: String { label } }
