/// `entries` sorted by `precedes` in an order that depends on nothing but their values.
///
/// Sorted from the hash order they come in (a `Set`'s, a `Dictionary`'s), entries that `precedes`
/// does not tell apart (neither precedes the other, yet they are distinct) would keep that order,
/// or, where `precedes` is not a strict weak order, land in places that depend on it. `String`'s
/// `<` is none across Unicode forms: `"e\u{301}"` and `"\u{E9}a"` are unequal, yet neither
/// precedes the other. Equal sets would then encode differently in two processes, and keys, tags
/// and lines come out in another order from run to run. So when the result has two neighbours
/// that `precedes` does not tell apart, the entries are sorted again, by `precedes`, stably (as
/// Swift's sort is), from the order of their `bytes` (a field encoding, a string's UTF-8), which
/// any process gives alike. Where `precedes` orders every neighbour (every `Comparable` type that
/// keeps `<`'s contract, and strings in one Unicode form), the result is the plain sort's, and no
/// bytes are asked for.
///
/// `@inlinable`, as the one below: an app's module (the Notebook's tags) gets it specialized for
/// its types. Called across the module boundary unspecialized, each sort ran through witness
/// tables and looked up array metadata at every call: a sync pull of 1,000 notes counted about
/// 2,800 instructions more an event (callgrind, `rewind-bench --child pulls`).
@inlinable
public func sortedAlike<T>(
  _ entries: some Sequence<T>, by precedes: (T, T) -> Bool, bytes: (T) throws -> [UInt8]
) rethrows -> [T] {
  let sorted = entries.sorted(by: precedes)
  guard sorted.indices.dropLast().contains(where: { !precedes(sorted[$0], sorted[$0 + 1]) }) else { return sorted }
  let byBytes = try entries.map { (bytes: try bytes($0), entry: $0) }
    .sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
  return byBytes.map(\.entry).sorted(by: precedes)
}

/// `sortedAlike` by `<`, each entry's bytes its description's UTF-8 (a string's own). What a
/// command should record events in when it takes them from a `Set` or a `Dictionary` of strings
/// (or of types whose `<` compares strings): the same order in every process, so that equal
/// input records the same events, and the journal replays to the same digest.
@inlinable
public func sortedAlike<T: Comparable & CustomStringConvertible>(
  _ entries: some Sequence<T>
) -> [T] {
  sortedAlike(entries, by: <) { Array($0.description.utf8) }
}
