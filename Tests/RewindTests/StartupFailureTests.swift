import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// A manager whose start-up fails after opening the journal for writing recovered something:
/// the opening's report (a torn tail moved aside, committed records found gone) is the only
/// place that says so, since it rewrote the index without the entries that witnessed the loss.
/// It was lost with the manager that was never returned; the error now carries it.
@Suite struct StartupFailureTests {
  /// The record of an event Ledger does not register.
  static func unknownEvent() throws -> [UInt8] {
    var unknown = FieldBytesWriter()
    unknown.append(EventRecord.layoutVersion)
    unknown.appendString("account.mystery")
    unknown.appendVarint(1)
    unknown.appendString("user")
    unknown.appendFixed64(0)
    unknown.appendFixed64(7)
    unknown.bytes += try FieldEncoder().encode(["anything": 1])
    return unknown.bytes
  }

  /// A Ledger journal whose first record is an event Ledger does not know (so a manager's replay
  /// fails at sequence 1), then 39 records one frame each, densely indexed; its last segment
  /// then cut in the middle of its records, before batches the index names.
  static func unreplayableAndCutShort(_ temporary: TemporaryDirectory) throws -> String {
    let directory = temporary.appending("journal")
    var options = JournalOptions(durability: .none)
    options.indexIntervalBytes = 64
    options.mapsActiveSegment = false
    let journal = try Journal(directory: directory, options: options)
    try journal.appendAndWait([NewRecord(timestamp: 1, payload: try Self.unknownEvent())])
    for index in 2...40 {
      let opened = AccountOpened(id: Identifier(high: 0, low: UInt64(index)), owner: "ada", labels: [])
      let payload = try EventRecord.encode(opened, origin: .user, commandID: Identifier(high: 1, low: UInt64(index)))
      try journal.appendAndWait([NewRecord(timestamp: Int64(index), payload: payload)])
    }
    journal.close()
    let segment = try #require(Files.list(directory).filter { $0.hasSuffix(".lz4") }.sorted().last)
    let bytes = try Files.read(directory + "/" + segment)
    let end = try #require(bytes.lastIndex(where: { $0 != 0 })) + 1
    try Files.write(Array(bytes[..<(end / 2)]), to: directory + "/" + segment)
    return directory
  }

  @Test func aFailedStartUpCarriesWhatOpeningRecovered() throws {
    let temporary = TemporaryDirectory()
    let directory = try Self.unreplayableAndCutShort(temporary)
    let error = try #require(#expect(throws: ReplayError.self) { try Manager<Ledger>(directory: directory) })
    #expect(error.code == .unknownEvent && error.sequence == 1, "\(error)")
    let recovery = try #require(error.openingRecovery, "\(error)")
    let missing = try #require(recovery.missingRecords, "\(recovery)")
    #expect(missing.sequences.lowerBound > 1 && missing.sequences.upperBound <= 40, "\(missing)")
    #expect(error.description.contains(missing.description), "\(error)")

    // The loss was said once, in that error: the next opening finds nothing to report, and fails
    // the same way without a report.
    let again = #expect(throws: ReplayError.self) { try Manager<Ledger>(directory: directory) }
    #expect(again?.openingRecovery == nil, "\(String(describing: again))")
    #expect(again?.description.contains("recovered") == false, "\(String(describing: again))")
  }

  @Test func aCleanOpeningAddsNothingToTheError() throws {
    let temporary = TemporaryDirectory()
    let directory = temporary.appending("journal")
    let journal = try Journal(directory: directory)
    try journal.appendAndWait([NewRecord(timestamp: 1, payload: try Self.unknownEvent())])
    journal.close()
    let error = #expect(throws: ReplayError.self) { try Manager<Ledger>(directory: directory) }
    #expect(error?.openingRecovery == nil, "\(String(describing: error))")
  }
}
