import Dispatch
import Glibc
import RewindLocking
import Synchronization

/// A journal opened for writing: the only way records get into a journal directory.
///
/// Opening takes the directory's lock (a second writer, in this process or another, is refused
/// with `.locked`; one opened while a journal of this process is closing the directory waits until
/// it has released the lock, for up to 10 seconds), checks the segments, moves a torn tail left by a crash aside into
/// `quarantine/` and says so in `recovery`, and brings the sparse index up to date.
///
/// Appends from any number of tasks or threads are gathered by one writer thread into frames
/// (group commit). Each append is atomic: after a crash its records are all present or all absent,
/// numbered contiguously. An append is acknowledged (its call returns) only when the durability
/// policy is satisfied. A failed append consumed nothing and can be retried, except after
/// `.durabilityLost` (its outcome is unknown), when the journal refuses all further appends
/// until it is reopened: they fail with `.stopped`, which says that nothing of them was written,
/// also those queued behind the failed one before it failed (and those made after `close()`, as
/// every append then, with `.closed`).
public final class Journal: Sendable {
  /// The journal directory.
  public let directory: String
  /// What opening found and did.
  public let recovery: RecoveryReport
  /// The journal's identity, from its manifest.
  public let id: JournalID
  private let writer: JournalWriter
  private let compactor: SegmentCompactor
  /// The directory's lock, released once the writer has finished (`close()`).
  private let lock: DirectoryLock

  /// Opens (and with `options.createIfMissing`, creates) the journal in `directory` for writing.
  /// - Throws: `JournalError`: `.invalidArgument` for options with a `problem` (before anything
  ///   on disk is touched), `.locked`, `.notAJournal`, `.badManifest`, `.corrupt` or
  ///   `.sequenceBreak` (damage before the tail, located), `.limitExceeded` (a batch opening reads is
  ///   larger than `options.limits` allow: written, or compacted, with larger limits),
  ///   `.staleIndex` (the index names records found gone and can be neither replaced, cut nor
  ///   removed), `.io` (a failed system call, the writer's thread that cannot start among them).
  ///   When the opening fails after its recovery moved a tail aside or found records gone, the
  ///   error's `openingRecovery` says so.
  public init(directory: String, options: JournalOptions = JournalOptions()) throws {
    let io = options.io
    if let problem = options.problem {
      throw JournalError(.invalidArgument, "JournalOptions." + problem, directory: directory)
    }
    if options.createIfMissing {
      do {
        try io.makeDirectoryDurably(directory)
      } catch let error as SystemCallError
        where error.errno == ENOENT && !io.fileExists(ResolvedPath.split(directory).parent)
      {
        // Checked, not assumed: mkdir says ENOENT in a parent that exists too (in /proc).
        let parent = ResolvedPath.split(directory).parent
        throw JournalError(
          .io,
          "cannot create the journal's directory: its parent directory \(parent) does not exist (a journal is "
            + "created in an existing directory, not with its parents)", directory: directory, errno: ENOENT)
      } catch {
        throw JournalError(error, directory: directory)
      }
    } else if !io.fileExists(directory) {
      throw JournalError(.notAJournal, JournalError.noSuchDirectory, directory: directory)
    }
    let lockPath = directory + "/" + Layout.lockName
    let lockFD: Int32
    do {
      lockFD = try io.open(lockPath, flags: O_RDWR | O_CREAT, mode: 0o600)
    } catch let error as SystemCallError {
      throw JournalError(error, directory: directory, file: Layout.lockName)
    }
    let locked: Bool
    do {
      locked = try DirectoryLock.take(lockFD, path: lockPath, io: io)
    } catch {
      // flock failing (ENOLCK where the file system keeps no locks): closed, as when it is held.
      io.close(lockFD)
      throw JournalError(error, directory: directory, file: Layout.lockName)
    }
    guard locked else {
      let error = JournalError.locked(directory: directory, lockFD: lockFD)
      io.close(lockFD)
      throw error
    }
    do {
      let manifestPath = directory + "/" + Layout.manifestName
      if !io.fileExists(manifestPath) {
        let segments = try JournalDirectory.listSegments(directory, io: io)
        guard segments.isEmpty, options.createIfMissing else {
          throw JournalError(
            .notAJournal,
            segments.isEmpty
              ? "not a Rewind journal: it holds no \(Layout.manifestName) and no segment"
              : "it holds segments but no \(Layout.manifestName)",
            directory: directory, file: Layout.manifestName)
        }
        let manifest = Manifest(journalID: options.newJournalID ?? .random())
        do {
          try io.writeFileAtomically(manifest.encoded(), to: manifestPath, directory: directory)
        } catch {
          throw JournalError(error, directory: directory, file: Layout.manifestName)
        }
      }
      let layout = try JournalDirectory(path: directory, io: io)
      let start = try JournalRecovery(directory: layout, options: options).run()
      let gate = IndexFileGate()
      let compactor = SegmentCompactor(directory: layout, options: options, indexGate: gate)
      self.compactor = compactor
      var onSeal: (@Sendable (UInt64) -> Void)?
      if options.compactsSealedSegments { onSeal = { compactor.enqueue([$0]) } }
      do {
        self.writer = try JournalWriter(
          directory: layout, options: options, start: start, indexGate: gate, onSeal: onSeal)
      } catch var error as JournalError {
        // Recovery is done (a tail moved aside, the index rewritten without the entries that
        // witnessed records gone): its report is the only one there will be.
        if !start.report.isClean { error.openingRecovery = start.report }
        throw error
      }
      if options.compactsSealedSegments { compactor.enqueueSealed() }
      self.recovery = start.report
      self.id = layout.journalID
    } catch {
      io.unlock(lockFD, path: lockPath)
      io.close(lockFD)
      throw error
    }
    self.directory = directory
    self.lock = DirectoryLock(fd: lockFD, path: lockPath, io: io)
  }

