/// Everything the journal can report as failing, with where it happened.
///
/// `code` says what kind of failure it is (an extensible set: compare with the static members);
/// the other fields locate it. The `description` is a sentence meant for people: what happened,
/// where, and what to do about it.
///
/// After a throw, nothing that was acknowledged before is lost, and nothing that failed was
/// acknowledged: a failed append consumed no sequence numbers unless `code` is `.durabilityLost`.
public struct JournalError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The kind of failure.
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }
    public var description: String { name }

    /// The directory is missing, or is not a journal (no manifest).
    public static let notAJournal = Code("notAJournal")
    /// The manifest is unreadable, or names a format version this code cannot read.
    public static let badManifest = Code("badManifest")
    /// Another writer (in this or another process) holds the journal's lock.
    public static let locked = Code("locked")
    /// Bytes that should form a valid frame do not: bad checksum, bad header, undecodable frame.
    public static let corrupt = Code("corrupt")
    /// Sequence numbers are not gapless: a gap or a repeat between batches or segments.
    public static let sequenceBreak = Code("sequenceBreak")
    /// A size in the input exceeds the configured limits (record, batch, frame).
    public static let limitExceeded = Code("limitExceeded")
    /// A system call failed (EIO, ENOSPC, permission...). `errno` says which.
    public static let io = Code("io")
    /// An fsync failed: what was written may not be durable; or a write failed and what it wrote
    /// could not be cut off again (or, under `always` and `batched`, the cut could not be synced):
    /// its appends may be in the journal after all; or the active segment was found removed
    /// (deleted under the writer, alone or with the journal's directory) after a sync under
    /// `always` and `batched`, or as it was sealed: what was written to it since is not in the
    /// journal. Either way the
    /// appends' outcome is unknown, and the journal accepts no more appends (they fail with
    /// `.stopped`). Reopen it (a new process, or a new `Journal`) once the cause is fixed. Under
    /// `none`, the background sync of the active segment failing is reported to the next
    /// append, of which nothing was written (its message says so), or kept by `close()`.
    public static let durabilityLost = Code("durabilityLost")
    /// The journal was closed. Every append made after `Journal.close()` gets it, also one made
    /// after a failure had stopped the journal (the message names that failure, and
    /// `Journal.failure` still holds it): the close is what the caller can act on. Nothing of the
    /// append was written.
    public static let closed = Code("closed")
    /// The journal accepts no more appends since an earlier failure stopped it (`Journal.failure`
    /// says which: `.durabilityLost`, or a failure that left the writer unable to go on). Nothing
    /// of this append was written, whether it was made after that failure or queued behind the
    /// appends that met it; only those get the failure itself. An append made once the journal
    /// is closed gets `.closed` instead. Reopen the journal once the cause is fixed.
    public static let stopped = Code("stopped")
    /// `Journal.appendAndWait` was called in an append's completion, on the thread that writes
    /// the journal's appends until that completion returns (the writer thread, or under `none`
    /// the caller's thread that wrote the append): it would have waited for itself for ever.
    /// Nothing was appended. Append from a task or a thread of its own instead.
    public static let calledFromCompletion = Code("calledFromCompletion")
    /// A caller asked for something out of range (a sequence number past the end, an empty batch).
    public static let invalidArgument = Code("invalidArgument")
    /// An append made on the condition that it start at a given sequence number found the journal
    /// elsewhere (an append before it failed, or another writer got there first). Nothing of it
    /// was written.
    public static let sequenceConflict = Code("sequenceConflict")
    /// A repair moved the damaged part aside (durably) but could not remove the index, which
    /// still names what moved (or could not fsync the directory after removing it, so a power
    /// loss may bring it back): until it is gone, readers report those records as lost. Or
    /// opening for writing found the index out of date (naming records gone, say) and could
    /// neither replace, cut nor remove it, and appends nothing under it. `errno` says why the
    /// last step failed.
    public static let staleIndex = Code("staleIndex")
    /// The journal ends before where a reader last saw it end: records it read are gone (moved
    /// aside by a repair, or the directory replaced). `sequences` names them. Or the batch that
    /// ended it there is no longer there as read: the journal was cut at or before it and written
    /// again; `sequences`, `file` and `offset` name that batch (earlier records may be others too).
    public static let shortened = Code("shortened")
  }

  public var code: Code
  /// What happened, in a phrase ("batch header checksum mismatch").
  public var message: String
  /// The journal directory.
  public var directory: String?
  /// The file concerned, relative to the directory (a segment, the index, the manifest).
  public var file: String?
  /// Byte offset inside `file`.
  public var offset: Int64?
  /// The sequence numbers concerned.
  public var sequences: ClosedRange<UInt64>?
  /// The `errno` of a failed system call.
  public var errno: Int32?
  /// `sequences` ends at the last record known gone (the first of the last batch the index
  /// names there, or the last a damaged batch's intact header declares, if later): later records
  /// may be gone too, and nothing is left to count them by.
  public var sequencesMayGoFurther = false
  /// The records `sequences` names are gone while later segments are intact (a segment missing
  /// before others: the first, or one in the middle). Only a backup brings them back:
  /// `Journal.repair` refuses such a journal rather than move the intact segments aside.
  public var missingBeforeIntactSegments = false
  /// The file is named like a segment but is none, and holds no committed record (a stray file,
  /// `JournalProblem.strayFile`): nothing committed is damaged, and `Journal.repair` moves it aside.
  package var isStrayFile = false
  /// The damage holds no record (zeros ending a segment whose successor starts right after its
  /// last record, `JournalProblem.zerosOnly`): nothing committed is damaged, but readers stop
  /// there, and `Journal.repair` cuts it, keeping every segment.
  package var holdsNoRecord = false
  /// What opening the journal for writing had moved aside or found missing before this error,
  /// when something had been (`RecoveryReport.isClean` false): set when the opening fails after
  /// its recovery (the writer could not start: `Journal.init`), or a `Manager`'s start-up fails
  /// after the opening (`Manager.init`). Its report would otherwise be lost (the opening
  /// rewrote the index, so nothing else says the records are gone). Nil otherwise.
  public var openingRecovery: RecoveryReport? {
    get { extras?.report }
    set { extras = Extras.holding(newValue, extras?.timestamps) }
  }
  /// The smallest and largest timestamps of the records `sequences` names, from the damaged
  /// frame's batch header, when its checksum holds and it names exactly them (a frame that fails
  /// its checksum, read past right after it): a reader selecting by time knows from them that
  /// none of those records is in its selection (`rewind log --until`). Nil otherwise.
  package var timestamps: ClosedRange<Int64>? {
    get { extras?.timestamps }
    set { extras = Extras.holding(extras?.report, newValue) }
  }
  /// `openingRecovery` and `timestamps`, behind one reference: a `JournalError` travels in every
  /// append's `Result`, which is copied by its largest payload's size. Held inline, the report
  /// (its arrays and optionals) made each copy larger, and a `createNote` about 650 instructions
  /// dearer, most of them `memcpy` (callgrind, `--child manager`).
  private var extras: Extras?

  public init(
    _ code: Code, _ message: String, directory: String? = nil, file: String? = nil, offset: Int64? = nil,
    sequences: ClosedRange<UInt64>? = nil, errno: Int32? = nil
  ) {
    self.code = code
    self.message = message
    self.directory = directory
    self.file = file
    self.offset = offset
    self.sequences = sequences
    self.errno = errno
  }

  /// The error for a stray file (`JournalProblem.strayFile`) met in journal `directory`: at
  /// offset 0 of that file, marked `isStrayFile`, so that it says nothing committed is damaged.
  package init(stray: JournalProblem, directory: String) {
    self.init(.corrupt, stray.message, directory: directory, file: stray.file, offset: 0)
    isStrayFile = true
  }

  public var description: String {
    if code == .notAJournal, let directory {
      // Not "in journal DIR": the point is that DIR is not one (the message names what is missing).
      return "\(directory): \(message)" + (advice.map { ". " + $0 } ?? "")
    }
    var text = message
    var place: [String] = []
    // A failed system call's message names its path, the directory's and the file's, already:
    // "open DIR/LOCK: Is a directory (errno 21) in journal DIR", not "… (LOCK) in journal DIR".
    if let file, !(directory.map { message.contains($0 + "/" + file) } ?? false) { place.append(file) }
    if let offset { place.append("byte offset \(offset)") }
    if let sequences { place.append(Self.describe(sequences, mayGoFurther: sequencesMayGoFurther)) }
    if !place.isEmpty { text += " (" + place.joined(separator: ", ") + ")" }
    if let directory { text += " in journal \(directory)" }
    if let advice { text += ". " + advice }
    text += openingRecovery?.toldAfterAnError ?? ""
    return text
  }

  /// The message of `.notAJournal` for a directory that does not exist (a wrong path: the advice
  /// about a journal that lost its manifest does not apply).
  package static let noSuchDirectory = "the directory does not exist"

  /// `.locked`, for the writer or repair opened on a journal whose lock is held: by a journal of
  /// this process (its LOCK file open at `lockFD` is listed as held here), or by another process.
  package static func locked(directory: String, lockFD: Int32?) -> JournalError {
    let here = lockFD.map(DirectoryLock.isHeldInThisProcess) ?? false
    return JournalError(
      .locked, here ? lockedInThisProcess : "another writer holds the journal's lock", directory: directory,
      file: Layout.lockName)
  }

  /// The message of `.locked` when a journal of this process holds the lock (its advice differs).
  static let lockedInThisProcess = "a journal this process opened holds the journal's lock"

  /// What a user can do about it.
  var advice: String? {
    if missingBeforeIntactSegments {
      return "Committed records are missing before intact segments. Run `rewind verify` for a full report; "
        + "restore the segment that held them from a backup (`rewind repair` refuses such a journal: it would "
        + "move the intact segments after the gap aside)"
    }
    if isStrayFile {
      return "Nothing committed is damaged; `rewind verify` lists every such file, and `rewind repair` moves them "
        + "aside, keeping every segment"
    }
    if holdsNoRecord {
      return "Nothing committed is damaged: these bytes hold no record. `rewind repair` takes them out (zeros cut, "
        + "other bytes moved to quarantine/), keeping every segment"
    }
    return switch code {
    case .locked where message == Self.lockedInThisProcess:
      "Close the Journal (or the Manager over it) this process opened on the directory first, or open a reader "
        + "instead"
    case .locked: "Another process is writing to this journal; close it first, or open a reader instead"
    case .corrupt, .sequenceBreak:
      "Committed data is damaged. Run `rewind verify` for a full report; `rewind repair` moves the damaged part aside"
    case .durabilityLost: "Writes may not have reached the disk; check the disk, then reopen the journal"
    case .calledFromCompletion:
      "Append from a task (`Task { try await journal.append(records) }`) or a thread of its own, not in the completion"
    case .stopped: "Fix the cause of the earlier failure (`Journal.failure`), then reopen the journal"
    case .notAJournal where message == Self.noSuchDirectory: "Check the path"
    case .notAJournal:
      "Check the path. A directory with segments but no manifest.json needs its manifest back (from a backup, "
        + "or written as Journal/FORMAT.md describes); opening for writing creates a journal only where none is"
    case .staleIndex:
      "The index is derived data: fix the cause, then remove it: delete the file, or run `rewind repair`, which removes it"
    case .shortened: "What was read of those records no longer holds; open the journal again to read what it holds now"
    default: nil
    }
  }
}

