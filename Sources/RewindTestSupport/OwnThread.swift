import Foundation

/// Runs blocking work (a child process: its run, reading its pipes to the end, `waitUntilExit`) on a
/// thread of its own and awaits the result.
///
/// Swift Testing runs tests on Swift concurrency's cooperative pool, which has one thread per core;
/// a test that blocks one of them while a child runs for seconds starves every other test's
/// awaits (on two cores, two such tests stop everything). Awaiting this holds no pool thread.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
  }
}
