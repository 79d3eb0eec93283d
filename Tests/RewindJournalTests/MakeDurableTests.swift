import RewindTestSupport
import Testing

@testable import RewindJournal

/// `JournalReader.makeDurable(through:)`: what a snapshot writer calls so that a snapshot never
/// outlives the records it stands for.
@Suite struct MakeDurableTests {
  @Test func syncsTheLastSegmentForItsOwnRecordsOnly() async throws {
    let directory = TemporaryDirectory("make-durable")
    let journal = try Journal(
      directory: directory.path, options: JournalFixtures.options(.none, segmentBytes: 8 << 10, frameBytes: 1 << 10))
    defer { journal.close() }
    let records = try await JournalFixtures.write(journal, batches: 300, seed: 91)
    let segments = JournalFixtures.segments(directory.path)
    try #require(segments.count >= 2, "\(segments)")
    let last = try #require(segments.last)
    let lastFirst = try #require(Layout.firstSequence(ofSegmentNamed: last))

    let io = SyncRecordingFileIO()
    let reader = try JournalReader(directory: directory.path, io: io)
    try reader.makeDurable(through: lastFirst - 1)
    #expect(io.events.isEmpty, "a record of a sealed segment, synced when it was sealed: \(io.events)")
    try reader.makeDurable(through: UInt64(records.count))
    #expect(io.events == ["sync " + last], "the live writer's segment, unsynced under `none`")
  }

  /// A file named like a later segment that is none (here a copy of the first segment) was taken
  /// for the last segment: it was synced, or left the writer's segment unsynced when its name was
  /// past the records, and a snapshot could outlive them. The segment by its header is synced.
  @Test(arguments: ["inside", "after"])
  func syncsTheLastSegmentByItsHeaderNotAFileNamedLikeALaterOne(place: String) async throws {
    let directory = TemporaryDirectory("make-durable-stray-\(place)")
    let journal = try Journal(
      directory: directory.path, options: JournalFixtures.options(.none, segmentBytes: 8 << 10, frameBytes: 1 << 10))
    defer { journal.close() }
    let records = try await JournalFixtures.write(journal, batches: 300, seed: 92)
    let segments = JournalFixtures.segments(directory.path)
    let last = try #require(segments.last)
    let lastFirst = try #require(Layout.firstSequence(ofSegmentNamed: last))
    let count = UInt64(records.count)
    try #require(count > lastFirst + 1)
    let stray = Layout.segmentName(firstSequence: place == "inside" ? lastFirst + 1 : count + 100)
    try Files.write(try Files.read(directory.appending(segments[0])), to: directory.appending(stray))

    let io = SyncRecordingFileIO()
    try JournalReader(directory: directory.path, io: io).makeDurable(through: count)
    #expect(io.events == ["sync " + last], "\(io.events)")
  }
}
