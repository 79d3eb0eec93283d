import Foundation
import RewindLocking
import Synchronization

/// Who learns an append's outcome: a callback, or a suspended task (`Journal.append`, which so
/// needs no closure context per append).
enum AppendCompletion: Sendable {
  case callback(@Sendable (Result<ClosedRange<UInt64>, JournalError>) -> Void)
  /// A callback that a caller shares between its appends, told which append it is by the first
  /// sequence number the append expected (see `Journal.enqueue(_:expectedFirst:notifying:)`).
  case sequenced(UInt64, @Sendable (UInt64, Result<ClosedRange<UInt64>, JournalError>) -> Void)
  /// Resumed exactly once: every path of `JournalWriter.enqueue` completes its append once.
  case task(AppendContinuation)

  func callAsFunction(_ outcome: Result<ClosedRange<UInt64>, JournalError>) {
    switch self {
    case .callback(let callback): callback(outcome)
    case .sequenced(let first, let callback): callback(first, outcome)
    case .task(let continuation): continuation.resume(returning: outcome)
    }
  }
}

/// The suspended task of a `Journal.append`. Debug builds (the test suite) use a checked
/// continuation, so a path of `JournalWriter.enqueue` that resumed an append twice traps and one
/// that dropped it is reported, instead of hanging its caller; release builds use an unsafe one,
/// which costs no allocation per append.
#if DEBUG
  typealias AppendContinuation = CheckedContinuation<Result<ClosedRange<UInt64>, JournalError>, Never>
#else
  typealias AppendContinuation = UnsafeContinuation<Result<ClosedRange<UInt64>, JournalError>, Never>
#endif

/// Suspends the calling task until `body`'s continuation is resumed (see `AppendContinuation`).
@inline(__always)
func withAppendContinuation(
  _ body: (AppendContinuation) -> Void
) async -> Result<ClosedRange<UInt64>, JournalError> {
  #if DEBUG
    await withCheckedContinuation(body)
  #else
    await withUnsafeContinuation(body)
  #endif
}

/// What `JournalWriter.write(group:)` needs of each append of a group: its records, and the
/// content bytes they take in a frame (counted once, as the append was accepted).
protocol GroupedAppend {
  associatedtype Records: Collection<NewRecord>
  var records: Records { get }
  var contentBytes: Int { get }
}

/// One append waiting to be written.
struct PendingAppend: GroupedAppend {
  var records: [NewRecord]
  var contentBytes: Int
  /// Written only if it starts at this sequence number (see `Journal.append(_:expectingFirstSequence:)`).
  var expectedFirst: UInt64?
  var completion: AppendCompletion
  /// The callers waiting for it (at least 1): a manager's append carries the commands it batched.
  /// The writer thread gathers a group toward as many as the last group had.
  var waiters: Int
}

/// An unconditional append written at once by its caller's thread as a group of its own (the
/// fast paths of `enqueue` and `appendAtOnce`): its records only, since the caller takes the
/// outcome itself. `Records` is `CollectionOfOne` for `Journal.append(_:)` of one record, so that
/// no array is made for it.
struct LoneAppend<Records: Collection<NewRecord>>: GroupedAppend {
  var records: Records
  var contentBytes: Int
}

/// The single writer of a journal: gathers waiting appends into groups, writes each group as one
/// or more frames with one system call (under `none`, with none: stored through a mapping of the
/// active segment, `storeMapped`), syncs it as the durability policy says, and only then
/// acknowledges every append of the group, in order.
///
/// Leader and followers (group commit as in LevelDB and RocksDB): an append that finds nothing
/// being written is written at once on its caller's thread, with whatever else is queued (no
/// thread hand-off, which costs more than the write itself). Appends that arrive while a group
/// is being written queue up; when that write ends, a dedicated writer thread takes everything
/// queued as the next group and acknowledges its appends together. While appenders contend (the
/// last group held more than one append), every group is left to the writer thread: leaders
/// would write small groups one after another, each blocking a caller's thread (with Swift
/// concurrency, a thread of the small cooperative pool). Leaders write only under `none`: under
/// `always` and `batched` every group is written by the writer thread (which, under `batched`,
/// lingers to gather it), so no caller's thread waits for an fsync.
///
/// `@unchecked Sendable`: `queue`, `writing`, `leaderThread`, `closing` and `failure` are guarded by
/// `condition`; file state (`state`, descriptors, encoders, buffers) is touched only by the one
/// thread that set `writing` (the writer thread or a leader), and by `init` and the writer thread
/// before any append and after the last.
final class JournalWriter: @unchecked Sendable {
  let directory: JournalDirectory
  let options: JournalOptions
  private var io: any FileIO { directory.io }
  private var path: String { directory.path }

  // Guarded by `condition`.
  private let condition = ConditionLock()
  @exclusivity(unchecked) private var queue: [PendingAppend] = []
  /// An empty array with the capacity of an earlier group, to be the next queue: taking a group
  /// then allocates nothing.
  @exclusivity(unchecked) private var spare: [PendingAppend] = []
  private var queuedBytes = 0
  /// The callers waiting for the queued appends (`PendingAppend.waiters`, summed).
  private var queuedWaiters = 0
  private var closing = false
  /// A thread is writing a group; only it touches the file state.
  private var writing = false
  /// The caller's thread writing a group as its leader, while it runs the group's completions
  /// (`enqueue`'s fast path, `writeAndHandOff`): a `close()` made there, in a completion, must not
  /// wait for the writer thread, which waits for this one to finish writing. Nil otherwise (also
  /// in `appendAtOnce`, which runs no completion while it writes).
  private var leaderThread: pthread_t?
  /// The last group held more than one append: appenders contend, and their appends are better
  /// gathered by the writer thread than written one by one by leaders.
  private var contended = false {
    didSet { if contended != oldValue { contentionSeen.store(contended, ordering: .relaxed) } }
  }
  /// `contended`, readable without `condition`: a hint that spares a contended append the fast
  /// path's lock (`appendAtOnce`, which checks `contended` itself under the lock).
  private let contentionSeen = Atomic<Bool>(false)
  /// Set when the journal can no longer accept appends (a failed fsync, a write that could not be undone).
  private var failure: JournalError?
  /// What every append gets once `failure` is set, unless it was in the group that failed:
  /// `.stopped`, which says that nothing of it was written (the failed group's own appends get
  /// `failure`, whose outcome may be unknown).
  private var refusal: JournalError?
  /// While the writer thread gathers a group under `always` or `batched`: how many callers it
  /// waits for (enqueue wakes it only once that many wait for the queued appends, or a frame's
  /// worth is queued); 0 otherwise.
  private var gatherTarget = 0
  /// The callers waiting for the last group taken (`PendingAppend.waiters`, summed): with
  /// producers that wait for their appends, as many come back for the next group. The writer
  /// thread gathers toward it.
  private var lastGroupWaiters = 0

  // Writer-thread only: what the last synced group looked like, for gathering the next.
  /// Lingers in a row under `batched` that waited and gathered nothing: the appends come one at
  /// a time, each from a producer that waits for it (a lone producer), or sparsely.
  private var futileLingers = 0
  /// Groups of one caller written without lingering since the last linger (see `shouldLinger`).
  private var groupsWithoutLinger = 0
  /// Times the writer waited for more appends before taking a group (a linger under `batched`,
  /// a gathering under `always`), and those of `always`'s that ran to their limit: what tests
  /// check the gathering policy by, rather than by how long appends took.
  private(set) var gatheringWaits = 0
  private(set) var gatheringWaitsToTheLimit = 0
  /// How long the last fdatasync took, in nanoseconds.
  private var lastSyncNanos: UInt64 = 0
  /// `options.alwaysGatherLimit`: the longest the writer thread waits under `always` for the last
  /// group's callers, in nanoseconds.
  private let alwaysGatherLimitNanos: UInt64

  /// `options.frameTargetBytes`, but no more than readers with the same limits accept.
  private let frameTargetBytes: Int

  /// The last acknowledged sequence number, readable from any thread.
  let lastSequence: Atomic<UInt64>

