import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// Writes records as an older build of the app would have: raw events, by hand.
private func writeJournal(_ directory: String, _ payloads: [[UInt8]]) throws {
  let journal = try Journal(directory: directory)
  defer { journal.close() }
  try journal.appendAndWait(payloads.map { NewRecord(timestamp: 1, payload: $0) })
}

private let account = Identifier(high: 0, low: 1)

private func opened() throws -> [UInt8] {
  try EventRecord.encode(
    AccountOpened(id: account, owner: "ada", labels: []), origin: .user, commandID: Identifier(high: 1, low: 1))
}

@Test func oldVersionsDecodeThroughUpcasterChains() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let command = Identifier(high: 1, low: 2)
  try writeJournal(
    directory,
    [
      try opened(),
      try EventRecord.encode(DepositedV1(account: account, cents: 100), origin: .sync, commandID: command),
      try EventRecord.encode(DepositedV2(account: account, amount: 20), origin: .sync, commandID: command),
      try EventRecord.encode(Deposited(account: account, amount: 3, memo: "m"), origin: .sync, commandID: command),
    ])
  let events = try Replay.events(of: Ledger.self, directory: directory)
  #expect(events.map(\.envelope.version) == [1, 1, 2, 3])
  #expect(events[1].event.isEqual(to: Deposited(account: account, amount: 100, memo: "")))
  #expect(events[2].event.isEqual(to: Deposited(account: account, amount: 20, memo: "")))
  let manager = try Manager<Ledger>(directory: directory)
  #expect(manager.state.accounts.find(id: account)?.balance == 123)
  manager.close()
}

/// Rewind's own checkpoint records too: a later version of one was read as version 1 whatever it
/// held (a digest by another algorithm reported as replay diverging).
@Test(arguments: [
  ("account.mystery", UInt32(1)), ("account.deposited", UInt32(9)), ("account.opened", UInt32(0)),
  ("rewind.checkpoint", UInt32(2)), ("rewind.checkpoint.mark", UInt32(9)), ("rewind.checkpoint.digest", UInt32(2)),
])
func unknownEventIsALocatedError(name: String, version: UInt32) throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  var unknown = FieldBytesWriter()
  unknown.append(EventRecord.layoutVersion)
  unknown.appendString(name)
  unknown.appendVarint(UInt64(version))
  unknown.appendString("user")
  unknown.appendFixed64(0)
  unknown.appendFixed64(7)
  unknown.bytes += try FieldEncoder().encode(["anything": 1])
  try writeJournal(directory, [try opened(), unknown.bytes])

  let error = #expect(throws: ReplayError.self) { try Replay.rebuild(Ledger.self, directory: directory) }
  #expect(error?.code == .unknownEvent)
  #expect(error?.sequence == 2)
  #expect(error?.name == name)
  #expect(error?.version == version)
  #expect(error?.description.contains("sequence 2") == true)
  #expect(error?.description.contains(name) == true)
  // Opening a manager on it fails the same way, and releases the journal's lock.
  #expect(throws: ReplayError.self) { try Manager<Ledger>(directory: directory) }
  #expect(throws: ReplayError.self) { try Manager<Ledger>(directory: directory) }
  // An audit still renders it field by field.
  let record = try #require(try JournalReader(directory: directory).record(2))
  let json = try EventRecord.json(sequence: record.sequence, timestamp: record.timestamp, payload: record.payload)
  #expect(json.contains("\"name\":\"\(name)\""))
  #expect(json.hasSuffix("\"event\":{\"anything\":1}}"))
}

/// A current event whose body does not decode: the same located error whether the record is
/// decoded into its apply (`rebuild`) or decoded for the caller to look at (`events`).
@Test func undecodableCurrentEventIsALocatedError() throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let deposited = try EventRecord.encode(
    Deposited(account: account, amount: 3, memo: "memo"), origin: .sync, commandID: Identifier(high: 1, low: 3))
  try writeJournal(directory, [try opened(), Array(deposited.dropLast(3))])
  let rebuilt = #expect(throws: ReplayError.self) { try Replay.rebuild(Ledger.self, directory: directory) }
  let listed = #expect(throws: ReplayError.self) { try Replay.events(of: Ledger.self, directory: directory) }
  for error in [rebuilt, listed] {
    #expect(error?.code == .undecodableEvent)
    #expect(error?.sequence == 2)
    #expect(error?.name == Deposited.name)
    #expect(error?.version == Deposited.version)
  }
}

