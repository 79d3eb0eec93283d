internal import Foundation
internal import RewindJournal

/// Checkpoints beside the funnel: the funnel only marks where a checkpoint is, between whole
/// commands, and keeps the state there (a copy, which shares the stores' nodes); the digest of that
/// state is computed outside the funnel while other commands go on, then appended naming the mark.
extension Manager where M: SnapshotModel {
  /// Appends a `CheckpointMark` through the funnel, computes the digest of the state it stands for
  /// (after every record before the mark) outside the funnel, on a thread of its own (not one of
  /// the tasks' shared threads, which hashing a large state would hold for a second or more), and
  /// appends a `CheckpointDigest` naming the mark. Commands issued meanwhile are not held up by
  /// the digest: they may land between the two records.
  ///
  /// If the digest cannot be computed or appended, the mark stays without one; that is harmless
  /// (verification reports it as unfinished) and the error is thrown.
  ///
  /// The mark and the digest are commands of origin `.rewind`: change streams carry them, with
  /// no keys, as they carry the app's commands (`changes()`).
  ///
  /// Cancellation counts until the mark is validated, as for any command (`perform`): cancelled
  /// before, it throws `CancellationError` and writes nothing; cancelled after, it still computes
  /// and appends the digest, and returns it.
  /// - Returns: the digest recorded.
  @discardableResult
  public func recordCheckpoint() async throws -> StateDigest {
    let fingerprint = M.fingerprint
    let (mark, state) = try await perform(.rewind) { state, command in
      command.record(CheckpointMark(fingerprint: fingerprint))
      return (sequenceOfValidatingCommand(), state)
    }
    let digest = try await onThreadOfItsOwn(named: "rewind.checkpoint.digest") { try StateDigest.of(state) }
    // The mark is in: the checkpoint finishes whatever happens to the caller's task. The digest's
    // command runs in a task of its own, which the caller's cancellation does not reach (it would
    // throw `CancellationError` for a checkpoint whose mark is journaled, leaving it unfinished).
    let digestCommand = Task { [self] in
      try await perform(.rewind) { _, command in
        command.record(CheckpointDigest(mark: mark, digest: digest, fingerprint: fingerprint))
      }
    }
    try await digestCommand.value
    return digest
  }

  /// A job that follows this manager's committed changes and records a checkpoint
  /// (`recordCheckpoint()`) once at least `interval` records were committed since the last one;
  /// with `snapshots`, it also keeps the snapshots of the manager's journal up to date (see
  /// `Snapshots.update`, on a thread of its own, as the digest: it replays the records since the
  /// newest snapshot, and reads and writes whole states). Runs until the manager is closed or the
  /// task is cancelled, and holds the manager until then. What was committed before the job began
  /// counts: the records since the journal's last checkpoint and its newest snapshot of this model
  /// code, so a job started when one is due records it at once, and an app whose runs are each
  /// shorter than an interval still gets them. A close that finds the job behind (a checkpoint still due) ends it
  /// too, without an error. A state whose snapshot would serve no reader (its file larger than
  /// `SnapshotStore.maxFileBytes`, or the state read back from it not the state:
  /// `SnapshotStore.write`) ends the snapshots alone: the job takes none for the rest of its run
  /// and goes on recording checkpoints. Other errors end it and are thrown.
  ///
  /// The job follows the changes through a bounded stream (`changes(bufferingAtMost:)`, at most
  /// 4,096 changes waiting), so a burst of commands while it is busy (a digest or a snapshot
  /// being computed) costs no memory beyond that. When the stream ends because the job
  /// fell behind, the job subscribes again and counts the records since the last checkpoint from
  /// the journal, as it does when it begins: a backlog of several intervals gets one checkpoint
  /// (after every record of it), not one per interval standing at the same place.
  /// - Precondition: `interval` and `snapshots.interval` are at least 1, `snapshots.keep` at least 1.
  /// - Throws: `JournalError` `.invalidArgument` at once if `snapshots.directory` is not this
  ///   manager's journal (another journal's id, or no journal there): its snapshots would be of
  ///   another journal, and this one's would never be written; the error that reading its id met,
  ///   if that failed otherwise.
  public func maintain(checkpointEvery interval: UInt64, snapshots: SnapshotPolicy? = nil) async throws {
    try await maintain(checkpointEvery: interval, snapshots: snapshots, following: MaintainFollowing())
  }

