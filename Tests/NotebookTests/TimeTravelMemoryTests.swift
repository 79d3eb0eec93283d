import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

@testable import Notebook
@testable import Rewind

@Suite struct TimeTravelMemoryTests {
  /// A journal of `edits` 1 KiB body edits over 20 notes: the state stays small whatever its length.
  /// Encoding and compressing tens of thousands of events takes seconds of a debug build, so the
  /// tests call this on a thread of its own (`onOwnThread`): on one of the cooperative pool's two,
  /// it held up every other test's awaits.
  private static func writeJournal(_ directory: String, edits: Int) throws {
    let journal = try Journal(directory: directory, options: JournalOptions(durability: .none))
    defer { journal.close() }
    let command = Identifier(high: 1, low: 1)
    let book = NotebookID(Identifier(high: 2, low: 1))
    var records = [
      NewRecord(
        timestamp: 1,
        payload: try EventRecord.encode(
          NotebookCreated(id: book, title: "book"), origin: .user, commandID: command))
    ]
    let notes = (1...20).map { NoteID(Identifier(high: 3, low: UInt64($0))) }
    for id in notes {
      records.append(
        NewRecord(
          timestamp: 1,
          payload: try EventRecord.encode(
            NoteCreated(id: id, notebook: book, title: "n", body: "", tags: []), origin: .user, commandID: command)))
    }
    try journal.appendAndWait(records)
    var random = SeededGenerator(seed: 77)
    var written = 0
    while written < edits {
      var batch: [NewRecord] = []
      for _ in 0..<min(500, edits - written) {
        let body = String(decoding: random.eventLikePayload(1024), as: UTF8.self)
        batch.append(
          NewRecord(
            timestamp: 2,
            payload: try EventRecord.encode(
              NoteBodyEdited(id: notes[written % notes.count], body: body), origin: .user, commandID: command)))
        written += 1
      }
      try journal.appendAndWait(batch)
    }
  }

  private func peakMemory(replaying directory: String) async throws -> (records: Int, kib: Int) {
    let child = try #require(ChildProcess.builtProduct("replay-child"))
    let process = try ChildProcess(executable: child, arguments: ["memory", directory])
    #expect(try await process.waitForLine(timeout: 120) { $0.hasPrefix("records ") })
    let fields = try #require(process.lines.first { $0.hasPrefix("records ") }).split(separator: " ")
    return (Int(fields[1]) ?? -1, Int(fields[3]) ?? -1)
  }

  /// Six times the records (about 50 MiB more of decoded event bodies) must not cost memory in
  /// proportion: replay holds the state plus a fixed number of decoded batches.
  @Test func replayOfALargeJournalKeepsMemoryBounded() async throws {
    let small = TemporaryDirectory()
    let large = TemporaryDirectory()
    try await onOwnThread { try Self.writeJournal(small.path, edits: 10_000) }
    try await onOwnThread { try Self.writeJournal(large.path, edits: 60_000) }
    let smallPeak = try await peakMemory(replaying: small.path)
    let largePeak = try await peakMemory(replaying: large.path)
    #expect(smallPeak.records == 10_021 && largePeak.records == 60_021)
    #expect(smallPeak.kib > 0 && largePeak.kib > 0)
    print(
      "replay peak RSS: \(smallPeak.records) records \(smallPeak.kib) KiB, \(largePeak.records) records \(largePeak.kib) KiB"
    )
    #expect(largePeak.kib - smallPeak.kib < 16 * 1024, "\(smallPeak) vs \(largePeak)")
  }
}
