import RewindTestSupport
import Testing

@testable import RewindJournal

/// The fast encoder frames its blocks itself; its frames must be the ones liblz4's frame API
/// makes with the same settings, so nothing about them depends on which code made them.
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

  @Test(arguments: [512, 4_000, 65_535, 65_536, 65_537, 131_072, 200_000, 300_001])
  func framesAreTheFrameAPIsFrames(size: Int) throws {
    let encoder = LZ4FrameEncoder()
    let library = LZ4FrameEncoder(compressionLevel: 0, usingFrameAPI: true)
    for content in Self.contents(size: size) {
      var ours: [UInt8] = []
      var theirs: [UInt8] = []
      _ = try content.withUnsafeBytes { try encoder.compress($0, appendingTo: &ours) }
      _ = try content.withUnsafeBytes { try library.compress($0, appendingTo: &theirs) }
      #expect(ours.count == theirs.count)
      #expect(ours == theirs, "a frame of \(size) bytes differs from liblz4's")
      let decoded = try ours.withUnsafeBytes { try LZ4FrameDecoder().decompress($0, expectedLength: size) }
      #expect(decoded == content)
    }
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
}
