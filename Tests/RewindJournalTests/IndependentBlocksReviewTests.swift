import Dispatch
import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// A review of frames of independent blocks (FLG 0x7C) and of their compression on several
/// threads: boundary sizes, the output buffer around a frame, an encoder reused between frames
/// of every kind, many encoders and appenders at once, and readers of journals that hold both
/// block modes, damaged or not.
@Suite struct IndependentBlocksReviewTests {
  static let block = LZ4FrameEncoder.blockBytes

  /// `size` bytes whose 64 KiB pieces alternate text (compresses) and noise (stored raw), the
  /// first one noise when `noiseFirst`.
  static func alternating(size: Int, seed: UInt64, noiseFirst: Bool) -> [UInt8] {
    var random = SeededGenerator(seed: seed)
    var content: [UInt8] = []
    content.reserveCapacity(size)
    var piece = 0
    while content.count < size {
      let length = min(block, size - content.count)
      if (piece % 2 == 0) == noiseFirst {
        content += random.bytes(length)
      } else {
        content += text[(piece % 7)..<(piece % 7 + length)]
      }
      piece += 1
    }
    return content
  }

  /// A little over 64 KiB of text-like bytes (compresses), made once.
  static let text: [UInt8] = {
    let words = Array("every event of the notebook in order, then the next one ".utf8)
    return (0..<(block + 8)).map { words[($0 * 5 + $0 / 11) % words.count] }
  }()

  static func frame(_ content: [UInt8], by encoder: LZ4FrameEncoder) throws -> [UInt8] {
    var frame: [UInt8] = []
    _ = try content.withUnsafeBytes { try encoder.compress($0, appendingTo: &frame) }
    return frame
  }

  static func decoded(_ frame: [UInt8], length: Int, checksums: Bool) throws -> [UInt8] {
    try frame.withUnsafeBytes { try LZ4FrameDecoder(verifyChecksums: checksums).decompress($0, expectedLength: length) }
  }

  // MARK: - Sizes

  /// Around every boundary the encoder has: the block size, the content from which several
  /// threads compress (`parallelContentBytes`), whole blocks and a last block of one byte, and
  /// 1 MiB. Raw and compressed blocks in one frame, either first. The frames are liblz4's
  /// frame API's, byte for byte, for one to three participants, and both decoders read them.
  @Test(arguments: [
    65_536, 65_537, LZ4FrameEncoder.parallelContentBytes - 1, LZ4FrameEncoder.parallelContentBytes,
    LZ4FrameEncoder.parallelContentBytes + 1, 131_072, 131_073, 196_609, 1 << 20, (1 << 20) + 1,
  ])
  func boundarySizesMakeTheFrameAPIsFrames(size: Int) async throws {
    try await offThePool {
      let library = LZ4FrameEncoder(compressionLevel: 0, usingFrameAPI: true)
      var random = SeededGenerator(seed: UInt64(size))
      let contents = [
        Self.alternating(size: size, seed: UInt64(size), noiseFirst: true),
        Self.alternating(size: size, seed: UInt64(size) + 1, noiseFirst: false),
        random.bytes(size),
      ]
      for content in contents {
        let theirs = try Self.frame(content, by: library)
        for participants in [1, 2, 3] {
          let ours = try Self.frame(content, by: LZ4FrameEncoder(compressionLevel: 0, participants: participants))
          #expect(ours == theirs, "\(size) bytes, \(participants) participants")
        }
        #expect(theirs.count < LZ4FrameEncoder.frameBound(size), "frameBound holds every frame, raw blocks too")
        #expect(theirs[4] == 0x7C, "independent blocks from LZ4FrameEncoder.freshStateBytes on")
        #expect(try Self.decoded(theirs, length: size, checksums: true) == content)
        #expect(try Self.decoded(theirs, length: size, checksums: false) == content)
      }
    }
  }

  // MARK: - The output buffer

