import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

@Suite struct CRC32CTests {
  /// The two ways of computing it that this CPU can run: the table always, the instruction where
  /// the CPU has it.
  static let implementations: [Implementation] =
    [Implementation(name: "table", checksum: CRC32C.tableChecksum)]
    + (CRC32C.usesHardware ? [Implementation(name: "hardware", checksum: CRC32C.hardwareChecksum)] : [])

  struct Implementation: CustomTestStringConvertible, Sendable {
    let name: String
    let checksum: @Sendable (UnsafeRawBufferPointer, UInt32) -> UInt32
    var testDescription: String { name }

    func callAsFunction(_ bytes: some Collection<UInt8>, continuing previous: UInt32 = 0) -> UInt32 {
      Array(bytes).withUnsafeBytes { checksum($0, previous) }
    }
  }

  @Test(arguments: implementations) func knownCheckValue(crc: Implementation) {
    #expect(crc(Array("123456789".utf8)) == 0xE306_9283)
    #expect(crc([UInt8]()) == 0)
    #expect(crc([UInt8](), continuing: 0x1234_5678) == 0x1234_5678)
  }

  @Test(arguments: implementations) func iSCSIVectors(crc: Implementation) {
    // RFC 3720 appendix B.4.
    #expect(crc([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
    #expect(crc([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
    #expect(crc((0..<32).map { UInt8($0) }) == 0x46DD_794E)
    #expect(crc((0..<32).map { UInt8(31 - $0) }) == 0x113F_DB5C)
    // An iSCSI read command PDU (48 bytes).
    let read: [UInt8] = [
      0x01, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
      0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ]
    #expect(crc(read) == 0xD9963A56)
  }

  @Test(arguments: implementations, [0, 1, 7, 8, 9, 63, 64, 1000])
  func continuingEqualsWhole(crc: Implementation, split: Int) {
    let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    #expect(crc(bytes[split...], continuing: crc(bytes[..<split])) == crc(bytes))
  }

  /// Every length through each path (16, 8, 4, 2 bytes and one at a time), against the bitwise
  /// definition.
  @Test(arguments: implementations) func everyLengthMatchesBitwise(crc: Implementation) {
    func bitwise(_ bytes: ArraySlice<UInt8>) -> UInt32 {
      var crc: UInt32 = 0xFFFF_FFFF
      for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
      }
      return ~crc
    }
    let bytes = (0..<100).map { UInt8(truncatingIfNeeded: $0 &* 73 &+ 19) }
    for length in 0...bytes.count {
      #expect(crc(bytes[..<length]) == bitwise(bytes[..<length]), "length \(length)")
    }
  }

  /// The instruction and the table agree on random bytes of random lengths at every misalignment,
  /// whole and in pieces.
  @Test(.enabled(if: CRC32C.usesHardware, "this CPU has no CRC-32C instruction"))
  func hardwareMatchesTable() {
    var random = SeededGenerator(seed: 0xC3C3_2C)
    let buffer = random.bytes(4096 + 16)
    buffer.withUnsafeBytes { all in
      for round in 0..<2_000 {
        let start = Int.random(in: 0..<16, using: &random)
        let count = Int.random(in: 0...4096, using: &random)
        let bytes = UnsafeRawBufferPointer(rebasing: all[start..<start + count])
        let previous = round.isMultiple(of: 2) ? 0 : UInt32.random(in: 0...UInt32.max, using: &random)
        let table = CRC32C.tableChecksum(bytes, continuing: previous)
        #expect(
          CRC32C.hardwareChecksum(bytes, continuing: previous) == table,
          "seed \(random.seed), round \(round), start \(start), count \(count)")
        // The same bytes in up to five random pieces.
        var cuts = (0..<Int.random(in: 0...4, using: &random)).map { _ in Int.random(in: 0...count, using: &random) }
        cuts = [0] + cuts.sorted() + [count]
        var pieces = previous
        for (from, to) in zip(cuts, cuts.dropFirst()) {
          pieces = CRC32C.hardwareChecksum(UnsafeRawBufferPointer(rebasing: bytes[from..<to]), continuing: pieces)
        }
        #expect(pieces == table, "seed \(random.seed), round \(round), cuts \(cuts)")
      }
    }
  }

  /// The instruction is used exactly where the CPU says it has it (Linux reports its flags in
  /// /proc/cpuinfo: `sse4_2` on x86-64, `crc32` on AArch64).
  @Test func hardwareIsUsedWhereTheCPUHasIt() throws {
    #if os(Linux) && (arch(x86_64) || arch(arm64))
      let cpuinfo = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
      #if arch(x86_64)
        let wanted = "sse4_2"
      #else
        let wanted = "crc32"
      #endif
      let flags = cpuinfo.split(separator: "\n").first { $0.hasPrefix("flags") || $0.hasPrefix("Features") }
      let has = flags.map { $0.split(separator: " ").contains(Substring(wanted)) } ?? false
      #expect(CRC32C.usesHardware == has, "/proc/cpuinfo \(has ? "lists" : "does not list") \(wanted)")
    #endif
  }
}