  deinit { close() }

  /// The last acknowledged sequence number; 0 when the journal is empty.
  public var lastSequence: UInt64 { writer.lastSequence.load(ordering: .acquiring) }

  /// Appends `records` as one atomic batch and returns the sequence numbers they received,
  /// once the durability policy is met. Under `none`, an append that finds nothing queued or
  /// being written is written on the calling thread, unless appenders contend (the last group
  /// held several appends: the writer thread then writes every group until one holds a single
  /// append); otherwise (and always under `batched` and `always`, whose groups the writer thread
  /// writes and syncs) it joins the next group and the caller suspends until it is acknowledged.
  /// Cancellation is not checked: an append from a cancelled task is made like any other, and
  /// cancelling a task that waits for its append does not withdraw it.
  ///
  /// Runs on the caller's executor (`nonisolated(nonsending)`). An append written at once (under
  /// `none`, the writer idle) neither hops to the global executor and back nor suspends: its
  /// writing happens on that executor, and so, once per segment, do sealing the full segment and
  /// creating the next (three syncs: the sealed segment's, mostly done ahead by then, the new
  /// one's and the directory's). An actor that appends in a loop so holds its executor for the
  /// whole loop while the writer stays idle: from the main actor, append from a task of its own
  /// if that matters. An append that cannot be written at once (an append queued or being
  /// written; under `batched` and `always`, every append) is queued from the global executor and
  /// waits there: it is written off the caller's executor.
  /// - Throws: `JournalError` (`.limitExceeded`, `.io`, `.durabilityLost`, `.stopped`, `.closed`, ...).
  ///   Nothing of a failed append was acknowledged; unless the code is `.durabilityLost`, nothing of
  ///   it was written either. After `.durabilityLost` or `.stopped` the journal takes no more
  ///   appends; nor after some other failures (a new segment that could not be opened): the
  ///   append can be retried unless `failure` is set.
  @discardableResult
  nonisolated(nonsending) public func append(_ records: [NewRecord]) async throws -> ClosedRange<UInt64> {
    // Under `none`, an append that finds the writer idle is written on this thread, as `enqueue`
    // would write it, without suspending: no continuation to make, resume and switch back from.
    if let outcome = writer.appendAtOnce(records) { return try outcome.get() }
    return try await appendQueued(records)
  }

  /// Appends one record as a batch of its own and returns its sequence number: `append([record])`
  /// without the array, which costs an allocation per append. Same policy, errors and executor
  /// as `append(_:)`.
  @discardableResult
  nonisolated(nonsending) public func append(_ record: NewRecord) async throws -> UInt64 {
    if let outcome = writer.appendAtOnce(CollectionOfOne(record)) { return try outcome.get().lowerBound }
    return try await appendQueued([record]).lowerBound
  }

  /// `append`'s way through the writer's queue, suspended until the writer resumes it.
  nonisolated(nonsending) private func appendQueued(_ records: [NewRecord]) async throws -> ClosedRange<UInt64> {
    // The continuation is handed to the writer as it is (no closure to allocate per append);
    // unsafe in release builds, checked in debug ones (`AppendContinuation`). The writer resumes
    // every append exactly once. `withAppendContinuation` is not `nonisolated(nonsending)`: the
    // queueing, and a group this thread may then write as its leader, run on the global executor.
    try await withAppendContinuation { continuation in
      writer.enqueue(records, completion: .task(continuation))
    }.get()
  }

