import Foundation
import Synchronization

/// One append waiting to be written.
struct PendingAppend {
  var records: [NewRecord]
  var contentBytes: Int
  /// Written only if it starts at this sequence number (see `Journal.append(_:expectingFirstSequence:)`).
  var expectedFirst: UInt64?
  var completion: @Sendable (Result<ClosedRange<UInt64>, JournalError>) -> Void
}

/// The single writer of a journal: gathers waiting appends into groups, writes each group as one
/// or more frames with one system call, syncs it as the durability policy says, and only then
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
/// Under `always` and `batched` writing and syncing are two stages on two threads (group commit
/// with separate flush and sync stages): the writer thread writes a group and hands it to the
/// sync thread, which runs one `fdatasync` for every group handed to it before that sync began
/// and hands them back; the writer thread acknowledges them (between its own writes), so the sync
/// thread can start the next sync at once. While one sync runs, the writer gathers and writes
/// the next group, so the producers acknowledged by one sync come back while the next one runs.
/// If a sync fails, every group written since the last good one fails and is truncated away
/// (see `runSyncStage`).
///
/// `@unchecked Sendable`: `queue`, `writing`, `closing`, `failure`, `gatherTarget`,
/// `syncInFlight`, `lastAcknowledged` and `toAcknowledge` are guarded by `condition`;
/// `handedOver`, `syncStageBusy`, `writeInProgress`, `syncFailure`, `syncedEnd` and `stopSyncing`
/// by `syncCondition` (never both at once). File state (`state`, descriptors, encoders, buffers,
/// the index file) is touched only by the one thread that set `writing` (the writer thread or a
/// leader), and by `init` and the writer thread before any append and after the last. The sync
/// thread only syncs the descriptor a group carries (which stays open until the sync stage is
/// drained: a roll and `close()` wait for that) and, after a failed sync, truncates it while
/// `writeInProgress` keeps the writer out.
final class JournalWriter: @unchecked Sendable {
  let directory: JournalDirectory
  let options: JournalOptions
  private var io: any FileIO { directory.io }
  private var path: String { directory.path }

  // Guarded by `condition`.
  private let condition = NSCondition()
  private var queue: [PendingAppend] = []
  private var queuedBytes = 0
  private var closing = false
  /// A thread is writing a group; only it touches the file state.
  private var writing = false
  /// The last group held more than one append: appenders contend, and their appends are better
  /// gathered by the writer thread than written one by one by leaders.
  private var contended = false
  /// Set when the journal can no longer accept appends (a failed fsync, a write that could not be undone).
  private var failure: JournalError?
  /// While the writer thread gathers a group under `always`: how many appends it waits for
  /// (enqueue wakes it only once that many are queued, or a frame's worth); 0 otherwise.
  private var gatherTarget = 0
  /// The sync thread is in an `fdatasync`; the writer gathers the next group meanwhile.
  private var syncInFlight = false
  /// Appends acknowledged by the last good sync: the producers coming back during the next one.
  private var lastAcknowledged = 0
  /// Groups the sync stage is done with, for the writer thread to acknowledge (or fail, with
  /// the sync's failure) in order.
  private var toAcknowledge: [(group: WrittenGroup, lost: JournalError?)] = []

  // The sync stage (`always` and `batched`), guarded by `syncCondition`.
  private let syncCondition = NSCondition()
  /// Groups through the write stage and not yet taken by the sync thread, in order.
  private var handedOver: [WrittenGroup] = []
  /// The sync thread holds groups it has taken and not yet acknowledged or failed.
  private var syncStageBusy = false
  /// The writer is writing bytes of a group it has not yet handed over: the sync thread must
  /// not truncate the segment under it.
  private var writeInProgress = false
  /// Set once an `fdatasync` failed; every later group fails with it, unwritten.
  private var syncFailure: JournalError?
  /// The active segment's end as of the last good sync (where a failed sync truncates to).
  private var syncedEnd: Int64
  private var stopSyncing = false
  private let syncStageFinished = DispatchSemaphore(value: 0)

