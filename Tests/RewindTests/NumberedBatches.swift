import Dispatch
import Foundation
import RewindTestSupport

@testable import Rewind

/// Batches that say which one they are, and a reading thread that hands them to a read-ahead
/// queue: for the tests of `RecordQueue` (`ReplayReadAheadReviewTests`, `ReplayLeftoversTests`).
extension RecordBatch {
  /// A batch that says which one it is: one step whose sequence number is its index.
  static func numbered(_ index: Int) -> RecordBatch {
    .applicable(ApplicableBatch(steps: [ApplicableBatch.Step(sequence: UInt64(index), list: 0)]))
  }

  /// The index of a batch made by `numbered`; -1 for any other.
  var number: Int {
    guard case .applicable(let batch) = self, let step = batch.steps.first else { return -1 }
    return Int(step.sequence)
  }
}

extension RecordQueue {
  /// Starts a reading thread that hands the queue the batches 1, 2, 3, … up to `limit`, then
  /// ends; with a seed, it pauses now and then before a read. `reads` counts the reads begun (the
  /// last one, which finds the limit, too) and `thread` is set to the thread's `pthread_self`
  /// before the first. The semaphore is signalled once the thread ended.
  func startNumberedReader(
    upTo limit: Int = .max, pausingWith seed: UInt64? = nil, counting reads: Locked<Int>? = nil,
    thread: Locked<UInt>? = nil
  ) -> DispatchSemaphore {
    let ended = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      thread?.withLock { $0 = UInt(pthread_self()) }
      var random = seed.map { SeededRandom(seed: $0) }
      var next = 0
      self.produce { _ in
        reads?.withLock { $0 += 1 }
        if random != nil, random!.next() % 7 == 0 { usleep(UInt32(random!.next() % 200)) }
        guard next < limit else { return nil }
        next += 1
        return .numbered(next)
      }
      ended.signal()
    }
    return ended
  }
}
