import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Frames of 1 KiB or more, one block or several: appends write them with independent blocks
/// (FLG 0x7C), compaction (and appends before independent blocks) with linked blocks (FLG 0x5C),
/// as appends still write smaller frames. Every reading path reads both, one beside the other in
/// the same journal.
@Suite struct BlockModeTests {
  /// The FLG byte and content length of every frame of a journal's segments, in order.
  static func frames(_ directory: String) throws -> [(flags: UInt8, content: Int)] {
    var found: [(flags: UInt8, content: Int)] = []
    for name in JournalFixtures.segments(directory) {
      let bytes = try Files.read(directory + "/" + name)
      for frame in try JournalFixtures.frames(of: Array(bytes.prefix(JournalFixtures.usedLength(bytes)))) {
        found.append((bytes[frame.offset + Layout.batchHeaderSize + 4], Int(frame.header.contentLength)))
      }
    }
    return found
  }

  /// Appends `count` appends of records adding up to about `bytes` bytes of content each.
  static func append(
    _ journal: Journal, count: Int, bytes: Int, random: inout SeededGenerator, to expected: inout [JournalRecord]
  ) async throws {
    for _ in 0..<count {
      var batch: [NewRecord] = []
      var content = 0
      while content < bytes {
        let payload = random.eventLikePayload(Int.random(in: 100...600, using: &random))
        content += 20 + payload.count
        batch.append(NewRecord(timestamp: Int64(expected.count + batch.count), payload: payload))
      }
      let range = try await journal.append(batch)
      #expect(range.lowerBound == UInt64(expected.count + 1))
      for (sequence, record) in zip(range, batch) {
        expected.append(JournalRecord(sequence: sequence, timestamp: record.timestamp, payload: record.payload))
      }
    }
  }

  @Test func framesOfBothBlockModesReadOnEveryPath() async throws {
    let dir = TemporaryDirectory("block-modes")
    let options = JournalFixtures.options(segmentBytes: 256 << 10, frameBytes: 1 << 20, indexBytes: 4 << 10)
    let journal = try Journal(directory: dir.path, options: options)
    var random = SeededGenerator(seed: 61)
    var expected: [JournalRecord] = []
    try await Self.append(journal, count: 6, bytes: 150_000, random: &random, to: &expected)
    try await Self.append(journal, count: 5, bytes: 300, random: &random, to: &expected)
    // Compaction rewrites the sealed segments into frames of linked blocks; the active segment
    // and what is appended next keep frames of independent blocks.
    let report = try journal.compactSealedSegments()
    #expect(!report.compacted.isEmpty)
    try await Self.append(journal, count: 3, bytes: 200_000, random: &random, to: &expected)
    try await Self.append(journal, count: 3, bytes: 1_000, random: &random, to: &expected)
    try await Self.append(journal, count: 2, bytes: 90_000, random: &random, to: &expected)
    try await Self.append(journal, count: 2, bytes: 6_000, random: &random, to: &expected)

    let frames = try Self.frames(dir.path)
    let block = LZ4FrameEncoder.blockBytes
    let fresh = LZ4FrameEncoder.freshStateBytes
    #expect(frames.contains { $0.flags == 0x5C && $0.content > block }, "linked frames of several blocks")
    #expect(frames.contains { $0.flags == 0x7C && $0.content > block }, "independent frames of several blocks")
    #expect(frames.contains { $0.flags == 0x5C && $0.content < fresh }, "small frames of a linked block")
    #expect(
      frames.contains { $0.flags == 0x7C && $0.content >= fresh && $0.content <= block },
      "one-block frames from a fresh state")
    #expect(frames.allSatisfy { $0.content >= fresh || $0.flags == 0x5C }, "small frames are as they were")
    #expect(frames.allSatisfy { $0.flags == 0x5C || $0.flags == 0x7C })

    // The cursor (its one-block fast path and liblz4's frame decoder), seeks, verify, a follower.
    #expect(try JournalFixtures.readAll(dir.path) == expected)
    let reader = try JournalReader(directory: dir.path)
    for probe in stride(from: 1, through: expected.count, by: 97) {
      #expect(try reader.record(UInt64(probe)) == expected[probe - 1])
    }
    let verification = try reader.verify()
    #expect(verification.isSound && verification.records == UInt64(expected.count))
    let followed = try await FollowTests.follow(dir.path, from: 1, count: expected.count).value
    #expect(followed == expected)

    // Compaction reads frames of independent blocks too; its frames read back the same.
    journal.close()
    let reopened = try Journal(directory: dir.path, options: options)
    #expect(reopened.recovery.isClean)
    try await Self.append(reopened, count: 4, bytes: 120_000, random: &random, to: &expected)
    let again = try reopened.compactSealedSegments()
    #expect(!again.compacted.isEmpty)
    reopened.close()
    #expect(try JournalFixtures.readAll(dir.path) == expected)
    #expect(try JournalReader(directory: dir.path).verify().isSound)

    // Repair: a torn frame of independent blocks at the end is moved aside, the rest is kept.
    let last = try #require(JournalFixtures.segments(dir.path).last)
    let bytes = try Files.read(dir.appending(last))
    let tail = try #require(try JournalFixtures.frames(of: bytes).last)
    #expect(bytes[tail.offset + Layout.batchHeaderSize + 4] == 0x7C)
    try JournalFixtures.truncate(dir.appending(last), at: tail.end - 1_000)
    let kept = Array(expected.prefix(Int(tail.header.firstSequence) - 1))
    let repaired = try Journal(directory: dir.path, options: options)
    #expect(repaired.recovery.movedAside.count == 1)
    #expect(repaired.lastSequence == UInt64(kept.count))
    repaired.close()
    #expect(try JournalFixtures.readAll(dir.path) == kept)
    #expect(try JournalReader(directory: dir.path).verify().isSound)
  }

  /// `JournalOptions.compressionThreads` changes who compresses a large frame's blocks, never
  /// the bytes: the same appends make the same segment files with 1, 3 or one thread per
  /// processor (the default).
  @Test func compressionThreadsDoNotChangeTheBytes() async throws {
    var segments: [[UInt8]] = []
    for threads in [1, 3, nil] as [Int?] {
      let dir = TemporaryDirectory("block-threads")
      var options = JournalFixtures.options(segmentBytes: 1 << 20, frameBytes: 1 << 20)
      options.newJournalID = JournalID(bytes: Array(repeating: 9, count: 16))
      options.compressionThreads = threads
      let journal = try Journal(directory: dir.path, options: options)
      var random = SeededGenerator(seed: 62)
      var expected: [JournalRecord] = []
      try await Self.append(journal, count: 4, bytes: 250_000, random: &random, to: &expected)
      try await Self.append(journal, count: 2, bytes: 400, random: &random, to: &expected)
      journal.close()
      #expect(
        try Self.frames(dir.path).filter { $0.flags == 0x7C && $0.content > LZ4FrameEncoder.blockBytes }.count == 4)
      #expect(try JournalFixtures.readAll(dir.path) == expected)
      let names = JournalFixtures.segments(dir.path)
      segments.append(try names.flatMap { try Files.read(dir.appending($0)) })
    }
    #expect(segments[0].count > 100_000)
    #expect(segments[1] == segments[0])
    #expect(segments[2] == segments[0])
  }
}
