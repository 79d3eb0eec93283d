import RewindTestSupport
import Testing

@testable import RewindJournal

/// The fast encoder frames its blocks itself; its frames must be the ones liblz4's frame API
/// makes with the same settings (linked blocks under `freshStateBytes`, independent blocks from it),
/// so nothing about them depends on which code made them, nor on how many threads compressed
/// their blocks.
@Suite struct LZ4FrameEncoderTests {
  /// Content of every kind of block: text-like (compresses), noise (stored raw) and both in one
  /// frame, around the 64 KiB block size and over several blocks.
  static func contents(size: Int) -> [[UInt8]] {
    var random = SeededGenerator(seed: UInt64(size) &* 31)
    let words = Array("the journal keeps every event of the notebook in order ".utf8)
    let text = (0..<size).map { words[($0 * 7 + $0 / 13) % words.count] }
    let noise = random.bytes(size)
    let mixed = Array(text.prefix(size / 2) + noise.prefix(size - size / 2))
    return [text, noise, mixed]
  }

  @Test(arguments: [512, 1_023, 1_024, 4_000, 65_535, 65_536, 65_537, 131_072, 200_000, 300_001])
  func framesAreTheFrameAPIsFrames(size: Int) async throws {
    try await offThePool {
      let encoder = LZ4FrameEncoder()
      let library = LZ4FrameEncoder(compressionLevel: 0, usingFrameAPI: true)
      for content in Self.contents(size: size) {
        var ours: [UInt8] = []
        var theirs: [UInt8] = []
        _ = try content.withUnsafeBytes { try encoder.compress($0, appendingTo: &ours) }
        _ = try content.withUnsafeBytes { try library.compress($0, appendingTo: &theirs) }
        #expect(ours.count == theirs.count)
        #expect(ours == theirs, "a frame of \(size) bytes differs from liblz4's")
        #expect(ours[4] == (size >= LZ4FrameEncoder.freshStateBytes ? 0x7C : 0x5C), "FLG: independent from 1 KiB")
        let decoded = try ours.withUnsafeBytes { try LZ4FrameDecoder().decompress($0, expectedLength: size) }
        #expect(decoded == content)
      }
    }
  }

  /// `ensureCount` appends only the zeros a buffer lacks. It appended as many as the buffer held
  /// (to at least double it) at every call that grew it, and `compress(_:appendingTo:)` cuts the
  /// buffer back after each frame, so gathering frames zeroed the whole buffer again for each
  /// one: `rewind compact --frame 4096` took about 80 ms a frame in a debug build (the stress of
  /// snapshots beside live writers, helper-212).
  @Test func aBufferGrowsOnlyByWhatItLacks() throws {
    var buffer = [UInt8](repeating: 7, count: 100_000)
    buffer.ensureCount(100_010)
    #expect(buffer.count == 100_010)
    #expect(buffer.capacity >= 200_000, "its room doubles, for amortized growth")
    #expect(buffer.prefix(100_000).allSatisfy { $0 == 7 } && buffer.suffix(10).allSatisfy { $0 == 0 })
    buffer.ensureCount(50)
    #expect(buffer.count == 100_010, "never shrinks")
    // Frames appended one after another: the buffer holds the frames and nothing more.
    let encoder = LZ4FrameEncoder()
    var gathered: [UInt8] = []
    var total = 0
    for content in Self.contents(size: 4_096) + Self.contents(size: 600) {
      total += try content.withUnsafeBytes { try encoder.compress($0, appendingTo: &gathered) }
    }
    #expect(gathered.count == total)
  }

  /// One encoder, many frames of different sizes in a row (its stream and buffers reused),
  /// written at offsets into one buffer: each decodes to its content.
  @Test func aReusedEncoderMakesFramesThatDecode() throws {
    let encoder = LZ4FrameEncoder()
    var output = [UInt8](repeating: 0xEE, count: 10)
    var frames: [(start: Int, length: Int, content: [UInt8])] = []
    var offset = 10
    for size in [70_000, 600, 300_000, 1, 65_536, 2_000, 131_073] {
      for content in Self.contents(size: size) {
        let length = try content.withUnsafeBytes { try encoder.compress($0, into: &output, at: offset) }
        frames.append((offset, length, content))
        offset += length
      }
    }
    for frame in frames {
      let bytes = Array(output[frame.start..<(frame.start + frame.length)])
      let decoded = try bytes.withUnsafeBytes {
        try LZ4FrameDecoder().decompress($0, expectedLength: frame.content.count)
      }
      #expect(decoded == frame.content)
    }
  }