  // Writer-thread state.
  @exclusivity(unchecked) private var state: WriterStart
  private var segmentFD: Int32 = -1
  private var indexFD: Int32 = -1
  private var indexEnd: Int64 = 0
  /// Index entries of committed batches whose append to the index file failed, oldest first,
  /// encoded: written, in order, before the next entries (see `appendIndexEntriesLocked`).
  private var indexBacklog: [UInt8] = []
  /// Set once the writer gave up on the index file for good; the next opening extends it.
  private var indexAbandoned = false
  /// The active segment's file size: `state.endOffset` plus the zeros written ahead of it
  /// (`JournalOptions.preallocationBytes`).
  private var allocatedEnd: Int64 = 0
  /// Bytes and groups written since the file last grew, for the average group size that
  /// decides whether growing it again writes zeros ahead (`preallocate(through:)`).
  private var bytesSinceGrowth: Int64 = 0
  private var groupsSinceGrowth: Int64 = 0
  private let encoder: LZ4FrameEncoder
  /// The decoded content of the frame being encoded; only ever grown (see `BatchCodec.encode`).
  @exclusivity(unchecked) private var scratch: [UInt8] = []
  /// The group's frames, `outputLength` bytes of it; only ever grown.
  @exclusivity(unchecked) private var output: [UInt8] = []
  private var outputLength = 0
  /// Where in `output` each of the group's frames after the first starts: empty for a group of
  /// one frame (the usual case). Stores through the mapping go frame by frame (`storeMapped`).
  /// Emptied for each group; its capacity is kept.
  @exclusivity(unchecked) private var laterFrameStarts: [Int] = []
  /// The first sequence number of each frame `laterFrameStarts` starts.
  @exclusivity(unchecked) private var laterFrameFirstSequences: [UInt64] = []
  private let finished = DispatchSemaphore(value: 0)
  /// The writer thread, once it runs (guarded by `condition`): a `close()` made on it must not
  /// wait for it.
  private var writerThread: pthread_t?
  /// What closes made on the writer thread left for it to run once it has finished (guarded by
  /// `condition`).
  private var afterFinishing: [@Sendable () -> Void] = []

  /// Compaction replaces the index file under this gate; the writer appends to it under it too.
  let indexGate: IndexFileGate
  private var indexGeneration: UInt64 = 0
  /// Called with a segment's first sequence once it is sealed (background compaction).
  private let onSeal: (@Sendable (UInt64) -> Void)?

  /// Under `none`, the active segment's early sync: started on `earlySyncQueue` once the segment
  /// holds `earlySyncFraction` of its target size, so that the fsync that seals it has only the
  /// rest to write, instead of stalling an appender for the whole segment (tens of milliseconds
  /// per 64 MiB here). It makes nothing durable that `none` promises; the seal still fsyncs.
  private var earlySyncStarted = false
  private let earlySyncs = DispatchGroup()
  private let earlySyncQueue = DispatchQueue(label: "rewind-journal-early-sync", qos: .utility)
  /// What an early sync threw: the kernel reports a writeback error once per open file, so the
  /// seal's own fsync on the same descriptor would not see it again. The next group written
  /// stops the journal with it (`earlySyncFailed` says that one came, cheaply), and so does
  /// closing, when no group comes.
  private let earlySyncFailure = Lock<(any Error)?>(nil)
  private let earlySyncFailed = Atomic<Bool>(false)
  /// The share of `segmentTargetBytes` written before the early sync starts: late enough that the
  /// seal finds little left, early enough that the sync usually ends before the seal (the writer
  /// fills the last quarter of a segment in about as long as the sync of the rest takes here).
  static let earlySyncFraction = 0.75

  init(
    directory: JournalDirectory, options: JournalOptions, start: WriterStart,
    indexGate: IndexFileGate = IndexFileGate(),
    onSeal: (@Sendable (UInt64) -> Void)? = nil
  ) throws {
    self.directory = directory
    self.options = options
    self.frameTargetBytes = min(options.frameTargetBytes, options.limits.maxBatchBytes)
    self.alwaysGatherLimitNanos = ConditionLock.nanoseconds(options.alwaysGatherLimit)
    self.encoder = LZ4FrameEncoder(compressionLevel: 0, participants: options.compressionThreads)
    self.indexGate = indexGate
    self.onSeal = onSeal
    self.state = start
    self.lastSequence = Atomic(start.nextSequence - 1)
    self.allocatedEnd = start.fileSize
    try openActiveSegment()
    if options.sealsLastSegmentOnOpening && state.endOffset > Int64(Layout.segmentHeaderSize) {
      do {
        // Not handed to `onSeal` (background compaction) from here: it would start compacting
        // the segment, and replace the index file, while this writer has yet to write its own
        // (`writeIndexFile` below, not under `indexGate`), which would then put back the sealed
        // segment's entries of its old frames. `Journal` queues every sealed segment, this one
        // too, once the writer is made.
        try roll(notifying: false)
      } catch {
        // Nothing is written yet: the descriptor the roll left open (the old segment's, or the
        // new one's) is closed, and the journal is not opened.
        if segmentFD >= 0 { io.close(segmentFD) }
        throw error.error
      }
    }
    do {
      try writeIndexFile(rewrite: !start.indexIsCurrent, namesRecordsGone: start.report.missingRecords != nil)
    } catch {
      // Nothing is written yet, as above.
      if segmentFD >= 0 { io.close(segmentFD) }
      throw error
    }
    do {
      try Threads.start(named: "rewind-journal-writer") { [self] in run() }
    } catch {
      // No writer thread, no appends: the journal is not opened (it would take appends that
      // are never written, and wait for them for ever).
      if segmentFD >= 0 { io.close(segmentFD) }
      if indexFD >= 0 { io.close(indexFD) }
      throw JournalError(error, directory: path)
    }
  }

  /// The active segment's file name and path, made once per segment (not per write).
  private var activeName = ""
  private var activePath = ""

  private func openActiveSegment() throws {
    let name = Layout.segmentName(firstSequence: state.segments.last!)
    activeName = name
    activePath = path + "/" + name
    do {
      // Read and write: a shared mapping (`storeMapped`) needs both.
      segmentFD = try io.open(activePath, flags: O_RDWR, mode: 0)
    } catch {
      throw JournalError(error, directory: path, file: name)
    }
    reservedEnd = state.endOffset
    mappingFailed = false
  }

  // MARK: Appending (any thread)

  /// Whether appenders write on their own thread: only under `none`, where a write is a copy into
  /// the page cache. Under `always` the leader would also wait for the fsync on its caller's
  /// thread, a thread of Swift's small cooperative pool: a caller that issues commands from one
  /// task (a pipelined workload, an app's main actor) could then issue nothing while it waits, so
  /// no group ever forms (measured: 166,559 frames for 170,741 commands in `make demo`). Under
  /// `batched` the writer thread lingers to gather each group.
  private var leadsInline: Bool {
    if case .none = options.durability { true } else { false }
  }

  /// Queues an append; `completion` gets its outcome. With `lead`, the append is written at once
  /// on this thread if nothing is being written (blocking it for the write and sync); otherwise
  /// it is written with the next group. Without `lead`, the caller must call `lead()` soon: the
  /// append waits for it, or for the group being written to end.
  func enqueue(
    _ records: [NewRecord], expectedFirst: UInt64? = nil, lead: Bool = true,
    completion: @escaping @Sendable (Result<ClosedRange<UInt64>, JournalError>) -> Void
  ) {
    enqueue(records, expectedFirst: expectedFirst, lead: lead, waiters: 1, completion: .callback(completion))
  }

  /// `enqueue(_:expectedFirst:lead:completion:)` with any kind of completion.
  ///
  /// The fast path: an unconditional append that finds nothing queued or being written, under
  /// `none`, is written by this thread as a group of one without passing through the queue (as
  /// the general path would write it, minus the queue's bookkeeping). Appends arriving meanwhile
  /// queue up behind it as usual.
  /// `waiters`: the callers waiting for this append (see `PendingAppend.waiters`).
  /// `blocking`: the caller blocks this thread until `completion` has run (`appendAndWait`): made
  /// on the thread writing a group, in one of its completions, the append fails at once with
  /// `.calledFromCompletion` (see `onWritingThread`).
  func enqueue(
    _ records: [NewRecord], expectedFirst: UInt64? = nil, lead: Bool = true, waiters: Int = 1,
    blocking: Bool = false, completion: AppendCompletion
  ) {
    let bytes: Int
    switch contentBytes(of: records) {
    case .success(let counted): bytes = counted
    case .failure(let error): return completion(.failure(error))
    }
    condition.lock()
    if blocking, onWritingThread {
      condition.unlock()
      return completion(
        .failure(
          JournalError(
            .calledFromCompletion,
            "appendAndWait was called in an append's completion, on the thread that writes the journal's appends "
              + "until that completion returns: it would wait for itself for ever; nothing was appended",
            directory: path)))
    }
    // Closed before stopped: an append made after `close()` is refused as closed, as the close
    // promises, whatever stopped the journal before (the message names that).
    if closing {
      let stopped = failure
      condition.unlock()
      return completion(.failure(closedError(stoppedBy: stopped)))
    }
    // Matched, so that it is copied only when set: binding it, or comparing it with nil, copied
    // the optional error on every append.
    if case .some(let refused) = refusal {
      condition.unlock()
      return completion(.failure(refused))
    }
    if lead, expectedFirst == nil, leadsInline, aloneWritable {
      writing = true
      leaderThread = pthread_self()
      condition.unlock()
      // The completion before `writing` is given up: completions are called one at a time, in order.
      completion(writeAlone(LoneAppend(records: records, contentBytes: bytes)))
      return endWritingAlone()
    }
    let waiters = max(1, waiters)
    queue.append(
      PendingAppend(
        records: records, contentBytes: bytes, expectedFirst: expectedFirst, completion: completion, waiters: waiters))
    queuedBytes += bytes
    queuedWaiters += waiters
    if leadsInline && !contended {
      guard lead, !writing else {
        // Written by this caller's `lead()`, or after the group being written.
        condition.unlock()
        return
      }
      writing = true
      leaderThread = pthread_self()
      let (group, failure) = takeGroup()
      condition.unlock()
      writeAndHandOff(group, failure: failure)
      return
    }
    if gatherTarget == 0 || queuedWaiters >= gatherTarget || queuedBytes >= frameTargetBytes { condition.signal() }
    condition.unlock()
  }