  /// The last acknowledged sequence number, readable from any thread.
  let lastSequence: Atomic<UInt64>

  // Writer-thread state.
  private var state: WriterStart
  private var segmentFD: Int32 = -1
  private var indexFD: Int32 = -1
  private var indexEnd: Int64 = 0
  private let encoder = LZ4FrameEncoder()
  private var scratch: [UInt8] = []
  private var output: [UInt8] = []
  private let finished = DispatchSemaphore(value: 0)

  init(directory: JournalDirectory, options: JournalOptions, start: WriterStart) throws {
    self.directory = directory
    self.options = options
    self.state = start
    self.lastSequence = Atomic(start.nextSequence - 1)
    self.syncedEnd = start.endOffset
    try openActiveSegment()
    writeIndexFile(rewrite: !start.indexIsCurrent)
    let thread = Thread { [self] in run() }
    thread.name = "rewind-journal-writer"
    thread.start()
    if pipelined {
      let syncThread = Thread { [self] in runSyncStage() }
      syncThread.name = "rewind-journal-sync"
      syncThread.start()
    }
  }

  /// Whether groups go through the sync stage (every policy that syncs).
  private var pipelined: Bool { options.durability != .none }

  /// The active segment's file name and path, made once per segment (not per write).
  private var activeName = ""
  private var activePath = ""

  private func openActiveSegment() throws {
    let name = Layout.segmentName(firstSequence: state.segments.last!)
    activeName = name
    activePath = path + "/" + name
    do {
      segmentFD = try io.open(activePath, flags: O_WRONLY, mode: 0)
    } catch {
      throw JournalError(error, directory: path, file: name)
    }
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
    var bytes = 0
    for record in records {
      guard record.payload.count <= options.limits.maxRecordBytes else {
        return completion(
          .failure(
            JournalError(
              .limitExceeded,
              "a record of \(record.payload.count) bytes exceeds the limit of \(options.limits.maxRecordBytes)",
              directory: path)))
      }
      bytes += BatchCodec.contentSize(of: record)
    }
    guard !records.isEmpty else {
      return completion(
        .failure(JournalError(.invalidArgument, "an append needs at least one record", directory: path)))
    }
    guard bytes <= options.limits.maxBatchBytes else {
      return completion(
        .failure(
          JournalError(
            .limitExceeded, "a batch of \(bytes) bytes exceeds the limit of \(options.limits.maxBatchBytes)",
            directory: path)))
    }
    condition.lock()
    if let failure {
      condition.unlock()
      return completion(.failure(failure))
    }
    if closing {
      condition.unlock()
      return completion(.failure(JournalError(.closed, "the journal is closed", directory: path)))
    }
    queue.append(
      PendingAppend(records: records, contentBytes: bytes, expectedFirst: expectedFirst, completion: completion))
    queuedBytes += bytes
    if leadsInline && !contended {
      guard lead, !writing else {
        // Written by this caller's `lead()`, or after the group being written.
        condition.unlock()
        return
      }
      writing = true
      let (group, failure) = takeGroup()
      condition.unlock()
      writeAndHandOff(group, failure: failure)
      return
    }
    if gatherTarget == 0 || queue.count >= gatherTarget || queuedBytes >= options.frameTargetBytes {
      condition.signal()
    }
    condition.unlock()
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
    let (group, failure) = takeGroup()
    condition.unlock()
    writeAndHandOff(group, failure: failure)
  }

  /// Writes one group as its leader, then lets the writer thread take what queued meanwhile.
  private func writeAndHandOff(_ group: [PendingAppend], failure: JournalError?) {
    complete(group, failure: failure)
    condition.lock()
    writing = false
    if !queue.isEmpty || closing { condition.signal() }
    condition.unlock()
  }

  /// Takes everything queued as one group, or the reason it must fail. Holder of `condition`.
  private func takeGroup() -> ([PendingAppend], JournalError?) {
    let group = queue
    queue.removeAll(keepingCapacity: true)
    queuedBytes = 0
    contended = group.count > 1
    return (group, failure)
  }

