internal import RewindLocking

/// A small, fast, seeded random number generator (SplitMix64). The same seed gives the same
/// numbers on every machine, so workloads, demos and tests built on it are reproducible; what it
/// produces for a command is recorded in events like any other nondeterministic input.
public struct SeededRandom: RandomNumberGenerator, Sendable {
  /// The seed this generator started from (print it when a randomized run fails).
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
}

extension IdentifierSource {
  /// Identifiers drawn from a `SeededRandom`: the same seed gives the same identifiers.
  public static func seeded(_ seed: UInt64) -> IdentifierSource {
    let generator = Lock(SeededRandom(seed: seed))
    return IdentifierSource {
      generator.withLock { Identifier(high: $0.next(), low: $0.next()) }
    }
  }
}
