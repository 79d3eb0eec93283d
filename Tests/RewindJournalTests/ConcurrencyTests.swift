import Foundation
import RewindTestSupport
import Synchronization
import Testing

@testable import RewindJournal

/// Group commit under load: many appenders at once keep sequence numbers gapless and every
/// batch contiguous and in the order it was given.
@Suite struct ConcurrencyTests {
  /// A payload naming its appender, its batch and its place in the batch.
  static func payload(task: Int, batch: Int, index: Int) -> [UInt8] {
    var writer = ByteWriter()
    writer.write(UInt32(task))
    writer.write(UInt32(batch))
    writer.write(UInt32(index))
    writer.write([UInt8](repeating: UInt8(truncatingIfNeeded: task), count: (task * 7 + batch) % 50))
    return writer.bytes
  }

  static func batch(task: Int, batch: Int) -> [NewRecord] {
    let count = 1 + (task * 13 + batch * 5) % 17
    return (0..<count).map {
      NewRecord(timestamp: Int64(task * 1000 + batch), payload: payload(task: task, batch: batch, index: $0))
    }
  }

  struct Acknowledged: Hashable {
    var task: Int
    var batch: Int
    var range: ClosedRange<UInt64>
    /// Only the batch's first record was appended (`Journal.append(_:)` of one record).
    var single = false
  }

  /// Checks what the journal holds against what was acknowledged.
  static func check(_ directory: String, acknowledged: [Acknowledged], context: String) throws {
    let records = try JournalFixtures.readAll(directory)
    let total = acknowledged.reduce(0) { $0 + $1.range.count }
    #expect(records.count == total, "\(context)")
    #expect(records.map(\.sequence) == (0..<UInt64(total)).map { $0 + 1 }, "\(context): gapless from 1")
    for ack in acknowledged {
      let whole = batch(task: ack.task, batch: ack.batch)
      let expected = ack.single ? [whole[0]] : whole
      #expect(ack.range.count == expected.count, "\(context)")
      guard ack.range.upperBound <= UInt64(records.count) else {
        Issue.record("\(context): range \(ack.range) past the end")
        continue
      }
      let stored = records[Int(ack.range.lowerBound - 1)...Int(ack.range.upperBound - 1)]
      #expect(
        stored.map(\.payload) == expected.map(\.payload),
        "\(context): task \(ack.task) batch \(ack.batch) at \(ack.range)")
    }
    // Each appender awaited each append, so its batches are in its order.
    for task in Set(acknowledged.map(\.task)) {
      let ranges = acknowledged.filter { $0.task == task }.sorted { $0.batch < $1.batch }.map(\.range.lowerBound)
      #expect(ranges == ranges.sorted(), "\(context): task \(task)")
    }
  }

  static let policies: [Durability] = [.none, .always, .batched, .batched(maxDelay: .microseconds(200))]

  /// Forty tasks at once, each making `append(task, index)` for its batches in order (fewer under
  /// `always`, whose every group waits for a sync); returns every acknowledgement, after checking
  /// that each append made one.
  static func appendFromTasks(
    _ durability: Durability, _ append: @escaping @Sendable (Int, Int) async throws -> Acknowledged
  ) async throws -> [Acknowledged] {
    let tasks = 40
    let batches = durability == .always ? 6 : 15
    let acknowledged = try await withThrowingTaskGroup(of: [Acknowledged].self) { group in
      for task in 0..<tasks {
        group.addTask {
          var acks: [Acknowledged] = []
          for index in 0..<batches { acks.append(try await append(task, index)) }
          return acks
        }
      }
      var all: [Acknowledged] = []
      for try await acks in group { all += acks }
      return all
    }
    #expect(acknowledged.count == tasks * batches)
    return acknowledged
  }

  @Test(arguments: policies)
  func manyTasksAppendingConcurrently(durability: Durability) async throws {
    let dir = TemporaryDirectory("concurrent")
    let journal = try Journal(
      directory: dir.path, options: JournalFixtures.options(durability, segmentBytes: 32 << 10, frameBytes: 2 << 10))
    let acknowledged = try await Self.appendFromTasks(durability) { task, index in
      Acknowledged(task: task, batch: index, range: try await journal.append(Self.batch(task: task, batch: index)))
    }
    #expect(journal.lastSequence == UInt64(acknowledged.reduce(0) { $0 + $1.range.count }))
    // Readable while the writer is still open, and after close and reopen.
    try Self.check(dir.path, acknowledged: acknowledged, context: "\(durability), open")
    journal.close()
    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options(durability))
    #expect(reopened.recovery.isClean)
    #expect(reopened.lastSequence == journal.lastSequence)
    reopened.close()
    try Self.check(dir.path, acknowledged: acknowledged, context: "\(durability), reopened")
  }

  /// `Journal.append(_:)` of one record from many tasks at once, among appends of arrays: the
  /// one-record appends that find the writer busy take the queue (and the writer thread's groups
  /// under the durable policies), and each gets the sequence number its record was written at.
  @Test(arguments: [Durability.none, .always, .batched(maxDelay: .microseconds(200))])
  func manyTasksAppendingOneRecordEach(durability: Durability) async throws {
    let dir = TemporaryDirectory("concurrent-one")
    let journal = try Journal(
      directory: dir.path, options: JournalFixtures.options(durability, segmentBytes: 32 << 10, frameBytes: 2 << 10))
    let acknowledged = try await Self.appendFromTasks(durability) { task, index in
      let records = Self.batch(task: task, batch: index)
      // Three tasks in four append one record at a time.
      guard task % 4 != 0 else {
        return Acknowledged(task: task, batch: index, range: try await journal.append(records))
      }
      let sequence = try await journal.append(records[0])
      return Acknowledged(task: task, batch: index, range: sequence...sequence, single: true)
    }
    #expect(journal.lastSequence == UInt64(acknowledged.reduce(0) { $0 + $1.range.count }))
    journal.close()
    try Self.check(dir.path, acknowledged: acknowledged, context: "one record each, \(durability)")
  }

  @Test(arguments: [Durability.none, .always, .batched])
  func manyThreadsUsingAppendAndWait(durability: Durability) throws {
    let dir = TemporaryDirectory("threads")
    let journal = try Journal(
      directory: dir.path, options: JournalFixtures.options(durability, segmentBytes: 32 << 10, frameBytes: 2 << 10))
    let threads = 24
    let batches = 8
    // Locked, not Mutex: ThreadSanitizer runs this test and does not see Mutex's futex (Locked's doc).
    let acknowledged = Locked<[Acknowledged]>([])
    let failures = Locked<[String]>([])
    let done = DispatchGroup()
    for task in 0..<threads {
      done.enter()
      let thread = Thread {
        defer { done.leave() }
        for index in 0..<batches {
          do {
            let range = try journal.appendAndWait(Self.batch(task: task, batch: index))
            acknowledged.withLock { $0.append(Acknowledged(task: task, batch: index, range: range)) }
          } catch {
            failures.withLock { $0.append("thread \(task) batch \(index): \(error)") }
          }
        }
      }
      thread.start()
    }
    try done.wait(for: "\(threads) threads to make their appends")
    #expect(failures.withLock { $0 } == [])
    let acks = acknowledged.withLock { $0 }
    #expect(acks.count == threads * batches)
    journal.close()
    try Self.check(dir.path, acknowledged: acks, context: "threads, \(durability)")
  }
}
