import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Cases found reviewing preallocation (FORMAT.md, "Preallocated space"): damage before the zeros
/// that no write in progress or crash can leave must stay damage for every reader, and what
/// `verify` says must agree with what opening the journal does.
@Suite struct PreallocationReviewTests {
  /// A closed journal's last segment, then a megabyte of zeros after its last frame: what a
  /// crashed writer's segment looks like.
  static func crashedCopy(seed: UInt64) async throws -> (TornTailTests.Original, path: String, copy: TemporaryDirectory)
  {
    let original = try await TornTailTests.makeOriginal(batches: 6, seed: seed)
    let copy = TemporaryDirectory("review-prealloc")
    let path = copy.appending("j")
    try Files.copyDirectory(original.dir.path, to: path)
    try Files.write(original.bytes + [UInt8](repeating: 0, count: 1 << 20), to: path + "/" + original.segment)
    return (original, path, copy)
  }

  /// Rewrites the batch header at `offset` of `bytes` after `change`, with valid checksums.
  static func rewriteHeader(
    _ bytes: inout [UInt8], at offset: Int, _ change: (inout BatchHeader, inout ArraySlice<UInt8>) -> Void
  ) throws {
    var header = try BatchHeader.decode(bytes[offset...], limits: JournalLimits()).get()
    let frameStart = offset + Layout.batchHeaderSize
    var frame = bytes[frameStart..<(frameStart + Int(header.frameLength))]
    change(&header, &frame)
    header.frameChecksum = CRC32C.checksum(frame)
    bytes.replaceSubrange(frameStart..<(frameStart + frame.count), with: frame)
    bytes.withUnsafeMutableBytes { header.encode(to: $0.baseAddress! + offset) }
  }

  @Test func aSequenceBreakBeforeTheZerosIsAProblemForVerifyAsForOpening() async throws {
    // A last frame whose checksums are valid but whose sequence does not follow: no write in
    // progress and no crash leaves that, and opening refuses it; verify must not call it sound.
    let (original, path, copy) = try await Self.crashedCopy(seed: 61)
    let last = original.frames.last!
    var bytes = try Files.read(path + "/" + original.segment)
    try Self.rewriteHeader(&bytes, at: last.offset) { header, _ in header.firstSequence += 5 }
    try Files.write(bytes, to: path + "/" + original.segment)
    defer { withExtendedLifetime(copy) {} }

    let opening = journalError { _ = try Journal(directory: path, options: JournalFixtures.options()) }
    #expect(opening?.code == .sequenceBreak, "\(String(describing: opening))")
    let reading = journalError { _ = try JournalFixtures.readAll(path) }
    #expect(reading?.code == .sequenceBreak, "\(String(describing: reading))")
    let verification = try JournalReader(directory: path).verify()
    #expect(!verification.isSound, "a sequence break is damage, whatever follows it")
    #expect(verification.problems.map(\.offset) == [Int64(last.offset)], "\(verification.problems)")
    #expect(verification.unfinishedTail == nil)
  }

  @Test func anUndecodableFrameBeforeTheZerosIsAProblemForVerifyAsForReaders() async throws {
    // A last frame whose CRC-32C matches its bytes but whose LZ4 content does not decode: written
    // whole, so not a frame in progress; readers fail on it, and opening keeps it as committed.
    let (original, path, copy) = try await Self.crashedCopy(seed: 62)
    let last = original.frames.last!
    var bytes = try Files.read(path + "/" + original.segment)
    try Self.rewriteHeader(&bytes, at: last.offset) { _, frame in
      // No LZ4 frame magic: no decoder takes it, whether or not it checks LZ4's own checksums.
      frame[frame.startIndex] ^= 0x5A
    }
    try Files.write(bytes, to: path + "/" + original.segment)
    defer { withExtendedLifetime(copy) {} }

    let reading = journalError { _ = try JournalFixtures.readAll(path) }
    #expect(reading?.code == .corrupt && reading?.offset == Int64(last.offset), "\(String(describing: reading))")
    let verification = try JournalReader(directory: path).verify()
    #expect(!verification.isSound, "a checksum-valid frame that does not decode is damage")
    #expect(verification.problems.map(\.offset) == [Int64(last.offset)], "\(verification.problems)")
    #expect(verification.unfinishedTail == nil)
    #expect(verification.preallocatedBytes == 1 << 20, "the zeros after it are still preallocated space")
  }
}