  /// Appends `records` only if they get sequence numbers from `first` on: if, when its turn
  /// comes, the journal's next sequence number is another one (an earlier append failed), the
  /// append fails with `.sequenceConflict` and writes nothing. This lets a caller queue appends
  /// that depend on earlier ones without waiting for them.
  /// - Throws: as `append(_:)`, and `.sequenceConflict`.
  @discardableResult
  nonisolated(nonsending) public func append(_ records: [NewRecord], expectingFirstSequence first: UInt64)
    async throws
    -> ClosedRange<UInt64>
  {
    try await withAppendContinuation { continuation in
      writer.enqueue(records, expectedFirst: first, completion: .task(continuation))
    }.get()
  }

  /// Queues `records` without writing them; `completion` gets the outcome (on whichever thread
  /// writes them, or at once if the append is refused). Completions of appends queued one after
  /// another are called in that order, one at a time. `expectedFirst` as in
  /// `append(_:expectingFirstSequence:)`. Call `lead()` soon after: the append is written by it,
  /// or right after the group being written.
  package func enqueue(
    _ records: [NewRecord], expectedFirst: UInt64?,
    completion: @escaping @Sendable (Result<ClosedRange<UInt64>, JournalError>) -> Void
  ) {
    writer.enqueue(records, expectedFirst: expectedFirst, lead: false, completion: completion)
  }

  /// `enqueue(_:expectedFirst:completion:)` for a caller that hands all its appends one
  /// completion: it is told which append it is by its `expectedFirst`, so it needs to capture
  /// nothing per append (a closure capturing one object alone costs no allocation; one capturing
  /// anything more allocates a context per append). `waiters`: how many callers wait for this
  /// append (a manager's commands batched into it). Under `always` and `batched` the writer
  /// gathers the next group until as many callers wait as waited for the last one (see
  /// `Durability`).
  package func enqueue(
    _ records: [NewRecord], expectedFirst: UInt64, waiters: Int = 1,
    notifying completion: @escaping @Sendable (UInt64, Result<ClosedRange<UInt64>, JournalError>) -> Void
  ) {
    writer.enqueue(
      records, expectedFirst: expectedFirst, lead: false, waiters: waiters,
      completion: .sequenced(expectedFirst, completion))
  }

  /// The callers that waited for the last group of appends taken to be written (each append's
  /// `waiters`, summed). For tests.
  package var lastGroupWaiters: Int { writer.lastGroupWaitersSeen }

  /// How often the writer waited for more appends before taking a group (a linger under
  /// `batched`, a gathering under `always`), and how many of `always`'s waits ran to their limit
  /// (for tests, which check the gathering policy by these rather than by time).
  package var gatheringWaits: (waits: Int, toTheLimit: Int) { writer.gatheringWaitsSeen }

  /// Whether `close()` has begun, on any thread (for tests, which wait for it).
  package var isClosing: Bool { writer.isClosing }

  /// Whether the active segment's early sync (under `none`) has failed, and the next group will
  /// stop the journal (for tests, which wait for it rather than for a time).
  package var earlySyncHasFailed: Bool { writer.earlySyncHasFailed }

  /// Writes what `enqueue` queued, on this thread, unless a group is being written already.
  package func lead() { writer.lead() }

  /// `append(_:)` for callers outside Swift concurrency: blocks the calling thread until acknowledged.
  ///
  /// Not in code an append's completion runs (a callback of the package's `enqueue`, or the
  /// `deinit` of an object whose last reference a completion held): the thread that runs a
  /// completion is the one writing its group, the journal's writer thread or (under `none`) the
  /// caller's thread that wrote it, and it writes nothing else until the completion returns, so
  /// waiting there would wait for ever. There the call fails at once with
  /// `.calledFromCompletion`, appending nothing; append from a task of its own instead
  /// (`Task { try await journal.append(records) }`), which waits elsewhere.
  /// - Throws: as `append(_:)`, and `.calledFromCompletion`.
  @discardableResult
  public func appendAndWait(_ records: [NewRecord]) throws -> ClosedRange<UInt64> {
    try writer.appendAndWait(records).get()
  }

  /// The error that stopped the journal accepting appends, if one did (later appends fail with
  /// `.stopped`; once the journal is closed, with `.closed`, whose message names this error).
  public var failure: JournalError? { writer.currentFailure }

