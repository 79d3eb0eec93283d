import Dispatch
import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

// Serialized: two tests have an opener wait for a release, and one checks the process-wide
// count of waiting openers (`DirectoryLock.waitingOpeners`) is back to 0.
@Suite(.serialized) struct ConcurrentCloseTests {
  /// Two threads close a journal while an append is being written. The second `close()` used to
  /// return at once, releasing the lock while the writer was still writing and closing the files
  /// (a writer opened next could then see the directory change under it): both now return only
  /// once the writer has finished, each with the append settled. The held write goes on when the
  /// journal's lock is released too early, or after a while (only to end the test without the fix).
  @Test(.timeLimit(.minutes(10))) func bothOfTwoConcurrentClosesWaitForTheWriter() async throws {
    let dir = TemporaryDirectory("close-concurrently")
    let io = HeldWriteFileIO()
    var options = JournalFixtures.options(.always)
    options.io = io
    let journal = try Journal(directory: dir.path, options: options)
    io.holdNextWrite()
    let outcome = Locked<Result<ClosedRange<UInt64>, JournalError>?>(nil)
    journal.enqueue([NewRecord(timestamp: 1, payload: [1])], expectedFirst: nil) { result in
      outcome.withLock { $0 = result }
    }
    journal.lead()
    try await onOwnThread { try io.waitUntilHolding() }

    let unsettledAtReturn = Locked(0)
    let closers = DispatchGroup()
    for _ in 0..<2 {
      closers.enter()
      Thread.detachNewThread {
        journal.close()
        if outcome.withLock({ $0 == nil }) { unsettledAtReturn.withLock { $0 += 1 } }
        closers.leave()
      }
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) { io.releaseWrite() }
    try await onOwnThread { try closers.wait(for: "both closes to return") }

    #expect(!io.unlockedWhileHolding, "a close released the lock while the writer was still writing")
    #expect(unsettledAtReturn.withLock { $0 } == 0, "a close returned before the append queued was settled")
    #expect(outcome.withLock { $0 } == .success(1...1))
    #expect(openFiles(under: dir.path).isEmpty)
    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options())
    #expect(reopened.lastSequence == 1)
    reopened.close()
  }

  /// Of two closers, the one that finds the lock being released by the other returns only once
  /// it is: it used to return at once (a flag said "released" before the unlock was made), so a
  /// caller reopening the directory then could find it still `locked`. The first closer's unlock
  /// is held; it goes on when the test lets it, or after a while (only to end the test without
  /// the fix, where the second closer returns meanwhile).
  @Test(.timeLimit(.minutes(10))) func aSecondCloseWaitsForTheLocksRelease() async throws {
    let dir = TemporaryDirectory("close-release")
    let (io, journal, first) = try await closingWithItsUnlockHeld(dir.path)
    let releasedAtReturn = Locked<Bool?>(nil)
    let second = started {
      journal.close()
      releasedAtReturn.withLock { $0 = io.unlocked }
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) { io.release.signal() }
    try await onOwnThread {
      try second.wait(for: "the second close to return")
      try first.wait(for: "the first close to return")
    }
    #expect(releasedAtReturn.withLock { $0 } == true, "the second close returned before the lock was released")
    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options())
    #expect(reopened.lastSequence == 1)
    reopened.close()
  }

  /// A journal opened in this process while another thread closes the directory's journal waits
  /// for the lock's release, and opens: it used to fail with `.locked` while the closer finished
  /// (or while a journal let go of on its writer thread closed itself, a moment after the app's
  /// last reference was gone). The closer's unlock is held until the opener has tried the lock
  /// once; an opener that did not wait failed then.
  @Test(.timeLimit(.minutes(10))) func anOpenDuringAnotherThreadsCloseWaitsForTheRelease() async throws {
    let dir = TemporaryDirectory("open-while-closing")
    let (io, _, closed) = try await closingWithItsUnlockHeld(dir.path)
    let opener = Opener(dir.path)
    try await onOwnThread { try opener.io.triedLock.wait(for: "the opener to try the lock") }
    io.release.signal()
    try await onOwnThread {
      try closed.wait(for: "the close to return")
      try opener.done.wait(for: "the opener to return")
    }
    #expect(opener.outcome.withLock { $0 } == .success(1))
    #expect(DirectoryLock.waitingOpeners == 0)
  }

  /// A journal opened while another thread's `close()` waits for a compaction in progress to
  /// give up waits for the release too: the journal was marked closing only once its compactor
  /// had stopped, so an open meanwhile failed with `.locked`. The compaction's write is held
  /// until the opener waits; without the fix the close is never seen closing while it is held.
  @Test(.timeLimit(.minutes(10))) func anOpenWhileTheCloseStopsACompactionWaitsForTheRelease() async throws {
    let dir = TemporaryDirectory("open-while-compaction-stops")
    let io = HeldCompactionWriteFileIO()
    var options = JournalFixtures.options(segmentBytes: 4096)
    options.io = io
    let journal = try Journal(directory: dir.path, options: options)
    for index in 0..<60 {
      try await journal.append([NewRecord(timestamp: Int64(index), payload: Array(repeating: UInt8(index), count: 200))]
      )
    }
    let compacted = started {
      _ = try? journal.compactSealedSegments()
    }
    try await onOwnThread { try io.holding.wait(for: "the compaction's write to be held") }
    let closed = started {
      journal.close()
    }
    let seenClosing = try await journalIsClosing(in: dir.path)
    #expect(seenClosing, "the journal was not closing while its close() waited for the compaction")
    let opener = Opener(dir.path)
    try await onOwnThread { try opener.io.triedLock.wait(for: "the opener to try the lock") }
    io.release.signal()
    try await onOwnThread {
      try compacted.wait(for: "the compaction to return")
      try closed.wait(for: "the close to return")
      try opener.done.wait(for: "the opener to return")
    }
    #expect(opener.outcome.withLock { $0 } == .success(60))
  }

  /// A journal closed on its own writer thread (in an append's completion) releases its lock once
  /// that thread has finished: opening the directory on that thread meanwhile fails with `.locked`
  /// at once. Waiting for the release there would wait for the thread itself, for ever.
  @Test(.timeLimit(.minutes(10))) func anOpenOnTheThreadThatReleasesTheLockDoesNotWaitForItself() async throws {
    let dir = TemporaryDirectory("open-on-writer-thread")
    // Under `always` the writer thread writes every append and runs its completion (under `none`
    // an uncontended append is written, and completed, on the caller's thread).
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(.always))
    let answered = Locked<JournalError.Code?>(nil)
    let done = DispatchSemaphore(value: 0)
    journal.enqueue([NewRecord(timestamp: 1, payload: [1])], expectedFirst: nil) { _ in
      journal.close()
      do {
        _ = try Journal(directory: dir.path, options: JournalFixtures.options())
      } catch let error as JournalError {
        answered.withLock { $0 = error.code }
      } catch {}
      done.signal()
    }
    journal.lead()
    try await onOwnThread { try done.wait(for: "the completion to try opening") }
    #expect(answered.withLock { $0 } == .locked)
    journal.close()
    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options())
    #expect(reopened.lastSequence == 1)
    reopened.close()
  }

  /// Under `none` an append that finds the writer idle is written, and its completion run, on the
  /// thread that leads it (`lead()`, `appendAndWait`), not on the writer thread. A `close()` in
  /// that completion used to wait for the writer thread, which waited for that very thread to
  /// finish writing: both hung for ever. It now returns at once, as on the writer thread, and
  /// the lock is released once the writer has finished; an open on that thread meanwhile fails
  /// with `.locked` at once instead of waiting for itself.
  @Test(.timeLimit(.minutes(10))) func aCloseInACompletionOnTheThreadThatWroteTheAppendReturns() async throws {
    // A writer thread that has not reached its first wait yet takes the queued append itself
    // (and runs the completion): try again until the leader wrote it. On a machine busy with the
    // other suites the writer thread can be that late every time, so later attempts give it a few
    // milliseconds to reach its wait first (50 quick attempts all missed once, Dec 7).
    for attempt in 0..<200 {
      let dir = TemporaryDirectory("close-on-leader")
      let journal = try Journal(directory: dir.path, options: JournalFixtures.options(.none))
      if attempt >= 10 { usleep(UInt32(min(attempt - 9, 20)) * 1_000) }
      let leader = Locked<pthread_t?>(nil)
      let onLeader = Locked<Bool?>(nil)
      let answered = Locked<JournalError.Code?>(nil)
      let closed = DispatchSemaphore(value: 0)
      journal.enqueue([NewRecord(timestamp: 1, payload: [1])], expectedFirst: nil) { _ in
        let led = leader.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        onLeader.withLock { $0 = led }
        journal.close()
        closed.signal()
        do {
          _ = try Journal(directory: dir.path, options: JournalFixtures.options())
        } catch let error as JournalError {
          answered.withLock { $0 = error.code }
        } catch {}
      }
      let lead = started {
        leader.withLock { $0 = pthread_self() }
        journal.lead()
      }
      try await onOwnThread { try closed.wait(for: "the close in the completion to return") }
      try await onOwnThread { try lead.wait(for: "the lead to return") }
      journal.close()
      let reopened = try Journal(directory: dir.path, options: JournalFixtures.options())
      #expect(reopened.lastSequence == 1)
      reopened.close()
      guard onLeader.withLock({ $0 }) == true else { continue }
      #expect(answered.withLock { $0 } == .locked, "attempt \(attempt)")
      return
    }
    Issue.record("the writer thread wrote the append every time: the leader's case was not reached")
  }

  /// An append's completion, run on the writer thread, that opens the directory while another
  /// thread's `close()` waits for that writer fails with `.locked` once `releaseWaitLimit` has
  /// passed: the release waits for the writer, which waits in the completion. The open used to
  /// wait for the release for ever, and the close with it.
  @Test(.timeLimit(.minutes(10))) func anOpenThatTheReleaseWaitsForGivesUp() async throws {
    let dir = TemporaryDirectory("open-the-release-waits-for")
    // Under `always` the writer thread writes the append and runs its completion.
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(.always))
    let inCompletion = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let answered = Locked<JournalError.Code?>(nil)
    let done = DispatchSemaphore(value: 0)
    journal.enqueue([NewRecord(timestamp: 1, payload: [1])], expectedFirst: nil) { _ in
      inCompletion.signal()
      try? go.wait(for: "the close to begin")
      do {
        _ = try Journal(directory: dir.path, options: JournalFixtures.options())
      } catch let error as JournalError {
        answered.withLock { $0 = error.code }
      } catch {}
      done.signal()
    }
    journal.lead()
    try await onOwnThread { try inCompletion.wait(for: "the completion to run") }
    let closed = started {
      journal.close()
    }
    let seenClosing = try await journalIsClosing(in: dir.path)
    #expect(seenClosing, "the journal was not closing")
    go.signal()
    let answeredInTime = try await onOwnThread { done.wait(timeout: .now() + 60) == .success }
    #expect(answeredInTime, "the open in the completion waited for its own release")
    guard answeredInTime else { return }
    #expect(answered.withLock { $0 } == .locked)
    try await onOwnThread { try closed.wait(for: "the close to return") }
    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options())
    #expect(reopened.lastSequence == 1)
    reopened.close()
  }

  /// A journal dropped without `close()` (its `deinit` closes it), and readers and followers
  /// dropped, keep no descriptor of the directory open, and the lock is free at once.
  @Test func droppedJournalsAndReadersLeaveNoFileOpen() async throws {
    let dir = TemporaryDirectory("dropped")
    for round in 0..<3 {
      do {
        let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
        try await journal.append([NewRecord(timestamp: Int64(round), payload: [UInt8(round)])])
        let reader = try journal.reader()
        _ = try JournalFixtures.readAll(try reader.records(from: 1))
      }
      #expect(openFiles(under: dir.path).isEmpty, "round \(round)")
    }
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    #expect(journal.lastSequence == 3)
    journal.close()
    #expect(openFiles(under: dir.path).isEmpty)
  }

  /// A journal whose last reference is let go of by its writer thread, after the answer of an
  /// append whose completion held it (as a manager's appends hold the manager, and with it the
  /// journal, until the writer is done with them): its `deinit` closes it on that thread. That
  /// `close()` used to wait for the writer thread to finish, which was itself: the thread hung,
  /// and the lock and files stayed held for the rest of the process. The lock is now released and
  /// the files closed once the writer thread finishes, right after.
  @Test(.timeLimit(.minutes(10))) func aJournalLetGoOfByItsWriterThreadCloses() async throws {
    let dir = TemporaryDirectory("let-go-by-writer")
    let io = HeldWriteFileIO()
    var options = JournalFixtures.options(.always)
    options.io = io
    let answered = Locked<Result<ClosedRange<UInt64>, JournalError>?>(nil)
    /// Appends one record with a completion that keeps `journal`; the caller's reference ends here.
    func appendKeeping(_ journal: Journal) {
      journal.enqueue([NewRecord(timestamp: 1, payload: [1])], expectedFirst: nil) { result in
        withExtendedLifetime(journal) { answered.withLock { $0 = result } }
      }
      journal.lead()
    }
    io.holdNextWrite()
    appendKeeping(try Journal(directory: dir.path, options: options))
    // The write is held: the test's reference is gone, the completion's is the last one.
    try await onOwnThread { try io.waitUntilHolding() }
    io.releaseWrite()
    try await onOwnThread { try io.waitUntilUnlocked() }
    #expect(answered.withLock { $0 } == .success(1...1))
    // The writer thread closes the lock's descriptor right after the unlock that woke the test.
    let remaining = try await onOwnThread { () -> [String] in
      let giveUp = Date(timeIntervalSinceNow: 10)
      while !openFiles(under: dir.path).isEmpty && Date() < giveUp { usleep(1000) }
      return openFiles(under: dir.path)
    }
    #expect(remaining.isEmpty)
    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options())
    #expect(reopened.lastSequence == 1)
    reopened.close()
  }

  /// A follower reading a journal while it is written and then closed returns every record in
  /// order, without a gap or a repeat, goes on waiting after the close until its task is
  /// cancelled, then ends, and keeps no file open once it has ended.
  @Test(.timeLimit(.minutes(10))) func aFollowerOfAJournalBeingWrittenAndClosed() async throws {
    let dir = TemporaryDirectory("follow-close")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    let reader = try journal.reader()
    let (reachedTheEnd, signal) = AsyncStream<Void>.makeStream()
    let follower = Task {
      var seen: [UInt64] = []
      for try await record in reader.follow(from: 1, pollInterval: .milliseconds(1)) {
        seen.append(record.sequence)
        if seen.count == 50 { signal.yield() }
      }
      return seen
    }
    for index in 0..<50 { try await journal.append([NewRecord(timestamp: Int64(index), payload: [UInt8(index)])]) }
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path).count == 50)
    // Cancelled once it has delivered the last record (the time limit ends a follower that never does).
    var reached = reachedTheEnd.makeAsyncIterator()
    _ = await reached.next()
    follower.cancel()
    let seen = try await boundedValue(of: follower)
    #expect(seen == Array(1...50))
    #expect(openFiles(under: dir.path).isEmpty)
  }
}

