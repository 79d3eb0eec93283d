/// Looking into a model's state without knowing its store types: the stores it declares (found by
/// reflection over its stored properties, in declaration order), their records, one record by id,
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
  /// store; a value store matches its own name. Nil if no store holds it.
  public static func record<M: Model>(_ id: String, in state: M) -> (store: String, value: any Sendable)? {
    for store in stores(of: state) {
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

  static func stores<M: Model>(of state: M) -> [any ComparableCollection] {
    Mirror(reflecting: state).children.compactMap { $0.value as? any ComparableCollection }
  }
}

/// Tells a value store from a record store without knowing its value type.
protocol ValueStoreMarker {}
extension ValueStore: ValueStoreMarker {}
