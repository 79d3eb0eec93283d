import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// A cursor skipping to its start in the last segment checks each frame it passes (a whole header
/// there may front a frame not written yet). One that failed its checksum, with a valid batch
/// after it, stopped every cursor whose start lay past it until the next index entry: a snapshot
/// taken there could not be started from (RELIABILITY.md, entry 306's "Left"). Such a frame is
/// now stepped over by its header (checksum holding, continuing the sequence) when all its
/// records lie before the start; the next header is read at its declared extent, as any other.
@Suite struct DamageBeforeTheStartTests {
  /// One segment, its only index entry at its start, 12 batches of 1-3 records, each a frame.
  static func journal(_ name: String) async throws -> (
    dir: TemporaryDirectory, records: [JournalRecord], path: String, frames: [JournalFixtures.Frame]
  ) {
    let dir = TemporaryDirectory(name)
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(indexBytes: 1 << 20))
    let records = try await JournalFixtures.write(journal, batches: 12, seed: 306)
    journal.close()
    let segment = try #require(JournalFixtures.segments(dir.path).last)
    let frames = try JournalFixtures.frames(of: Files.read(dir.appending(segment)))
    try #require(frames.count == 12)
    return (dir, records, dir.appending(segment), frames)
  }

  /// A byte of the frame's data, past its batch header: flipped, the frame fails its checksum.
  static func data(_ frame: JournalFixtures.Frame) -> Int {
    frame.offset + Layout.batchHeaderSize + (frame.end - frame.offset - Layout.batchHeaderSize) / 2
  }
  /// A byte of the batch header's checksummed fields (its record count).
  static func header(_ frame: JournalFixtures.Frame) -> Int { frame.offset + 16 }

  /// Reads from `start` and expects the first damaged frame, located, as before the change.
  static func expectFirstDamage(
    _ reader: JournalReader, from start: UInt64, _ frame: JournalFixtures.Frame,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let cursor = try? reader.records(from: start)
    let error = journalError("from \(start)", sourceLocation: sourceLocation) {
      _ = try JournalFixtures.readAll(#require(cursor))
    }
    #expect(
      error?.offset == Int64(frame.offset), "from \(start): \(String(describing: error))",
      sourceLocation: sourceLocation)
    #expect(error?.sequences?.lowerBound == frame.header.firstSequence, sourceLocation: sourceLocation)
    #expect(
      cursor?.expectedSequence == frame.header.firstSequence, "the first sequence the damage took",
      sourceLocation: sourceLocation)
  }

  @Test func aStartPastDamagedFramesIsReached() async throws {
    let (dir, records, path, frames) = try await Self.journal("past-damage")
    try JournalFixtures.flip(path, at: Self.data(frames[5]))
    try JournalFixtures.flip(path, at: Self.data(frames[6]))
    let reader = try JournalReader(directory: dir.path)
    let after = frames[6].header.lastSequence + 1
    for start in after...UInt64(records.count) {
      #expect(try JournalFixtures.readAll(reader.records(from: start)) == Array(records[Int(start - 1)...]))
      #expect(try reader.record(start) == records[Int(start - 1)])
    }
    let since = frames[6].header.maxTimestamp + 1
    #expect(try JournalFixtures.readAll(reader.records(since: since)) == records.filter { $0.timestamp >= since })
    // A start inside or before the damage meets it, and names the first damaged frame.
    for start in [1, frames[5].header.firstSequence, frames[6].header.firstSequence, frames[6].header.lastSequence] {
      Self.expectFirstDamage(reader, from: start, frames[5])
    }
    // The end is looked for as before: the damage after the last index entry hides it.
    #expect(throws: JournalError.self) { try reader.lastSequence() }
    guard case .failure(let hidden) = try reader.readableEnd() else {
      Issue.record("the end read past the damage")
      return
    }
    #expect(hidden.offset == Int64(frames[5].offset))
  }

  /// Only a header whose checksum holds is stepped by: a damaged header, or a damaged header at
  /// the extent of a stepped frame, stops the cursor, which names the first damage.
  @Test func aHeaderThatDoesNotHoldIsNoStep() async throws {
    let (dir, _, path, frames) = try await Self.journal("no-step")
    let after = frames[6].header.lastSequence + 1
    try JournalFixtures.flip(path, at: Self.header(frames[5]))
    Self.expectFirstDamage(try JournalReader(directory: dir.path), from: after, frames[5])
    try JournalFixtures.flip(path, at: Self.header(frames[5]))  // mended
    try JournalFixtures.flip(path, at: Self.data(frames[5]))
    try JournalFixtures.flip(path, at: Self.header(frames[6]))
    Self.expectFirstDamage(try JournalReader(directory: dir.path), from: after, frames[5])
  }

  /// A damaged frame whose raw payload embeds another journal's whole batch is stepped over by
  /// its declared extent: the embedded header is content, never read as a batch.
  @Test func aFrameEmbeddingABatchIsSteppedOverWhole() async throws {
    let made = try await EmbeddedBatchHeaderTests.make(batchesAfter: 3, seed: 3061)
    let carrier = made.carrier
    // A byte of the payload's random prefix, before the embedded chunk.
    let flipped = carrier.offset + Layout.batchHeaderSize + 40
    try #require(made.embedded > flipped)
    try JournalFixtures.flip(made.segmentPath, at: flipped)
    let reader = try JournalReader(directory: made.dir.path)
    let after = carrier.header.lastSequence + 1
    #expect(try JournalFixtures.readAll(reader.records(from: after)) == Array(made.records[Int(after - 1)...]))
    Self.expectFirstDamage(reader, from: carrier.header.firstSequence, carrier)
  }
}
