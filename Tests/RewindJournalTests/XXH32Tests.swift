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

/// The straight-line hash of an LZ4 frame descriptor's 10 bytes is the general hash of them, on
/// seeded random bytes (every bit of each byte reaches the result) and on all zeros and all ones.
@Test func hashOfTenIsTheHashOfTenBytes() {
  var random = SeededGenerator(seed: 10)
  var inputs: [[UInt8]] = [[UInt8](repeating: 0, count: 10), [UInt8](repeating: 0xFF, count: 10)]
  for _ in 0..<1_000 { inputs.append((0..<10).map { _ in UInt8.random(in: 0...255, using: &random) }) }
  for bytes in inputs {
    let straight = bytes.withUnsafeBytes { XXH32.hashOfTen($0.baseAddress!) }
    #expect(straight == XXH32.hash(bytes), "\(bytes)")
  }
}

/// Frames of every size (small ones built by hand, stored compressed or raw when they would not
/// shrink or are too short to try; larger ones by liblz4) decode with liblz4's frame decoder,
/// which checks their header, block and content checksums.
@Test(arguments: [1, 15, 16, 17, 185, 255, 256, 2048, 2049, 65_537, 300_000])
func framesOfEverySizeDecode(size: Int) async throws {
  try await offThePool {
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

/// What a one-block frame holds: its FLG byte, whether the block is raw, and the block's length.
private func blockOf(_ frame: [UInt8]) -> (flags: UInt8, raw: Bool, stored: Int) {
  let size = UInt32(frame[15]) | UInt32(frame[16]) << 8 | UInt32(frame[17]) << 16 | UInt32(frame[18]) << 24
  return (frame[4], size & 0x8000_0000 != 0, Int(size & 0x7FFF_FFFF))
}

/// The frames the writer makes hold block and content checksums (FLG 0x5C, or 0x7C from
/// `LZ4FrameEncoder.freshStateBytes` on) around one block, compressed when that makes it
/// shorter and raw otherwise.
@Test(arguments: [1, 100, SmallContentSampler.limit - 1, SmallContentSampler.limit, 4_000])
func oneBlockFramesHoldBothChecksums(size: Int) throws {
  var random = SeededGenerator(seed: UInt64(size))
  for compressible in [true, false] {
    let content = compressible ? [UInt8](repeating: 7, count: size) : random.bytes(size)
    var frame: [UInt8] = []
    let length = try content.withUnsafeBytes { try LZ4FrameEncoder().compress($0, appendingTo: &frame) }
    let block = blockOf(frame)
    // FLG: version 1, linked or independent blocks, block checksum, content size, content checksum
    #expect(block.flags == (size < LZ4FrameEncoder.freshStateBytes ? 0x5C : 0x7C))
    #expect(block.raw == (!compressible || size < 16), "a fresh encoder tries small content too")
    #expect(block.raw ? block.stored == size : block.stored < size / 4)
    // header 15, block size 4, block, block checksum 4, end mark 4, content checksum 4
    #expect(length == 15 + 4 + block.stored + 4 + 4 + 4)
    #expect(Array(frame[(23 + block.stored)..<(27 + block.stored)]) == [0, 0, 0, 0], "the end mark")
    let decoded = try frame.withUnsafeBytes { try LZ4FrameDecoder().decompress($0, expectedLength: size) }
    #expect(decoded == content)
  }
}

/// After small content that LZ4 cannot shrink, small frames are stored raw without trying, even
/// compressible ones, except one in `sampleEvery`; once a tried one shrinks, small content is
/// compressed again. Large content is always compressed. The same contents make the same bytes.
@Test func smallContentIsStoredRawWhileCompressingItSavesNothing() throws {
  var random = SeededGenerator(seed: 0x5A11)
  var contents = (0..<64).map { _ in random.bytes(200) }  // incompressible
  contents.append([UInt8](repeating: 3, count: SmallContentSampler.limit))  // large: always compressed
  contents += (0..<40).map { i in [UInt8](repeating: UInt8(i), count: 200) }  // compressible
  func frames(_ encoder: LZ4FrameEncoder) throws -> [[UInt8]] {
    try contents.map { content in
      var frame: [UInt8] = []
      _ = try content.withUnsafeBytes { try encoder.compress($0, appendingTo: &frame) }
      let decoded = try frame.withUnsafeBytes { try LZ4FrameDecoder().decompress($0, expectedLength: content.count) }
      #expect(decoded == content)
      return frame
    }
  }
  let made = try frames(LZ4FrameEncoder())
  #expect(try frames(LZ4FrameEncoder()) == made, "the same contents make the same bytes")
  #expect(made[..<64].allSatisfy { blockOf($0).raw })
  #expect(!blockOf(made[64]).raw, "content of `limit` bytes or more is always tried")
  let compressible = made[65...].map { blockOf($0).raw }
  let firstTried = try #require(compressible.firstIndex(of: false))
  #expect(firstTried > 0, "compressible small content right after incompressible is stored raw")
  #expect(firstTried < SmallContentSampler.sampleEvery, "but one in `sampleEvery` is tried")
  #expect(compressible[firstTried...].allSatisfy { !$0 }, "once one shrinks, small content is compressed again")
}

/// The sampler's arithmetic: it keeps trying while tries save 2% or more, stops below, and
/// still tries one in `sampleEvery`.
@Test func smallContentSamplerFollowsWhatTriesSaved() {
  var sampler = SmallContentSampler()
  for _ in 0..<100 {
    let tried = sampler.shouldTry(300)
    #expect(tried)
    sampler.record(content: 300, stored: 290)  // 3.3% saved
  }
  #expect(sampler.savedShare >= SmallContentSampler.worthwhile)
  var tries = 0
  for _ in 0..<(SmallContentSampler.sampleEvery * 20) {
    if sampler.shouldTry(300) {
      tries += 1
      sampler.record(content: 300, stored: 298)  // 0.7% saved
    }
  }
  #expect(sampler.savedShare < SmallContentSampler.worthwhile)
  #expect(tries > 20 && tries < 60, "tried while the average fell, then one in sampleEvery: \(tries)")
  let large = sampler.shouldTry(SmallContentSampler.limit)
  #expect(large, "large content is always tried")
}