  /// A frame written into a buffer at an offset: the bytes before the offset, and those from
  /// the end of the frame's room (`frameBound`) on, are as they were, and the frame is the one
  /// written into an empty buffer, whatever frames (larger, smaller, one block or several) the
  /// buffer and the encoder held before.
  @Test func framesWrittenIntoAReusedBufferLeaveTheBytesAroundTheirRoom() async throws {
    try await offThePool {
      let encoder = LZ4FrameEncoder(compressionLevel: 0, participants: 2)
      var output = [UInt8](repeating: 0xA7, count: 3 << 20)
      let cases: [(size: Int, offset: Int)] = [
        (1_000_000, 17), (200_000, 5), (70_000, 1_000_003), (65_537, 0), (300, 9), (131_073, 2_500_000),
        (900_000, 1), (65_536, 3),
        // A one-block frame from a fresh state (in the stream's memory), then one by the stream.
        (300, 21), (4_000, 7), (300, 13),
      ]
      for (number, (size, offset)) in cases.enumerated() {
        let content = Self.alternating(size: size, seed: UInt64(number), noiseFirst: number % 2 == 0)
        let before = output
        let length = try content.withUnsafeBytes { try encoder.compress($0, into: &output, at: offset) }
        let room = offset + LZ4FrameEncoder.frameBound(size)
        #expect(output.count >= room)
        #expect(Array(output[offset..<(offset + length)]) == (try Self.frame(content, by: LZ4FrameEncoder())))
        #expect(output[..<offset] == before[..<offset], "before the frame, \(size) bytes at \(offset)")
        if room < before.count {
          #expect(output[room..<before.count] == before[room...], "after the frame's room, \(size) bytes")
        }
      }
    }
  }

  // MARK: - Determinism

  /// One-block frames depend only on the one-block frames before them (the small-content
  /// sampler), not on frames of several blocks compressed between them by the same encoder;
  /// and those are the frames a fresh encoder makes.
  @Test func framesOfSeveralBlocksBetweenSmallFramesChangeNothing() async throws {
    try await offThePool {
      var random = SeededGenerator(seed: 83)
      // Mostly noise, so that the sampler stops trying most small content, and some text, which
      // is compressed when tried and stored raw when not: the sampler's decisions show.
      let text = Array(String(repeating: "the notebook keeps its events ", count: 20).utf8)
      let smalls = (0..<160).map { index in
        index % 20 == 19
          ? Array(text.prefix(Int.random(in: 200...500, using: &random)))
          : random.bytes(Int.random(in: 100...500, using: &random))
      }
      let alone = LZ4FrameEncoder()
      let expected = try smalls.map { try Self.frame($0, by: alone) }
      let texts = stride(from: 19, to: smalls.count, by: 20).map { expected[$0][18] & 0x80 == 0 }
      #expect(texts.contains(true) && texts.contains(false), "text compressed when tried, raw when not")
      let mixed = LZ4FrameEncoder(compressionLevel: 0, participants: 3)
      let larges = [70_000, 300_000, 65_537, 600_001, 131_072].enumerated().map {
        Self.alternating(size: $0.element, seed: UInt64($0.offset), noiseFirst: $0.offset % 2 == 0)
      }
      let largeFrames = try larges.map { try Self.frame($0, by: LZ4FrameEncoder(compressionLevel: 0)) }
      for (index, small) in smalls.enumerated() {
        if index % 3 == 0 {
          #expect(try Self.frame(larges[index % 5], by: mixed) == largeFrames[index % 5])
        }
        #expect(try Self.frame(small, by: mixed) == expected[index], "small frame \(index)")
      }
    }
  }

