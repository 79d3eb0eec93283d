import RewindJournal
import Testing

@testable import Rewind

/// Batches the reading thread decodes for a replay that only applies (`decodeApplicable`): events
/// in lists by type, other records whole. Applied in order they must give what decoding and
/// applying each record on its own gives, and fail on the same record with the same error.
@Suite struct ApplicableBatchTests {
  private let first = Identifier(high: 0, low: 1)
  private let second = Identifier(high: 0, low: 2)
  private let command = Identifier(high: 1, low: 1)

  private func records(_ payloads: [[UInt8]]) -> [JournalRecord] {
    payloads.enumerated().map { JournalRecord(sequence: UInt64($0.offset + 1), timestamp: 1, payload: $0.element) }
  }

  /// Events of several types interleaved (so each list is taken from out of turn), an old version
  /// to upcast and a checkpoint.
  private func mixed() throws -> [JournalRecord] {
    let checkpoint = Checkpoint(
      digest: StateDigest(bytes: Array(repeating: 1, count: 32)),
      fingerprint: StateDigest(bytes: Array(repeating: 2, count: 32)))
    return records([
      try EventRecord.encode(AccountOpened(id: first, owner: "ada", labels: ["a"]), origin: .user, commandID: command),
      try EventRecord.encode(Deposited(account: first, amount: 5, memo: "m"), origin: .user, commandID: command),
      try EventRecord.encode(
        AccountOpened(id: second, owner: "bob", labels: ["a", "b"]), origin: .user, commandID: command),
      try EventRecord.encode(DepositedV1(account: second, cents: 7), origin: .sync, commandID: command),
      try EventRecord.encode(checkpoint, origin: .rewind, commandID: command),
      EventRecord.encodeFields(BalanceSet(account: first, balance: 40), origin: .user, commandID: command),
      try EventRecord.encode(Deposited(account: second, amount: 2, memo: ""), origin: .user, commandID: command),
      try EventRecord.encode(AccountClosed(id: first), origin: .user, commandID: command),
    ])
  }

  @Test func appliesLikeRecordByRecord() throws {
    let registry = Ledger.makeRegistry()
    let tables = registry.tables
    let records = try mixed()

    var expected = Ledger()
    var context = ApplyContext(recording: false)
    for record in records {
      if case .event(let recorded) = try decodeRecord(record, tables: tables, registry: registry) {
        tables.apply(recorded.event, to: &expected, context: &context)
      }
    }

    var batch = try decodeApplicable(records, tables: tables, registry: registry)
    #expect(batch.others.count == 2)  // the old version and the checkpoint
    var state = Ledger()
    var sequences: [UInt64] = []
    while let sequence = batch.applyNext(to: &state, tables: tables, context: &context) { sequences.append(sequence) }
    #expect(sequences == Array(1...UInt64(records.count)))
    #expect(state.accounts.all() == expected.accounts.all())
    #expect(state.accounts.find(id: second)?.balance == 9)
    #expect(state.accounts.find(id: first) == nil)
    #expect(state.accounts.count(inGroup: "b") == 1)
  }

