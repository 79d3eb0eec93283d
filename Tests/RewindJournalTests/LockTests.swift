import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Contract 11: at most one writer per journal directory.
@Suite struct LockTests {
  @Test func aSecondWriterIsRefusedWhileTheFirstIsOpen() async throws {
    let dir = TemporaryDirectory("lock")
    let first = try Journal(directory: dir.path, options: JournalFixtures.options())
    try await first.append([NewRecord(timestamp: 1, payload: [1])])

    let error = journalError { _ = try Journal(directory: dir.path, options: JournalFixtures.options()) }
    #expect(error?.code == .locked, "\(String(describing: error))")
    #expect(error?.directory == dir.path)
    #expect(error?.file == "LOCK")
    // Held in this process: said so, not "another process is writing" (a library user's
    // walkthrough, Dec 7); a repair is refused alike.
    let held =
      "a journal this process opened holds the journal's lock (LOCK) in journal \(dir.path). Close the Journal (or "
      + "the Manager over it) this process opened on the directory first, or open a reader instead"
    #expect(error?.description == held)
    #expect(journalError { _ = try Journal.repair(directory: dir.path) }?.description == held)

    // The refused open changed nothing: the first writer goes on, readers read.
    #expect(try await first.append([NewRecord(timestamp: 2, payload: [2])]) == 2...2)
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == [[1], [2]])

    first.close()
    let second = try Journal(directory: dir.path, options: JournalFixtures.options())
    #expect(second.recovery.isClean)
    #expect(try await second.append([NewRecord(timestamp: 3, payload: [3])]) == 3...3)
    // And now the first cannot come back while the second is open.
    #expect(journalError { _ = try Journal(directory: dir.path, options: JournalFixtures.options()) }?.code == .locked)
    second.close()
  }

  /// A lock file that cannot be opened (a directory in its place) is named once: the system
  /// call's message names its path, so the description adds no "(LOCK)" (closing-65's "LOCK
  /// named twice"). `file` still names it.
  @Test func aLockFileThatCannotBeOpenedIsNamedOnce() throws {
    let dir = TemporaryDirectory("lock-directory")
    try FileManager.default.createDirectory(atPath: dir.appending("LOCK"), withIntermediateDirectories: false)
    let error = journalError { _ = try Journal(directory: dir.path, options: JournalFixtures.options()) }
    #expect(error?.code == .io, "\(String(describing: error))")
    #expect(error?.file == "LOCK")
    #expect(error?.errno == EISDIR)
    #expect(
      error?.description == "open \(dir.path)/LOCK: Is a directory (errno \(EISDIR)) in journal \(dir.path)",
      "\(String(describing: error))")
    // A message that does not name the file's path still gets it in the place.
    let damaged = JournalError(.corrupt, "frame checksum mismatch", directory: "/j", file: "1.lz4", offset: 7)
    #expect(
      damaged.description.hasPrefix("frame checksum mismatch (1.lz4, byte offset 7) in journal /j."),
      "\(damaged.description)")
  }

  @Test func closingTwiceAndDeinitReleaseTheLockOnce() async throws {
    let dir = TemporaryDirectory("lock-twice")
    do {
      let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
      journal.close()
      journal.close()
      // Appending after close is refused.
      await #expect(throws: JournalError.self) { try await journal.append([NewRecord(timestamp: 1, payload: [])]) }
    }
    do {
      _ = try Journal(directory: dir.path, options: JournalFixtures.options())
      // Released by deinit at the end of this scope.
    }
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    journal.close()
  }

  @Test func closingReleasesTheLockEvenWhileOtherThreadsSpawnProcesses() async throws {
    // A child forked by any thread shares the lock file's open description until it execs; the
    // lock must still be released by close(), so that reopening at once succeeds.
    let dir = TemporaryDirectory("lock-fork")
    // The spawning runs on a thread of its own, not a task: waiting for each child there would
    // hold a thread of the cooperative pool for the whole test.
    let stop = Locked(false)
    Thread.detachNewThread {
      while !stop.withLock({ $0 }) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try? process.run()
        process.waitUntilExit()
      }
    }
    defer { stop.withLock { $0 = true } }
    for round in 0..<300 {
      do {
        let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
        journal.close()
      } catch {
        Issue.record("round \(round): \(error)")
        break
      }
    }
  }
}
