import Rewind

/// Rewind's `SeededRandom` with helpers for tests: random bytes and event-like payloads.
/// Print `seed` when a test fails so the run can be repeated.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
  private var base: SeededRandom

  public init(seed: UInt64) { base = SeededRandom(seed: seed) }

  public var seed: UInt64 { base.seed }

  public mutating func next() -> UInt64 { base.next() }

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