  /// `Journal.appendAndWait`: queues `records` and blocks this thread until their outcome. Made
  /// in an append's completion on the thread writing that append's group, it fails at once with
  /// `.calledFromCompletion` instead (`enqueue(blocking:)`).
  func appendAndWait(_ records: [NewRecord]) -> Result<ClosedRange<UInt64>, JournalError> {
    let done = DispatchSemaphoreBox()
    enqueue(records, blocking: true, completion: .callback { done.finish($0) })
    return done.wait()
  }

  /// Whether this thread is the one that writes the journal's groups now, or the writer thread:
  /// code it runs (an append's completion, a `deinit` there) runs while it holds `writing`, so a
  /// wait there for anything the writer does next waits for itself. The writer thread, or a
  /// caller's thread that writes a group as its leader and runs its completions (`leaderThread`;
  /// not `appendAtOnce`, which runs none). Holder of `condition`.
  private var onWritingThread: Bool {
    let this = pthread_self()
    if let writer = writerThread, pthread_equal(writer, this) != 0 { return true }
    if let leader = leaderThread, pthread_equal(leader, this) != 0 { return true }
    return false
  }

  /// What an append made after `close()` gets: `.closed`, naming the failure that had stopped the
  /// journal before, if one had (`Journal.failure` still says which).
  private func closedError(stoppedBy failure: JournalError?) -> JournalError {
    guard let failure else { return JournalError(.closed, "the journal is closed", directory: path) }
    return JournalError(
      .closed, "the journal is closed (it had stopped accepting appends after \(failure.code): \(failure.message))",
      directory: path)
  }

  /// Whether an append may be written at once on its caller's thread, as a group of one: no
  /// contention, nothing being written, nothing queued before it (the fast paths of `enqueue`
  /// and `appendAtOnce`, under `none`). Holder of `condition`.
  private var aloneWritable: Bool { !contended && !writing && queue.isEmpty }

  /// `enqueue`'s fast path without a completion, for `Journal.append`: an unconditional append
  /// that finds nothing queued or being written, under `none`, is written on this thread and its
  /// outcome returned, so the caller need not suspend. Returns nil, having done nothing, when the
  /// append must take `enqueue` (another policy, an append queued or being written, a journal
  /// closing or stopped, a record or batch over the limits: `enqueue` reports those).
  func appendAtOnce(_ records: some Collection<NewRecord>) -> Result<ClosedRange<UInt64>, JournalError>? {
    guard leadsInline, !contentionSeen.load(ordering: .relaxed), case .success(let bytes) = contentBytes(of: records)
    else { return nil }
    condition.lock()
    // `refusal` matched, not compared or bound (see `enqueue`).
    guard case .none = refusal, !closing, aloneWritable else {
      condition.unlock()
      return nil
    }
    writing = true
    condition.unlock()
    let outcome = writeAlone(LoneAppend(records: records, contentBytes: bytes))
    endWritingAlone()
    return outcome
  }

  /// The content bytes `records` take in a frame, or why they cannot be appended: none, a
  /// record over the record limit, or more than the batch limit in all.
  private func contentBytes(of records: some Collection<NewRecord>) -> Result<Int, JournalError> {
    var bytes = 0
    for record in records {
      guard record.payload.count <= options.limits.maxRecordBytes else {
        return .failure(
          JournalError(
            .limitExceeded,
            "a record of \(record.payload.count) bytes exceeds the limit of \(options.limits.maxRecordBytes)",
            directory: path))
      }
      bytes += BatchCodec.contentSize(of: record)
    }
    guard !records.isEmpty else {
      return .failure(JournalError(.invalidArgument, "an append needs at least one record", directory: path))
    }
    guard bytes <= options.limits.maxBatchBytes else {
      return .failure(
        JournalError(
          .limitExceeded, "a batch of \(bytes) bytes exceeds the limit of \(options.limits.maxBatchBytes)",
          directory: path))
    }
    return .success(bytes)
  }

  /// Writes what is queued on this thread, unless a group is being written (which hands what
  /// is queued to the writer thread when it ends). See `enqueue(lead: false)`.
  func lead() {
    condition.lock()
    guard !writing, !queue.isEmpty else { return condition.unlock() }
    guard leadsInline && !contended else {
      // Under `batched`, `enqueue` woke the writer already: a second signal would read as another
      // append arriving and prolong its linger.
      if leadsInline { condition.signal() }
      return condition.unlock()
    }
    writing = true
    leaderThread = pthread_self()
    let (group, failure) = takeGroup()
    condition.unlock()
    writeAndHandOff(group, failure: failure)
  }

  /// Writes one group as its leader, then lets the writer thread take what queued meanwhile.
  private func writeAndHandOff(_ group: [PendingAppend], failure: JournalError?) {
    var group = group
    complete(group, failure: failure)
    group.removeAll(keepingCapacity: true)
    condition.lock()
    spare = group
    writing = false
    leaderThread = nil
    if !queue.isEmpty || closing { condition.signal() }
    condition.unlock()
  }

  /// Takes everything queued as one group, or the reason it must fail (`refusal`: these appends
  /// were queued behind a group whose failure stopped the journal, and are not written). Holder
  /// of `condition`.
  private func takeGroup() -> ([PendingAppend], JournalError?) {
    var group: [PendingAppend] = []
    swap(&group, &spare)
    swap(&group, &queue)
    queuedBytes = 0
    lastGroupWaiters = queuedWaiters
    queuedWaiters = 0
    contended = group.count > 1
    return (group, refusal)
  }

  /// Writes `group`, or fails all of it with `failure` (writing nothing).
  private func complete(_ group: [PendingAppend], failure: JournalError?) {
    if let failure {
      for append in group { append.completion(.failure(failure)) }
    } else {
      write(group)
    }
  }

  /// Stops accepting appends, lets the writer finish what is queued, closes the files, then runs
  /// `then` (which releases the journal's lock). Returns once that is done, also when another
  /// thread is closing the journal at the same time (a second `close()` that returned at once let
  /// `Journal.close()` release the lock while the writer still wrote, and let a manager end its
  /// change streams before the appends in flight settled).
  ///
  /// On the writer thread itself (an append's completion held the last reference to the journal,
  /// or to the manager that owns it, and the writer let go of it: its `deinit` closes it), waiting
  /// for the writer would wait for ever: it returns at once, and the writer thread runs `then`
  /// once it has finished, right after. So too in a completion that a caller's thread runs as the
  /// leader of its group (under `none`): the writer thread waits for that thread to finish
  /// writing, and runs `then` once it has finished.
  /// - Returns: whether `then` was left to the writer thread, to run once it has finished (the
  ///   call was made on it, or on a leader in one of its completions).
  @discardableResult
  func close(then: @escaping @Sendable () -> Void) -> Bool {
    condition.lock()
    closing = true
    condition.signal()
    // Or on a caller's thread that writes a group as its leader, in one of its completions: the
    // writer thread waits for that thread to finish writing before it can finish.
    let onWriterThread = onWritingThread
    if onWriterThread { afterFinishing.append(then) }
    condition.unlock()
    if onWriterThread { return true }
    // The writer signals once; each closer passes the signal on to the next one, or to a later call.
    finished.wait()
    finished.signal()
    then()
    return false
  }

