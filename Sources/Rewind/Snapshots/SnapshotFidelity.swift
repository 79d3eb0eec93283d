/// Whether a state's snapshot gives the state back. A snapshot holds the model's `Codable` form,
/// and a hand-written form (a `SnapshotModel` declared in another file than its stores) can leave
/// a stored property out: a manager or a seek started from such a snapshot would hold another
/// state than replay builds, and nothing would say so (the digest covers only what is encoded).
/// `SnapshotStore.write` reads each state back before writing it, and refuses one that differs.
enum SnapshotFidelity {
  /// The stored properties of `state` that `decoded`, read back from its encoding, does not hold
  /// as they were; empty when the encoding lost nothing.
  ///
  /// Compared with `==`, which a NaN fails (it is unequal to itself, encoded or not), so a state
  /// that compares unequal is looked at property by property: a store by its canonical encoding
  /// (its records' `Codable` forms), any other property by `==`, then by its reflection (where a
  /// NaN reads as `nan` on both sides). A property that then still differs is lost.
  static func lostProperties<M: Model>(_ state: M, _ decoded: M) -> [String] {
    if state == decoded { return [] }
    let read = Array(Mirror(reflecting: decoded).children)
    var lost: [String] = []
    for (index, child) in Mirror(reflecting: state).children.enumerated() {
      guard index < read.count else {
        lost.append(child.label ?? "#\(index)")
        continue
      }
      if !alike(child.value, read[index].value) { lost.append(child.label ?? "#\(index)") }
    }
    // Unequal, yet alike property by property: a NaN's doing.
    return lost
  }

  private static func alike(_ a: Any, _ b: Any) -> Bool {
    if a is any ComparableCollection, let a = a as? any Encodable, let b = b as? any Encodable {
      return (try? CanonicalEncoding.encode(a)) == (try? CanonicalEncoding.encode(b))
    }
    if let a = a as? any Equatable, equal(a, b) { return true }
    return String(reflecting: a) == String(reflecting: b)
  }

  private static func equal<T: Equatable>(_ a: T, _ b: Any) -> Bool { (b as? T) == a }
}
