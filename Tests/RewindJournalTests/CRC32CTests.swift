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
}