  /// `lastGroupWaiters`, read under the lock (for tests).
  var lastGroupWaitersSeen: Int {
    condition.lock()
    defer { condition.unlock() }
    return lastGroupWaiters
  }

  /// Whether `close()` has begun (for tests).
  var isClosing: Bool {
    condition.lock()
    defer { condition.unlock() }
    return closing
  }

  /// `gatheringWaits` and `gatheringWaitsToTheLimit`, read under the lock (for tests).
  var gatheringWaitsSeen: (waits: Int, toTheLimit: Int) {
    condition.lock()
    defer { condition.unlock() }
    return (gatheringWaits, gatheringWaitsToTheLimit)
  }

  var currentFailure: JournalError? {
    condition.lock()
    defer { condition.unlock() }
    return failure
  }

  // MARK: The writer thread

  private func run() {
    condition.lock()
    writerThread = pthread_self()
    condition.unlock()
    while let (next, failure) = nextGroup() {
      var group = next
      complete(group, failure: failure)
      group.removeAll(keepingCapacity: true)
      condition.lock()
      spare = group
      writing = false
      condition.unlock()
    }
    // A closed journal's last segment ends at its last frame, as if nothing had been preallocated
    // (if this fails, or the process dies first, the zeros read as the end of the journal).
    unmapWindow()
    cutPreallocation()
    // The early sync's descriptor must not be closed (and its number reused) under it. Closing
    // syncs nothing under `none`, but a failed early sync that no group came after to report
    // is kept as the journal's failure: the closed journal must not look as if nothing failed.
    do {
      try finishEarlySync()
    } catch {
      _ = fail(earlySyncLost(error, then: "the journal was closed after it"), fatal: true)
    }
    if segmentFD >= 0 { io.close(segmentFD) }
    segmentFD = -1
    // Entries an earlier index append failed to write get one more try (else opening derives them).
    if !indexBacklog.isEmpty { appendIndexEntries([]) }
    if indexFD >= 0 { io.close(indexFD) }
    condition.lock()
    let closers = afterFinishing
    afterFinishing = []
    // The thread ends here, and its `pthread_t` may be given to another: a `close()` from that
    // one must wait on `finished` (which returns at once), not take itself for the writer.
    writerThread = nil
    condition.unlock()
    for then in closers { then() }
    finished.signal()
  }

  /// Waits for appends that no leader writes; under `batched`, lingers up to the delay for more
  /// to gather. Takes `writing`; returns nil once closing and everything is written.
  private func nextGroup() -> ([PendingAppend], JournalError?)? {
    condition.lock()
    defer { condition.unlock() }
    while writing || queue.isEmpty {
      if closing && !writing && queue.isEmpty { return nil }
      condition.wait()
    }
    writing = true
    if case .always = options.durability, !closing, lastGroupWaiters > 1, queuedWaiters < lastGroupWaiters {
      // Group commit under `always`: the appends of the last group were acknowledged a moment
      // ago and their producers are coming back one by one. Syncing the first few alone would
      // make the rest wait for that sync and then sync again; wait (at most about one sync's
      // duration) until as many callers as last time wait, then sync them together. Callers,
      // not appends: a manager batches its commands into one append, and each command's caller
      // comes back on its own.
      let limit = min(max(lastSyncNanos, 50_000), alwaysGatherLimitNanos)
      let deadline = ConditionLock.deadline(after: limit)
      gatherTarget = lastGroupWaiters
      gatheringWaits += 1
      while queuedWaiters < gatherTarget && queuedBytes < frameTargetBytes && !closing {
        if !condition.wait(untilNanoseconds: deadline) {
          gatheringWaitsToTheLimit += 1
          break
        }
      }
      gatherTarget = 0
    }
    if case .batched(let delay) = options.durability, !closing, shouldLinger() {
      // Linger for more appends, up to the delay; stop early once the queue has stopped
      // growing for an eighth of it (everyone who was going to append soon has), a frame is
      // full, or as many callers wait as waited for the last group (its producers are back:
      // with producers that wait for their appends, no more are coming; a manager's append
      // counts each command it carries). Appends queued below that count do not wake this
      // thread (`gatherTarget`); it looks at the queue's growth once per eighth instead.
      let linger = ConditionLock.nanoseconds(delay)
      let deadline = ConditionLock.deadline(after: linger)
      gatherTarget = lastGroupWaiters > 1 ? lastGroupWaiters : 0
      let before = queue.count
      var seen = before
      var waited = false
      while queuedBytes < frameTargetBytes && !closing && (gatherTarget == 0 || queuedWaiters < gatherTarget) {
        let now = ConditionLock.now()
        if now >= deadline { break }
        waited = true
        let signalled = condition.wait(untilNanoseconds: now + min(linger / 8, deadline - now))
        if !signalled && queue.count == seen { break }
        seen = queue.count
      }
      gatherTarget = 0
      if waited {
        gatheringWaits += 1
        futileLingers = queue.count == before ? futileLingers + 1 : 0
      }
    }
    return takeGroup()
  }

  /// Whether the writer lingers before this group under `batched`. Not when the last two
  /// lingers gathered nothing and the last group had one caller: lingering then only delays a
  /// producer that waits for each append (a lone producer waited an eighth of the delay for
  /// every append, a quarter of `always`'s rate). Every sixteenth such group lingers anyway, to
  /// notice producers that have come (two producers out of step would otherwise each sync
  /// alone, in turn, for ever): once a linger gathers something, the writer lingers before every
  /// group again. After a group of several callers it lingers as before (toward their count).
  /// Writer thread only.
  private func shouldLinger() -> Bool {
    guard futileLingers >= 2, lastGroupWaiters <= 1 else {
      groupsWithoutLinger = 0
      return true
    }
    groupsWithoutLinger += 1
    guard groupsWithoutLinger >= 16 else { return false }
    groupsWithoutLinger = 0
    return true
  }

  /// Writes a group and calls every completion in the group's order. Appends conditional on a
  /// sequence number the journal will not be at are refused in their place; the rest are written.
  private func write(_ all: [PendingAppend]) {
    guard !all.isEmpty else { return }
    // Usually every append may start where the one before it ends: write them all as they are.
    var next = state.nextSequence
    var conflict = false
    for append in all {
      if let expected = append.expectedFirst, expected != next {
        conflict = true
        break
      }
      next += UInt64(append.records.count)
    }
    if !conflict {
      switch write(group: all) {
      case .success(var first):
        for append in all {
          let count = UInt64(append.records.count)
          append.completion(.success(first...(first + count - 1)))
          first += count
        }
      case .failure(let error):
        for append in all { append.completion(.failure(error)) }
      }
      return
    }
    var group: [PendingAppend] = []
    group.reserveCapacity(all.count)
    /// For each append, nil if it is written, else the sequence number the journal was at.
    var refusedAt: [UInt64?] = []
    refusedAt.reserveCapacity(all.count)
    next = state.nextSequence
    for append in all {
      if let expected = append.expectedFirst, expected != next {
        refusedAt.append(next)
      } else {
        refusedAt.append(nil)
        group.append(append)
        next += UInt64(append.records.count)
      }
    }
    var outcome = group.isEmpty ? .success(0) : write(group: group)
    for (append, refused) in zip(all, refusedAt) {
      if let refused {
        append.completion(
          .failure(
            JournalError(
              .sequenceConflict,
              "the append was to start at sequence \(append.expectedFirst!), but the journal's next is \(refused)",
              directory: path)))
        continue
      }
      switch outcome {
      case .success(let first):
        let count = UInt64(append.records.count)
        append.completion(.success(first...(first + count - 1)))
        outcome = .success(first + count)
      case .failure(let error): append.completion(.failure(error))
      }
    }
  }

  /// Writes one unconditional append that found nothing queued (the fast path of `enqueue` and
  /// `appendAtOnce`) and returns its outcome, for the caller to hand on. Holder of `writing`,
  /// which the caller gives up with `endWritingAlone()`.
  private func writeAlone(_ append: LoneAppend<some Collection<NewRecord>>) -> Result<ClosedRange<UInt64>, JournalError>
  {
    write(group: CollectionOfOne(append)).map { first in first...(first + UInt64(append.records.count) - 1) }
  }

  /// Gives up `writing` after `writeAlone`, and wakes the writer thread for what queued meanwhile.
  private func endWritingAlone() {
    condition.lock()
    writing = false
    leaderThread = nil
    if !queue.isEmpty || closing { condition.signal() }
    condition.unlock()
  }

