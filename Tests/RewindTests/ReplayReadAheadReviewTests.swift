import Dispatch
import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// Replay's read-ahead reviewed: the queue between the reading thread and the applying one
/// (`RecordQueue`) loses no wake-up whatever the interleaving, a replay dropped part way ends its
/// reading thread and frees what it read, every `ReplayOptions` reaches the same records and
/// state, and a record that does not decode is the same error in the same place whoever decodes
/// its batch.
@Suite struct ReplayReadAheadReviewTests {
  private static let account = Identifier(high: 0, low: 1)
  private static let command = Identifier(high: 1, low: 7)
  private static let fingerprint = StateDigest(bytes: Array(repeating: 7, count: 32))

  /// Runs `body` on a thread of its own and waits for it for at most `testWaitBound`; when it
  /// does not end in time (a lost wake-up), `unblock` is called so that its threads end, and the
  /// wait's error is thrown.
  private static func onThread(
    _ what: String, unblock: @escaping @Sendable () -> Void, _ body: @escaping @Sendable () -> Void
  ) async throws {
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      body()
      done.signal()
    }
    try await onOwnThread {
      do { try done.wait(for: what) } catch {
        unblock()
        throw error
      }
    }
  }

  // MARK: The queue

  /// Every batch comes out once and in order, and neither side sleeps for ever, whatever the
  /// capacity and however the two threads' speeds change (seeded pauses on both sides, the
  /// consumer now and then waiting for a full queue as `waitForReadAhead` does). A side woken
  /// too seldom (the reader's refill point, or the applier's wake-up, missed) hangs here.
  @Test(.timeLimit(.minutes(10)), arguments: [1, 2, 3, 4, 5, 8])
  func theQueueLosesNoWakeUp(capacity: Int) async throws {
    let count = 3_000
    let queue = RecordQueue(capacity: capacity)
    let taken = Locked<[Int]>([])
    let producerEnded = queue.startNumberedReader(upTo: count, pausingWith: UInt64(capacity))
    try await Self.onThread("the consumer to take every batch", unblock: { queue.cancel() }) {
      var random = SeededRandom(seed: UInt64(capacity) &+ 100)
      var seen: [Int] = []
      while true {
        switch random.next() % 11 {
        case 0: usleep(UInt32(random.next() % 300))
        case 1: queue.waitUntilFull()
        default: break
        }
        guard let batch = try? queue.take() else { break }
        seen.append(batch.number)
      }
      taken.withLock { $0 = seen }
    }
    try await onOwnThread { try producerEnded.wait(for: "the producer to end") }
    #expect(taken.withLock { $0 } == Array(1...count))
  }

  /// Waiting for a full queue after taking a batch from it wakes the reading thread, which sleeps
  /// until the queue is half empty: it fills the queue again. (It was left asleep, and the wait
  /// with it, whenever the batches taken left more than half the queue: here 3 of 4.)
  @Test(.timeLimit(.minutes(10))) func waitingForAFullQueueWakesASleepingReader() async throws {
    // Its waits block: off the cooperative pool, which other tests need.
    try await offThePool {
      let queue = RecordQueue(capacity: 4)
      let producerEnded = queue.startNumberedReader()
      try await Self.onThread("the queue to be full again", unblock: { queue.cancel() }) {
        queue.waitUntilFull()
        _ = try? queue.take()
        queue.waitUntilFull()
      }
      #expect(try #require(try queue.take()).number == 2)
      try await Self.onThread("cancel to return", unblock: {}) { queue.cancel() }
      try producerEnded.wait(for: "the producer to end")
    }
  }

  /// Cancelling while the reading thread waits on a full queue wakes it: it ends without reading
  /// again, and `cancel` returns.
  @Test(.timeLimit(.minutes(10))) func cancelWakesAReaderWaitingOnAFullQueue() async throws {
    // Its waits block: off the cooperative pool, which other tests need.
    try await offThePool {
      let queue = RecordQueue(capacity: 2)
      let reads = Locked(0)
      let producerEnded = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        queue.produce { _ in
          reads.withLock { $0 += 1 }
          return RecordBatch.numbered(reads.withLock { $0 })
        }
        producerEnded.signal()
      }
      queue.waitUntilFull()
      // Two batches wait; the third is read and its reader waits for room.
      for _ in 0..<30_000 where reads.withLock({ $0 }) < 3 { usleep(1_000) }
      try await Self.onThread("cancel to return", unblock: {}) { queue.cancel() }
      try producerEnded.wait(for: "the producer to end")
      #expect(reads.withLock { $0 } == 3)
    }
  }

  /// Cancelling while the reading thread reads waits for that read, then the reader ends without
  /// handing the batch over or reading another.
  @Test(.timeLimit(.minutes(10))) func cancelWaitsForARead() async throws {
    // Its waits block: off the cooperative pool, which other tests need.
    try await offThePool {
      let queue = RecordQueue(capacity: 4)
      let reads = Locked(0)
      let reading = DispatchSemaphore(value: 0)
      let release = DispatchSemaphore(value: 0)
      let cancelled = Locked(false)
      let producerEnded = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        queue.produce { _ in
          let read = reads.withLock { count in
            count += 1
            return count
          }
          if read == 2 {
            reading.signal()
            _ = release.wait(timeout: .now() + .seconds(Int(testWaitBound.components.seconds)))
          }
          return RecordBatch.numbered(read)
        }
        producerEnded.signal()
      }
      try reading.wait(for: "the second read")
      let canceller = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        queue.cancel()
        cancelled.withLock { $0 = true }
        canceller.signal()
      }
      usleep(50_000)
      #expect(!cancelled.withLock { $0 }, "cancel returned while the reader still read")
      release.signal()
      try canceller.wait(for: "cancel to return")
      try producerEnded.wait(for: "the producer to end")
      #expect(reads.withLock { $0 } == 2)
      #expect(try #require(try queue.take()).number == 1, "the batch handed over before cancel")
      #expect(try queue.take() == nil, "the batch read during cancel is not handed over")
    }
  }

  /// Cancelling after the reading thread ended returns at once, and what it handed over is still taken.
  @Test(.timeLimit(.minutes(10))) func cancelAfterTheReaderEnded() async throws {
    // Its waits block: off the cooperative pool, which other tests need.
    try await offThePool {
      let queue = RecordQueue(capacity: 4)
      let producerEnded = queue.startNumberedReader(upTo: 2)
      try producerEnded.wait(for: "the producer to end")
      try await Self.onThread("cancel to return", unblock: {}) { queue.cancel() }
      #expect(try #require(try queue.take()).number == 1)
    }
  }

  // MARK: A replay dropped part way

  /// A journal of an account, deposits (some in old versions, upcast on reading) and checkpoint
  /// records of another model's code (skipped when verifying), `count` records in all.
  private static func mixedJournal(_ directory: String, count: Int = 600) throws {
    var payloads = [
      try EventRecord.encode(AccountOpened(id: account, owner: "ada", labels: []), origin: .user, commandID: command)
    ]
    for index in 2...count {
      let payload: [UInt8]
      switch index % 10 {
      case 3:
        payload = try EventRecord.encode(DepositedV1(account: account, cents: index), origin: .sync, commandID: command)
      case 5:
        payload = try EventRecord.encode(
          DepositedV2(account: account, amount: index), origin: .sync, commandID: command)
      case 7:
        payload = try EventRecord.encode(
          Checkpoint(digest: fingerprint, fingerprint: fingerprint), origin: .rewind, commandID: command)
      case 8:
        payload = try EventRecord.encode(CheckpointMark(fingerprint: fingerprint), origin: .rewind, commandID: command)
      case 9:
        payload = try EventRecord.encode(
          CheckpointDigest(mark: UInt64(index - 1), digest: fingerprint, fingerprint: fingerprint), origin: .rewind,
          commandID: command)
      default:
        payload = try EventRecord.encode(
          Deposited(account: account, amount: index, memo: "m\(index)"), origin: .user, commandID: command)
      }
      payloads.append(payload)
    }
    let journal = try Journal(directory: directory)
    defer { journal.close() }
    try journal.appendAndWait(payloads.map { NewRecord(timestamp: 1, payload: $0) })
  }

  /// A queue held weakly, set on another thread.
  private final class WeakQueue: @unchecked Sendable {
    weak var queue: RecordQueue?
  }

  enum DropPoint: String, CaseIterable, Sendable {
    /// The reader waits on a full queue.
    case readerWaiting
    /// Some records taken, the reader going on.
    case partWay
    /// Every record taken: the reader ended.
    case atTheEnd
  }

  /// A `DecodedRecords` dropped wherever its reading thread is ends that thread, and the queue
  /// with the batches it held is freed: no thread left reading, nothing kept.
  @Test(.timeLimit(.minutes(10)), arguments: DropPoint.allCases)
  func aReplayDroppedPartWayEndsItsReader(at point: DropPoint) async throws {
    let temporary = TemporaryDirectory()
    let directory = temporary.appending("journal")
    try Self.mixedJournal(directory)
    var options = ReplayOptions()
    options.recordsPerBatch = 8
    options.batchesInFlight = 3
    let held = WeakQueue()
    let chosen = options
    try await onOwnThread {
      var records: DecodedRecords<Ledger>? = try DecodedRecords(
        registry: Ledger.makeRegistry(), reader: JournalReader(directory: directory), first: 1, last: 600,
        options: chosen)
      held.queue = try #require(records?.queue)
      switch point {
      case .readerWaiting: records?.waitForReadAhead()
      case .partWay: for _ in 0..<50 { _ = try records?.next() }
      case .atTheEnd: while try records?.next() != nil {}
      }
      records = nil
    }
    // Bounded: the reading thread lets go of the queue when it ends.
    for _ in 0..<30_000 where held.queue != nil { try await Task.sleep(for: .milliseconds(10)) }
    #expect(held.queue == nil, "the reading thread still holds the queue (\(point))")
  }

  // MARK: Options

  enum Consumer: String, CaseIterable, Sendable {
    /// `next()`: every record handed out (an observer, checkpoints verified).
    case records
    /// `applyNext`: applied record by record (a progress callback).
    case oneByOne
    /// `applyAll`: applied batch by batch (a rebuild).
    case all
  }

  /// What a replay of `first...last` with `options` reached: the state, the sequence numbers seen
  /// (or the last and the count, applying all), and the error it ended with.
  private static func replay(
    _ directory: String, through last: UInt64, options: ReplayOptions, consumer: Consumer, readAhead: Bool
  ) throws -> (state: Ledger, sequences: [UInt64], error: ReplayError?) {
    let registry = Ledger.makeRegistry()
    let records = try DecodedRecords(
      registry: registry, reader: JournalReader(directory: directory), first: 1, last: last, options: options,
      applyOnly: consumer != .records)
    if readAhead { records.waitForReadAhead() }
    var state = Ledger()
    var context = ApplyContext(recording: false)
    var sequences: [UInt64] = []
    do {
      switch consumer {
      case .records:
        while let record = try records.next() {
          if case .event(let recorded) = record { registry.tables.apply(recorded.event, to: &state, context: &context) }
          context.touched.removeAll(keepingCapacity: true)
          sequences.append(record.sequence)
        }
      case .oneByOne:
        while let sequence = try records.applyNext(to: &state, context: &context) {
          context.touched.removeAll(keepingCapacity: true)
          sequences.append(sequence)
        }
      case .all:
        let applied = try records.applyAll(to: &state, context: &context, after: 0)
        sequences = [applied.lastSequence, UInt64(applied.count)]
      }
    } catch let error as ReplayError {
      return (state, sequences, error)
    }
    return (state, sequences, nil)
  }

  /// Every batch size (1, small, the default, huge) and number of batches in flight (negative,
  /// none, 1, 2, many, unbounded), every way of consuming, with the reading thread ahead or not:
  /// the same records, in order, and the same state, old versions upcast and checkpoint records
  /// in their places on both threads.
  @Test(.timeLimit(.minutes(10)), arguments: [1, 2, 7, 256, 1 << 40, Int.max / 2 + 1, Int.max])
  func everyOptionReplaysTheSameRecordsAndState(recordsPerBatch: Int) async throws {
    let temporary = TemporaryDirectory()
    let directory = temporary.appending("journal")
    try Self.mixedJournal(directory)
    let reference = try Self.replay(
      directory, through: 600, options: ReplayOptions(), consumer: .records, readAhead: false)
    try #require(reference.error == nil && reference.sequences == Array(1...600))
    let balance = (2...600).filter { $0 % 10 != 7 && $0 % 10 != 8 && $0 % 10 != 9 }.reduce(0, +)
    #expect(reference.state.accounts.find(id: Self.account)?.balance == balance)
    try await offThePool {
      for batchesInFlight in [-1, 0, 1, 2, 3, 8, Int.max] {
        var options = ReplayOptions()
        options.recordsPerBatch = recordsPerBatch
        options.batchesInFlight = batchesInFlight
        for consumer in Consumer.allCases {
          for readAhead in [false, true] {
            let replayed = try Self.replay(
              directory, through: 600, options: options, consumer: consumer, readAhead: readAhead)
            let what = "\(recordsPerBatch) per batch, \(batchesInFlight) in flight, \(consumer), ahead \(readAhead)"
            #expect(replayed.error == nil, "\(what)")
            #expect(replayed.state == reference.state, "\(what)")
            #expect(replayed.sequences == (consumer == .all ? [600, 600] : reference.sequences), "\(what)")
          }
        }
      }
    }
  }

  /// A huge batch size when the last record is not known (`through: .max`, as a rebuild to the
  /// end asks): every record is read, on the reading thread, and the batch is not made room for
  /// in advance. (The size trapped doubling it; or, read ahead, reserving room for it.)
  @Test(.timeLimit(.minutes(10)), arguments: [1 << 40, Int.max / 2 + 1, Int.max])
  func aHugeBatchSizeReadsToTheEnd(recordsPerBatch: Int) async throws {
    let temporary = TemporaryDirectory()
    let directory = temporary.appending("journal")
    try Self.mixedJournal(directory)
    var options = ReplayOptions()
    options.recordsPerBatch = recordsPerBatch
    let records = try DecodedRecords(
      registry: Ledger.makeRegistry(), reader: JournalReader(directory: directory), first: 1, last: .max,
      options: options)
    #expect(records.queue != nil, "read ahead")
    var seen: [UInt64] = []
    while let record = try records.next() { seen.append(record.sequence) }
    #expect(seen == Array(1...600))
  }

  // MARK: Errors mid-stream

  enum Damage: String, CaseIterable, Sendable {
    /// A name no event is registered under.
    case unknownName
    /// A version of a known event with no upcaster from it.
    case unknownVersion
    /// A current event whose fields end early.
    case truncated
    /// Not in the record layout at all.
    case malformed
    /// A checkpoint record whose fields end early.
    case checkpoint
  }

  private struct Renamed: Event {
    static let name = "account.renamed"
    var account: Identifier
  }

  private struct DepositedV0: Event {
    static let name = "account.deposited"
    static let version: UInt32 = 0
    var account: Identifier
  }

  /// `mixedJournal` with record 43 replaced by `damage`.
  private static func damagedJournal(_ directory: String, _ damage: Damage) throws {
    try mixedJournal(directory, count: 42)
    let payload: [UInt8]
    switch damage {
    case .unknownName: payload = try EventRecord.encode(Renamed(account: account), origin: .user, commandID: command)
    case .unknownVersion:
      payload = try EventRecord.encode(DepositedV0(account: account), origin: .user, commandID: command)
    case .truncated:
      payload = Array(
        try EventRecord.encode(Deposited(account: account, amount: 5, memo: "memo"), origin: .user, commandID: command)
          .dropLast(3))
    case .malformed: payload = [1, 200]
    case .checkpoint:
      payload = Array(
        try EventRecord.encode(
          Checkpoint(digest: fingerprint, fingerprint: fingerprint), origin: .rewind, commandID: command
        ).dropLast(5))
    }
    var rest = [payload]
    for amount in 44...80 {
      rest.append(
        try EventRecord.encode(Deposited(account: account, amount: amount, memo: ""), origin: .user, commandID: command)
      )
    }
    let journal = try Journal(directory: directory)
    defer { journal.close() }
    try journal.appendAndWait(rest.map { NewRecord(timestamp: 1, payload: $0) })
  }

  /// A record that does not decode in the middle of a batch (43, the third of a batch of 8):
  /// read inline, by the reading thread ahead (which hands that batch over raw) or not ahead,
  /// consumed record by record or applied all at once, the records before it come first (the
  /// state is the one through 42) and the error is the same one, naming the record's sequence
  /// number, and its name and version where it has them.
  @Test(.timeLimit(.minutes(10)), arguments: Damage.allCases)
  func anErrorMidBatchIsTheSameWhoeverDecodes(damage: Damage) async throws {
    let temporary = TemporaryDirectory()
    let directory = temporary.appending("journal")
    try Self.damagedJournal(directory, damage)
    let before = try Self.replay(directory, through: 42, options: ReplayOptions(), consumer: .records, readAhead: false)
    try #require(before.error == nil)
    var inline = ReplayOptions()
    inline.batchesInFlight = 0
    let reference = try #require(
      try Self.replay(directory, through: 80, options: inline, consumer: .records, readAhead: false).error)
    #expect(reference.sequence == 43)
    switch damage {
    case .unknownName, .unknownVersion: #expect(reference.code == .unknownEvent)
    case .truncated, .checkpoint: #expect(reference.code == .undecodableEvent)
    case .malformed: #expect(reference.code == .malformedRecord)
    }
    if damage != .malformed { #expect(reference.name != nil && reference.version != nil) }
    #expect(reference.description.contains("at sequence 43"))
    try await offThePool {
      for batchesInFlight in [0, 1, 2, 8] {
        var options = ReplayOptions()
        options.recordsPerBatch = 8
        options.batchesInFlight = batchesInFlight
        for consumer in Consumer.allCases {
          for readAhead in [false, true] {
            let replayed = try Self.replay(
              directory, through: 80, options: options, consumer: consumer, readAhead: readAhead)
            let what = "\(batchesInFlight) in flight, \(consumer), ahead \(readAhead)"
            #expect(replayed.error == reference, "\(what)")
            #expect(replayed.state == before.state, "\(what)")
            if consumer != .all { #expect(replayed.sequences == Array(1...42), "\(what)") }
          }
        }
      }
    }
  }
}
