import RewindTestSupport
import Testing

@testable import RewindJournal

/// Writes batches of varied sizes across many segment rolls and reads them back from everywhere.
@Suite struct RoundTripTests {
  static func smallSegments(_ durability: Durability = .none) -> JournalOptions {
    var options = JournalOptions(durability: durability)
    options.segmentTargetBytes = 16 << 10
    options.indexIntervalBytes = 2 << 10
    options.frameTargetBytes = 4 << 10
    return options
  }

  /// Appends `batches` random batches; returns every record as it should read back.
  static func fill(_ journal: Journal, batches: Int, seed: UInt64) async throws -> [JournalRecord] {
    var random = SeededGenerator(seed: seed)
    var expected: [JournalRecord] = []
    var clock: Int64 = 1_700_000_000_000_000_000
    for _ in 0..<batches {
      let count = Int.random(in: 1...20, using: &random)
      var batch: [NewRecord] = []
      for _ in 0..<count {
        clock += Int64.random(in: 0...5_000_000, using: &random)
        batch.append(
          NewRecord(timestamp: clock, payload: random.eventLikePayload(Int.random(in: 0...300, using: &random))))
      }
      let range = try await journal.append(batch)
      #expect(range.count == count)
      #expect(range.lowerBound == UInt64(expected.count + 1), "seed \(seed)")
      for (sequence, record) in zip(range, batch) {
        expected.append(JournalRecord(sequence: sequence, timestamp: record.timestamp, payload: record.payload))
      }
    }
    return expected
  }

  static func readAll(_ cursor: JournalCursor) throws -> [JournalRecord] {
    var out: [JournalRecord] = []
    while let record = try cursor.next() { out.append(record) }
    return out
  }

  @Test func roundTripAcrossSegmentRolls() async throws {
    let dir = TemporaryDirectory()
    let journal = try Journal(directory: dir.path, options: Self.smallSegments())
    let expected = try await Self.fill(journal, batches: 300, seed: 1)
    #expect(journal.lastSequence == UInt64(expected.count))
    journal.close()
    let segments = Files.list(dir.path).filter { $0.hasSuffix(".lz4") }
    #expect(segments.count > 5, "the test should cross several segment rolls")
    let reader = try JournalReader(directory: dir.path)
    #expect(try Self.readAll(reader.records()) == expected)
    #expect(try reader.lastSequence() == UInt64(expected.count))
  }

  @Test func readFromEverySequenceNumber() async throws {
    let dir = TemporaryDirectory()
    let journal = try Journal(directory: dir.path, options: Self.smallSegments())
    let expected = try await Self.fill(journal, batches: 80, seed: 2)
    let reader = try JournalReader(directory: dir.path)
    for start in 1...(expected.count + 1) {
      let cursor = try reader.records(from: UInt64(start))
      let first = try cursor.next()
      #expect(first == (start <= expected.count ? expected[start - 1] : nil), "from \(start)")
    }
    #expect(try Self.readAll(reader.records(from: 37)) == Array(expected[36...]))
  }

  @Test func readSinceAnyTime() async throws {
    let dir = TemporaryDirectory()
    let journal = try Journal(directory: dir.path, options: Self.smallSegments())
    let expected = try await Self.fill(journal, batches: 60, seed: 3)
    let reader = try JournalReader(directory: dir.path)
    var random = SeededGenerator(seed: 33)
    for _ in 0..<100 {
      let pick =
        expected[Int.random(in: 0..<expected.count, using: &random)].timestamp
        + Int64.random(in: -1...1, using: &random)
      let naive = expected.firstIndex { $0.timestamp >= pick }.map { Array(expected[$0...]) } ?? []
      #expect(try Self.readAll(reader.records(since: pick)) == naive, "since \(pick)")
    }
  }

  @Test func reopenContinuesTheSequence() async throws {
    let dir = TemporaryDirectory()
    var expected: [JournalRecord] = []
    do {
      let journal = try Journal(directory: dir.path, options: Self.smallSegments())
      expected = try await Self.fill(journal, batches: 50, seed: 4)
    }
    let journal = try Journal(directory: dir.path, options: Self.smallSegments())
    #expect(journal.recovery.isClean)
    #expect(journal.recovery.indexRepairReason == nil)
    #expect(journal.lastSequence == UInt64(expected.count))
    let range = try await journal.append([NewRecord(timestamp: 1, payload: [1, 2, 3])])
    #expect(range == UInt64(expected.count + 1)...UInt64(expected.count + 1))
  }
}
