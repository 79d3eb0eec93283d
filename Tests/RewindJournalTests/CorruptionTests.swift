import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Contract 7: damage before the tail is never repaired silently: it is an error that names the
/// segment, the byte offset of the damaged batch and its sequence numbers.
@Suite struct CorruptionTests {
  static let damageCodes: Set<JournalError.Code> = [.corrupt, .sequenceBreak]

  /// Offsets to flip in a frame: every byte of the batch header, then a stride through the LZ4
  /// frame that includes its first and last bytes.
  static func offsetsToFlip(_ frame: JournalFixtures.Frame, stride step: Int = 3) -> [Int] {
    let header = Array(frame.offset..<(frame.offset + Layout.batchHeaderSize))
    let body = Array(stride(from: frame.offset + Layout.batchHeaderSize, to: frame.end, by: step)) + [frame.end - 1]
    return header + body
  }

  static func checkLocated(
    _ error: JournalError?, segment: String, frame: JournalFixtures.Frame, context: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    guard let error else { return }
    #expect(damageCodes.contains(error.code), "\(context): \(error)", sourceLocation: sourceLocation)
    #expect(error.file == segment, "\(context): \(error)", sourceLocation: sourceLocation)
    #expect(error.offset == Int64(frame.offset), "\(context): \(error)", sourceLocation: sourceLocation)
    if let sequences = error.sequences {
      #expect(sequences.contains(frame.header.firstSequence), "\(context): \(error)", sourceLocation: sourceLocation)
    } else {
      Issue.record("\(context): the error names no sequence numbers: \(error)", sourceLocation: sourceLocation)
    }
  }

