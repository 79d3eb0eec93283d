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
}
