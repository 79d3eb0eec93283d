import Foundation
import Glibc
import Rewind
package import RewindJournal
import RewindLocking
import Synchronization

/// A `FileIO` that passes calls to the real file system (`ForwardingFileIO`) until a test arms a fault, which then
/// strikes the next matching call (or the Nth one). Faults strike once, then disarm.
///
/// A fault armed on a call the code under test no longer makes (frames stored through a mapping,
/// not `pwrite`; a sync that `none` skips) never strikes, and a test that only expects success
/// after it passes whatever the failure path does (RELIABILITY 200): check `struck`, or that
/// `unstruck` is 0, after the calls meant to fail. To find such faults across the suite, run it
/// with `REWIND_FAULT_PROBE` naming a file: each fault armed, struck, disarmed unstruck or left
/// armed when its `FaultInjectingFileIO` goes is appended to it, with the arming test's file and
/// line (`scripts/fault-audit` runs the suite so and lists the faults that did not strike).
///
/// Thread-safe: the armed faults and counters live in a `Lock`.
package final class FaultInjectingFileIO: ForwardingFileIO {
  /// What goes wrong.
  package enum Fault: Sendable, Equatable {
    /// The write fails with this errno (EIO, ENOSPC...) before writing anything.
    case writeError(Int32)
    /// The write writes only the first `bytes` bytes (at most), then the next write call fails with `errno`.
    case shortWrite(bytes: Int, thenErrno: Int32)
    /// The fsync/fdatasync fails with this errno.
    case syncError(Int32)
    /// The rename fails with this errno.
    case renameError(Int32)
    /// The ftruncate fails with this errno.
    case truncateError(Int32)
    /// The fallocate fails with this errno (ENOSPC, EOPNOTSUPP...), allocating nothing.
    case allocateError(Int32)
    /// The mmap fails with this errno.
    case mapError(Int32)
    /// The unlink fails with this errno (EACCES, EIO...), removing nothing.
    case removeError(Int32)
  }

  private struct State {
    /// `probe`: the fault's number in the `REWIND_FAULT_PROBE` log.
    var armed: [(fault: Fault, pathContains: String, skip: Int, probe: Int)] = []
    var failNextWrite: Int32?
    var writes = 0
    var syncs = 0
    var segmentDataSyncs = 0
    var segmentWrites = 0
    var allocations = 0
    var maps = 0
    var struck = 0
  }

  package let base: any FileIO = PosixFileIO()
  private let state = Lock(State())

  /// Held data syncs (`metadata: false`) of segment files: while holding, each waits in `sync`
  /// until a test lets it go (then its armed fault, if any, strikes).
  private let gate = Gate()

  package init() {}

  deinit {
    for fault in state.withLock({ $0.armed }) { probeLog("LEFT \(fault.probe)") }
  }

  /// Arms `fault` for the call after `skip` matching calls on a path containing `pathContains`
  /// (segment files end in ".lz4"; "" matches every file). `file` and `line` name the arming
  /// call in the `REWIND_FAULT_PROBE` log. `mayNotStrike`: the test means this fault to stay
  /// armed (to show that a call is not made) and checks that itself; `scripts/fault-audit` does
  /// not list it.
  package func arm(
    _ fault: Fault, pathContains: String = ".lz4", skip: Int = 0, mayNotStrike: Bool = false,
    file: String = #fileID, line: Int = #line
  ) {
    let probe = probeCount.add(1, ordering: .relaxed).newValue
    probeLog(
      "ARM \(probe) \(file):\(line) \(fault) pathContains=\(pathContains) skip=\(skip)"
        + (mayNotStrike ? " mayNotStrike" : ""))
    state.withLock { $0.armed.append((fault, pathContains, skip, probe)) }
  }

  package func disarm() {
    state.withLock {
      for fault in $0.armed { probeLog("DISARMED \(fault.probe)") }
      $0.armed.removeAll()
      $0.failNextWrite = nil
    }
  }

  /// Makes every later data sync of a segment file wait in `sync` until `releaseSync()`.
  package func holdSyncs() {
    gate.lock()
    gate.holding = true
    gate.unlock()
  }

  /// Lets one held sync go on (the next one to arrive, if none is waiting yet).
  package func releaseSync() {
    gate.lock()
    gate.released += 1
    gate.broadcast()
    gate.unlock()
  }

  /// Stops holding syncs and lets every held one go on.
  package func stopHoldingSyncs() {
    gate.lock()
    gate.holding = false
    gate.broadcast()
    gate.unlock()
  }

  /// Blocks until `count` syncs are held, or `unless` holds (checked again at each `poke()`).
  /// Returns whether the syncs are held.
  /// - Throws: `WaitGaveUp` if neither happened within `testWaitBound`.
  @discardableResult
  package func waitForHeldSyncs(_ count: Int, unless: () -> Bool = { false }) throws -> Bool {
    gate.lock()
    defer { gate.unlock() }
    let deadline = testWaitDeadline()
    while gate.held < count && !unless() {
      if !gate.wait(until: deadline) && gate.held < count && !unless() {
        throw WaitGaveUp(waitingFor: "\(count) held syncs", saw: "\(gate.held) held")
      }
    }
    return gate.held >= count
  }

  /// Wakes the waits above to check their conditions again (call it when what `unless` reads changes).
  package func poke() {
    gate.lock()
    gate.broadcast()
    gate.unlock()
  }

  /// How many faults have struck so far.
  package var struck: Int { state.withLock { $0.struck } }
  /// How many armed faults have not struck (yet), and are still armed.
  package var unstruck: Int { state.withLock { $0.armed.count } }
  /// Write and sync calls seen so far (whether or not they failed).
  package var counts: (writes: Int, syncs: Int) { state.withLock { ($0.writes, $0.syncs) } }
  /// Write calls to segment files (paths ending in ".lz4") seen so far.
  package var segmentWrites: Int { state.withLock { $0.segmentWrites } }
  /// Data syncs (`metadata: false`) of segment files seen so far.
  package var segmentDataSyncs: Int { state.withLock { $0.segmentDataSyncs } }
  /// Allocate and map calls seen so far (whether or not they failed).
  package var mappingCounts: (allocations: Int, maps: Int) { state.withLock { ($0.allocations, $0.maps) } }

  private func take(_ path: String, where matches: (Fault) -> Bool) -> Fault? {
    state.withLock { state in
      guard
        let i = state.armed.firstIndex(where: {
          matches($0.fault) && (path.contains($0.pathContains) || $0.pathContains.isEmpty)
        })
      else { return nil }
      if state.armed[i].skip > 0 {
        state.armed[i].skip -= 1
        return nil
      }
      state.struck += 1
      probeLog("STRUCK \(state.armed[i].probe)")
      return state.armed.remove(at: i).fault
    }
  }

  package func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws -> Int {
    state.withLock {
      $0.writes += 1
      if path.hasSuffix(".lz4") { $0.segmentWrites += 1 }
    }
    if let errno = state.withLock({ s -> Int32? in
      defer { s.failNextWrite = nil }
      return s.failNextWrite
    }) {
      throw SystemCallError("write", path: path, errno: errno)
    }
    switch take(
      path, where: { if case .writeError = $0 { true } else if case .shortWrite = $0 { true } else { false } })
    {
    case .writeError(let errno):
      throw SystemCallError("write", path: path, errno: errno)
    case .shortWrite(let count, let errno):
      state.withLock { $0.failNextWrite = errno }
      let n = min(count, bytes.count)
      return try base.pwrite(fd, UnsafeRawBufferPointer(rebasing: bytes[0..<n]), at: offset, path: path)
    default:
      return try base.pwrite(fd, bytes, at: offset, path: path)
    }
  }

  package func sync(_ fd: Int32, metadata: Bool, path: String) throws {
    state.withLock {
      $0.syncs += 1
      if !metadata && path.hasSuffix(".lz4") { $0.segmentDataSyncs += 1 }
    }
    if !metadata && path.hasSuffix(".lz4") {
      gate.lock()
      if gate.holding {
        gate.held += 1
        gate.broadcast()
        // A test that never lets it go fails this sync after `testWaitBound`: the writer ends.
        let deadline = testWaitDeadline()
        var gaveUp = false
        while gate.holding && gate.released == 0 && !gaveUp {
          gaveUp = !gate.wait(until: deadline) && gate.holding && gate.released == 0
        }
        if gate.released > 0 && !gaveUp { gate.released -= 1 }
        gate.held -= 1
        if gaveUp {
          gate.unlock()
          throw heldCallGaveUp("sync")
        }
      }
      gate.unlock()
    }
    if case .syncError(let errno) = take(path, where: { if case .syncError = $0 { true } else { false } }) {
      throw SystemCallError("fsync", path: path, errno: errno)
    }
    try base.sync(fd, metadata: metadata, path: path)
  }

  package func truncate(_ fd: Int32, to length: Int64, path: String) throws {
    if case .truncateError(let errno) = take(path, where: { if case .truncateError = $0 { true } else { false } }) {
      throw SystemCallError("ftruncate", path: path, errno: errno)
    }
    try base.truncate(fd, to: length, path: path)
  }

  package func allocate(_ fd: Int32, at offset: Int64, length: Int64, path: String) throws {
    state.withLock { $0.allocations += 1 }
    if case .allocateError(let errno) = take(path, where: { if case .allocateError = $0 { true } else { false } }) {
      throw SystemCallError("fallocate", path: path, errno: errno)
    }
    try base.allocate(fd, at: offset, length: length, path: path)
  }

  package func map(_ fd: Int32, at offset: Int64, length: Int, path: String) throws -> UnsafeMutableRawPointer {
    state.withLock { $0.maps += 1 }
    if case .mapError(let errno) = take(path, where: { if case .mapError = $0 { true } else { false } }) {
      throw SystemCallError("mmap", path: path, errno: errno)
    }
    return try base.map(fd, at: offset, length: length, path: path)
  }

  package func removeFile(_ path: String) throws {
    if case .removeError(let errno) = take(path, where: { if case .removeError = $0 { true } else { false } }) {
      throw SystemCallError("unlink", path: path, errno: errno)
    }
    try base.removeFile(path)
  }

  package func rename(_ from: String, to: String) throws {
    if case .renameError(let errno) = take(to, where: { if case .renameError = $0 { true } else { false } }) {
      throw SystemCallError("rename", path: to, errno: errno)
    }
    try base.rename(from, to: to)
  }

}

/// The state behind held syncs. `@unchecked Sendable`: every field is read
/// and written only while holding the condition's lock.
private final class Gate: @unchecked Sendable {
  private let condition = NSCondition()
  var holding = false
  var held = 0
  var released = 0

  func lock() { condition.lock() }
  func unlock() { condition.unlock() }
  /// Returns false if `deadline` passed first (true may also be a spurious wake-up).
  func wait(until deadline: Date) -> Bool { condition.wait(until: deadline) }
  func broadcast() { condition.broadcast() }
}

/// Numbers the faults armed in this process, for the `REWIND_FAULT_PROBE` log.
private let probeCount = Atomic<Int>(0)

/// Appends `line`, after the process id, to the file `REWIND_FAULT_PROBE` names, if it is set
/// (one `write` of `O_APPEND` per line: lines of tests running at once do not mix).
private func probeLog(_ line: String) {
  guard let path = ProcessInfo.processInfo.environment["REWIND_FAULT_PROBE"] else { return }
  let fd = Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
  guard fd >= 0 else { return }
  defer { Glibc.close(fd) }
  let text = Array("\(getpid()) \(line)\n".utf8)
  _ = text.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
}