  /// Finishes queued appends, closes the files and releases the lock; later appends fail with
  /// `.closed` (also after a failure stopped the journal: the message names it). Called by
  /// `deinit` too. Of calls from several threads at once, each returns only once all of that is
  /// done.
  ///
  /// One exception: called on the journal's writer thread (by the `deinit` of a journal, or of
  /// a manager, whose last reference an append's completion held), it returns at once, and that
  /// thread finishes the queued appends, closes the files and releases the lock right after. So
  /// too in an append's completion run by the caller's thread that wrote the append (under
  /// `none`, `lead()` and `appendAndWait` write an append that finds the writer idle themselves):
  /// the writer thread does all that once the completions of that group have run.
  /// Opening the directory again in this process meanwhile, on another thread, waits for that
  /// (for up to 10 seconds, then fails with `.locked`).
  public func close() {
    // Closing from here on (before the compactor stops, which waits for a compaction in progress
    // to give up): an open in this process meanwhile waits for the release.
    lock.closing(releasedLater: false)
    compactor.close()
    if writer.close(then: { [lock] in lock.release() }) { lock.closing(releasedLater: true) }
  }

  /// Compacts every sealed segment (all but the active one) that is not compacted yet: rewrites
  /// it into large frames compressed with LZ4HC, checks that the new file reads back as exactly
  /// the same records, and only then renames it over the original (FORMAT.md, "Compaction").
  /// Readers need no change and may read meanwhile. Blocks the calling thread (one to two
  /// seconds per 64 MiB segment); appends go on meanwhile. Also runs by itself in the
  /// background with `JournalOptions.compactsSealedSegments`.
  /// - Parameter progress: called with each segment as soon as it is compacted (so that what
  ///   was done before a failure is known).
  /// - Returns: what was compacted (sizes before and after) and what was compacted already.
  /// - Throws: `JournalError`: `.corrupt` or `.sequenceBreak` naming a damaged segment and offset
  ///   (it and the segments after it stay as they are; those before it are compacted), `.io`
  ///   (nothing of the segment being compacted changed), `.closed`.
  public func compactSealedSegments(progress: ((CompactedSegment) -> Void)? = nil) throws -> CompactionReport {
    try compactor.compactSealed(progress: progress)
  }

  /// `compactSealedSegments(progress:)` with merged frames of at most `frameContentBytes` decoded
  /// bytes (at most the default 1 MiB, and this writer's `limits.maxBatchBytes`), for `rewind
  /// compact --frame`: a journal whose readers use smaller limits than the process compacting it.
  /// Background compaction keeps the default.
  package func compactSealedSegments(
    frameContentBytes: Int, progress: ((CompactedSegment) -> Void)? = nil
  ) throws -> CompactionReport {
    try compactor.compactSealed(
      frameContentBytes: min(frameContentBytes, SegmentCompactor.defaultFrameContentBytes), progress: progress)
  }

  /// What the background compaction (`JournalOptions.compactsSealedSegments`) did so far.
  public var backgroundCompaction: CompactionReport { compactor.backgroundState.0 }
  /// The last failure of the background compaction, if any (the segment concerned was left as it was).
  public var backgroundCompactionFailure: JournalError? { compactor.backgroundState.1 }

  /// A reader of this journal's directory. It reads with `JournalLimits.largest`, as the
  /// library's other readers do: a reader's limits bound what a damaged header can make it
  /// allocate, which the journal's own plausibility checks bound already, while smaller ones would
  /// refuse records this journal, or an earlier writer with larger limits, wrote.
  public func reader() throws -> JournalReader { try JournalReader(directory: directory, limits: .largest) }
}

/// A journal directory's lock (`Journal.init`), released once: by whichever thread finishes
/// closing the journal. An object of its own, so that the writer thread can release it after the
/// journal itself is gone (`JournalWriter.close(then:)`).
///
/// While held, it is listed by its LOCK file's device and inode, so that a writer or a repair
/// opened in this process while a journal of it is closing waits for the release instead of
/// failing with `.locked` (`take`): a journal let go of on its own writer thread releases the lock
/// a moment later, once that thread has finished, and a `close()` on another thread may still be
/// at it.
final class DirectoryLock: Sendable {
  private let fd: Int32
  private let path: String
  private let io: any FileIO
  /// The LOCK file's device and inode, under which the lock is listed while held (nil if `fstat`
  /// failed: then it is not listed, and an opener fails with `.locked` as another process's would).
  private let key: FileIdentity?
  /// Whether the lock was released; held while it is, so that a second closer returns only once
  /// the first has unlocked and closed it (then the directory can be opened again).
  private let released = Lock<Bool>(false)
  private let closingState = Lock<Closing?>(nil)
  /// Entered when taken, left when released: openers waiting for the release wait on it.
  private let releaseSignal = DispatchGroup()