  /// Writes `group`, or fails all of it with `failure`; then acknowledges it (under `none`) or
  /// hands it to the sync stage.
  private func complete(_ group: [PendingAppend], failure: JournalError?) {
    let done: WrittenGroup
    if let failure {
      done = WrittenGroup(failing: group, with: failure, lastSequence: state.nextSequence - 1)
    } else {
      done = write(group)
    }
    if pipelined {
      handOver(done)
    } else {
      acknowledge(done)
    }
  }

  /// Makes a written group's appends visible (index, `lastSequence`) and calls every completion
  /// in the group's order. Under a syncing policy, only once a sync covering the group succeeded.
  private func acknowledge(_ group: WrittenGroup) {
    if group.wrote {
      appendIndexEntries(group.indexEntries)
      lastSequence.store(group.lastSequence, ordering: .releasing)
    }
    for (append, outcome) in zip(group.appends, group.outcomes) { append.completion(outcome) }
  }

  /// Stops accepting appends, lets the writer finish what is queued, and closes the files.
  func close() {
    condition.lock()
    let wasClosing = closing
    closing = true
    condition.signal()
    condition.unlock()
    if !wasClosing { finished.wait() }
  }

  var currentFailure: JournalError? {
    condition.lock()
    defer { condition.unlock() }
    return failure
  }

  // MARK: The writer thread

  private func run() {
    while let (group, failure) = nextGroup() {
      complete(group, failure: failure)
      condition.lock()
      writing = false
      condition.unlock()
    }
    if pipelined {
      // close(): everything queued is written; let the sync stage sync and acknowledge it.
      syncCondition.lock()
      stopSyncing = true
      syncCondition.broadcast()
      syncCondition.unlock()
      syncStageFinished.wait()
      condition.lock()
      deliverAcknowledgements()
      condition.unlock()
    }
    io.close(segmentFD)
    if indexFD >= 0 { io.close(indexFD) }
    finished.signal()
  }

  /// Waits for appends that no leader writes; under `batched`, lingers up to the delay for more
  /// to gather. Takes `writing`; returns nil once closing and everything is written.
  private func nextGroup() -> ([PendingAppend], JournalError?)? {
    condition.lock()
    defer { condition.unlock() }
    while true {
      deliverAcknowledgements()
      if !writing && !queue.isEmpty { break }
      if closing && !writing { return nil }
      condition.wait()
    }
    writing = true
    if case .always = options.durability, !closing, syncInFlight, queue.count < lastAcknowledged {
      // Group commit under `always`, pipelined: a group written now waits for the sync in flight
      // to end before its own sync can begin. Meanwhile the producers that the last sync
      // acknowledged are coming back: gather until they all have (or a frame is full, or the
      // sync ended), and write them as one group, so the next sync starts as soon as this one ends.
      gatherTarget = lastAcknowledged
      while syncInFlight && queue.count < gatherTarget && queuedBytes < options.frameTargetBytes && !closing {
        condition.wait()
        deliverAcknowledgements()
      }
      gatherTarget = 0
    }
    if case .batched(let delay) = options.durability, !closing {
      // Linger for more appends, up to the delay; stop early once the queue has stopped
      // growing for an eighth of it (everyone who was going to append soon has), or a frame is full.
      let (seconds, attoseconds) = delay.components
      let linger = Double(seconds) + Double(attoseconds) / 1e18
      let deadline = Date(timeIntervalSinceNow: linger)
      var seen = queue.count
      while queuedBytes < options.frameTargetBytes && !closing {
        let now = Date()
        if now >= deadline { break }
        let signalled = condition.wait(until: min(deadline, now.addingTimeInterval(linger / 8)))
        deliverAcknowledgements()
        if !signalled && queue.count == seen { break }
        seen = queue.count
      }
    }
    return takeGroup()
  }

