import RewindJournal
import RewindTestSupport
import Testing

@testable import RewindCLI

/// `log` and `export` read on through records a writer appended after they began, so with a
/// writer that kept ahead of a slow reader (a pipe into a slow consumer) they did not end (a
/// stress of the tool against a live journal, helper-210, Dec 7: a `log` begun at 146,168
/// records listed 500,000 and ended 220 s after the writer stopped). They read the journal as it
/// ended when they began, as `backup`, `replay` and `tail -n` do.
@Test func logAndExportReadTheJournalAsItEndedWhenTheyBegan() throws {
  let directory = TemporaryDirectory()
  let path = directory.appending("journal")
  let journal = try Journal(directory: path)
  defer { journal.close() }
  func newRecord(_ n: Int) -> NewRecord { NewRecord(timestamp: Int64(n), payload: Array("record \(n)".utf8)) }
  _ = try journal.appendAndWait((1...20).map(newRecord))
  let filter = try EventFilter(Arguments([path], options: EventFilter.options, flags: []))
  let reader = try JournalReader(directory: path)
  var read: [UInt64] = []
  try filter.forEachEvent(in: reader, directory: path) { record, _ in
    read.append(record.sequence)
    // A writer appends while the read goes on: ten records after each one read.
    if record.sequence <= 20 { _ = try journal.appendAndWait((1...10).map { newRecord(20 + $0) }) }
  }
  #expect(read == Array(1...20))
  #expect(try reader.lastSequence() == 220)
}