  /// Writes `group` (all of it, or nothing) and returns the first sequence number of the first
  /// append; the others follow it, in order.
  private func write<Group: RandomAccessCollection>(group: Group) -> Result<UInt64, JournalError>
  where Group.Element: GroupedAppend {
    // Under `none`, a failed early sync stops the journal at the next group, unwritten, as a
    // failed seal does: acknowledging more after a writeback error would promise what the
    // segment may not keep.
    if let lost = earlySyncFailureSeen() { return fail(lost, fatal: true) }
    let groupBytes = group.reduce(0) { $0 + $1.contentBytes }
    do {
      if state.endOffset > Int64(Layout.segmentHeaderSize),
        state.endOffset + Int64(groupBytes) > Int64(options.segmentTargetBytes)
      {
        try roll()
      }
    } catch {
      return fail(error.error, fatal: error.fatal)
    }

    // Frames: as many whole appends as fit in the frame target; an append larger than it alone.
    outputLength = 0
    if !laterFrameStarts.isEmpty {
      laterFrameStarts.removeAll(keepingCapacity: true)
      laterFrameFirstSequences.removeAll(keepingCapacity: true)
    }
    let first = state.nextSequence
    var newEntries: [IndexEntry] = []
    var sequence = state.nextSequence
    var maxTimestamp = state.maxTimestamp
    var lastIndexed = state.lastIndexedOffset
    var start = group.startIndex
    do {
      while start < group.endIndex {
        var end = group.index(after: start)
        var frameBytes = group[start].contentBytes
        while end < group.endIndex, frameBytes + group[end].contentBytes <= frameTargetBytes {
          frameBytes += group[end].contentBytes
          end = group.index(after: end)
        }
        if outputLength > 0 {
          laterFrameStarts.append(outputLength)
          laterFrameFirstSequences.append(sequence)
        }
        let frameOffset = state.endOffset + Int64(outputLength)
        if lastIndexed == 0 || frameOffset - lastIndexed >= Int64(options.indexIntervalBytes) {
          newEntries.append(
            IndexEntry(
              firstSequence: sequence, segment: state.segments.last!, offset: frameOffset,
              maxTimestampBefore: maxTimestamp))
          lastIndexed = frameOffset
        }
        // A frame of one append (the usual case) is encoded from its array, without the
        // flattening view a frame of several needs.
        let (header, frameEnd) =
          end == group.index(after: start)
          ? try BatchCodec.encode(
            group[start].records, firstSequence: sequence, encoder: encoder, scratch: &scratch, into: &output,
            at: outputLength)
          : try BatchCodec.encode(
            group[start..<end].lazy.flatMap(\.records), firstSequence: sequence, encoder: encoder,
            scratch: &scratch, into: &output, at: outputLength)
        outputLength = frameEnd
        for append in group[start..<end] { sequence += UInt64(append.records.count) }
        maxTimestamp = max(maxTimestamp, header.maxTimestamp)
        start = end
      }
    } catch {
      return fail(JournalError(.io, "LZ4 compression failed: \(error)", directory: path), fatal: false)
    }

    let name = activeName
    let end = state.endOffset + Int64(outputLength)
    // Under `none`: small groups through the mapping, larger ones by `pwrite` into the space
    // allocated for it (see `mappedGroupBytes`).
    if mapsAppends, !mappingFailed, reserve(through: end), outputLength <= Self.mappedGroupBytes,
      storeMapped(through: end)
    {
      return commit(
        sequence: sequence, maxTimestamp: maxTimestamp, lastIndexed: lastIndexed, entries: newEntries, first: first)
    }
    bytesSinceGrowth += Int64(outputLength)
    groupsSinceGrowth += 1
    if end > allocatedEnd {
      // Zeros ahead only where a sync gains from them, and only for small groups: a group's
      // fdatasync costs about the same for a size change whatever its length, but zeros double
      // what reaches the disk; groups larger than `largeGroupBytes` on average gain less from the
      // one than they lose to the other. Without syncs (`none`) there is nothing to gain, and
      // overwriting the zeros in the page cache measured slower than appending (670k against
      // 360k one-record appends per second from one producer).
      let average = bytesSinceGrowth / groupsSinceGrowth
      bytesSinceGrowth = 0
      groupsSinceGrowth = 0
      // A chunk that does not fit (a nearly full disk) must not fail a group that does: the
      // frames then grow the file themselves, and this segment preallocates no more (each try
      // would write up to a chunk of zeros only to cut them again).
      if preallocates, !preallocationFailed, average <= Self.largeGroupBytes, !preallocate(through: end) {
        preallocationFailed = true
      }
    }
    // Under the durable policies a group of several frames is made durable frame by frame, each
    // synced before the next is written. Written whole and then synced once, a power loss during
    // that sync could leave a later frame on the disk whole behind an earlier one torn (nothing
    // orders a write's pages on their way to the disk), and opening takes damage followed by a
    // valid frame for damage to committed data (FORMAT.md, "Opening and recovery", step 6): it
    // would refuse the journal, though none of the group was acknowledged. Synced in turn, only
    // the last frame written can be torn. Under `none` nothing is synced, nor promised after a
    // power loss: one write.
    let syncsEachFrame = options.durability != .none
    var writtenLength = 0
    var laterFrame = laterFrameStarts.startIndex
    while writtenLength < outputLength {
      let frameEnd =
        syncsEachFrame && laterFrame < laterFrameStarts.endIndex ? laterFrameStarts[laterFrame] : outputLength
      laterFrame += 1
      if writtenLength > 0 {
        do {
          try io.sync(segmentFD, metadata: false, path: activePath)
        } catch {
          if (try? io.truncate(segmentFD, to: state.endOffset, path: name)) != nil { allocatedEnd = state.endOffset }
          // Uncertain: the frames written so far (the frame about to be written never was).
          let written = first...(laterFrameFirstSequences[laterFrame - 2] - 1)
          return fail(durabilityLost(error, file: name, group: written), fatal: true)
        }
      }
      do {
        try output.withUnsafeBytes { (bytes) throws in
          try io.writeAll(
            segmentFD, UnsafeRawBufferPointer(rebasing: bytes[writtenLength..<frameEnd]),
            at: state.endOffset + Int64(writtenLength), path: activePath)
        }
      } catch {
        return failedWrite(error, groupEnd: end, file: name)
      }
      writtenLength = frameEnd
    }
    allocatedEnd = max(allocatedEnd, end)
    if options.durability != .none {
      do {
        let start = DispatchTime.now().uptimeNanoseconds
        try io.sync(segmentFD, metadata: false, path: activePath)
        lastSyncNanos = DispatchTime.now().uptimeNanoseconds - start
      } catch {
        if (try? io.truncate(segmentFD, to: state.endOffset, path: name)) != nil { allocatedEnd = state.endOffset }
        return fail(durabilityLost(error, file: name, group: first...(sequence - 1)), fatal: true)
      }
      if let removed = activeSegmentRemoved() { return fail(removed, fatal: true) }
    }

    return commit(
      sequence: sequence, maxTimestamp: maxTimestamp, lastIndexed: lastIndexed, entries: newEntries, first: first)
  }

  /// A group's write failed (`error`): cuts the segment back to where the group began, so nothing
  /// unacknowledged stays behind (the preallocated zeros go too; the next group writes them
  /// again), and fails its appends.
  private func failedWrite(_ error: any Error, groupEnd end: Int64, file name: String) -> Result<UInt64, JournalError> {
    var cutFailure: (any Error)?
    var syncFailure: (any Error)?
    do {
      try io.truncate(segmentFD, to: state.endOffset, path: activePath)
    } catch {
      cutFailure = error
    }
    // Under the durable policies the cut must reach the disk before the failure is reported as
    // "nothing written": writeback may already have flushed the frames, and after a power loss
    // they would come back whole, taken for committed.
    if cutFailure == nil, options.durability != .none {
      do {
        try io.sync(segmentFD, metadata: true, path: activePath)
      } catch {
        syncFailure = error
      }
    }
    let undone = cutFailure == nil
    allocatedEnd = undone ? state.endOffset : max(allocatedEnd, end)
    // What was allocated for the mapping went with the truncation: the next group allocates
    // again before it stores anything through it.
    unmapWindow()
    reservedEnd = min(reservedEnd, state.endOffset)
    var failure = JournalError(error, directory: path, file: name)
    failure.offset = state.endOffset
    if let cutFailure {
      // Whole frames of the group may stay in the file, and every reader and the next writer
      // take a whole frame as committed: the appends' outcome is unknown, not "nothing written".
      failure.code = .durabilityLost
      failure.message =
        "a write failed (\(error)) and cutting it off again failed too (\(cutFailure)), "
        + "so the appends may or may not be in the journal"
    } else if let syncFailure {
      failure.code = .durabilityLost
      failure.message =
        "a write failed (\(error)) and was cut off again, but syncing the cut failed (\(syncFailure)), "
        + "so after a power loss the appends may be in the journal"
    }
    return fail(failure, fatal: !undone || syncFailure != nil)
  }