  /// Writes a group and returns every append's outcome, in the group's order. Appends conditional
  /// on a sequence number the journal will not be at are refused in their place; the rest are written.
  private func write(_ all: [PendingAppend]) -> WrittenGroup {
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
      var done = write(group: all)
      done.appends = all
      return done
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
    var done =
      group.isEmpty ? WrittenGroup(failing: [], with: nil, lastSequence: state.nextSequence - 1) : write(group: group)
    let written = done.outcomes
    done.appends = all
    done.outcomes = []
    done.outcomes.reserveCapacity(all.count)
    var index = 0
    for (append, refused) in zip(all, refusedAt) {
      if let refused {
        done.outcomes.append(
          .failure(
            JournalError(
              .sequenceConflict,
              "the append was to start at sequence \(append.expectedFirst!), but the journal's next is \(refused)",
              directory: path)))
        continue
      }
      done.outcomes.append(written[index])
      index += 1
    }
    return done
  }

  /// Writes `group` (all of it, or nothing) and returns each append's sequence numbers, or the
  /// failure of all of them. The appends themselves are left for the caller to fill in.
  private func write(group: [PendingAppend]) -> WrittenGroup {
    let groupBytes = group.reduce(0) { $0 + $1.contentBytes }
    func failed(_ error: JournalError) -> WrittenGroup {
      WrittenGroup(failing: group, with: error, lastSequence: state.nextSequence - 1)
    }
    do {
      if state.endOffset > Int64(Layout.segmentHeaderSize),
        state.endOffset + Int64(groupBytes) > Int64(options.segmentTargetBytes)
      {
        try roll()
      }
    } catch {
      return failed(fail(error.error, fatal: error.fatal))
    }

    // Frames: as many whole appends as fit in the frame target; an append larger than it alone.
    output.removeAll(keepingCapacity: true)
    var ranges: [Result<ClosedRange<UInt64>, JournalError>] = []
    ranges.reserveCapacity(group.count)
    var newEntries: [IndexEntry] = []
    var sequence = state.nextSequence
    var maxTimestamp = state.maxTimestamp
    var lastIndexed = state.lastIndexedOffset
    var start = 0
    do {
      while start < group.count {
        var end = start + 1
        var frameBytes = group[start].contentBytes
        while end < group.count, frameBytes + group[end].contentBytes <= options.frameTargetBytes {
          frameBytes += group[end].contentBytes
          end += 1
        }
        let frameOffset = state.endOffset + Int64(output.count)
        if lastIndexed == 0 || frameOffset - lastIndexed >= Int64(options.indexIntervalBytes) {
          newEntries.append(
            IndexEntry(
              firstSequence: sequence, segment: state.segments.last!, offset: frameOffset,
              maxTimestampBefore: maxTimestamp))
          lastIndexed = frameOffset
        }
        let header = try BatchCodec.encode(
          group[start..<end].lazy.flatMap(\.records), firstSequence: sequence, encoder: encoder, scratch: &scratch,
          into: &output)
        for append in group[start..<end] {
          ranges.append(.success(sequence...(sequence + UInt64(append.records.count) - 1)))
          sequence += UInt64(append.records.count)
        }
        maxTimestamp = max(maxTimestamp, header.maxTimestamp)
        start = end
      }
    } catch {
      return failed(fail(JournalError(.io, "LZ4 compression failed: \(error)", directory: path), fatal: false))
    }

    if pipelined {
      // Keep the sync thread from truncating under this write; after a failed sync, write nothing.
      syncCondition.lock()
      let lost = syncFailure
      if lost == nil { writeInProgress = true }
      syncCondition.unlock()
      if let lost { return failed(lost) }
    }
    let name = activeName
    do {
      try output.withUnsafeBytes { (bytes) throws in
        try io.writeAll(segmentFD, bytes, at: state.endOffset, path: activePath)
      }
    } catch {
      // Undo whatever part reached the file, so nothing unacknowledged stays behind.
      let undone = (try? io.truncate(segmentFD, to: state.endOffset, path: name)) != nil
      return failed(fail(JournalError(error, directory: path, file: name), fatal: !undone))
    }

    state.endOffset += Int64(output.count)
    state.nextSequence = sequence
    state.maxTimestamp = maxTimestamp
    state.lastIndexedOffset = lastIndexed
    return WrittenGroup(
      appends: [], outcomes: ranges, wrote: true, end: state.endOffset, fd: segmentFD, path: activePath, name: name,
      lastSequence: sequence - 1, indexEntries: newEntries)
  }

