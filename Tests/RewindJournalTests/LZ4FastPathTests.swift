import RewindTestSupport
import Testing

@testable import RewindJournal

// The decoder's one-block path (`LZ4FrameDecoder.decodeOneBlock`, taken when checksums are
// skipped) against liblz4's frame decoder (`decodeFrame`): on every frame, valid or not, the
// one-block path either declines or decodes exactly what liblz4 decodes, and it declines every
// frame liblz4 refuses.

/// What decoding `frame` into `length` bytes gives: the bytes, or nil for a refusal.
private enum Path { case oneBlock, liblz4, decoder }

private func decoded(_ frame: [UInt8], length: Int, by path: Path) -> [UInt8]? {
  var out = [UInt8](repeating: 0xA5, count: length)
  let decoder = LZ4FrameDecoder(verifyChecksums: false)
  switch path {
  case .oneBlock:
    let taken = frame.withUnsafeBytes { bytes in
      out.withUnsafeMutableBytes { LZ4FrameDecoder.decodeOneBlock(bytes, into: $0) }
    }
    return taken ? out : nil
  case .liblz4:
    let failure = frame.withUnsafeBytes { bytes in out.withUnsafeMutableBytes { decoder.decodeFrame(bytes, into: $0) } }
    return failure == nil ? out : nil
  case .decoder:
    return try? frame.withUnsafeBytes { try decoder.decompress($0, expectedLength: length) { Array($0) } }
  }
}

private func littleEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
  withUnsafeBytes(of: value.littleEndian) { Array($0) }
}

/// A frame of one block built byte by byte: header with `flags` (BD 0x40), the block (`raw`: its
/// size's high bit set), its XXH32 if `flags` has block checksums, end mark, the content's XXH32
/// if `flags` has a content checksum.
private func frame(flags: UInt8, content: [UInt8], block: [UInt8], raw: Bool) -> [UInt8] {
  var bytes = littleEndian(Layout.lz4FrameMagic) + [flags, 0x40] + littleEndian(UInt64(content.count))
  bytes.append(UInt8(truncatingIfNeeded: XXH32.hash(Array(bytes[4..<14])) >> 8))
  bytes += littleEndian(UInt32(block.count) | (raw ? 0x8000_0000 : 0))
  bytes += block
  if flags & 0x10 != 0 { bytes += littleEndian(XXH32.hash(block)) }
  bytes += [0, 0, 0, 0]
  if flags & 0x04 != 0 { bytes += littleEndian(XXH32.hash(content)) }
  return bytes
}

/// `content`'s compressed LZ4 block, taken from the encoder's frame (nil if it stored it raw).
private func compressedBlock(_ content: [UInt8]) throws -> [UInt8]? {
  var encoded: [UInt8] = []
  _ = try content.withUnsafeBytes { try LZ4FrameEncoder().compress($0, appendingTo: &encoded) }
  let size = encoded[15..<19].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
  return size & 0x8000_0000 != 0 ? nil : Array(encoded[19..<19 + Int(size)])
}

private let flagCombinations: [UInt8] = [
  0x5C,  // old frames: linked blocks, block checksum, content size, content checksum
  0x4C,  // without block checksums
  0x7C, 0x6C,  // independent blocks
  0x48,  // no checksums at all
]

/// Content of `size` bytes that compresses (`compressible`) or not.
private func content(size: Int, compressible: Bool) -> [UInt8] {
  var random = SeededGenerator(seed: UInt64(size))
  return compressible ? (0..<size).map { UInt8(truncatingIfNeeded: $0 % 13 &* 7) } : random.bytes(size)
}

/// Every valid frame of one block: compressed or raw, with and without block checksums.
private func validFrames() throws -> [(frame: [UInt8], content: [UInt8])] {
  var frames: [(frame: [UInt8], content: [UInt8])] = []
  for size in [1, 12, 13, 40, 200, 3_000, 65_536] {
    for compressible in [true, false] {
      let bytes = content(size: size, compressible: compressible)
      for flags in flagCombinations {
        frames.append((frame(flags: flags, content: bytes, block: bytes, raw: true), bytes))
        if let block = try compressedBlock(bytes) {
          frames.append((frame(flags: flags, content: bytes, block: block, raw: false), bytes))
        }
      }
      var encoded: [UInt8] = []
      _ = try bytes.withUnsafeBytes { try LZ4FrameEncoder().compress($0, appendingTo: &encoded) }
      frames.append((encoded, bytes))
    }
  }
  return frames
}