/// A `FileIO` whose first unlock (the journal's lock, released by `close()`) waits until the test
/// signals `release`, signalling `unlocking` as it begins; `unlocked` says whether it is done.
private final class HeldUnlockFileIO: ForwardingFileIO {
  let base: any FileIO = PosixFileIO()
  let unlocking = DispatchSemaphore(value: 0)
  let release = DispatchSemaphore(value: 0)
  private let done = Locked(false)
  var unlocked: Bool { done.withLock { $0 } }

  func unlock(_ fd: Int32, path: String) {
    unlocking.signal()
    try? release.wait(for: "the test to let the unlock go")
    base.unlock(fd, path: path)
    done.withLock { $0 = true }
  }
}

/// A `FileIO` that signals `triedLock` after each `tryLock` it forwards, whatever it returned.
private final class TryLockSignallingFileIO: ForwardingFileIO {
  let base: any FileIO = PosixFileIO()
  let triedLock = DispatchSemaphore(value: 0)

  func tryLock(_ fd: Int32, path: String) throws -> Bool {
    defer { triedLock.signal() }
    return try base.tryLock(fd, path: path)
  }
}

/// A `FileIO` whose first write to a compaction's temporary file waits until the test signals
/// `release`, signalling `holding` as it begins.
private final class HeldCompactionWriteFileIO: ForwardingFileIO {
  let base: any FileIO = PosixFileIO()
  let holding = DispatchSemaphore(value: 0)
  let release = DispatchSemaphore(value: 0)
  private let armed = Locked(true)

