import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// `Replay.rebuild(_:records:)`, a state rebuilt from records kept outside a journal (another
/// database, an export): the same state as the journal's own replay, and the same errors, in the
/// order the records hold them, whatever batch they fall in.
@Suite struct RebuildFromRecordsTests {
  private let command = Identifier(high: 1, low: 9)

  private func payload(_ event: some Event) throws -> [UInt8] {
    try EventRecord.encode(event, origin: .user, commandID: command)
  }

  /// Every kind of record a journal holds: events of current types in runs and interleaved, old
  /// versions to upcast, a hand-coded event, checkpoint records; more than two batches of them.
  private func records() throws -> [JournalRecord] {
    var payloads: [[UInt8]] = []
    let accounts = (0..<40).map { Identifier(high: 0, low: UInt64($0 + 1)) }
    for (index, id) in accounts.enumerated() {
      payloads.append(try payload(AccountOpened(id: id, owner: "owner \(index)", labels: index % 3 == 0 ? ["a"] : [])))
    }
    for step in 0..<2_600 {
      let account = accounts[step % accounts.count]
      switch step % 7 {
      case 0: payloads.append(try payload(DepositedV1(account: account, cents: step)))
      case 1: payloads.append(try payload(DepositedV2(account: account, amount: step)))
      case 2: payloads.append(try payload(BalanceSet(account: account, balance: step)))
      case 3:
        payloads.append(
          try EventRecord.encode(
            CheckpointMark(fingerprint: StateDigest(bytes: Array(repeating: 7, count: 32))), origin: .rewind,
            commandID: command))
      default: payloads.append(try payload(Deposited(account: account, amount: step, memo: "m\(step)")))
      }
    }
    payloads.append(try payload(AccountClosed(id: accounts[5])))
    return payloads.enumerated().map {
      JournalRecord(sequence: UInt64($0.offset + 1), timestamp: 1, payload: $0.element)
    }
  }

  @Test func rebuildsTheStateTheJournalsReplayRebuilds() throws {
    let records = try records()
    let temporary = TemporaryDirectory()
    let directory = temporary.appending("journal")
    let journal = try Journal(directory: directory)
    try journal.appendAndWait(records.map { NewRecord(timestamp: $0.timestamp, payload: $0.payload) })
    journal.close()
    let fromJournal = try Replay.rebuild(Ledger.self, directory: directory)
    let fromRecords = try Replay.rebuild(Ledger.self, records: records)
    #expect(fromRecords.lastSequence == UInt64(records.count))
    #expect(fromRecords.state == fromJournal.state)
    #expect(fromRecords.state.accounts.count == 39)
    #expect(
      try Replay.rebuild(Ledger.self, records: records.prefix(1_500)).state
        == Replay.rebuild(Ledger.self, directory: directory, through: 1_500).state)
    #expect(try Replay.rebuild(Ledger.self, records: []).lastSequence == 0)
  }

  /// A record out of sequence is `.outOfSequence` at its sequence number (it was `.malformedRecord`,
  /// "not an event record", though it may be a good event: a review of the events, Dec 7); an
  /// event the model
  /// cannot read is located by its own. Whichever comes first in the records is the error, in
  /// the same batch or not.
  @Test func theFirstBadRecordIsTheError() throws {
    var records = try records()
    var gap = records
    gap.remove(at: 1_800)
    let skipped = #expect(throws: ReplayError.self) { try Replay.rebuild(Ledger.self, records: gap) }
    #expect(skipped?.code == .outOfSequence && skipped?.sequence == 1_802, "\(String(describing: skipped))")
    #expect(
      skipped?.description == "record at sequence 1802 is out of sequence (expected sequence 1801)",
      "\(String(describing: skipped))")

    let unknown = try EventRecord.encode(Unknown(), origin: .user, commandID: command)
    records[1_790].payload = unknown
    let both = records.enumerated().filter { $0.offset != 1_795 }.map(\.element)
    let first = #expect(throws: ReplayError.self) { try Replay.rebuild(Ledger.self, records: both) }
    #expect(first?.code == .unknownEvent && first?.sequence == 1_791, "\(String(describing: first))")

    records[40].payload = Array(records[40].payload.prefix(5))
    let cut = #expect(throws: ReplayError.self) { try Replay.rebuild(Ledger.self, records: records) }
    #expect(cut?.sequence == 41, "\(String(describing: cut))")
  }

  private struct Unknown: Event {
    static let name = "account.audited"
  }
}