  /// Takes a group whose `outputLength` bytes of frames are in the file (and synced, as the
  /// policy asks) as written.
  private func commit(
    sequence: UInt64, maxTimestamp: Int64, lastIndexed: Int64, entries: [IndexEntry], first: UInt64
  ) -> Result<UInt64, JournalError> {
    state.endOffset += Int64(outputLength)
    state.nextSequence = sequence
    state.maxTimestamp = maxTimestamp
    state.lastIndexedOffset = lastIndexed
    lastSequence.store(sequence - 1, ordering: .releasing)
    if !entries.isEmpty { appendIndexEntries(entries) }
    if !earlySyncStarted, options.durability == .none,
      Double(state.endOffset) >= Double(options.segmentTargetBytes) * Self.earlySyncFraction
    {
      startEarlySync()
    }
    return .success(first)
  }

  /// Starts the active segment's early sync (see `earlySyncStarted`). The descriptor stays open
  /// until it ends: the seal and `run`'s end wait for it before closing it.
  ///
  /// The mapped window is given up first: writing back a page that is still mapped costs the
  /// kernel a TLB shootdown on the other core for it, and the next store to it a write fault.
  /// Where the early sync falls inside a window with much of it written (segments of 8 MiB,
  /// windows of 4 MiB: half a window), that cost the appender half as much CPU again (measured
  /// Dec 5: 1M one-record appends under `none`, 0.72 against 0.47 s; `perf`: `ptep_clear_flush`
  /// 20% of the samples). The next group maps a window from where it starts.
  private func startEarlySync() {
    earlySyncStarted = true
    unmapWindow()
    let (fd, path) = (segmentFD, activePath)
    earlySyncQueue.async(group: earlySyncs) { [self] in
      do {
        try io.sync(fd, metadata: false, path: path)
      } catch {
        earlySyncFailure.withLock { $0 = $0 ?? error }
        earlySyncFailed.store(true, ordering: .releasing)
      }
    }
  }

  /// Waits for the early sync, if one runs; throws what it threw.
  private func finishEarlySync() throws {
    guard earlySyncStarted else { return }
    earlySyncs.wait()
    earlySyncStarted = false
    earlySyncFailed.store(false, ordering: .relaxed)
    if let error = earlySyncFailure.withLock({ $0.take() }) { throw error }
  }

  /// Whether an early sync failed and the next group has not reported it yet (for tests).
  var earlySyncHasFailed: Bool { earlySyncFailed.load(ordering: .acquiring) }

  /// The early sync's failure as the error that stops the journal: records acknowledged in the
  /// active segment were written back with an error, and may read back stale once their pages
  /// leave the cache. Nil while none came.
  private func earlySyncFailureSeen() -> JournalError? {
    guard earlySyncStarted, earlySyncFailed.load(ordering: .acquiring),
      let error = earlySyncFailure.withLock({ $0 })
    else { return nil }
    return earlySyncLost(error, then: "nothing of this append was written")
  }

  private func earlySyncLost(_ error: any Error, then: String) -> JournalError {
    var lost = durabilityLost(error, file: activeName)
    lost.message =
      "the early fsync of the active segment failed, so records acknowledged in it may not reach the "
      + "disk (\(error)); \(then)"
    return lost
  }

  // MARK: Mapped appends (`none`)

  /// Whether groups are stored through a mapping of the active segment (FORMAT.md, "Writing").
  private var mapsAppends: Bool {
    options.mapsActiveSegment && options.durability == .none && options.preallocationBytes > 0
  }
  /// Mapping failed in the active segment (fallocate or mmap): its groups are written with
  /// `pwrite`, until the next segment.
  private var mappingFailed = false
  /// The active segment is allocated (by this writer's `fallocate`) from `state.endOffset` at
  /// its opening up to here: only this space is ever stored into through the mapping, so no
  /// store can meet a hole (a page the kernel would have to allocate at fault time, and would
  /// raise SIGBUS for on a full disk) nor the end of the file.
  private var reservedEnd: Int64 = 0
  /// The mapped window of the active segment: `windowLength` bytes from file offset
  /// `windowStart` (page aligned), at `window`; nil when nothing is mapped.
  private var window: UnsafeMutableRawPointer?
  private var windowStart: Int64 = 0
  private var windowLength = 0
  /// The window is read only from `windowStart` up to here (whole pages of frames written).
  private var protectedEnd: Int64 = 0

  /// A window's length: `preallocationBytes`, in whole pages, and at least two (a group stored
  /// through the mapping, smaller than a page, fits in a window from its first page).
  private var windowBytes: Int {
    max(2 * pageSize, (options.preallocationBytes + pageSize - 1) / pageSize * pageSize)
  }

  /// Written frames are made read only (`mprotect`) once this many bytes of whole pages have
  /// gathered: a stray store elsewhere in the process then faults instead of silently changing
  /// committed records, at one system call per this many bytes.
  static let protectionStepBytes: Int64 = 64 << 10

  /// Groups of frames up to this size are stored through the mapping; larger ones are written
  /// with `pwrite` (into the space allocated for the mapping). A store's first touch of a page
  /// faults, and the fault (page-cache page, file-system bookkeeping) costs about 0.8 µs per KiB
  /// stored here, against 0.3 µs per KiB and about 0.45 µs per call for `pwrite` (measured in C on
  /// this machine's ext4, Dec 1: 0.20 against 0.50 µs for 266 bytes, 5.8 against 2.5 µs for
  /// 8 KiB, 84 against 25 µs for 110 KB): the mapping wins only below about 1 KiB.
  /// It must stay far below glibc's threshold for non-temporal stores (which are not kept in
  /// program order with the ones around them, so frame-by-frame copies would need an `sfence`).
  static let mappedGroupBytes = 1 << 10

  /// Allocates the active segment through `end` for the mapping (`fallocate`, a window at a
  /// time, never past the segment's target size unless the frames are), unless it is already.
  /// Returns false, having allocated nothing, if that fails: the segment then falls back to
  /// `pwrite` (`mappingFailed`), so a full disk or a file system without `fallocate` fails no
  /// append that `pwrite` can still write.
  private func reserve(through end: Int64) -> Bool {
    if end > reservedEnd {
      let chunk = Int64(windowBytes)
      let target = max(end, min((end + chunk - 1) / chunk * chunk, Int64(options.segmentTargetBytes)))
      do {
        try io.allocate(segmentFD, at: reservedEnd, length: target - reservedEnd, path: activePath)
      } catch {
        stopMapping()
        // A failed fallocate may have allocated (and grown the file) part way: cut that again.
        // What stays if the cut fails is zeros, which read as space not written yet, as long as
        // the file is cut before it is sealed: `allocatedEnd` must cover it.
        if (try? io.truncate(segmentFD, to: allocatedEnd, path: activeName)) == nil {
          allocatedEnd = max(allocatedEnd, target)
        }
        return false
      }
      reservedEnd = target
      allocatedEnd = max(allocatedEnd, target)
    }
    return true
  }