extension JournalError {
  /// "sequence 7", "sequences 7-9", or, when later records may be gone too (`sequencesMayGoFurther`),
  /// "sequences from 7 at least through 9 (...)".
  static func describe(_ sequences: ClosedRange<UInt64>, mayGoFurther: Bool) -> String {
    if mayGoFurther {
      return "sequences from \(sequences.lowerBound) at least through \(sequences.upperBound) (as far as the index "
        + "and the batch headers there tell; later records of that segment cannot be counted)"
    }
    // Not `count`: a range of damage read from crafted headers can hold more than `Int.max`.
    return sequences.lowerBound == sequences.upperBound
      ? "sequence \(sequences.lowerBound)" : "sequences \(sequences.lowerBound)-\(sequences.upperBound)"
  }

  /// The records between two segments, or two batches, that do not follow each other: the next
  /// starts at `next` where `expected` was due. A gap (`next` later) names only the missing
  /// records, not `next` itself; a repeat (`next` earlier) names those read twice.
  static func breakSequences(expected: UInt64, next: UInt64) -> ClosedRange<UInt64> {
    next > expected ? expected...(next - 1) : next...expected
  }

  /// `.sequenceBreak` where a segment starts at `next` and `expected` was due: a gap (records
  /// missing before the intact segment `next`, `missingBeforeIntactSegments`) or a repeat.
  static func segmentBreak(
    _ message: String, expected: UInt64, next: UInt64, directory: String, file: String, offset: Int64
  ) -> JournalError {
    var error = JournalError(
      .sequenceBreak, message, directory: directory, file: file, offset: offset,
      sequences: breakSequences(expected: expected, next: next))
    error.missingBeforeIntactSegments = next > expected
    return error
  }