/// A record that does not decode after others in the same batch: whichever thread decodes the
/// batch, the records before it are handed out (or applied), then the error comes in its place.
/// Nothing is taken until the reading thread has filled the queue, so it is ahead and decodes every
/// batch after the first itself (the second, with the bad record, it hands over raw).
@Test(arguments: [false, true])
func recordsBeforeAnUndecodableOneComeFirstWhoeverDecodes(applyOnly: Bool) throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  var payloads = [try opened()]
  for amount in 1...15 {
    payloads.append(
      try EventRecord.encode(
        Deposited(account: account, amount: amount, memo: "memo"), origin: .sync, commandID: Identifier(high: 1, low: 4)
      ))
  }
  payloads[6] = Array(payloads[6].dropLast(3))  // sequence 7, in the second batch of 4
  try writeJournal(directory, payloads)
  var options = ReplayOptions()
  options.recordsPerBatch = 4
  options.batchesInFlight = 2
  let records = try DecodedRecords(
    registry: Ledger.makeRegistry(), reader: JournalReader(directory: directory), first: 1, last: 16,
    options: options, applyOnly: applyOnly)
  records.waitForReadAhead()
  var seen: [UInt64] = []
  var state = Ledger()
  var context = ApplyContext(recording: false)
  let error = #expect(throws: ReplayError.self) {
    if applyOnly {
      while let sequence = try records.applyNext(to: &state, context: &context) { seen.append(sequence) }
    } else {
      while let record = try records.next() { seen.append(record.sequence) }
    }
  }
  #expect(seen == Array(1...6))
  #expect(error?.code == .undecodableEvent)
  #expect(error?.sequence == 7)
  if applyOnly { #expect(state.accounts.find(id: account)?.balance == 15) }
}

@Test func malformedRecordIsALocatedError() throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  try writeJournal(directory, [try opened(), [1, 200]])
  let error = #expect(throws: ReplayError.self) { try Replay.rebuild(Ledger.self, directory: directory) }
  #expect(error?.code == .malformedRecord)
  #expect(error?.sequence == 2)
}

@Test func recordRendersAsJSON() throws {
  let payload = try EventRecord.encode(
    Deposited(account: account, amount: -5, memo: "a \"quoted\" memo"), origin: Origin("webhook"),
    commandID: Identifier(high: 0xAB, low: 0xCD))
  let json = try EventRecord.json(sequence: 4, timestamp: 99, payload: payload)
  #expect(
    json
      == #"{"sequence":4,"timestamp":99,"name":"account.deposited","version":3,"origin":"webhook","command":"00000000000000ab00000000000000cd","event":{"account":"00000000000000000000000000000001","amount":-5,"memo":"a \"quoted\" memo"}}"#
  )
}

/// A chain of upcasters whose steps do not meet (two types declared for version 2 of one event,
/// one the first step gives and another the second takes): replaying a version-1 record trapped
/// ("upcaster … fed a …"), where every other record that does not decode is a located error.
private struct Tallied: Event {
  static let name = "thing.tallied"
  static let version: UInt32 = 3
  var count: Int
}
private struct TallyV1: Event {
  static let name = "thing.tallied"
  var count: Int
}
private struct TallyV2: Event {
  static let name = "thing.tallied"
  static let version: UInt32 = 2
  var count: Int
}
private struct TallyV2Elsewhere: Event {
  static let name = "thing.tallied"
  static let version: UInt32 = 2
  var total: Int
}
private struct TallyOfCounts: Model {
  var count = ValueStore<Int>(name: "count", initial: 0)
  static func registerEvents(in registry: inout EventRegistry<TallyOfCounts>) {
    registry.register(Tallied.self) { model, event, context in model.count.set(event.count, context: &context) }
    registry.registerUpcaster(from: TallyV1.self, to: TallyV2.self) { TallyV2(count: $0.count) }
    registry.registerUpcaster(from: TallyV2Elsewhere.self, to: Tallied.self) { Tallied(count: $0.total) }
  }
}

@Test func upcastersThatDoNotMeetAreALocatedErrorNotATrap() throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let command = Identifier(high: 9, low: 9)
  try writeJournal(
    directory,
    [
      try EventRecord.encode(Tallied(count: 1), origin: .user, commandID: command),
      try EventRecord.encode(TallyV2Elsewhere(total: 2), origin: .user, commandID: command),
      try EventRecord.encode(TallyV1(count: 3), origin: .user, commandID: command),
    ])
  // Versions 3 and 2 decode; version 1 goes through both steps, which do not meet.
  #expect(try Replay.rebuild(TallyOfCounts.self, directory: directory, through: 2).state.count.value == 2)
  let error = #expect(throws: ReplayError.self) { try Replay.rebuild(TallyOfCounts.self, directory: directory) }
  #expect(
    error?.code == .undecodableEvent && error?.sequence == 3 && error?.version == 1, "\(String(describing: error))")
  #expect(
    error?.description.contains("takes a TallyV2Elsewhere, but the one before it gives a TallyV2") == true,
    "\(String(describing: error))")
}
