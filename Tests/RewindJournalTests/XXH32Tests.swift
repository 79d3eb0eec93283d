import RewindTestSupport
import Testing

@testable import RewindJournal

/// The published xxHash32 check values, and agreement with liblz4, which checks every XXH32 in
/// the frames the journal builds by hand when it decodes them.
@Test func xxh32MatchesItsCheckValues() {
  #expect(XXH32.hash([]) == 0x02CC_5D05)
  #expect(XXH32.hash(Array("abc".utf8)) == 0x32D1_53FF)
  #expect(XXH32.hash(Array("Nobody inspects the spammish repetition".utf8)) == 0xE229_3B2F)
}

/// Frames of every size (small ones built by hand, stored compressed or raw when they would not
/// shrink or are too short to try; larger ones by liblz4) decode with liblz4's frame decoder,
/// which checks their header, block and content checksums.
@Test(arguments: [1, 15, 16, 17, 185, 255, 256, 2048, 2049, 65_537, 300_000])
func framesOfEverySizeDecode(size: Int) throws {
  var random = SeededGenerator(seed: UInt64(size))
  let compressible = (0..<size).map { UInt8(truncatingIfNeeded: $0 % 7) }
  let noise = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
  let encoder = LZ4FrameEncoder()
  let decoder = LZ4FrameDecoder()
  for content in [compressible, noise] {
    var frame: [UInt8] = [9, 9]  // appended after existing bytes
    let length = try content.withUnsafeBytes { try encoder.compress($0, appendingTo: &frame) }
    #expect(length == frame.count - 2)
    let decoded = try frame[2...].withUnsafeBytes { try decoder.decompress($0, expectedLength: size) }
    #expect(decoded == content)
  }
}

/// A frame whose content checksum is wrong is refused by a decoder that verifies checksums and
/// decoded by one told not to (the journal cursor, which checked the frame's CRC-32C already).
@Test(arguments: [100, 5_000])
func skippingChecksumsDecodesAFrameWithABadContentChecksum(size: Int) throws {
  let content = (0..<size).map { UInt8(truncatingIfNeeded: $0 % 11) }
  var frame: [UInt8] = []
  _ = try content.withUnsafeBytes { try LZ4FrameEncoder().compress($0, appendingTo: &frame) }
  frame[frame.count - 1] ^= 0xFF  // the content checksum is the frame's last 4 bytes
  #expect(throws: (any Error).self) {
    try frame.withUnsafeBytes { try LZ4FrameDecoder().decompress($0, expectedLength: size) }
  }
  let decoded = try frame.withUnsafeBytes { bytes in
    try LZ4FrameDecoder(verifyChecksums: false).decompress(bytes, expectedLength: size) { Array($0) }
  }
  #expect(decoded == content)
}

/// The frames the writer makes: block and content checksums (FLG 0x5C), and content under
/// `rawBelow` bytes stored as a raw block even when it would compress; from `rawBelow` on,
/// compressible content is compressed.
@Test(arguments: [1, 100, LZ4FrameEncoder.rawBelow - 1, LZ4FrameEncoder.rawBelow, 4_000])
func smallContentIsStoredRaw(size: Int) throws {
  let content = [UInt8](repeating: 7, count: size)  // as compressible as content gets
  var frame: [UInt8] = []
  let length = try content.withUnsafeBytes { try LZ4FrameEncoder().compress($0, appendingTo: &frame) }
  #expect(frame[4] == 0x5C, "FLG: version 1, linked blocks, block checksum, content size, content checksum")
  let blockSize = UInt32(frame[15]) | UInt32(frame[16]) << 8 | UInt32(frame[17]) << 16 | UInt32(frame[18]) << 24
  let raw = blockSize & 0x8000_0000 != 0
  let stored = Int(blockSize & 0x7FFF_FFFF)
  #expect(raw == (size < LZ4FrameEncoder.rawBelow))
  #expect(raw ? stored == size : stored < size / 4)
  // header 15, block size 4, block, block checksum 4, end mark 4, content checksum 4
  #expect(length == 15 + 4 + stored + 4 + 4 + 4)
  #expect(Array(frame[(23 + stored)..<(27 + stored)]) == [0, 0, 0, 0], "the end mark follows the block's checksum")
  let decoded = try frame.withUnsafeBytes { try LZ4FrameDecoder().decompress($0, expectedLength: size) }
  #expect(decoded == content)
}
