/// A key an event touched, for cache invalidation and change notifications: a record of a store,
/// a group of a store's grouping cache, or a single-value store.
public struct ChangeKey: Hashable, Comparable, Sendable, CustomStringConvertible {
  public enum Kind: Int, Sendable, Comparable {
    case record, group, value
    public static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }
  }

  public var store: String
  public var kind: Kind
  public var key: String

  public init(store: String, kind: Kind, key: String) {
    self.store = store
    self.kind = kind
    self.key = key
  }

  public static func record(_ store: String, _ key: some CustomStringConvertible) -> ChangeKey {
    ChangeKey(store: store, kind: .record, key: key.description)
  }
  public static func group(_ store: String, _ key: some CustomStringConvertible) -> ChangeKey {
    ChangeKey(store: store, kind: .group, key: key.description)
  }
  public static func value(_ store: String) -> ChangeKey { ChangeKey(store: store, kind: .value, key: "") }

  public static func < (a: ChangeKey, b: ChangeKey) -> Bool { (a.store, a.kind, a.key) < (b.store, b.kind, b.key) }

  public var description: String {
    switch kind {
    case .record: "\(store)/\(key)"
    case .group: "\(store)#\(key)"
    case .value: store
    }
  }
}
