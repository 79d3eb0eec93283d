import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// `TimeMachine.refresh()` against a journal that got shorter under it.
@Suite struct TimeMachineRefreshTests {
  /// A journal of three boxes placed, one frame each.
  static func journal(_ temporary: TemporaryDirectory) throws -> String {
    let directory = temporary.appending("journal")
    let journal = try Journal(directory: directory)
    defer { journal.close() }
    let command = Identifier(high: 1, low: 8)
    for id in 1...3 {
      let payload = try EventRecord.encode(
        ShelfPlaced(crate: false, id: id, label: "box \(id)"), origin: .user, commandID: command)
      try journal.appendAndWait([NewRecord(timestamp: Int64(id), payload: payload)])
    }
    return directory
  }

  /// Repair moved the last frame aside: the time machine, which stood on it, says the records
  /// past the new end are gone instead of going on with a state that shows them.
  @Test func refreshReportsAJournalThatGotShorter() throws {
    let temporary = TemporaryDirectory()
    let directory = try Self.journal(temporary)
    let machine = try TimeMachine<Shelves>(directory: directory)
    #expect(try machine.jump(to: 3).boxes.count == 3)

    let segment = try #require(Files.list(directory).first { $0.hasSuffix(".lz4") })
    var bytes = try Files.read(directory + "/" + segment)
    bytes[bytes.count - 6] ^= 0x20  // in the last frame
    try Files.write(bytes, to: directory + "/" + segment)
    let repair = try Journal.repair(directory: directory)
    try #require(repair.lastSequence == 2, "\(repair)")

    let error = #expect(throws: JournalError.self) { try machine.refresh() }
    #expect(error?.code == .shortened, "\(String(describing: error))")
    #expect(error?.sequences == 3...3, "\(String(describing: error))")
    #expect(error?.description.contains("ends at sequence 2") == true, "\(String(describing: error))")
    #expect(machine.lastSequence == 3, "left as it was")

    let fresh = try TimeMachine<Shelves>(directory: directory)
    #expect(fresh.lastSequence == 2)
    #expect(try fresh.jump(to: 3).boxes.count == 2)
  }

  /// A journal that grew is refreshed as before.
  @Test func refreshSeesAJournalThatGrew() throws {
    let temporary = TemporaryDirectory()
    let directory = try Self.journal(temporary)
    let machine = try TimeMachine<Shelves>(directory: directory)
    let journal = try Journal(directory: directory)
    let payload = try EventRecord.encode(
      ShelfPlaced(crate: true, id: 4, label: "crate"), origin: .user, commandID: Identifier(high: 1, low: 9))
    try journal.appendAndWait([NewRecord(timestamp: 4, payload: payload)])
    journal.close()
    try machine.refresh()
    #expect(machine.lastSequence == 4)
    #expect(try machine.jump(to: 4).crates.count == 1)
  }
}