  /// Many encoders at once, each compressing on several threads (nested in
  /// `concurrentPerform`, and from tasks of the cooperative pool): every frame is the one a
  /// single thread makes.
  @Test func manyEncodersAtOnceMakeTheSameFrames() async throws {
    let contents = [65_537, 80_000, 200_000, 500_001].enumerated().map {
      Self.alternating(size: $0.element, seed: UInt64($0.offset), noiseFirst: $0.offset % 2 == 1)
    }
    let expected = try contents.map { try Self.frame($0, by: LZ4FrameEncoder(compressionLevel: 0, participants: 1)) }
    let mismatches = Locked(0)
    DispatchQueue.concurrentPerform(iterations: 8) { worker in
      let encoder = LZ4FrameEncoder(compressionLevel: 0, participants: 2 + worker % 3)
      for round in 0..<6 {
        let index = (worker + round) % contents.count
        if (try? Self.frame(contents[index], by: encoder)) != expected[index] { mismatches.withLock { $0 += 1 } }
      }
    }
    #expect(mismatches.withLock { $0 } == 0)
    try await withThrowingTaskGroup(of: Bool.self) { group in
      for worker in 0..<16 {
        group.addTask {
          let encoder = LZ4FrameEncoder(compressionLevel: 0, participants: 4)
          var same = true
          for round in 0..<4 {
            let index = (worker + round) % contents.count
            same = try Self.frame(contents[index], by: encoder) == expected[index] && same
          }
          return same
        }
      }
      for try await same in group { #expect(same) }
    }
  }

  // MARK: - Many appenders

  /// 64 producers appending at once, most appends over 64 KiB (frames of several blocks
  /// compressed on several threads from the writer's leader, a task of the cooperative pool):
  /// every append completes, and the journal reads back every producer's records in its order.
  @Test func manyProducersAppendingLargeBatchesAtOnce() async throws {
    let dir = TemporaryDirectory("independent-producers")
    let options = JournalFixtures.options(segmentBytes: 4 << 20, frameBytes: 1 << 20, indexBytes: 64 << 10)
    let journal = try Journal(directory: dir.path, options: options)
    let producers = 64
    try await withThrowingTaskGroup(of: Void.self) { group in
      for producer in 0..<producers {
        group.addTask {
          var random = SeededGenerator(seed: UInt64(producer) + 1_000)
          for append in 0..<3 {
            let count = append == 1 ? 2 : Int.random(in: 150...700, using: &random)
            let records = (0..<count).map { index in
              NewRecord(
                timestamp: Int64(producer * 1_000 + append),
                payload: Array("p\(producer)a\(append)r\(index) ".utf8) + random.eventLikePayload(300))
            }
            _ = try await journal.append(records)
          }
        }
      }
      try await group.waitForAll()
    }
    journal.close()
    let records = try JournalFixtures.readAll(dir.path)
    #expect(records.map(\.sequence) == Array(1...UInt64(records.count)))
    var seen = [[String]](repeating: [], count: producers)
    for record in records {
      let tag = String(decoding: record.payload.prefix { $0 != 0x20 }, as: UTF8.self)
      seen[Int(record.timestamp) / 1_000].append(tag)
    }
    for producer in 0..<producers {
      let appends = Dictionary(grouping: seen[producer]) { $0.split(separator: "r")[0] }
      #expect(appends.count == 3, "producer \(producer)")
      for (_, tags) in appends {
        #expect(tags == tags.indices.map { "\(tags[0].split(separator: "r")[0])r\($0)" }, "producer \(producer)")
      }
    }
    let frames = try BlockModeTests.frames(dir.path)
    #expect(
      frames.contains { $0.flags == 0x7C && $0.content > Self.block }, "the test should write frames of several blocks")
    #expect(try JournalReader(directory: dir.path).verify().isSound)
  }

  // MARK: - Crashes