  /// `maintain(checkpointEvery:snapshots:)`, following the changes as `following` says (tests
  /// shrink its buffer and hold the job).
  func maintain(checkpointEvery interval: UInt64, snapshots: SnapshotPolicy?, following: MaintainFollowing)
    async throws
  {
    precondition(interval > 0, "a checkpoint interval is at least 1")
    if let snapshots {
      snapshots.check()
      let id: JournalID
      do {
        id = try JournalReader(directory: snapshots.directory).id
      } catch let error as JournalError where error.code != .notAJournal && error.code != .badManifest {
        throw error  // a failure to read (EACCES, EIO, ...): as it is, not as a wrong argument
      } catch {
        throw JournalError(
          .invalidArgument, "the snapshot policy's directory is not a journal that can be read: \(error)",
          directory: snapshots.directory)
      }
      guard id == journalID else {
        throw JournalError(
          .invalidArgument,
          "the snapshot policy's directory is journal \(id), not this manager's (\(journalID))",
          directory: snapshots.directory)
      }
    }
    var stream = changes(bufferingAtMost: following.limit)
    // What was committed before the job began counts too: the records since the last checkpoint
    // (read back from the journal, at most `interval` of them) and since the newest snapshot. An
    // app whose runs each commit fewer records than an interval would otherwise never get one.
    // The stream's changes through `start` are counted here, not again.
    var start = lastSequence
    // A journal that cannot be read back here (damage before the snapshot start-up began from,
    // which it never read; a descriptor limit) counts from zero, as the job did before it read.
    var since = (try? await recordsSinceLastCheckpoint(through: start, lookingBack: interval)) ?? 0
    // Snapshots of other model code (all of them after an upgrade) stand for no state: counting
    // from one would put off the first snapshot of this code by up to an interval.
    var snapshotted =
      snapshots.map { SnapshotStore(journal: $0.directory).newestSequence(fingerprint: M.fingerprint) ?? 0 } ?? start
    var snapshotting = snapshots
    var sequence = start
    var changes = stream.makeAsyncIterator()
    while true {
      if since >= interval {
        since = 0
        do {
          try await recordCheckpoint()
        } catch let error as ManagerError where error.code == .closed {
          // Closed while the job was behind (its stream still held changes): the end it waits
          // for, not a failure. A mark appended before the close stays without its digest.
          return
        } catch is CancellationError {
          return  // cancelled: the job's other end, as when its stream ends
        }
        await following.afterCheckpoint()
      }
      if let policy = snapshotting, sequence >= snapshotted, sequence - snapshotted >= policy.interval {
        snapshotted = sequence
        // Through what this manager committed: the records written after it may yet fail.
        let committed = sequence
        do {
          _ = try await onThreadOfItsOwn(named: "rewind.snapshots.update") {
            try Snapshots.update(
              M.self, directory: policy.directory, every: policy.interval, keep: policy.keep, through: committed,
              fileLimit: policy.fileLimit)
          }
        } catch EncodingError.invalidValue(_, let context) where context.underlyingError is SnapshotStore.WouldNotServe
        {
          // A snapshot that would serve no reader: the state outgrew what a file may hold (later
          // ones are no smaller), or it would not read back as itself (a model's form that loses
          // a property loses it in every state). Snapshots stop for the rest of this job (each
          // would encode the whole state for nothing), and checkpoints go on.
          snapshotting = nil
        }
      }
      var next: CommittedChange?
      do {
        repeat {
          guard let change = try await changes.next() else { return }
          next = change.origin == .rewind || change.sequences.upperBound <= start ? nil : change
        } while next == nil
      } catch let behind as ChangeStreamError {
        // Fell behind: the changes after `lastDelivered` never came. Subscribe again first, then
        // count what the new stream does not hold (through `start`) from the journal, as at the
        // start. The count only needs sequences and the last mark, not the missed changes: if the
        // journal cannot be read back, the records missed count by their sequence numbers, which
        // can bring the next checkpoint early (checkpoint records count too), never late.
        stream = self.changes(bufferingAtMost: following.limit)
        changes = stream.makeAsyncIterator()
        start = lastSequence
        let missed = start - min(start, behind.lastDelivered)
        since = (try? await recordsSinceLastCheckpoint(through: start, lookingBack: interval)) ?? since + missed
        sequence = start
        following.caughtUp(start)
        continue
      }
      since += UInt64(next!.events.count)
      sequence = lastSequence
    }
  }