/// Valid one-block frames of both flag combinations, raw and compressed, are decoded by the
/// one-block path itself, to the same bytes as liblz4's.
@Test func theOneBlockPathDecodesValidFramesOfEveryKind() throws {
  let frames = try validFrames()
  #expect(frames.count(where: { $0.frame[4] == 0x4C && $0.frame[18] & 0x80 == 0 }) >= 4)  // compressed, no block sums
  #expect(frames.count(where: { $0.frame[4] == 0x5C && $0.frame[18] & 0x80 != 0 }) >= 7)  // raw, block sums
  for (frame, content) in frames {
    for path in [Path.oneBlock, .liblz4, .decoder] {
      let right = decoded(frame, length: content.count, by: path) == content
      #expect(right, "\(path): FLG \(frame[4]), block size \(frame[15..<19]), \(content.count) B")
    }
  }
}

/// Frames liblz4 refuses, each broken in one way: the one-block path declines every one and the
/// decoder throws liblz4's reason.
@Test func theOneBlockPathDeclinesEveryMalformedFrame() throws {
  let bytes = content(size: 300, compressible: true)
  let block = try #require(try compressedBlock(bytes))
  let noise = content(size: 300, compressible: false)
  for flags: UInt8 in [0x5C, 0x4C] {
    let good = frame(flags: flags, content: bytes, block: block, raw: false)
    let raw = frame(flags: flags, content: noise, block: noise, raw: true)
    let checksum = flags & 0x10 != 0 ? 4 : 0
    func with(_ frame: [UInt8], _ change: (inout [UInt8]) -> Void) -> [UInt8] {
      var copy = frame
      change(&copy)
      return copy
    }
    func rehashed(_ frame: [UInt8]) -> [UInt8] {
      with(frame) { $0[14] = UInt8(truncatingIfNeeded: XXH32.hash(Array($0[4..<14])) >> 8) }
    }
    let broken: [(String, [UInt8], Int)] = [
      ("wrong magic", with(good) { $0[0] ^= 1 }, 300),
      ("skippable frame magic", with(good) { $0.replaceSubrange(0..<4, with: littleEndian(UInt32(0x184D_2A50))) }, 300),
      ("version 0", rehashed(with(good) { $0[4] &= 0x3F }), 300),
      ("version 2", rehashed(with(good) { $0[4] = $0[4] & 0x3F | 0x80 }), 300),
      ("reserved FLG bit", rehashed(with(good) { $0[4] |= 0x02 }), 300),
      ("reserved BD bit 7", rehashed(with(good) { $0[5] |= 0x80 }), 300),
      ("reserved BD bits 0-3", rehashed(with(good) { $0[5] |= 0x01 }), 300),
      ("block size ID 3", rehashed(with(good) { $0[5] = 0x30 }), 300),
      ("wrong header checksum", with(good) { $0[14] ^= 0x40 }, 300),
      ("content size larger", rehashed(with(good) { $0[6] &+= 1 }), 300),
      ("content size smaller", rehashed(with(good) { $0[6] &-= 1 }), 300),
      ("content size over the expected length", good, 299),
      ("content size under the expected length", good, 301),
      ("block size beyond the frame", with(good) { $0[15] &+= 9 }, 300),
      ("block size over 64 KiB", with(good) { $0[17] = 0x01 }, 300),
      (
        "raw block short of the content", rehashed(with(with(raw) { $0.removeSubrange(19..<20) }) { $0[15] &-= 1 }), 300
      ),
      ("raw block for a larger content", rehashed(with(raw) { $0[6] &+= 1 }), 301),
      (
        "compressed block cut short",
        with(with(good) { $0.removeSubrange(19 + block.count - 1..<19 + block.count) }) {
          $0[15] &-= 1
        }, 300
      ),
      ("missing end mark", Array(good[..<(19 + block.count + checksum)]), 300),
      ("end mark not zero", with(good) { $0[19 + block.count + checksum] = 1 }, 300),
      ("end mark of a raw block's size bit", with(good) { $0[19 + block.count + checksum + 3] = 0x80 }, 300),
      ("trailing bytes", good + [0], 300),
      ("a second frame after it", good + good, 300),
      ("truncated content checksum", Array(good.dropLast()), 300),
      ("header only", Array(good[..<15]), 300),
      ("empty", [], 300),
      ("compressed block as raw", with(good) { $0[18] |= 0x80 }, 300),
      ("raw block as compressed", with(raw) { $0[18] &= 0x7F }, 300),
    ]
    for (what, frame, length) in broken {
      #expect(decoded(frame, length: length, by: .liblz4) == nil, "liblz4 accepts \(what), FLG \(flags)")
      #expect(decoded(frame, length: length, by: .oneBlock) == nil, "one-block path accepts \(what), FLG \(flags)")
      #expect(throws: LZ4Failure.self, "\(what), FLG \(flags)") {
        try frame.withUnsafeBytes { bytes in
          try LZ4FrameDecoder(verifyChecksums: false).decompress(bytes, expectedLength: length) { _ in () }
        }
      }
    }
  }
}