  /// Stores the group's frames (`output[..<outputLength]`, ending at `end`, allocated by
  /// `reserve`) into the active segment through its mapping: moves the window if the frames
  /// leave it, copies them (frame by frame), and makes the whole pages before them read only.
  /// Returns false, having stored nothing, if mapping fails: the segment then falls back to
  /// `pwrite`.
  ///
  /// Each page's first store faults: the kernel reads the allocated, unwritten page into the page
  /// cache (zeroing it), then ext4 marks it dirty. Preparing the next 64–256 KiB ahead of the
  /// stores on this thread (`MADV_POPULATE_WRITE`, or `readahead` and `MADV_WILLNEED`, which leave
  /// the write half) only moves that work into the call: measured Dec 1, one-record appends
  /// under `none`, 1M appends, user+sys 0.96 of before for `MADV_POPULATE_WRITE`, 1.00 for
  /// `readahead`, appends per second within the spread of repeated runs. Doing it on a second
  /// thread took 14% off this thread's CPU but cost that thread 0.17 s, on this 2-core machine
  /// no clear gain either. So the faults stay where they are.
  private func storeMapped(through end: Int64) -> Bool {
    let start = state.endOffset
    precondition(end <= reservedEnd, "a store through the mapping past the allocated space")
    if window == nil || start < windowStart || end > windowStart + Int64(windowLength) {
      unmapWindow()
      let base = start / Int64(pageSize) * Int64(pageSize)
      // A group stored here is smaller than a page (`mappedGroupBytes`), so it fits in a window
      // (of at least two pages) from its first page.
      let length = windowBytes
      precondition(end <= base + Int64(length), "a group stored through the mapping larger than a window")
      do {
        window = try io.map(segmentFD, at: base, length: length, path: activePath)
      } catch {
        stopMapping()
        return false
      }
      windowStart = base
      windowLength = length
      protectedEnd = base
    }
    // Frame by frame, in order: a reader (a follower's `pread`, another process's) that finds a
    // frame damaged and a valid header after it reads the frame again, and calls it damage only
    // if it reads the same (`JournalCursor.judge`, `verify`). One copy of several frames could
    // store a later frame before an earlier one is whole (glibc's `memcpy` may store its last
    // bytes first), and a writer preempted there would leave the earlier frame reading the same,
    // damaged, however often it is read. The stores of one copy are seen by other cores before
    // those of the next (x86-64 keeps stores in program order); the fence keeps the compiler
    // from reordering or merging the copies, and orders them on arm64. A group of one frame
    // (the usual case) is one copy, made here directly: through `FileIO.store` it cost about 90
    // instructions more per append (the existential call, the loop's retain of the array).
    let destination = window! + Int(start - windowStart)
    if laterFrameStarts.isEmpty {
      output.withUnsafeBytes { destination.copyMemory(from: $0.baseAddress!, byteCount: outputLength) }
    } else {
      output.withUnsafeBytes { bytes in
        var from = 0
        for next in laterFrameStarts {
          io.store(UnsafeRawBufferPointer(rebasing: bytes[from..<next]), at: destination + from)
          atomicMemoryFence(ordering: .releasing)
          from = next
        }
        io.store(UnsafeRawBufferPointer(rebasing: bytes[from..<outputLength]), at: destination + from)
      }
    }
    let written = end / Int64(pageSize) * Int64(pageSize)
    if written - protectedEnd >= Self.protectionStepBytes {
      // Best effort: a failure (the kernel out of mapping entries) leaves the pages writable.
      _ = try? io.protectReadOnly(
        window! + Int(protectedEnd - windowStart), length: Int(written - protectedEnd), path: activePath)
      protectedEnd = written
    }
    return true
  }

  /// Unmaps the window, if one is mapped. Its stores stay in the page cache as written.
  private func unmapWindow() {
    guard let window else { return }
    io.unmap(window, length: windowLength)
    self.window = nil
  }

  /// Stops storing through a mapping in the active segment (see `storeMapped`).
  private func stopMapping() {
    unmapWindow()
    mappingFailed = true
  }

  /// Groups larger than this on average grow the file themselves, without zeros written ahead.
  static let largeGroupBytes: Int64 = 64 << 10

  /// Whether groups that grow the file write zeros ahead (`preallocate(through:)`).
  private var preallocates: Bool { options.preallocationBytes > 0 && options.durability != .none }
  /// Whether preallocating failed in the active segment (a full disk): its groups then grow the
  /// file themselves, until the next segment.
  private var preallocationFailed = false

  /// Writes zeros from the allocated end of the active segment to the next multiple of
  /// `preallocationBytes` at or after `end` (no further than the segment's target size, unless
  /// `end` is), so that the next groups overwrite space that is already part of the file: their
  /// `fdatasync` then has no file size to persist. The size grows once per chunk, persisted by
  /// the `fdatasync` of the group that crosses it. A full disk shows up here, before any frame is
  /// written: the zeros that did reach the file are cut again, and the group's frames grow the
  /// file themselves (failing only if they do not fit either). Returns false if it failed.
  private func preallocate(through end: Int64) -> Bool {
    let chunk = Int64(options.preallocationBytes)
    let target = max(end, min((end + chunk - 1) / chunk * chunk, Int64(options.segmentTargetBytes)))
    // At the segment's target size already: the frames grow the file themselves.
    guard target > end else { return true }
    // From where the group's frames end (they fill what lies before): nothing is written twice.
    var position = max(allocatedEnd, end)
    do {
      while position < target {
        let count = Int(min(Int64(preallocationZeros.count), target - position))
        try preallocationZeros.withUnsafeBytes { (zeros) throws in
          try io.writeAll(segmentFD, UnsafeRawBufferPointer(rebasing: zeros[..<count]), at: position, path: activePath)
        }
        position += Int64(count)
      }
    } catch {
      // Zeros read as preallocated space, so what remains if this truncation fails is harmless,
      // as long as the file is cut before it is sealed: `allocatedEnd` must not fall short of
      // what reached it, and a write that failed part way may have written past `position`.
      if (try? io.truncate(segmentFD, to: allocatedEnd, path: activeName)) == nil {
        allocatedEnd = max(allocatedEnd, target)
      }
      return false
    }
    allocatedEnd = target
    return true
  }

  /// Cuts the active segment back to its last frame (on close); leaves it as it is if that fails.
  private func cutPreallocation() {
    guard allocatedEnd > state.endOffset else { return }
    if (try? io.truncate(segmentFD, to: state.endOffset, path: activePath)) != nil { allocatedEnd = state.endOffset }
  }

  /// A failed group: makes the journal refuse further appends if `fatal`. The group's appends get
  /// `error`; every later one gets `.stopped` (appends queued behind this group too, which were
  /// never written: their callers must be able to tell them from the group's, whose outcome may
  /// be unknown).
  private func fail(_ error: JournalError, fatal: Bool) -> Result<UInt64, JournalError> {
    if fatal {
      condition.lock()
      if failure == nil {
        failure = error
        refusal = JournalError(
          .stopped,
          "nothing of this append was written: the journal stopped accepting appends after an earlier failure "
            + "(\(error.code): \(error.message))", directory: path)
      }
      condition.unlock()
    }
    return .failure(error)
  }

  /// Why a roll failed, and whether the journal can go on.
  private struct RollFailure: Error {
    var error: JournalError
    var fatal: Bool
  }

  /// Seals the active segment (fsync, whatever the policy, so a later segment never outlives an
  /// earlier one's tail) and starts a new one.
  ///
  /// A failure before the new segment's name exists changes nothing and is not fatal: the next
  /// group tries again. A failed fsync, or one after the new segment appeared (a failed directory
  /// fsync), leaves durability unknown: fatal, as `.durabilityLost`.
  /// `notifying`: whether the sealed segment is handed to `onSeal`.
  private func roll(notifying: Bool = true) throws(RollFailure) {
    let name = activeName
    // No store through a mapping after this point; the fsync below writes its dirty pages.
    unmapWindow()
    // A sealed segment ends at its last frame: its preallocated zeros go before the fsync below
    // persists its size, and before the next segment exists (readers and recovery take zeros
    // in a segment that has a successor for damage).
    if allocatedEnd > state.endOffset {
      do {
        try io.truncate(segmentFD, to: state.endOffset, path: activePath)
        allocatedEnd = state.endOffset
        // The space allocated for the mapping went too: if the roll fails below and a later
        // group is stored in this segment after all, it allocates again first.
        reservedEnd = state.endOffset
      } catch {
        throw RollFailure(error: JournalError(error, directory: path, file: name), fatal: false)
      }
    }
    do {
      try finishEarlySync()
      try io.sync(segmentFD, metadata: true, path: activePath)
    } catch {
      throw RollFailure(error: durabilityLost(error, file: name), fatal: true)
    }
    // Sealing a removed segment and going on in a new one would leave a gap no reader passes.
    if let removed = activeSegmentRemoved() { throw RollFailure(error: removed, fatal: true) }
    let newName = Layout.segmentName(firstSequence: state.nextSequence)
    do {
      try JournalRecovery(directory: directory, options: options).createSegment(firstSequence: state.nextSequence)
    } catch {
      if io.fileExists(path + "/" + newName) {
        throw RollFailure(error: durabilityLost(error, file: newName), fatal: true)
      }
      throw RollFailure(error: JournalError(error, directory: path, file: newName), fatal: false)
    }
    // Closed and forgotten: should the new segment not open, nothing may close this number again
    // (by then another file's, perhaps another thread's).
    io.close(segmentFD)
    segmentFD = -1
    state.segments.append(state.nextSequence)
    state.endOffset = Int64(Layout.segmentHeaderSize)
    allocatedEnd = state.endOffset
    preallocationFailed = false
    state.lastIndexedOffset = 0
    do {
      try openActiveSegment()
    } catch {
      throw RollFailure(error: JournalError(error, directory: path, file: newName), fatal: true)
    }
    if notifying { onSeal?(state.segments[state.segments.count - 2]) }
  }