  /// `recordsSinceLastCheckpoint(directory:through:lookingBack:)` of this manager's journal, read
  /// on a thread of its own.
  private func recordsSinceLastCheckpoint(through last: UInt64, lookingBack window: UInt64) async throws -> UInt64 {
    try await onThreadOfItsOwn(named: "rewind.maintain.count") { [directory = journalDirectory] in
      try Self.recordsSinceLastCheckpoint(directory: directory, through: last, lookingBack: window)
    }
  }

  /// How many records of `directory`'s journal through `last` follow its last checkpoint's mark,
  /// not counting checkpoint records (a digest among them, for a checkpoint of the state at its
  /// mark): `window` at most, the records read (before `window` records, or the journal's start,
  /// with no mark among them, the count is what was read).
  static func recordsSinceLastCheckpoint(directory: String, through last: UInt64, lookingBack window: UInt64) throws
    -> UInt64
  {
    guard last > 0 else { return 0 }
    let cursor = try JournalReader(directory: directory, limits: .largest).records(from: last - min(last, window) + 1)
    var count: UInt64 = 0
    while let record = try cursor.next() {
      let header = try? EventRecord.header(of: record.payload)
      if let header, header.name == CheckpointMark.name || header.name == Checkpoint.name {
        count = 0
      } else if header?.origin != .rewind {
        count += 1
      }
      if record.sequence >= last { break }
    }
    return count
  }
}

/// How `Manager.maintain` follows its manager's changes: the public entry uses the defaults; tests
/// shrink the buffer to make the job fall behind, and hold it after a checkpoint.
struct MaintainFollowing: Sendable {
  /// The most changes the job's stream keeps waiting unread (`Manager.changes(bufferingAtMost:)`).
  var limit = maintainChangeLimit
  /// Awaited after each checkpoint the job records, before it reads on.
  var afterCheckpoint: @Sendable () async -> Void = {}
  /// Called each time the job fell behind and caught up, with the sequence number it caught up to.
  var caughtUp: @Sendable (UInt64) -> Void = { _ in }
}

/// The most changes `Manager.maintain`'s stream keeps waiting unread. A change holds one command's
/// events, so this many are small next to the states the job hashes; a longer burst while it
/// computes a digest or a snapshot makes it catch up from the journal.
let maintainChangeLimit = 4096

/// Runs `work` on a new thread named `name` and returns what it returns: for work that takes a
/// second or more of one core (hashing or replaying a large state), which on one of the tasks'
/// shared threads would hold up every other task scheduled there (two on a 2-core machine).
func onThreadOfItsOwn<T: Sendable>(named name: String, _ work: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
    do {
      try Threads.start(named: name) { continuation.resume(with: Result { try work() }) }
    } catch {
      // Foundation's `Thread` would never run it, and the continuation never resume.
      var failure = JournalError(.io, "\(error)")
      failure.errno = (error as? SystemCallError)?.errno
      continuation.resume(throwing: failure)
    }
  }
}

/// Where and how often to write snapshots: every `interval` records, keeping the newest `keep`.
///
/// - Precondition: `interval` and `keep` are at least 1 (checked by `init`, and by
///   `Manager.maintain` for values set later): keeping none would remove each snapshot as soon
///   as it is written. `Manager.maintain` throws if `directory` is not its journal.
public struct SnapshotPolicy: Sendable {
  /// The journal directory (the manager's).
  public var directory: String
  /// Records between snapshots; at least 1.
  public var interval: UInt64
  /// How many of the newest snapshots to keep; at least 1.
  public var keep: Int
  /// The largest snapshot file written (nil: `SnapshotStore.maxFileBytes`; tests give less).
  var fileLimit: Int64?

  public init(directory: String, every interval: UInt64, keep: Int = 4) {
    self.directory = directory
    self.interval = interval
    self.keep = keep
    check()
  }

  /// Traps unless the policy's numbers are valid (see the type's preconditions).
  func check() {
    precondition(interval > 0, "a snapshot interval is at least 1")
    precondition(keep > 0, "a snapshot policy keeps at least 1 snapshot, not \(keep)")
  }
}
