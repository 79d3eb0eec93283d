import RewindTestSupport
import Testing

@testable import RewindJournal

/// `JournalReader.end()` names the batch that holds the last record, and `holds(_:)` finds it
/// again while the journal is unchanged.
@Suite struct JournalEndTests {
  /// An empty journal's end has no batch. A journal whose last segment holds no batch yet (a
  /// writer that rolled over leaves it so until its frame is written) ends with the last batch of
  /// the segment before it.
  @Test func theEndNamesTheBatchThatHoldsTheLastRecord() throws {
    let dir = TemporaryDirectory("end")
    let journal = try Journal(directory: dir.path)
    #expect(try JournalReader(directory: dir.path).end() == JournalEnd(lastSequence: 0, batch: nil))
    try journal.appendAndWait([NewRecord(timestamp: 1, payload: [1]), NewRecord(timestamp: 2, payload: [2])])
    try journal.appendAndWait([NewRecord(timestamp: 3, payload: [3])])
    journal.close()
    let reader = try JournalReader(directory: dir.path)
    let end = try reader.end()
    #expect(end.lastSequence == 3)
    let batch = try #require(end.batch)
    #expect(batch.segment == 1)
    #expect(batch.header.sequences == 3...3)
    #expect(try reader.holds(batch))

    let next = SegmentHeader(journalID: try reader.id, firstSequence: 4).encoded()
    try Files.write(next, to: dir.path + "/" + Layout.segmentName(firstSequence: 4))
    #expect(try reader.end() == end)
    #expect(try reader.holds(batch))
  }
}