  /// The blocks of a frame: each stored block's bytes (the raw flag stripped from its size) and
  /// whether it is raw, after checking the sizes, checksums and end mark around them.
  static func blocks(of frame: [UInt8]) -> [(bytes: [UInt8], raw: Bool)] {
    func word(_ at: Int) -> UInt32 {
      UInt32(frame[at]) | UInt32(frame[at + 1]) << 8 | UInt32(frame[at + 2]) << 16 | UInt32(frame[at + 3]) << 24
    }
    var blocks: [(bytes: [UInt8], raw: Bool)] = []
    var position = 15
    while position + 4 <= frame.count, word(position) != 0 {
      let size = word(position)
      let stored = Int(size & 0x7FFF_FFFF)
      guard position + 8 + stored <= frame.count else { break }
      let bytes = Array(frame[(position + 4)..<(position + 4 + stored)])
      #expect(word(position + 4 + stored) == XXH32.hash(bytes), "block \(blocks.count)'s checksum")
      blocks.append((bytes, size & 0x8000_0000 != 0))
      position += 8 + stored
    }
    #expect(position + 8 == frame.count, "end mark and content checksum end the frame")
    return blocks
  }

  /// A block of a frame of several depends on its own 64 KiB piece alone: the frame of the
  /// content without its first pieces holds the same blocks as the rest of the whole's frame,
  /// and changing a piece changes its block only. (A one-block frame's block is not that piece's
  /// block in a frame of several: it is compressed as liblz4's frame API compresses linked
  /// blocks, with a stream, which hashes positions into 4,096 four-byte entries where a fresh
  /// compressor given under 64 KiB + 11 bytes uses 8,192 two-byte ones; other matches, other
  /// bytes. One-block frames are left as they have always been.)
  @Test(arguments: [200_000, 300_001])
  func eachBlockDependsOnItsPieceAlone(size: Int) throws {
    let encoder = LZ4FrameEncoder()
    func blocks(_ content: [UInt8]) throws -> [[UInt8]] {
      var frame: [UInt8] = []
      _ = try content.withUnsafeBytes { try encoder.compress($0, appendingTo: &frame) }
      return Self.blocks(of: frame).map(\.bytes)
    }
    for content in Self.contents(size: size) {
      let whole = try blocks(content)
      #expect(whole.count == (size + LZ4FrameEncoder.blockBytes - 1) / LZ4FrameEncoder.blockBytes)
      #expect(try blocks(Array(content.dropFirst(LZ4FrameEncoder.blockBytes))) == Array(whole.dropFirst()))
      var changed = content
      for index in 0..<LZ4FrameEncoder.blockBytes { changed[index] = UInt8(truncatingIfNeeded: index * 7) }
      let after = try blocks(changed)
      #expect(after.first != whole.first)
      #expect(Array(after.dropFirst()) == Array(whole.dropFirst()))
    }
  }

  /// However many threads compress the blocks of a frame, the frame is the same bytes, and
  /// liblz4's frame decoder decodes it to the content, checksums checked; so do frames made by
  /// one encoder again and again (its states reused).
  @Test(arguments: [65_537, 131_072, 131_073, 262_145, 1_000_000])
  func framesAreTheSameWhateverTheParticipants(size: Int) async throws {
    try await offThePool {
      for content in Self.contents(size: size) {
        var expected: [UInt8] = []
        _ = try content.withUnsafeBytes {
          try LZ4FrameEncoder(compressionLevel: 0, participants: 1).compress($0, appendingTo: &expected)
        }
        for participants in [2, 3, 4, 16] {
          let encoder = LZ4FrameEncoder(compressionLevel: 0, participants: participants)
          for _ in 0..<3 {
            var frame: [UInt8] = []
            _ = try content.withUnsafeBytes { try encoder.compress($0, appendingTo: &frame) }
            #expect(frame == expected, "\(participants) participants, \(size) bytes")
          }
        }
        let decoded = try expected.withUnsafeBytes { try LZ4FrameDecoder().decompress($0, expectedLength: size) }
        #expect(decoded == content)
      }
    }
  }
}