  // MARK: The sync stage (`always` and `batched`)

  /// Hands a group through the write stage to the sync thread (which acknowledges or fails it in turn).
  private func handOver(_ group: WrittenGroup) {
    syncCondition.lock()
    writeInProgress = false
    handedOver.append(group)
    syncCondition.broadcast()
    syncCondition.unlock()
  }

  /// The sync thread: takes every group handed over, runs one `fdatasync` that begins after
  /// all their writes ended, and acknowledges them in order; meanwhile the writer writes the
  /// next groups. Groups that wrote nothing (refused, failed) are answered in their turn.
  ///
  /// A failed sync loses durability for everything written since the last good one: the
  /// journal refuses every later append, the segment is truncated back to where the last good
  /// sync left it (once the writer is out of any write), and every group taken or handed over
  /// since fails with `durabilityLost`. No group is acknowledged unless a sync that began after
  /// its write succeeded.
  private func runSyncStage() {
    syncCondition.lock()
    while true {
      while handedOver.isEmpty && !stopSyncing { syncCondition.wait() }
      if handedOver.isEmpty { break }
      var batch = handedOver
      handedOver.removeAll(keepingCapacity: true)
      syncStageBusy = true
      var lost = syncFailure
      syncCondition.unlock()

      let last = batch.last(where: \.wrote)
      if lost == nil, let last {
        condition.lock()
        syncInFlight = true
        condition.unlock()
        do {
          try io.sync(last.fd, metadata: false, path: last.path)
        } catch {
          lost = durabilityLost(error, file: last.name)
        }
      }

      syncCondition.lock()
      if let lost {
        if syncFailure == nil, let last {
          syncFailure = lost
          while writeInProgress { syncCondition.wait() }
          _ = try? io.truncate(last.fd, to: syncedEnd, path: last.name)
        }
        batch += handedOver
        handedOver.removeAll()
      } else if let last {
        syncedEnd = last.end
      }
      syncStageBusy = false
      syncCondition.broadcast()
      syncCondition.unlock()
      syncEnded(batch, lost: lost)
      syncCondition.lock()
    }
    syncCondition.unlock()
    syncStageFinished.signal()
  }

  /// Passes a batch the sync stage is done with to the writer thread, which acknowledges it (or,
  /// with `lost`, fails it) while the next sync runs; wakes the writer, which gathers until then.
  private func syncEnded(_ batch: [WrittenGroup], lost: JournalError?) {
    condition.lock()
    syncInFlight = false
    if let lost {
      failure = failure ?? lost
    } else {
      lastAcknowledged = batch.reduce(0) { $0 + $1.appends.count }
    }
    for group in batch { toAcknowledge.append((group, lost)) }
    condition.signal()
    condition.unlock()
  }

  /// Acknowledges (or fails) what the sync stage is done with, in order. Writer thread, holder
  /// of `condition`, which it lets go of while calling completions.
  private func deliverAcknowledgements() {
    while !toAcknowledge.isEmpty {
      let done = toAcknowledge
      toAcknowledge.removeAll()
      condition.unlock()
      for (group, lost) in done {
        if let lost {
          // What was written is lost; what was not keeps its own failure.
          for (append, outcome) in zip(group.appends, group.outcomes) {
            append.completion(group.wrote ? .failure(lost) : outcome)
          }
        } else {
          acknowledge(group)
        }
      }
      condition.lock()
    }
  }

  /// Waits until the sync stage has acknowledged or failed every group handed over; returns the
  /// sync failure, if any. Writer thread, outside a write.
  private func drainSyncStage() -> JournalError? {
    syncCondition.lock()
    defer { syncCondition.unlock() }
    while syncStageBusy || !handedOver.isEmpty { syncCondition.wait() }
    return syncFailure
  }

  /// A failed group: makes the journal refuse further appends if `fatal`.
  private func fail(_ error: JournalError, fatal: Bool) -> JournalError {
    if fatal {
      condition.lock()
      failure = failure ?? error
      condition.unlock()
    }
    return error
  }

