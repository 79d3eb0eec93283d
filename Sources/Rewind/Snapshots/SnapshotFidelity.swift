/// Whether a state's snapshot gives the state back. A snapshot holds the model's `Codable` form,
/// and a hand-written form (a `SnapshotModel` declared in another file than its stores) can leave
/// a stored property out: a manager or a seek started from such a snapshot would hold another
/// state than replay builds, and nothing would say so (the digest covers only what is encoded).
/// `SnapshotStore.write` reads each state back before writing it, and refuses one that differs.
enum SnapshotFidelity {
  /// The stored properties of `state` that `decoded`, read back from its encoding, does not hold
  /// as they were; empty when the encoding lost nothing. For a `state` and `decoded` that
  /// compare unequal (the caller compares them); `again` is a second reading of the same bytes.
  ///
  /// Compared with `==`, which a NaN fails (it is unequal to itself, encoded or not; and a value
  /// compared with itself may not tell, as storage it shares with itself compares equal at once),
  /// so a state that compares unequal is looked at property by property. A property equal in
  /// both is alike. One unequal, whose two readings are equal to each other, changed: `==` is
  /// reliable for it (no NaN), and its own encoding would not tell (a value whose form loses a
  /// field encodes alike before and after it is read back). One whose two readings differ holds a
  /// NaN, and is compared by its canonical encoding (which writes a NaN alike on both sides, and
  /// a dictionary's keys sorted, whatever their hash order); so is one that is not `Equatable`. A
  /// property both holding a NaN and changed by its own lossy form passes: the encodings agree.
  static func lostProperties<M: Model>(_ state: M, _ decoded: M, again: () throws -> M) rethrows -> [String] {
    let read = Array(Mirror(reflecting: decoded).children)
    let reread = Array(Mirror(reflecting: try again()).children)
    var lost: [String] = []
    for (index, child) in Mirror(reflecting: state).children.enumerated() {
      guard index < read.count, index < reread.count, alike(child.value, read[index].value, reread[index].value)
      else {
        lost.append(child.label ?? "#\(index)")
        continue
      }
    }
    return lost
  }

  /// Whether `a` and its reading `b` (read again as `c`) are alike.
  private static func alike(_ a: Any, _ b: Any, _ c: Any) -> Bool {
    if let a = a as? any Equatable {
      if equal(a, b) { return true }
      if let b = b as? any Equatable, equal(b, c) { return false }
    }
    guard let a = a as? any Encodable, let b = b as? any Encodable,
      let encodedA = try? CanonicalEncoding.encode(a), let encodedB = try? CanonicalEncoding.encode(b)
    else { return false }
    return encodedA == encodedB
  }

  private static func equal<T: Equatable>(_ a: T, _ b: Any) -> Bool { (b as? T) == a }
}
