import Dispatch
import RewindLocking

/// Hands one result from the writer thread to a thread that blocks for it.
final class DispatchSemaphoreBox: Sendable {
  private let semaphore = DispatchSemaphore(value: 0)
  private let result = Lock<Result<ClosedRange<UInt64>, JournalError>?>(nil)

  func finish(_ value: Result<ClosedRange<UInt64>, JournalError>) {
    result.withLock { $0 = value }
    semaphore.signal()
  }

  func wait() -> Result<ClosedRange<UInt64>, JournalError> {
    semaphore.wait()
    return result.withLock { $0! }
  }
}