  /// Wraps a failure of the layers below (a system call, liblz4) with where it happened;
  /// a `JournalError` passes through unchanged.
  init(_ error: any Error, directory: String, file: String? = nil) {
    switch error {
    case let error as JournalError: self = error
    case let error as SystemCallError:
      self.init(.io, error.description, directory: directory, file: file, errno: error.errno)
    default: self.init(.io, "\(error)", directory: directory, file: file)
    }
  }

  /// Runs `body`, throwing what it throws as `JournalError(_:directory:file:)` does.
  static func wrapping<T>(directory: String, file: String? = nil, _ body: () throws -> T) throws(JournalError) -> T {
    do { return try body() } catch { throw JournalError(error, directory: directory, file: file) }
  }
}

/// What a `JournalError` rarely holds, behind a reference (`JournalError.openingRecovery`,
/// `JournalError.timestamps`); equal when what they hold is. Never changed once made: a setter
/// makes a new one.
private final class Extras: Sendable, Equatable {
  let report: RecoveryReport?
  let timestamps: ClosedRange<Int64>?
  private init(_ report: RecoveryReport?, _ timestamps: ClosedRange<Int64>?) {
    (self.report, self.timestamps) = (report, timestamps)
  }
  /// Nil when it would hold nothing.
  static func holding(_ report: RecoveryReport?, _ timestamps: ClosedRange<Int64>?) -> Extras? {
    report == nil && timestamps == nil ? nil : Extras(report, timestamps)
  }
  static func == (a: Extras, b: Extras) -> Bool { a.report == b.report && a.timestamps == b.timestamps }
}
