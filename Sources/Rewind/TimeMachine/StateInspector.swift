/// Looking into a model's state without knowing its store types: the stores it declares (found by
/// reflection over its stored properties and those of the structs among them, in declaration
/// order), their records, one record by id,
/// and the coherence of their caches. What the `rewind` tool and other generic viewers show.
public enum StateInspector {
  /// Each store of `state` with the number of records it holds (1 for a value store).
  public static func collections<M: Model>(of state: M) -> [(name: String, count: Int)] {
    stores(of: state).map { ($0.name, $0.recordCount) }
  }

  /// The records of the store named `store` in id order (a value store: its value), or nil if
  /// `state` has no such store.
  public static func records<M: Model>(in store: String, of state: M) -> [any Sendable]? {
    stores(of: state).first { $0.name == store }?.recordValues()
  }

  /// The record whose id is `id` (its `description`) and the store holding it, searching every
  /// store; a value store matches its own name. An identifier typed in capitals that no store
  /// holds as typed is looked up again as its lowercase digits. Nil if no store holds it.
  public static func record<M: Model>(_ id: String, in state: M) -> (store: String, value: any Sendable)? {
    located(id, in: state).map { ($0.store, $0.value) }
  }

  /// `record(_:in:)`, with the spelling of `id` the store holds it under (`key`); with `store`,
  /// searching that store alone.
  package static func located<M: Model>(_ id: String, in state: M, store: String? = nil) -> (
    store: String, key: String, value: any Sendable
  )? {
    let stores = stores(of: state).filter { store == nil || $0.name == store }
    for spelling in Identifier.spellings(of: id) {
      if let found = record(spelling, in: stores) { return (found.store, spelling, found.value) }
    }
    return nil
  }

  /// The stores of `state` holding a record whose id is `id` (as `located` spells it), in
  /// declaration order: more than one when records of two stores have ids of one text (an `Int`
  /// 42 and a `String` "42", or two stores numbering their records alike). Value stores are not
  /// counted: they match their own name, which `records(in:of:)` answers first.
  package static func stores<M: Model>(holding id: String, in state: M) -> [String] {
    stores(of: state).filter { store in
      !(store is any ValueStoreMarker) && Identifier.spellings(of: id).contains { store.record(described: $0) != nil }
    }.map(\.name)
  }

  private static func record(_ id: String, in stores: [any ComparableCollection]) -> (
    store: String, value: any Sendable
  )? {
    for store in stores {
      if store is any ValueStoreMarker {
        if store.name == id, let value = store.record(described: "") { return (store.name, value) }
      } else if let value = store.record(described: id) {
        return (store.name, value)
      }
    }
    return nil
  }

  /// Where a store's cache disagrees with a recomputation from its records (empty: coherent).
  public static func cacheProblems<M: Model>(in state: M) -> [String] {
    stores(of: state).flatMap { $0.cacheProblems() }
  }

  /// The canonical JSON of `value` (see `CanonicalJSON`) if it is `Encodable`, else its
  /// description as a JSON string.
  public static func json(_ value: any Sendable) -> String {
    if let encodable = value as? any Encodable, let text = try? CanonicalJSON.render(encodable) { return text }
    var text = ""
    FieldRenderer.appendQuoted(String(describing: value), to: &text)
    return text
  }

  /// What changed between two versions of a record, as two JSON objects (`json(_:)`'s text)
  /// holding only the fields that differ, each in its version's field order: a field present in
  /// one version only appears on that side. Nil when either version is not a JSON object (a value
  /// store's number, a record that is not `Encodable`) or no field differs: show the two whole.
  public static func changedFields(before: any Sendable, after: any Sendable) -> (before: String, after: String)? {
    guard let old = members(ofObject: json(before)), let new = members(ofObject: json(after)) else { return nil }
    let oldValues = Dictionary(old.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
    let newValues = Dictionary(new.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
    let changedBefore = old.filter { newValues[$0.key] != $0.value }
    let changedAfter = new.filter { oldValues[$0.key] != $0.value }
    guard !changedBefore.isEmpty || !changedAfter.isEmpty else { return nil }
    func object(_ members: [(key: String, value: String)]) -> String {
      "{" + members.map { $0.key + ":" + $0.value }.joined(separator: ",") + "}"
    }
    return (object(changedBefore), object(changedAfter))
  }

  /// The members of the JSON object `json` as written: each key (quoted, as in the text) and its
  /// value's text. Nil if `json` is not one object. Reads the compact JSON `json(_:)` writes (no
  /// space between tokens); anything else reads as nil.
  static func members(ofObject json: String) -> [(key: String, value: String)]? {
    let bytes = Array(json.utf8)
    let (quote, backslash) = (UInt8(ascii: "\""), UInt8(ascii: "\\"))
    /// The index just past the string that starts at `start`, or nil if it does not end.
    func endOfString(_ start: Int) -> Int? {
      var index = start + 1
      while index < bytes.count {
        if bytes[index] == quote { return index + 1 }
        index += bytes[index] == backslash ? 2 : 1
      }
      return nil
    }
    func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
    guard bytes.count >= 2, bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else { return nil }
    var members: [(key: String, value: String)] = []
    var index = 1
    if bytes.count == 2 { return members }
    while true {
      guard index < bytes.count, bytes[index] == quote, let keyEnd = endOfString(index), keyEnd < bytes.count,
        bytes[keyEnd] == UInt8(ascii: ":")
      else { return nil }
      let valueStart = keyEnd + 1
      var end = valueStart
      var depth = 0
      scan: while end < bytes.count {
        switch bytes[end] {
        case quote:
          guard let past = endOfString(end) else { return nil }
          end = past
          continue scan
        case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
          if depth == 0 { break scan }
          depth -= 1
        case UInt8(ascii: ","): if depth == 0 { break scan }
        default: break
        }
        end += 1
      }
      guard end < bytes.count, end > valueStart else { return nil }
      members.append((text(index..<keyEnd), text(valueStart..<end)))
      if bytes[end] == UInt8(ascii: "}") { return end == bytes.count - 1 ? members : nil }
      index = end + 1
    }
  }

  /// The name of the store or value store at `path` in `state`.
  /// - Precondition: `path` leads to a `Store` or a `ValueStore`.
  @usableFromInline static func storeName<M: Model>(_ state: M, at path: PartialKeyPath<M>) -> String {
    guard let store = state[keyPath: path] as? any ComparableCollection else {
      preconditionFailure("\(path) leads to no Store or ValueStore of \(M.self)")
    }
    return store.name
  }

  /// The stores and value stores of `state`, in declaration order: its stored properties, and
  /// those of the structs among them (a model may group its stores in a struct of their own), at
  /// any depth. Nothing else is looked into: not a store's own fields, nor collections, enums or
  /// classes.
  static func stores<M: Model>(of state: M) -> [any ComparableCollection] {
    var found: [any ComparableCollection] = []
    collectStores(in: state, into: &found)
    return found
  }

  private static func collectStores(in value: Any, into found: inout [any ComparableCollection]) {
    for child in Mirror(reflecting: value).children {
      if let store = child.value as? any ComparableCollection {
        found.append(store)
      } else if Mirror(reflecting: child.value).displayStyle == .struct {
        collectStores(in: child.value, into: &found)
      }
    }
  }
}

/// Tells a value store from a record store without knowing its value type.
protocol ValueStoreMarker {}
extension ValueStore: ValueStoreMarker {}