  @Test func aFlippedByteInAMiddleFrameOfTheLastSegmentIsLocated() async throws {
    let original = TemporaryDirectory("corrupt")
    let journal = try Journal(directory: original.path, options: JournalFixtures.options())
    _ = try await JournalFixtures.write(journal, batches: 6, maxRecords: 4, maxPayload: 60, seed: 31)
    journal.close()
    let segment = try #require(JournalFixtures.segments(original.path).last)
    let frames = try JournalFixtures.frames(of: Files.read(original.appending(segment)))
    let target = frames[3]

    let copy = TemporaryDirectory("corrupt-copy")
    for offset in Self.offsetsToFlip(target, stride: 1) {
      let path = copy.appending("j")
      try Files.copyDirectory(original.path, to: path)
      try JournalFixtures.flip(path + "/" + segment, at: offset)
      let context = "flip at \(offset)"
      Self.checkLocated(
        journalError(context) { _ = try JournalFixtures.readAll(path) }, segment: segment, frame: target,
        context: "reader, " + context)
      Self.checkLocated(
        journalError(context) { _ = try Journal(directory: path, options: JournalFixtures.options()) },
        segment: segment, frame: target,
        context: "writer, " + context)
      // Nothing was moved or changed by the refused open.
      #expect(
        !FileManager.default.fileExists(atPath: path + "/quarantine") || Files.list(path + "/quarantine").isEmpty,
        "\(context)")
      #expect(Files.size(path + "/" + segment) == Files.size(original.appending(segment)), "\(context)")
    }
  }

  @Test func aFlippedByteInASealedSegmentIsLocatedByTheReader() async throws {
    let original = TemporaryDirectory("corrupt-sealed")
    let options = JournalFixtures.options(segmentBytes: 2 << 10)
    let journal = try Journal(directory: original.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: 60, maxRecords: 4, maxPayload: 60, seed: 32)
    journal.close()
    let segments = JournalFixtures.segments(original.path)
    try #require(segments.count > 3)
    let segment = segments[1]
    let frames = try JournalFixtures.frames(of: Files.read(original.appending(segment)))
    try #require(frames.count >= 3)
    let target = frames[frames.count / 2]

    let copy = TemporaryDirectory("corrupt-sealed-copy")
    for offset in Self.offsetsToFlip(target) {
      let path = copy.appending("j")
      try Files.copyDirectory(original.path, to: path)
      try JournalFixtures.flip(path + "/" + segment, at: offset)
      let context = "flip at \(offset) of \(segment)"
      Self.checkLocated(
        journalError(context) { _ = try JournalFixtures.readAll(path) }, segment: segment, frame: target,
        context: "reader, " + context)
      // Records before the damage still read.
      let before = Int(target.header.firstSequence) - 1
      let cursor = try JournalReader(directory: path).records()
      for expected in records.prefix(before) { #expect(try cursor.next() == expected, "\(context)") }
      // Opening for writing need not read sealed segments (the index lets it skip them), but
      // when it does refuse, it locates the damage.
      do {
        try Journal(directory: path, options: options).close()
      } catch let error as JournalError {
        Self.checkLocated(error, segment: segment, frame: target, context: "writer, " + context)
      }
    }
  }

  @Test func aFlippedByteInTheFinalFrameIsMovedAsideAndReported() async throws {
    let original = TemporaryDirectory("corrupt-final")
    let journal = try Journal(directory: original.path, options: JournalFixtures.options())
    let records = try await JournalFixtures.write(journal, batches: 5, maxRecords: 4, maxPayload: 60, seed: 33)
    journal.close()
    let segment = try #require(JournalFixtures.segments(original.path).last)
    let bytes = try Files.read(original.appending(segment))
    let target = try #require(JournalFixtures.frames(of: bytes).last)
    let kept = Array(records.prefix(Int(target.header.firstSequence) - 1))

    let copy = TemporaryDirectory("corrupt-final-copy")
    for offset in Self.offsetsToFlip(target) {
      let path = copy.appending("j")
      try Files.copyDirectory(original.path, to: path)
      try JournalFixtures.flip(path + "/" + segment, at: offset)
      var damaged = bytes
      damaged[offset] ^= 0xFF
      let context = "flip at \(offset)"
      let reopened = try Journal(directory: path, options: JournalFixtures.options())
      let moved = reopened.recovery.movedAside
      #expect(moved.count == 1, "\(context)")
      #expect(moved.first?.segment == segment, "\(context)")
      #expect(moved.first?.offset == Int64(target.offset), "\(context)")
      if let file = moved.first?.movedTo {
        #expect(try Files.read(path + "/" + file) == Array(damaged[target.offset...]), "\(context)")
      }
      #expect(reopened.lastSequence == UInt64(kept.count), "\(context)")
      reopened.close()
      #expect(try JournalFixtures.readAll(path) == kept, "\(context)")
    }
  }

  @Test func aSegmentFromAnotherJournalIsRefused() async throws {
    // Two journals written alike have segments of the same names, but different ids.
    let options = JournalFixtures.options(segmentBytes: 2 << 10)
    let mine = TemporaryDirectory("mine")
    let theirs = TemporaryDirectory("theirs")
    for dir in [mine, theirs] {
      let journal = try Journal(directory: dir.path, options: options)
      _ = try await JournalFixtures.write(journal, batches: 40, seed: 34)
      journal.close()
    }
    let segments = JournalFixtures.segments(mine.path)
    try #require(segments.count > 2 && segments == JournalFixtures.segments(theirs.path))

    for segment in [segments[1], segments.last!] {
      let copy = TemporaryDirectory("foreign")
      let path = copy.appending("j")
      try Files.copyDirectory(mine.path, to: path)
      try Files.write(Files.read(theirs.appending(segment)), to: path + "/" + segment)
      for (who, error) in [
        ("writer", journalError { _ = try Journal(directory: path, options: options) }),
        ("reader", journalError { _ = try JournalFixtures.readAll(path) }),
      ] {
        #expect(error?.code == .corrupt, "\(who), \(segment): \(String(describing: error))")
        #expect(error?.file == segment, "\(who): \(String(describing: error))")
        #expect(error?.offset == 0, "\(who): \(String(describing: error))")
        #expect(error?.message.contains("another journal") == true, "\(who): \(String(describing: error))")
      }
    }
  }

  @Test func aMissingMiddleSegmentIsASequenceBreak() async throws {
    let options = JournalFixtures.options(segmentBytes: 2 << 10)
    let dir = TemporaryDirectory("missing")
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await JournalFixtures.write(journal, batches: 40, seed: 35)
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count > 3)
    try FileManager.default.removeItem(atPath: dir.appending(segments[1]))

    let writerError = journalError { _ = try Journal(directory: dir.path, options: options) }
    #expect(writerError?.code == .sequenceBreak, "\(String(describing: writerError))")
    #expect(writerError?.file == segments[2], "\(String(describing: writerError))")

    let readerError = journalError { _ = try JournalFixtures.readAll(dir.path) }
    #expect(readerError?.code == .sequenceBreak, "\(String(describing: readerError))")
    #expect(
      readerError?.sequences?.contains(Layout.firstSequence(ofSegmentNamed: segments[1])!) == true,
      "\(String(describing: readerError))")
    // The index names the missing segment: the error names it, and the records gone.
    #expect(readerError?.file == segments[1], "\(String(describing: readerError))")
    let after = Layout.firstSequence(ofSegmentNamed: segments[2])!
    #expect(readerError?.sequences?.upperBound == after - 1, "\(String(describing: readerError))")
    // Reading from before the gap, or after it, is refused too: the journal has lost records.
    for start in [2, after] {
      let error = journalError {
        _ = try JournalFixtures.readAll(JournalReader(directory: dir.path).records(from: start))
      }
      #expect(error?.file == segments[1], "from \(start): \(String(describing: error))")
    }
    // Without the index (removed by `repair`) nothing witnesses the segment, and a reader starting
    // after the gap reads what is there.
    try FileManager.default.removeItem(atPath: dir.appending(Layout.indexName))
    #expect(
      try JournalFixtures.readAll(JournalReader(directory: dir.path).records(from: after))
        == Array(records[Int(after - 1)...]))
  }

  @Test func aMissingFirstSegmentIsASequenceBreak() async throws {
    let options = JournalFixtures.options(segmentBytes: 2 << 10)
    let dir = TemporaryDirectory("missing-first")
    let journal = try Journal(directory: dir.path, options: options)
    _ = try await JournalFixtures.write(journal, batches: 40, seed: 36)
    journal.close()
    let segments = JournalFixtures.segments(dir.path)
    try FileManager.default.removeItem(atPath: dir.appending(segments[0]))
    let writerError = journalError { _ = try Journal(directory: dir.path, options: options) }
    #expect(writerError?.code == .sequenceBreak, "\(String(describing: writerError))")
    for start in [UInt64(1), 2] {
      let readerError = journalError {
        _ = try JournalFixtures.readAll(JournalReader(directory: dir.path).records(from: start))
      }
      #expect(readerError?.code == .sequenceBreak, "from \(start): \(String(describing: readerError))")
      // The index names the missing segment; without it, the error names the first one there.
      #expect(readerError?.file == segments[0], "from \(start): \(String(describing: readerError))")
    }
    let sinceError = journalError {
      _ = try JournalFixtures.readAll(JournalReader(directory: dir.path).records(since: 0))
    }
    #expect(sinceError?.code == .sequenceBreak, "\(String(describing: sinceError))")
    // Without the index, what is there can still be read from where it starts.
    try FileManager.default.removeItem(atPath: dir.appending(Layout.indexName))
    let second = Layout.firstSequence(ofSegmentNamed: segments[1])!
    #expect(try JournalReader(directory: dir.path).record(second)?.sequence == second)
    let noIndex = journalError { _ = try JournalFixtures.readAll(JournalReader(directory: dir.path).records(from: 1)) }
    #expect(noIndex?.file == segments[1], "\(String(describing: noIndex))")
  }
}
