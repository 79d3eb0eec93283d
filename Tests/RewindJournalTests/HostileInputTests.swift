import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Arbitrary bytes never crash a reader, hang it, or make it allocate without bound: every
/// outcome is records or a `JournalError`.
@Suite struct HostileInputTests {
  /// Reads everything and verifies; returns normally or with a JournalError, nothing else.
  static func readEverything(_ directory: String) -> (records: Int, errors: [JournalError]) {
    var errors: [JournalError] = []
    var records = 0
    do {
      let cursor = try JournalReader(directory: directory).records()
      while try cursor.next() != nil { records += 1 }
    } catch let error as JournalError {
      errors.append(error)
    } catch {
      Issue.record("a reader threw something other than a JournalError: \(error)")
    }
    do {
      _ = try JournalReader(directory: directory).verify()
    } catch let error as JournalError {
      errors.append(error)
    } catch {
      Issue.record("verify threw something other than a JournalError: \(error)")
    }
    return (records, errors)
  }

  @Test func headersDeclaringHugeSizesAreRefusedWithoutAllocating() throws {
    let dir = TemporaryDirectory("hostile")
    let journal = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    try journal.appendAndWait([NewRecord(timestamp: 1, payload: [1])])
    journal.close()
    let segment = dir.appending(Layout.segmentName(firstSequence: 1))
    var bytes = Array(try Files.read(segment).prefix(Layout.segmentHeaderSize))
    // A batch header with a valid checksum that declares 4 GiB of content and frame.
    let header = BatchHeader(
      firstSequence: 1, recordCount: 1, contentLength: .max, frameLength: .max, minTimestamp: 0, maxTimestamp: 0,
      frameChecksum: 0)
    var writer = ByteWriter()
    header.encode(into: &writer)
    bytes += writer.bytes + [UInt8](repeating: 0xAB, count: 100)
    try Files.write(bytes, to: segment)
    let outcome = Self.readEverything(dir.path)
    #expect(outcome.records == 0)
    // Its checksum holds, so it is no unfinished frame, even at the end of the only segment; and
    // no writer, whatever its limits, writes such sizes: damage, not a journal to read with
    // larger limits.
    #expect(outcome.errors.map(\.code) == [.corrupt], "\(outcome.errors)")
    let report = try JournalReader(directory: dir.path, limits: .largest).verify()
    #expect(report.unfinishedTail == nil && report.problems.count == 1, "\(report)")
    #expect(report.problems.first?.message.contains("exceeds what any writer writes") == true, "\(report)")
  }

  @Test func randomBytesAfterAValidSegmentHeader() throws {
    var random = SeededGenerator(seed: 0xBAD)
    for size in [0, 1, 7, 51, 52, 53, 500, 70_000] {
      let dir = TemporaryDirectory("hostile")
      let journal = try Journal(directory: dir.path)
      journal.close()
      let segment = dir.appending(Layout.segmentName(firstSequence: 1))
      var bytes = try Files.read(segment)
      var junk = random.bytes(size)
      // Plant batch-header magic numbers in the junk, so the parser goes past the first check.
      var i = 0
      while i + 8 < junk.count {
        junk.replaceSubrange(i..<(i + 4), with: [0x51, 0x2A, 0x4D, 0x18])
        i += Int.random(in: 9...300, using: &random)
      }
      bytes += junk
      try Files.write(bytes, to: segment)
      let outcome = Self.readEverything(dir.path)
      #expect(outcome.records == 0, "seed \(random.seed), size \(size)")
    }
  }

  @Test func randomDamageToAValidJournal() throws {
    let seeds: [UInt64] = Array(1...60)
    let source = TemporaryDirectory("hostile-src")
    var options = JournalOptions(durability: .none)
    options.segmentTargetBytes = 4096
    options.indexIntervalBytes = 512
    let journal = try Journal(directory: source.path, options: options)
    var generator = SeededGenerator(seed: 5)
    for i in 0..<150 {
      try journal.appendAndWait(
        (0...(i % 5)).map { _ in NewRecord(timestamp: Int64(i), payload: generator.eventLikePayload(60)) })
    }
    journal.close()
    for seed in seeds {
      var random = SeededGenerator(seed: seed)
      let dir = TemporaryDirectory("hostile")
      let copy = dir.appending("j")
      try Files.copyDirectory(source.path, to: copy)
      let files = Files.list(copy).filter { $0 != "LOCK" }
      for _ in 0..<Int.random(in: 1...4, using: &random) {
        let file = copy + "/" + files[Int.random(in: 0..<files.count, using: &random)]
        var bytes = try Files.read(file)
        guard !bytes.isEmpty else { continue }
        switch Int.random(in: 0..<4, using: &random) {
        case 0: bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
        case 1: bytes.removeLast(Int.random(in: 0...bytes.count, using: &random))
        case 2:
          bytes.insert(
            contentsOf: random.bytes(Int.random(in: 1...64, using: &random)),
            at: Int.random(in: 0...bytes.count, using: &random))
        default:
          let start = Int.random(in: 0..<bytes.count, using: &random)
          let end = min(bytes.count, start + Int.random(in: 1...200, using: &random))
          bytes.replaceSubrange(start..<end, with: [UInt8](repeating: 0, count: end - start))
        }
        try Files.write(bytes, to: file)
      }
      // Damage to committed data is always located; opening for writing either recovers or
      // throws a located error. (Opening checks the last segment in full and only the ends of
      // sealed ones, so readers may still meet damage inside sealed segments, located.)
      var errors = Self.readEverything(copy).errors
      do {
        let reopened = try Journal(directory: copy, options: options)
        reopened.close()
        errors += Self.readEverything(copy).errors
      } catch let error as JournalError {
        errors.append(error)
      }
      for error in errors where error.code == .corrupt || error.code == .sequenceBreak {
        #expect(error.file != nil && error.offset != nil, "seed \(seed): unlocated \(error)")
      }
    }
  }

  @Test func openingNoticesASealedSegmentCutShort() throws {
    let dir = TemporaryDirectory("sealed")
    var options = JournalOptions(durability: .none)
    options.segmentTargetBytes = 2048
    let journal = try Journal(directory: dir.path, options: options)
    for i in 0..<100 {
      try journal.appendAndWait([NewRecord(timestamp: Int64(i), payload: Array(repeating: UInt8(i), count: 90))])
    }
    journal.close()
    let segments = Files.list(dir.path).filter { $0.hasSuffix(".lz4") }
    try #require(segments.count >= 3)
    let victim = dir.appending(segments[1])
    let bytes = try Files.read(victim)
    try Files.write(Array(bytes.dropLast(30)), to: victim)
    #expect {
      try Journal(directory: dir.path, options: options)
    } throws: { error in
      guard let error = error as? JournalError else { return false }
      return (error.code == .corrupt || error.code == .sequenceBreak) && error.file == segments[1]
        && error.offset != nil
    }
  }
}
