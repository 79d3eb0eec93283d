import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// How replay reads the journal in batches (`DecodedRecords`): batch sizes, and where it stops.
@Suite struct ReplayBatchTests {
  private let account = Identifier(high: 0, low: 1)
  private let command = Identifier(high: 1, low: 5)

  /// Appends a frame of `count` deposits (an account opened first if `opening`).
  private func appendFrame(_ directory: String, count: Int, opening: Bool = false) throws {
    var payloads: [[UInt8]] = []
    if opening {
      payloads.append(
        try EventRecord.encode(AccountOpened(id: account, owner: "ada", labels: []), origin: .user, commandID: command))
    }
    for amount in 1...count {
      payloads.append(
        try EventRecord.encode(
          Deposited(account: account, amount: amount, memo: ""), origin: .user, commandID: command))
    }
    let journal = try Journal(directory: directory)
    defer { journal.close() }
    try journal.appendAndWait(payloads.map { NewRecord(timestamp: 1, payload: $0) })
  }

  /// A batch size of 0 or less counts as 1: every record is read, on one thread or two.
  @Test(arguments: [0, -3], [0, 8])
  func batchSizeBelowOneCountsAsOne(recordsPerBatch: Int, batchesInFlight: Int) throws {
    let temporary = TemporaryDirectory()
    let directory = temporary.appending("journal")
    try appendFrame(directory, count: 19, opening: true)
    var options = ReplayOptions()
    options.recordsPerBatch = recordsPerBatch
    options.batchesInFlight = batchesInFlight
    let records = try DecodedRecords(
      registry: Ledger.makeRegistry(), reader: JournalReader(directory: directory), first: 1, last: 20,
      options: options)
    var seen: [UInt64] = []
    while let record = try records.next() { seen.append(record.sequence) }
    #expect(seen == Array(1...20))
  }

  /// A rebuild through the last record of a frame reads nothing after it: a damaged frame right
  /// after does not fail it (a rebuild through the damaged frame still does).
  @Test func rebuildStopsAtItsTargetBeforeADamagedFrame() throws {
    let temporary = TemporaryDirectory()
    let directory = temporary.appending("journal")
    try appendFrame(directory, count: 2, opening: true)
    let segment = try #require(Files.list(directory).filter { $0.hasSuffix(".lz4") }.first)
    let path = directory + "/" + segment
    let start = try Files.read(path).count
    try appendFrame(directory, count: 30)
    let end = try Files.read(path).count
    try appendFrame(directory, count: 3)  // so that the damaged frame is not a torn end
    var bytes = try Files.read(path)
    bytes[(start + end) / 2] ^= 0x10
    try Files.write(bytes, to: path)

    let rebuilt = try Replay.rebuild(Ledger.self, directory: directory, through: 3)
    #expect(rebuilt.state.accounts.find(id: account)?.balance == 3)
    #expect(throws: (any Error).self) { try Replay.rebuild(Ledger.self, directory: directory, through: 4) }
  }

  /// `RawBatches` hands out the records a batch read before the journal's cursor failed (so that
  /// they are applied whoever decodes them), then throws the error, then ends: in batches larger
  /// than what was read, and split across batches.
  @Test(arguments: [64, 2])
  func rawBatchesReturnTheRecordsBeforeAReadError(size: Int) throws {
    let temporary = TemporaryDirectory()
    let directory = temporary.appending("journal")
    try appendFrame(directory, count: 2, opening: true)  // 1...3
    let segment = try #require(Files.list(directory).filter { $0.hasSuffix(".lz4") }.first)
    let path = directory + "/" + segment
    let start = try Files.read(path).count
    try appendFrame(directory, count: 30)  // 4...33, damaged below
    let end = try Files.read(path).count
    try appendFrame(directory, count: 3)  // so that the damaged frame is not a torn end
    var bytes = try Files.read(path)
    bytes[(start + end) / 2] ^= 0x10
    try Files.write(bytes, to: path)

    var batches = RawBatches(cursor: try JournalReader(directory: directory).records(from: 1), last: .max)
    var read: [[UInt64]] = []
    let error = #expect(throws: JournalError.self) {
      while let batch = try batches.next(size: size) { read.append(batch.map(\.sequence)) }
    }
    #expect(read == (size == 2 ? [[1, 2], [3]] : [[1, 2, 3]]))
    #expect(error?.code == .corrupt, "\(String(describing: error))")
    #expect(try batches.next(size: size) == nil, "ended after the error")
  }
}