  /// `.durabilityLost` if the active segment was removed under the writer (deleted alone, or with
  /// the journal's directory), else nil. Such a file stays open and keeps taking writes and syncs,
  /// and they go with it when it is closed: synced, they are still not in the journal. Checked
  /// after each durable group's sync and at each seal: one `fstat` (and, only when it counts no
  /// name, an `lstat` of the path, so that a file system that reports no link count, as some
  /// FUSE ones do, raises no false alarm). A copy made by hard links keeps the count up, and is
  /// not seen.
  private func activeSegmentRemoved() -> JournalError? {
    guard io.linkCount(segmentFD) == 0, !io.isFile(segmentFD, at: activePath) else { return nil }
    return JournalError(
      .durabilityLost,
      "the active segment was removed while the journal was open (no directory entry names it now), "
        + "so appends written to it since then are not in the journal",
      directory: path, file: activeName, offset: state.endOffset)
  }

  /// The error of a failed fsync of `file`; with `group`, the appends being made durable then,
  /// written from the segment's end (`state.endOffset`): cut off again, but the cut is not
  /// synced either, so after a power loss they may or may not be in the journal.
  private func durabilityLost(_ error: any Error, file: String, group: ClosedRange<UInt64>? = nil) -> JournalError {
    var lost = JournalError(error, directory: path, file: file)
    lost.code = .durabilityLost
    if let group {
      lost.message =
        "fsync failed, so these appends may or may not be on disk, and earlier writes may not be either (\(error))"
      lost.offset = state.endOffset
      lost.sequences = group
    } else {
      lost.message = "fsync failed, so earlier writes may not be on disk (\(error))"
    }
    return lost
  }

  // MARK: The index (derived data: failures here only make it stale)

  /// Opens the index file for appending; when opening found it out of date (`rewrite`), first
  /// replaces it with the entries opening derived (`index.tmp`, rename), or else cuts it and
  /// writes them in place. When neither can be done, an index that only lags the segments (a
  /// valid prefix, as after a crash) is left as it is, for the next opening to extend; one that
  /// names records opening found gone (`namesRecordsGone`) is removed (`removeOutdatedIndex`).
  /// - Throws: `JournalError` (`.staleIndex`) when such an index cannot be removed either.
  private func writeIndexFile(rewrite: Bool, namesRecordsGone: Bool) throws(JournalError) {
    let indexPath = path + "/" + Layout.indexName
    var writer = ByteWriter()
    var replaced = !rewrite
    if rewrite {
      writer = ByteWriter(capacity: SparseIndex.headerSize + state.index.entries.count * IndexEntry.size)
      writer.write(SparseIndex.header(journalID: directory.journalID))
      for entry in state.index.entries { entry.encode(into: &writer) }
      // Synced before the rename and the directory after it: otherwise a power loss can bring
      // back the old file, which may name records opening found gone, now numbered anew.
      // (`replaceFile` removes `index.tmp` when it fails: on a full disk it would keep its space.)
      replaced = (try? io.replaceFile(indexPath, with: writer.bytes)) != nil
      if replaced { try? io.syncDirectory(path) }
    }
    indexFD = (try? io.open(indexPath, flags: replaced ? O_WRONLY : O_WRONLY | O_CREAT, mode: 0o600)) ?? -1
    guard indexFD >= 0 else {
      if !replaced && namesRecordsGone { try removeOutdatedIndex(indexPath) }
      return
    }
    if replaced {
      indexEnd = (try? io.size(indexFD, path: indexPath)) ?? 0
      return
    }
    // The old file may name what opening found gone (the next opening would report the same
    // records missing again, though new ones took their numbers), or end in damage or a gap;
    // appending after it would keep that. Cut it, then write the derived entries in place as a
    // backlog: a crash or a failed write leaves a prefix of them, which the next opening extends.
    guard (try? io.truncate(indexFD, to: 0, path: Layout.indexName)) != nil else {
      abandonIndex()
      if namesRecordsGone { try removeOutdatedIndex(indexPath) }
      return
    }
    indexEnd = 0
    indexBacklog = writer.bytes
    appendIndexEntriesLocked([])
  }

  /// Removes the index file that names records opening found gone, and that it could neither
  /// replace nor cut: left as it is, the next appends would take those records' numbers (the
  /// next opening would report them gone again, and readers would take the new batches for
  /// damage where the old entries point). Without it, readers walk the segments, and the next
  /// opening derives the index anew. The directory's sync after the removal is tried, as after a
  /// replace: a failure there leaves the removal done, unsynced.
  /// - Throws: `JournalError` (`.staleIndex`, naming the file) when it cannot be removed either:
  ///   opening fails rather than append under it.
  private func removeOutdatedIndex(_ indexPath: String) throws(JournalError) {
    guard io.fileExists(indexPath) else { return }
    do {
      try io.removeFile(indexPath)
    } catch {
      // As repair's failed removal: the system call's place and errno, under `staleIndex`.
      var failure = JournalError(error, directory: path, file: Layout.indexName)
      failure.code = .staleIndex
      failure.message =
        "the index names records opening found gone and could be neither replaced, cut nor removed (\(error)); "
        + "new appends would take those records' numbers"
      throw failure
    }
    try? io.syncDirectory(path)
  }

  /// The most index entries kept for a later append after appends to the index file failed
  /// (40 bytes each; at the default 64 KiB interval, about a gigabyte of journal). Beyond it the
  /// writer gives up on the index file, and the next opening extends it.
  static let indexBacklogLimit = 16_384

  /// Appends `entries`, after the backlog if there is one. A backlog is tried again only with
  /// new entries (so once per index interval at most, not at every append) and at closing.
  private func appendIndexEntries(_ entries: [IndexEntry]) {
    guard !entries.isEmpty || !indexBacklog.isEmpty, !indexAbandoned else { return }
    indexGate.withLock { generation in
      if generation != indexGeneration {
        // Compaction replaced the file: append to the new one.
        indexGeneration = generation
        if indexFD >= 0 { io.close(indexFD) }
        indexFD = -1
        if !indexBacklog.isEmpty {
          // The new file's entries were derived from the old one, which lacks the backlog, and
          // entries of the compacted segment point into its old layout: appending the backlog
          // could put entries out of order or stale. Leave the file for the next opening.
          abandonIndex()
          return
        }
        indexFD = (try? io.open(path + "/" + Layout.indexName, flags: O_WRONLY, mode: 0)) ?? -1
        if indexFD >= 0 { indexEnd = (try? io.size(indexFD, path: Layout.indexName)) ?? 0 }
      }
      appendIndexEntriesLocked(entries)
    }
  }

  /// Appends the backlog and then `entries` to the index file in one write at `indexEnd`, which
  /// stays where the file's whole entries end. On failure the file is cut back to `indexEnd`, so
  /// it holds whole entries in order with none missing before its last one, and the entries
  /// join the backlog for the next append; a crash in between leaves a prefix of them plus at
  /// most one torn entry, which readers ignore and the next opening cuts and extends.
  private func appendIndexEntriesLocked(_ entries: [IndexEntry]) {
    guard indexFD >= 0 else { return }
    var writer = ByteWriter(capacity: entries.count * IndexEntry.size)
    for entry in entries { entry.encode(into: &writer) }
    if indexBacklog.isEmpty { indexBacklog = writer.bytes } else { indexBacklog.append(contentsOf: writer.bytes) }
    let ok =
      (try? indexBacklog.withUnsafeBytes { (b) throws in
        try io.writeAll(indexFD, b, at: indexEnd, path: Layout.indexName)
      }) != nil
    if ok {
      indexEnd += Int64(indexBacklog.count)
      indexBacklog.removeAll()
      return
    }
    // Leave the index as it was. If even that fails, the file may hold part of an entry where
    // the next one would go: give up on it rather than write after bytes of unknown state.
    let cut = (try? io.truncate(indexFD, to: indexEnd, path: Layout.indexName)) != nil
    if !cut || indexBacklog.count > Self.indexBacklogLimit * IndexEntry.size { abandonIndex() }
  }

  /// Stops appending to the index file for the writer's life; the next opening finds it stale
  /// (it names nothing after where it stops) and extends it.
  private func abandonIndex() {
    if indexFD >= 0 { io.close(indexFD) }
    indexFD = -1
    indexBacklog.removeAll()
    indexAbandoned = true
  }
}

/// The zeros `JournalWriter.preallocate(through:)` writes, 1 MiB per call at most.
private let preallocationZeros = [UInt8](repeating: 0, count: 1 << 20)
