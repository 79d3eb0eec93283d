/// Every order of `items` (n! of them): for tests that an outcome does not depend on the order its
/// inputs came in (a `Set`'s, from one process to the next).
package func permutations<T>(_ items: [T]) -> [[T]] {
  guard items.count > 1 else { return [items] }
  return items.indices.flatMap { index in
    var rest = items
    let first = rest.remove(at: index)
    return permutations(rest).map { [first] + $0 }
  }
}
