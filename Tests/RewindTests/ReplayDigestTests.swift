import Foundation
import RewindTestSupport
import Testing

@testable import Rewind

@Suite struct ReplayDigestTests {
  private func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
  }

  // NIST FIPS 180-4 examples (and the classic million-'a' vector).
  @Test(arguments: [
    ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    (
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    ),
    (
      "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
    ),
  ])
  func sha256MatchesNISTVectors(message: String, expected: String) {
    for hardware in [false, true] {
      #expect(hex(SHA256.hash(Array(message.utf8), hardware: hardware)) == expected, "hardware: \(hardware)")
    }
  }

  @Test(arguments: [false, true]) func sha256OfAMillionAs(hardware: Bool) {
    var hasher = SHA256(hardware: hardware)
    let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
    for _ in 0..<1000 { hasher.update(chunk) }
    #expect(hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
  }

  @Test(arguments: [false, true]) func sha256IsTheSameWhateverTheChunks(hardware: Bool) {
    var generator = SystemRandomNumberGenerator()
    let bytes = (0..<300).map { _ in UInt8.random(in: 0...255, using: &generator) }
    let whole = SHA256.hash(bytes, hardware: hardware)
    for split in 0...bytes.count {
      var hasher = SHA256(hardware: hardware)
      hasher.update(Array(bytes[..<split]))
      hasher.update(Array(bytes[split...]))
      #expect(hasher.finalize() == whole, "split at \(split)")
    }
  }

  /// The CPU's SHA extensions and the portable rounds agree on every length up to a few blocks
  /// past a page, and on long inputs fed in uneven pieces.
  @Test func sha256HardwareAgreesWithThePortableCode() {
    var generator = SeededGenerator(seed: 2026)
    let bytes = (0..<5_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
    for length in 0...4_200 {
      let message = Array(bytes[..<length])
      #expect(SHA256.hash(message, hardware: true) == SHA256.hash(message, hardware: false), "length \(length)")
    }
    var pieces = (SHA256(hardware: true), SHA256(hardware: false))
    var start = 0
    while start < bytes.count {
      let end = min(bytes.count, start + Int.random(in: 1...700, using: &generator))
      pieces.0.update(Array(bytes[start..<end]))
      pieces.1.update(Array(bytes[start..<end]))
      start = end
    }
    #expect(pieces.0.finalize() == pieces.1.finalize())
  }

  /// Where the kernel lists the SHA extensions, they are used (so the test above compares two
  /// different implementations on this machine, not the portable one with itself).
  @Test func sha256UsesTheExtensionsWhereTheCPUHasThem() throws {
    #if arch(x86_64) && os(Linux)
      let flags = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        .split(separator: "\n").first { $0.hasPrefix("flags") }
      let listed = try #require(flags).split(separator: " ").contains("sha_ni")
      #expect(SHA256.hardwareAvailable == listed)
    #endif
  }

  private struct Forward: Encodable {
    var alpha = 1
    var beta = "b"
    var gamma = [-0.0, 2.5]
  }
  private struct Backward: Encodable {
    var gamma = [0.0, 2.5]
    var beta = "b"
    var alpha = 1
  }

  @Test func canonicalEncodingSortsFieldsAndNormalizesZero() throws {
    let forward = try CanonicalEncoding.encode(Forward())
    #expect(forward == (try CanonicalEncoding.encode(Backward())))
    #expect(try FieldEncoder().encode(Forward()) != FieldEncoder().encode(Backward()))
    // Canonicalizing is idempotent.
    #expect(try CanonicalEncoding.canonicalize(forward) == forward)
  }

  @Test func digestsRoundTripThroughHex() throws {
    let digest = StateDigest(bytes: SHA256.hash(Array("abc".utf8)))
    #expect(StateDigest(hex: digest.description) == digest)
    #expect(StateDigest(hex: "xyz") == nil)
    let other = StateDigest(bytes: SHA256.hash([]))
    #expect(
      StateDigest.combining([("a", digest), ("b", other)]) == StateDigest.combining([("b", other), ("a", digest)]))
    #expect(
      StateDigest.combining([("a", digest), ("b", other)]) != StateDigest.combining([("a", other), ("b", digest)]))
  }
}
