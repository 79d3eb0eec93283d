import Dispatch
import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// Replay's read-ahead reviewed: the queue between the reading thread and the applying one
/// (`RecordQueue`) loses no wake-up whatever the interleaving, and cancelling it ends the reader.
@Suite struct ReplayReadAheadReviewTests {
  private static let account = Identifier(high: 0, low: 1)
  private static let command = Identifier(high: 1, low: 7)
  private static let fingerprint = StateDigest(bytes: Array(repeating: 7, count: 32))

  /// A batch that says which one it is: one step whose sequence number is its index.
  private static func batch(_ index: Int) -> RecordBatch {
    .applicable(ApplicableBatch(steps: [ApplicableBatch.Step(sequence: UInt64(index), list: 0)]))
  }

  private static func index(of batch: RecordBatch) -> Int {
    guard case .applicable(let batch) = batch, let step = batch.steps.first else { return -1 }
    return Int(step.sequence)
  }

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
    let producerEnded = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      var random = SeededRandom(seed: UInt64(capacity))
      var next = 0
      queue.produce { _ in
        if random.next() % 7 == 0 { usleep(UInt32(random.next() % 200)) }
        guard next < count else { return nil }
        next += 1
        return Self.batch(next)
      }
      producerEnded.signal()
    }
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
        seen.append(Self.index(of: batch))
      }
      taken.withLock { $0 = seen }
    }
    try producerEnded.wait(for: "the producer to end")
    #expect(taken.withLock { $0 } == Array(1...count))
  }

  /// Waiting for a full queue after taking a batch from it wakes the reading thread, which sleeps
  /// until the queue is half empty: it fills the queue again. (It was left asleep, and the wait
  /// with it, whenever the batches taken left more than half the queue: here 3 of 4.)
  @Test(.timeLimit(.minutes(10))) func waitingForAFullQueueWakesASleepingReader() async throws {
    let queue = RecordQueue(capacity: 4)
    let producerEnded = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      var next = 0
      queue.produce { _ in
        next += 1
        return Self.batch(next)
      }
      producerEnded.signal()
    }
    try await Self.onThread("the queue to be full again", unblock: { queue.cancel() }) {
      queue.waitUntilFull()
      _ = try? queue.take()
      queue.waitUntilFull()
    }
    #expect(Self.index(of: try #require(try queue.take())) == 2)
    try await Self.onThread("cancel to return", unblock: {}) { queue.cancel() }
    try producerEnded.wait(for: "the producer to end")
  }

  /// Cancelling while the reading thread waits on a full queue wakes it: it ends without reading
  /// again, and `cancel` returns.
  @Test(.timeLimit(.minutes(10))) func cancelWakesAReaderWaitingOnAFullQueue() async throws {
    let queue = RecordQueue(capacity: 2)
    let reads = Locked(0)
    let producerEnded = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      queue.produce { _ in
        reads.withLock { $0 += 1 }
        return Self.batch(reads.withLock { $0 })
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

  /// Cancelling while the reading thread reads waits for that read, then the reader ends without
  /// handing the batch over or reading another.
  @Test(.timeLimit(.minutes(10))) func cancelWaitsForARead() async throws {
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
        return Self.batch(read)
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
    #expect(Self.index(of: try #require(try queue.take())) == 1, "the batch handed over before cancel")
    #expect(try queue.take() == nil, "the batch read during cancel is not handed over")
  }

  /// Cancelling after the reading thread ended returns at once, and what it handed over is still taken.
  @Test(.timeLimit(.minutes(10))) func cancelAfterTheReaderEnded() async throws {
    let queue = RecordQueue(capacity: 4)
    let producerEnded = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      var next = 0
      queue.produce { _ in
        guard next < 2 else { return nil }
        next += 1
        return Self.batch(next)
      }
      producerEnded.signal()
    }
    try producerEnded.wait(for: "the producer to end")
    try await Self.onThread("cancel to return", unblock: {}) { queue.cancel() }
    #expect(Self.index(of: try #require(try queue.take())) == 1)
  }
}