  /// `CrashTests`' trials with bulk appends (up to 160 KB each, blocks raw and compressed): a
  /// child killed while it writes frames of several independent blocks loses no acknowledged
  /// record, and recovery leaves a sound journal (`REWIND_CRASH_TRIALS` sets the trials).
  @Test(arguments: ["always", "batched", "none"])
  func acknowledgedBulkAppendsSurviveSIGKILL(policy: String) async throws {
    // A loaded machine can leave the child too little time to write one such frame in 8 trials
    // (it acknowledged 5 appends in all, once): the trials go on until it has, at most 32.
    let severalBlocks = { (directory: String) in
      try BlockModeTests.frames(directory).contains { $0.flags == 0x7C && $0.content > LZ4FrameEncoder.blockBytes }
    }
    try await CrashTests.acknowledgedAppendsSurviveSIGKILL(
      policy: policy, childArguments: ["bulk"], delay: 20_000...400_000,
      inspect: { directory in
        let written = try severalBlocks(directory)
        #expect(written, "the child should write frames of several blocks")
      },
      until: severalBlocks)
  }

  // MARK: - Readers

  /// A frame of independent blocks that holds two small blocks (content under 64 KiB: nothing
  /// the writer makes, but a valid frame): the one-block path declines it, and both decoders
  /// read it through liblz4.
  @Test func aSmallFrameOfTwoIndependentBlocksIsNotTakenForOne() throws {
    var random = SeededGenerator(seed: 5)
    let content = random.bytes(300)
    func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
    var frame = le(Layout.lz4FrameMagic) + [0x7C, 0x40] + le(UInt64(content.count))
    frame.append(UInt8(truncatingIfNeeded: XXH32.hash(Array(frame[4..<14])) >> 8))
    for piece in [Array(content[..<100]), Array(content[100...])] {
      frame += le(UInt32(piece.count) | 0x8000_0000) + piece + le(XXH32.hash(piece))
    }
    frame += [0, 0, 0, 0] + le(XXH32.hash(content))
    var out = [UInt8](repeating: 0, count: content.count)
    let taken = frame.withUnsafeBytes { bytes in
      out.withUnsafeMutableBytes { LZ4FrameDecoder.decodeOneBlock(bytes, into: $0) }
    }
    #expect(!taken)
    #expect(try Self.decoded(frame, length: content.count, checksums: false) == content)
    #expect(try Self.decoded(frame, length: content.count, checksums: true) == content)
  }

