/// A deterministic random number generator (SplitMix64) for reproducible randomized tests.
/// Print `seed` when a test fails so the run can be repeated.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
  public let seed: UInt64
  private var state: UInt64

  public init(seed: UInt64) {
    self.seed = seed
    self.state = seed
  }

  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// `count` random bytes.
  public mutating func bytes(_ count: Int) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
  }

  /// Event-like text bytes: compressible, like JSON-ish records.
  public mutating func eventLikePayload(_ approximateSize: Int) -> [UInt8] {
    let words = ["note", "title", "body", "tag", "created", "retitled", "user", "sync", "id", "\"", ":", ",", "{", "}"]
    var out: [UInt8] = []
    while out.count < approximateSize {
      out.append(contentsOf: Array(words[Int.random(in: 0..<words.count, using: &self)].utf8))
      if Bool.random(using: &self) {
        out.append(contentsOf: Array(String(UInt16.random(in: 0...999, using: &self)).utf8))
      }
    }
    return out
  }
}