  @Test func failsOnTheSameRecordAsDecodingOneByOne() throws {
    let registry = Ledger.makeRegistry()
    var payloads = try mixed().map(\.payload)
    payloads[5] = Array(payloads[5].dropLast(3))  // a current event whose body does not decode
    let records = records(payloads)
    let whole = #expect(throws: ReplayError.self) {
      try decodeReversed(records, tables: registry.tables, registry: registry)
    }
    let applicable = #expect(throws: ReplayError.self) {
      try decodeApplicable(records, tables: registry.tables, registry: registry)
    }
    #expect(whole?.code == .undecodableEvent)
    #expect(applicable?.code == whole?.code)
    #expect(applicable?.sequence == 6)
    #expect(applicable?.description == whole?.description)
  }

  private func applyRest(
    _ batch: inout ApplicableBatch, to state: inout Ledger, tables: EventTables, context: inout ApplyContext
  ) -> (count: Int, lastSequence: UInt64)? {
    withUnsafeMutablePointer(to: &state) {
      batch.applyRest(to: UnsafeMutableRawPointer($0), tables: tables, context: &context)
    }
  }

  /// Runs of events of one type, other records between them: `applyRest` (a call per run) gives
  /// what `applyNext` one record at a time gives, from the start or from within a run, and says how
  /// many records it applied and the last one's sequence number.
  @Test func appliesRunsLikeOneByOne() throws {
    let registry = Ledger.makeRegistry()
    let tables = registry.tables
    let deposits = try (1...6).map {
      try EventRecord.encode(Deposited(account: first, amount: $0, memo: ""), origin: .user, commandID: command)
    }
    let reset = EventRecord.encodeFields(BalanceSet(account: first, balance: 100), origin: .user, commandID: command)
    let old = try EventRecord.encode(DepositedV1(account: first, cents: 1_000), origin: .sync, commandID: command)
    let mixed = try mixed().map(\.payload)
    // The mixed records but the last (which closes `first`), then runs of 3, 1 and 2 deposits to
    // `first` with a reset and an old version between them.
    var payloads: [[UInt8]] = mixed.dropLast()
    payloads += deposits[..<3]
    payloads += [reset, deposits[3], old]
    payloads += deposits[4...]
    let records = records(payloads)
    for skipped in [0, 1, 3, 4, records.count - 1, records.count] {
      var expected = Ledger()
      var context = ApplyContext(recording: false)
      var oneByOne = try decodeApplicable(records, tables: tables, registry: registry)
      while oneByOne.applyNext(to: &expected, tables: tables, context: &context) != nil {}

      var batch = try decodeApplicable(records, tables: tables, registry: registry)
      var state = Ledger()
      for _ in 0..<skipped { _ = batch.applyNext(to: &state, tables: tables, context: &context) }
      let rest = applyRest(&batch, to: &state, tables: tables, context: &context)
      if skipped == records.count {
        #expect(rest == nil)
      } else {
        #expect(rest?.count == records.count - skipped)
        #expect(rest?.lastSequence == UInt64(records.count))
      }
      #expect(state.accounts.all() == expected.accounts.all(), "after \(skipped) one by one")
      #expect(state.accounts.count(inGroup: "b") == expected.accounts.count(inGroup: "b"))
      // Everything is applied: nothing left for either.
      #expect(batch.applyNext(to: &state, tables: tables, context: &context) == nil)
      #expect(applyRest(&batch, to: &state, tables: tables, context: &context) == nil)
    }
    // The order within and between runs shows in the balance: the mixed records leave `first` at
    // 40, the reset comes after 1 + 2 + 3 and before 4, the old version (1,000) and 5 + 6.
    var state = Ledger()
    var context = ApplyContext(recording: false)
    var batch = try decodeApplicable(records, tables: tables, registry: registry)
    _ = applyRest(&batch, to: &state, tables: tables, context: &context)
    #expect(state.accounts.find(id: first)?.balance == 1_115)
    #expect(state.accounts.find(id: second)?.balance == 9)
  }

  /// A batch's events of one type outgrow the room a list starts with (16) and still come out in
  /// order.
  @Test func listsGrowInOrder() throws {
    let registry = Ledger.makeRegistry()
    let deposits = try (1...40).map {
      try EventRecord.encode(Deposited(account: first, amount: $0, memo: ""), origin: .user, commandID: command)
    }
    let opened = try EventRecord.encode(
      AccountOpened(id: first, owner: "ada", labels: []), origin: .user, commandID: command)
    let closed = EventRecord.encodeFields(BalanceSet(account: first, balance: 0), origin: .user, commandID: command)
    // The balance is set to 0 after the first 20 deposits: the sum after it tells the order.
    let records = records([opened] + deposits[..<20] + [closed] + deposits[20...])
    var batch = try decodeApplicable(records, tables: registry.tables, registry: registry)
    var state = Ledger()
    var context = ApplyContext(recording: false)
    while batch.applyNext(to: &state, tables: registry.tables, context: &context) != nil {}
    #expect(state.accounts.find(id: first)?.balance == (21...40).reduce(0, +))
  }
}