  /// The block checksum of block 2 of a frame of 4 independent compressed blocks is wrong, the
  /// batch header's CRC-32C made to match the damaged frame: verify reports that frame (offset,
  /// sequences, the block checksum), and only it; the cursor refuses to read it.
  @Test func aBadBlockChecksumInTheSecondOfFourBlocksIsReported() async throws {
    let dir = TemporaryDirectory("independent-block-checksum")
    let options = JournalFixtures.options(frameBytes: 1 << 20)
    let journal = try Journal(directory: dir.path, options: options)
    var random = SeededGenerator(seed: 9)
    var expected: [JournalRecord] = []
    try await BlockModeTests.append(journal, count: 1, bytes: 1_000, random: &random, to: &expected)
    try await BlockModeTests.append(journal, count: 1, bytes: 240_000, random: &random, to: &expected)
    try await BlockModeTests.append(journal, count: 1, bytes: 1_000, random: &random, to: &expected)
    journal.close()
    let name = try #require(JournalFixtures.segments(dir.path).first)
    var bytes = try Files.read(dir.appending(name))
    let frames = try JournalFixtures.frames(of: Array(bytes.prefix(JournalFixtures.usedLength(bytes))))
    let target = try #require(frames.first { $0.header.contentLength > 3 * UInt32(Self.block) })
    let start = target.offset + Layout.batchHeaderSize
    let frame = Array(bytes[start..<(start + Int(target.header.frameLength))])
    #expect(frame[4] == 0x7C)
    let blocks = LZ4FrameEncoderTests.blocks(of: frame)
    #expect(blocks.count == 4 && blocks.allSatisfy { !$0.raw }, "4 compressed blocks")
    // Block 2's checksum follows its size and bytes, after block 1.
    let checksumAt = start + 15 + (8 + blocks[0].bytes.count) + 4 + blocks[1].bytes.count
    bytes[checksumAt] ^= 0x5A
    var header = target.header
    header.frameChecksum = bytes.withUnsafeBytes {
      CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[start..<(start + Int(header.frameLength))]))
    }
    bytes.withUnsafeMutableBytes { header.encode(to: $0.baseAddress! + target.offset) }
    try Files.write(bytes, to: dir.appending(name))

    let report = try JournalReader(directory: dir.path).verify()
    #expect(report.problems.count == 1)
    let problem = try #require(report.problems.first)
    #expect(problem.file == name && problem.offset == Int64(target.offset))
    #expect(problem.sequences == target.header.sequences)
    #expect(problem.message.lowercased().contains("checksum"), "\(problem.message)")
    #expect(throws: (any Error).self) { try JournalFixtures.readAll(dir.path) }
  }

  /// A segment whose frames of several blocks are of both modes, one after the other (linked
  /// ones as a writer before independent blocks wrote them, rewritten here with LZ4HC): the
  /// cursor, verify, the `lz4` tool and a writer reopening it read every record, and the writer
  /// appends after them.
  @Test func aSegmentOfBothBlockModesReadsEverywhere() async throws {
    let dir = TemporaryDirectory("independent-mixed-segment")
    let options = JournalFixtures.options(frameBytes: 1 << 20, indexBytes: 1 << 30)
    let journal = try Journal(directory: dir.path, options: options)
    var random = SeededGenerator(seed: 21)
    var expected: [JournalRecord] = []
    for bytes in [150_000, 300, 70_000, 250_000, 2_000, 131_072, 400_000] {
      try await BlockModeTests.append(journal, count: 1, bytes: bytes, random: &random, to: &expected)
    }
    journal.close()
    let name = try #require(JournalFixtures.segments(dir.path).first)
    let path = dir.appending(name)
    let bytes = try Files.read(path)
    let frames = try JournalFixtures.frames(of: Array(bytes.prefix(JournalFixtures.usedLength(bytes))))
    // Every other frame of several blocks becomes linked blocks; the rest stay as written.
    var rewritten = Array(bytes[..<Layout.segmentHeaderSize])
    let linked = LZ4FrameEncoder(compressionLevel: 3)
    var several = 0
    for found in frames {
      let start = found.offset + Layout.batchHeaderSize
      var frame = Array(bytes[start..<(start + Int(found.header.frameLength))])
      if found.header.contentLength > UInt32(Self.block) {
        several += 1
        if several % 2 == 1 {
          let content = try Self.decoded(frame, length: Int(found.header.contentLength), checksums: true)
          frame = try Self.frame(content, by: linked)
          #expect(frame[4] == 0x5C)
        }
      }
      var header = found.header
      header.frameLength = UInt32(frame.count)
      header.frameChecksum = frame.withUnsafeBytes { CRC32C.checksum($0) }
      var writer = ByteWriter()
      header.encode(into: &writer)
      rewritten += writer.bytes + frame
    }
    #expect(several == 5)
    try Files.write(rewritten, to: path)
    try? FileManager.default.removeItem(atPath: dir.appending(Layout.indexName))
    let modes = try BlockModeTests.frames(dir.path).filter { $0.content > Self.block }.map(\.flags)
    #expect(modes == [0x5C, 0x7C, 0x5C, 0x7C, 0x5C])

    #expect(try JournalFixtures.readAll(dir.path) == expected)
    let report = try JournalReader(directory: dir.path).verify()
    #expect(report.isSound && report.records == UInt64(expected.count), "\(report.problems)")
    try await LZ4ToolTests.checkSegments(dir.path, records: expected)
    let reopened = try Journal(directory: dir.path, options: options)
    #expect(reopened.lastSequence == UInt64(expected.count))
    try await BlockModeTests.append(reopened, count: 2, bytes: 100_000, random: &random, to: &expected)
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path) == expected)
    try await LZ4ToolTests.checkSegments(dir.path, records: expected)
  }
}