/// Frames liblz4 decodes that the one-block path leaves to it (no content size, two blocks)
/// still decode through the decoder.
@Test func framesTheOneBlockPathLeavesToLiblz4StillDecode() throws {
  let bytes = content(size: 300, compressible: true)
  let block = try #require(try compressedBlock(bytes))
  var noContentSize = littleEndian(Layout.lz4FrameMagic) + [0x54, 0x40]
  noContentSize.append(UInt8(truncatingIfNeeded: XXH32.hash(Array(noContentSize[4..<6])) >> 8))
  noContentSize += littleEndian(UInt32(block.count)) + block + littleEndian(XXH32.hash(block)) + [0, 0, 0, 0]
  noContentSize += littleEndian(XXH32.hash(bytes))
  var twoBlocks = littleEndian(Layout.lz4FrameMagic) + [0x4C, 0x40] + littleEndian(UInt64(300))
  twoBlocks.append(UInt8(truncatingIfNeeded: XXH32.hash(Array(twoBlocks[4..<14])) >> 8))
  twoBlocks += littleEndian(UInt32(100) | 0x8000_0000) + bytes[..<100]
  twoBlocks += littleEndian(UInt32(200) | 0x8000_0000) + bytes[100...] + [0, 0, 0, 0] + littleEndian(XXH32.hash(bytes))
  for (what, frame) in [("no content size", noContentSize), ("two blocks", twoBlocks)] {
    #expect(decoded(frame, length: 300, by: .oneBlock) == nil, "\(what)")
    let byLiblz4 = decoded(frame, length: 300, by: .liblz4) == bytes
    let byDecoder = decoded(frame, length: 300, by: .decoder) == bytes
    #expect(byLiblz4 && byDecoder, "\(what)")
  }
}

/// Seeded mutations of valid frames (bits flipped, bytes replaced, inserted, removed, cut off or
/// appended, the expected length moved): whenever the one-block path takes a frame, liblz4 takes
/// it too and decodes the same bytes, and the decoder's answer is always liblz4's.
@Test(arguments: [1, 2, 3, 4])
func mutatedFramesGetLiblz4sAnswer(seed: UInt64) async throws {
  try await offThePool {
    var random = SeededGenerator(seed: seed)
    var refused = 0
    var takenByOneBlock = 0
    for (valid, content) in try validFrames() where valid.count < 5_000 {
      for _ in 0..<60 {
        var frame = valid
        var length = content.count
        for _ in 0..<Int.random(in: 1...2, using: &random) {
          let at = Int.random(in: 0..<max(frame.count, 1), using: &random)
          switch Int.random(in: 0..<7, using: &random) {
          case 0 where !frame.isEmpty: frame[at] ^= 1 << UInt8.random(in: 0..<8, using: &random)
          case 1 where !frame.isEmpty: frame[at] = UInt8.random(in: 0...255, using: &random)
          case 2: frame.insert(UInt8.random(in: 0...255, using: &random), at: at)
          case 3 where !frame.isEmpty: frame.remove(at: at)
          case 4: frame.removeLast(Int.random(in: 0...min(frame.count, 8), using: &random))
          case 5: frame += random.bytes(Int.random(in: 1...4, using: &random))
          default: length = max(1, length + Int.random(in: -2...2, using: &random))
          }
        }
        let byLiblz4 = decoded(frame, length: length, by: .liblz4)
        let byOneBlock = decoded(frame, length: length, by: .oneBlock)
        if byLiblz4 == nil { refused += 1 }
        if let byOneBlock {
          takenByOneBlock += 1
          let same = byLiblz4 == byOneBlock
          #expect(same, "one-block path took a frame liblz4 \(byLiblz4 == nil ? "refuses" : "decodes differently")")
        }
        let byDecoder = decoded(frame, length: length, by: .decoder)
        let agree = byDecoder == byLiblz4
        #expect(agree, "the decoder's answer is not liblz4's")
      }
    }
    // Both kinds of mutant occur, so the comparison above has something to compare.
    #expect(refused > 500)
    #expect(takenByOneBlock > 100)
  }
}