  func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws -> Int {
    let hold =
      path.hasSuffix(".compact.tmp")
      && armed.withLock { armed in
        defer { armed = false }
        return armed
      }
    if hold {
      holding.signal()
      try release.wait(for: "the test to let the compaction's write go")
    }
    return try base.pwrite(fd, bytes, at: offset, path: path)
  }
}

/// A journal in `directory` holding one record, being closed on a thread of its own (the group,
/// left once `close()` returns), its unlock held by its file layer (`io.release` lets it go on):
/// returns once the close has reached the unlock.
private func closingWithItsUnlockHeld(_ directory: String) async throws -> (
  io: HeldUnlockFileIO, journal: Journal, closing: DispatchGroup
) {
  let io = HeldUnlockFileIO()
  var options = JournalFixtures.options()
  options.io = io
  let journal = try Journal(directory: directory, options: options)
  try await journal.append([NewRecord(timestamp: 1, payload: [1])])
  let closing = started {
    journal.close()
  }
  try await onOwnThread { try io.unlocking.wait(for: "the close to unlock") }
  return (io, journal, closing)
}

/// Runs `work` on a thread of its own; the group returned is left once `work` has returned.
private func started(_ work: @escaping @Sendable () -> Void) -> DispatchGroup {
  let group = DispatchGroup()
  group.enter()
  Thread.detachNewThread {
    work()
    group.leave()
  }
  return group
}

