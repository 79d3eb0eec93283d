import Dispatch
import Glibc
package import RewindJournal

/// A `FileIO` whose next segment write, once armed, waits until the test releases it, and that
/// notes whether the journal's lock was released while that write was held: a `close()` that
/// returned (and released the lock) before the journal's writer finished. Such an unlock also
/// lets the held write go, so that the writer still ends.
package final class HeldWriteFileIO: ForwardingFileIO {
  package let base: any FileIO = PosixFileIO()
  private let state = Locked((armed: false, holding: false, unlockedWhileHolding: false))
  private let release = DispatchSemaphore(value: 0)
  private let held = DispatchSemaphore(value: 0)
  private let unlocked = DispatchSemaphore(value: 0)

  package init() {}

  /// Holds the next write to a segment file.
  package func holdNextWrite() { state.withLock { $0.armed = true } }

  /// Blocks until the armed write is held.
  /// - Throws: `WaitGaveUp` if it was not within `testWaitBound`.
  package func waitUntilHolding() throws { try held.wait(for: "the armed write held") }

  /// Blocks until the journal's lock is released.
  /// - Throws: `WaitGaveUp` if it was not within `testWaitBound`.
  package func waitUntilUnlocked() throws { try unlocked.wait(for: "the journal's lock released") }

  /// Lets the held write go on (a later call does nothing more).
  package func releaseWrite() { release.signal() }

  /// Whether the journal's lock was released while the armed write was held.
  package var unlockedWhileHolding: Bool { state.withLock { $0.unlockedWhileHolding } }

  package func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws -> Int {
    let hold = state.withLock { state -> Bool in
      guard state.armed, path.hasSuffix(".lz4") else { return false }
      state.armed = false
      state.holding = true
      return true
    }
    if hold {
      held.signal()
      defer { state.withLock { $0.holding = false } }
      try release.wait(for: "the test to let the held write go")
    }
    return try base.pwrite(fd, bytes, at: offset, path: path)
  }

  package func unlock(_ fd: Int32, path: String) {
    let early = state.withLock { state -> Bool in
      if state.holding { state.unlockedWhileHolding = true }
      return state.holding
    }
    if early { release.signal() }
    base.unlock(fd, path: path)
    unlocked.signal()
  }
}
