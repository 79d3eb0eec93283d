import Dispatch
package import Foundation
import Glibc
import Rewind

// Blocking waits for tests (threads of their own: a held write or sync in a file layer, work run
// with `onOwnThread`). Each gives up after `testWaitBound`, as the waits of Rewind's
// `TestWaits.swift` do: a test that fails between holding something and letting it go then ends
// with a message, instead of leaving a thread blocked and the whole run hanging.

/// When a blocking wait that starts now gives up (`testWaitBound` from now).
func testWaitDeadline() -> Date {
  Date(timeIntervalSinceNow: Double(testWaitBound.components.seconds))
}

/// `testWaitBound` from now, for `DispatchSemaphore` and `DispatchGroup`.
private func dispatchDeadline() -> DispatchTime {
  .now() + .seconds(Int(testWaitBound.components.seconds))
}

extension DispatchSemaphore {
  /// Waits for a signal, as `wait()` does, but for at most `testWaitBound`.
  /// - Throws: `WaitGaveUp` naming `what` if no signal came in time.
  package func wait(for what: String) throws {
    if wait(timeout: dispatchDeadline()) == .timedOut { throw WaitGaveUp(waitingFor: what) }
  }
}

extension DispatchGroup {
  /// Waits until every entered block has left, as `wait()` does, but for at most `testWaitBound`.
  /// - Throws: `WaitGaveUp` naming `what` if some had not left in time.
  package func wait(for what: String) throws {
    if wait(timeout: dispatchDeadline()) == .timedOut { throw WaitGaveUp(waitingFor: what) }
  }
}

/// The error a held system call of a test's file layer fails with when the test never lets it go:
/// the writer that made it goes on (and fails) instead of waiting for ever.
func heldCallGaveUp(_ call: String) -> WaitGaveUp {
  WaitGaveUp(waitingFor: "the test to let the held \(call) go")
}

/// Kills a test's child process (SIGKILL) if it still runs `testWaitBound` after the watch began:
/// whoever waits for it to exit, or reads its output to the end, then goes on. A child that
/// hangs (a command that never ends, a follower never stopped) fails its test instead of
/// hanging the run.
///
/// The timer holds the process weakly and `end` cancels it. A timer that kept the `Process` for
/// the whole bound also kept the files it was given open (`ToolRun` gives each child two or
/// three), hundreds of descriptors at once in a full run; and with many entries in
/// /proc/self/fd, Foundation's `Process.run()` on Linux (Swift 6.3.1) can crash reading them
/// (swift-corelibs-foundation pull request 5472, an over-read of `dirent.d_name`), as one full
/// run here did.
///
/// `@unchecked`: `state` is behind its lock, and `timer` is only cancelled, which Dispatch allows
/// from any thread.
package final class ChildWatchdog: @unchecked Sendable {
  private let state = Locked<(ended: Bool, killed: Bool)>((false, false))
  private let timer: DispatchWorkItem

  /// Starts watching `process`, which has been started (`run()`).
  package init(_ process: Process) {
    timer = DispatchWorkItem { [state, weak process] in
      state.withLock { state in
        // Still running: not yet reaped, so its process id is still its own.
        guard !state.ended, let process, process.isRunning else { return }
        state.killed = true
        Glibc.kill(process.processIdentifier, SIGKILL)
      }
    }
    DispatchQueue.global().asyncAfter(deadline: dispatchDeadline(), execute: timer)
  }

  /// Stops watching.
  /// - Throws: `WaitGaveUp` naming `what` if the child had to be killed.
  package func end(waitingFor what: String) throws {
    timer.cancel()
    let killed = state.withLock { state in
      state.ended = true
      return state.killed
    }
    if killed { throw WaitGaveUp(waitingFor: what) }
  }
}

/// The value of `task`, awaited for at most `testWaitBound`: then the task is cancelled, and one
/// that honours cancellation (a `for await` over a stream, a follower) ends with what it has or
/// throws, so that what never comes fails the test instead of hanging it.
package func boundedValue<T: Sendable>(of task: Task<T, any Error>) async throws -> T {
  let watchdog = Task {
    try await Task.sleep(for: testWaitBound)
    task.cancel()
  }
  defer { watchdog.cancel() }
  return try await task.value
}

/// The value of `task`, awaited for at most `testWaitBound` (as above).
package func boundedValue<T: Sendable>(of task: Task<T, Never>) async -> T {
  let watchdog = Task {
    try await Task.sleep(for: testWaitBound)
    task.cancel()
  }
  defer { watchdog.cancel() }
  return await task.value
}
