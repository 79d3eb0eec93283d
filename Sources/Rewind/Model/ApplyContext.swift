/// The capability to change a store, and the record of which keys an event touched.
///
/// Only Rewind creates one, while applying a committed (or replayed) event, and it cannot be
/// copied; so a store can change only on the apply path. Code that merely holds a model value
/// (a reader, a query) has no way to get one.
public struct ApplyContext: ~Copyable {
  var touched: Set<ChangeKey> = []

  init() {}

  /// Marks a key as touched by hand (for state that is not in a `Store`).
  public mutating func touch(_ key: ChangeKey) { touched.insert(key) }
}