  /// Why a roll failed, and whether the journal can go on.
  private struct RollFailure: Error {
    var error: JournalError
    var fatal: Bool
  }

  /// Seals the active segment (fsync, whatever the policy, so a later segment never outlives an
  /// earlier one's tail) and starts a new one. Under a syncing policy, first lets the sync stage
  /// finish with every group written to the active segment (a failed sync there fails the roll).
  ///
  /// A failure before the new segment's name exists changes nothing and is not fatal: the next
  /// group tries again. A failed fsync, or one after the new segment appeared (a failed directory
  /// fsync), leaves durability unknown: fatal, as `.durabilityLost`.
  private func roll() throws(RollFailure) {
    let name = activeName
    if pipelined, let lost = drainSyncStage() {
      throw RollFailure(error: lost, fatal: true)
    }
    do {
      try io.sync(segmentFD, metadata: true, path: activePath)
    } catch {
      throw RollFailure(error: durabilityLost(error, file: name), fatal: true)
    }
    let newName = Layout.segmentName(firstSequence: state.nextSequence)
    do {
      try JournalRecovery(directory: directory, options: options).createSegment(firstSequence: state.nextSequence)
    } catch {
      if io.fileExists(path + "/" + newName) {
        throw RollFailure(error: durabilityLost(error, file: newName), fatal: true)
      }
      throw RollFailure(error: JournalError(error, directory: path, file: newName), fatal: false)
    }
    io.close(segmentFD)
    state.segments.append(state.nextSequence)
    state.endOffset = Int64(Layout.segmentHeaderSize)
    state.lastIndexedOffset = 0
    if pipelined {
      syncCondition.lock()
      syncedEnd = state.endOffset
      syncCondition.unlock()
    }
    do {
      try openActiveSegment()
    } catch {
      throw RollFailure(error: JournalError(error, directory: path, file: newName), fatal: true)
    }
  }

  private func durabilityLost(_ error: any Error, file: String) -> JournalError {
    var lost = JournalError(error, directory: path, file: file)
    lost.code = .durabilityLost
    lost.message = "fsync failed, so earlier writes may not be on disk (\(error))"
    return lost
  }

  // MARK: The index (derived data: failures here only make it stale)

  private func writeIndexFile(rewrite: Bool) {
    let indexPath = path + "/" + Layout.indexName
    if rewrite {
      var writer = ByteWriter(capacity: SparseIndex.headerSize + state.index.entries.count * IndexEntry.size)
      writer.write(SparseIndex.header(journalID: directory.journalID))
      for entry in state.index.entries { entry.encode(into: &writer) }
      let temporary = indexPath + ".tmp"
      if let fd = try? io.open(temporary, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600) {
        let written =
          (try? writer.bytes.withUnsafeBytes { (b) throws in
            try io.writeAll(fd, b, at: 0, path: temporary)
          }) != nil
        io.close(fd)
        if written { try? io.rename(temporary, to: indexPath) }
      }
    }
    indexFD = (try? io.open(indexPath, flags: O_WRONLY, mode: 0)) ?? -1
    if indexFD >= 0 { indexEnd = (try? io.size(indexFD, path: indexPath)) ?? 0 }
  }

  private func appendIndexEntries(_ entries: [IndexEntry]) {
    guard !entries.isEmpty, indexFD >= 0 else { return }
    var writer = ByteWriter(capacity: entries.count * IndexEntry.size)
    for entry in entries { entry.encode(into: &writer) }
    let ok =
      (try? writer.bytes.withUnsafeBytes { (b) throws in
        try io.writeAll(indexFD, b, at: indexEnd, path: Layout.indexName)
      }) != nil
    if ok {
      indexEnd += Int64(writer.bytes.count)
    } else {
      // Leave the index as it was; the next open finds it stale and extends it.
      _ = try? io.truncate(indexFD, to: indexEnd, path: Layout.indexName)
      io.close(indexFD)
      indexFD = -1
    }
  }
}
