import Testing

@testable import RewindJournal

@Suite struct CRC32CTests {
  @Test func knownCheckValue() {
    #expect(CRC32C.checksum("123456789") == 0xE306_9283)
    #expect(CRC32C.checksum([UInt8]()) == 0)
  }

  @Test func iSCSIVectors() {
    // RFC 3720 appendix B.4.
    #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
    #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
    #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
  }

  @Test(arguments: [0, 1, 7, 8, 9, 63, 64, 1000])
  func continuingEqualsWhole(split: Int) {
    let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    let first = bytes[..<split].withUnsafeBytes { CRC32C.checksum($0) }
    let whole = bytes[split...].withUnsafeBytes { CRC32C.checksum($0, continuing: first) }
    #expect(whole == CRC32C.checksum(bytes))
  }

  /// Every length through the 16-byte, 8-byte and byte-at-a-time paths, against the bitwise
  /// definition.
  @Test func everyLengthMatchesBitwise() {
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
      #expect(CRC32C.checksum(bytes[..<length]) == bitwise(bytes[..<length]), "length \(length)")
    }
  }
}