  /// How the journal is closing: the thread that the release waits for, when the journal was
  /// closed on its own writer thread (which releases the lock once it has finished) or in a
  /// completion a leader ran (the writer thread releases it once that leader has finished
  /// writing): that thread must not wait for itself.
  private struct Closing {
    var releasingThread: pthread_t?
  }

  init(fd: Int32, path: String, io: any FileIO) {
    self.fd = fd
    self.path = path
    self.io = io
    key = FileIdentity(fd)
    releaseSignal.enter()
    if let key { heldLocks.withLock { $0[key] = self } }
  }

  /// The journal began to close (before its writer finishes): openers in this process wait for
  /// the release from now on. `releasedLater` says that the release waits for this thread to
  /// finish: the writer's, or a leader's in one of its completions (`JournalWriter.close(then:)`
  /// returned at once).
  func closing(releasedLater: Bool) {
    closingState.withLock { $0 = Closing(releasingThread: releasedLater ? pthread_self() : $0?.releasingThread) }
  }

  func release() {
    let now = released.withLock { released -> Bool in
      guard !released else { return false }
      io.unlock(fd, path: path)
      io.close(fd)
      released = true
      return true
    }
    guard now else { return }
    if let key { heldLocks.withLock { if $0[key] === self { $0[key] = nil } } }
    releaseSignal.leave()
  }

  /// Takes the lock on `fd` (a journal's LOCK file, opened read-write) for a writer or a repair,
  /// without blocking: true if taken. When a journal of this process holds it and is closing, waits
  /// for that journal to release it (its writer finishing what was queued, then closing its files)
  /// and tries again, unless this thread is the one that releases it later, which would wait for
  /// itself. Returns false at once when the holder is another process, or a journal of this one
  /// that is not closing; and after `releaseWaitLimit` without a release: a journal whose writer
  /// is stuck (a hung disk), or a release that waits for this very thread (code the writer runs,
  /// such as an append's completion, opening the directory while another thread closes it),
  /// then fails as before, with `.locked`, instead of hanging.
  static func take(_ fd: Int32, path: String, io: any FileIO) throws -> Bool {
    if try io.tryLock(fd, path: path) { return true }
    guard let key = FileIdentity(fd) else { return false }
    guard let holder = heldLocks.withLock({ $0[key] }) else {
      // Another process's, or this process's released since the first try: try once more.
      return try io.tryLock(fd, path: path)
    }
    let closing = holder.closingState.withLock { $0 }
    guard let closing else { return false }
    if let thread = closing.releasingThread, pthread_equal(thread, pthread_self()) != 0 { return false }
    openersWaiting.add(1, ordering: .relaxed)
    let released = holder.releaseSignal.wait(timeout: .now() + releaseWaitLimit) == .success
    openersWaiting.subtract(1, ordering: .relaxed)
    return released ? try io.tryLock(fd, path: path) : false
  }

  /// How long `take` waits for a closing journal's release: far longer than a writer takes to
  /// finish what was queued and close its files (milliseconds; a sync under `always`).
  static let releaseWaitLimit: DispatchTimeInterval = .seconds(10)

  /// Whether a journal of this process holds the lock of the LOCK file open at `fd`.
  static func isHeldInThisProcess(_ fd: Int32) -> Bool {
    guard let key = FileIdentity(fd) else { return false }
    return heldLocks.withLock { $0[key] != nil }
  }

  /// How many openers wait for a closing journal's lock (`take`), for tests.
  static var waitingOpeners: Int { openersWaiting.load(ordering: .relaxed) }

  /// Whether the lock on the LOCK file at `path` is held by a journal of this process that is
  /// closing, for tests.
  static func holderIsClosing(lockFile path: String) -> Bool {
    let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { Glibc.close(fd) }
    guard let key = FileIdentity(fd), let holder = heldLocks.withLock({ $0[key] }) else { return false }
    return holder.closingState.withLock { $0 != nil }
  }
}

/// The directory locks this process's journals hold, by their LOCK file's identity.
private let heldLocks = Lock<[FileIdentity: DirectoryLock]>([:])
private let openersWaiting = Atomic<Int>(0)

/// A file's device and inode number (`fstat`): the same for every descriptor and name of it.
struct FileIdentity: Hashable, Sendable {
  var device: UInt64
  var inode: UInt64

  init?(_ fd: Int32) {
    var info = stat()
    guard fstat(fd, &info) == 0 else { return nil }
    device = UInt64(info.st_dev)
    inode = UInt64(info.st_ino)
  }
}