/// Opens the journal in a directory on a thread of its own, through a file layer that signals each
/// `tryLock` (`io.triedLock`), and keeps the outcome: the reopened journal's last sequence number,
/// or the error. `done` is left once it has returned.
private final class Opener: Sendable {
  let io = TryLockSignallingFileIO()
  let outcome = Locked<Result<UInt64, JournalError>?>(nil)
  let done: DispatchGroup

  init(_ directory: String) {
    var options = JournalFixtures.options()
    options.io = io
    done = DispatchGroup()
    done.enter()
    Thread.detachNewThread { [options, outcome, done] in
      do {
        let reopened = try Journal(directory: directory, options: options)
        outcome.withLock { $0 = .success(reopened.lastSequence) }
        reopened.close()
      } catch {
        outcome.withLock { $0 = .failure(error as! JournalError) }
      }
      done.leave()
    }
  }
}

/// Whether a journal of this process holding the lock of `directory` is closing, or comes to be
/// within 10 seconds (looked at every millisecond, on a thread of its own).
private func journalIsClosing(in directory: String) async throws -> Bool {
  let lockPath = directory + "/" + Layout.lockName
  return try await onOwnThread { () -> Bool in
    let giveUp = Date(timeIntervalSinceNow: 10)
    while !DirectoryLock.holderIsClosing(lockFile: lockPath) {
      if Date() > giveUp { return false }
      usleep(1000)
    }
    return true
  }
}
