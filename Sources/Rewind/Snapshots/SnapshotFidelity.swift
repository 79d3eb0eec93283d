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
  /// that compares unequal is looked at property by property: each by `==`, then, when it is
  /// `Encodable`, by its own canonical encoding (which writes a NaN, or an `Optional` holding
  /// `nil`, alike on both sides, and a dictionary's keys sorted, whatever their hash order). A
  /// property that then still differs is lost: the model's form left it out or changed it.
  static func lostProperties<M: Model>(_ state: M, _ decoded: M) -> [String] {
    if state == decoded { return [] }
    let read = Array(Mirror(reflecting: decoded).children)
    var lost: [String] = []
    for (index, child) in Mirror(reflecting: state).children.enumerated() {
      guard index < read.count, alike(child.value, read[index].value) else {
        lost.append(child.label ?? "#\(index)")
        continue
      }
    }
    // Unequal, yet alike property by property: a NaN's doing.
    return lost
  }

  private static func alike(_ a: Any, _ b: Any) -> Bool {
    if let a = a as? any Equatable, equal(a, b) { return true }
    guard let a = a as? any Encodable, let b = b as? any Encodable,
      let encodedA = try? CanonicalEncoding.encode(a), let encodedB = try? CanonicalEncoding.encode(b)
    else { return false }
    return encodedA == encodedB
  }

  private static func equal<T: Equatable>(_ a: T, _ b: Any) -> Bool { (b as? T) == a }
}
