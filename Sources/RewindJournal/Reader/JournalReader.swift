import Glibc
import RewindLocking

/// Reads a journal directory, also while a writer appends to it. Takes no lock and writes nothing
/// (`makeDurable(through:)` only syncs what a writer wrote).
///
/// A reader sees every batch whose frame is completely written; an incomplete frame at the very
/// end of the journal is treated as not yet written. Damage anywhere else is an error that
/// names the segment, byte offset and sequence numbers. So is a loss the sparse index witnesses
/// (a segment it names is missing, or the journal ends before a batch it names): a
/// `.sequenceBreak` when a cursor is made or reaches the end, never a shorter journal.
public struct JournalReader: Sendable {
  public let directory: String
  public let limits: JournalLimits
  package let io: any FileIO
  /// The sparse index as the last cursor loaded it, shared by the reader's copies: a reader that
  /// opens many cursors (a seek each, or a time machine's jumps) reads the index file and opens
  /// every segment once, not at each cursor (at 1M events that was most of a seek's time).
  private let indexCache: IndexCache

  /// Its cursors (and those of its copies) share the sparse index one of them loaded while the
  /// index file and the segments are unchanged since (the same files, sizes and change times), so
  /// that a seek reads one segment's window instead of the whole index; a cursor made after a
  /// writer appended, or anything else changed them, loads the index again. An index is shared
  /// only once its files have rested for two seconds, and only when it was read whole.
  /// - Throws: `JournalError` `.notAJournal` or `.badManifest` when `directory` holds no journal.
  public init(directory: String, limits: JournalLimits = JournalLimits()) throws {
    try self.init(directory: directory, limits: limits, io: PosixFileIO())
  }

  /// - Parameters:
  ///   - cachingIndex: cursors reuse the sparse index an earlier cursor of this reader
  ///     (or of a copy of it) loaded, while the journal's segments are the same files by name,
  ///     even when files changed since. A cached entry is checked when used as any entry is; one
  ///     that turns out stale (a segment was rewritten by compaction) drops the cache. Entries
  ///     written since it was loaded are missing from it, which makes a cursor start further back,
  ///     never wrong: `dropCachedIndex()` picks them up. Without it (as `init(directory:limits:)`),
  ///     cursors reuse the index only while the index file and every segment have the stamps
  ///     (`FileStamp`) they had when it was loaded, so a cursor reads what a fresh load would give:
  ///     a journal being written is loaded again at a cursor made after the files changed.
  ///   - indexSettling: without `cachingIndex`, how long (in nanoseconds) before a load every file
  ///     it stamps must have last changed for the load to be kept (`settledNanoseconds`; tests of a
  ///     journal they have just written pass 0).
  package init(
    directory: String, limits: JournalLimits = JournalLimits(), io: any FileIO = PosixFileIO(), cachingIndex: Bool,
    indexSettling: Int64 = JournalReader.settledNanoseconds
  ) throws {
    self.directory = directory
    self.limits = limits
    self.io = io
    self.indexCache = IndexCache(whileUnchanged: !cachingIndex, settling: indexSettling)
    _ = try JournalDirectory(path: directory, io: io)
  }

  package init(directory: String, limits: JournalLimits = JournalLimits(), io: any FileIO) throws {
    try self.init(directory: directory, limits: limits, io: io, cachingIndex: false)
  }

  /// The journal's identity.
  public var id: JournalID {
    get throws { try JournalDirectory(path: directory, io: io).journalID }
  }

  /// Every record from `sequence` on (all of them by default), in order.
  /// - Throws: `JournalError` `.sequenceBreak` when the index names a segment that is missing.
  public func records(from sequence: UInt64 = 1) throws -> JournalCursor {
    try JournalCursor(reader: self, start: .sequence(max(sequence, 1)))
  }

  /// Every record from `sequence` on, also of a journal whose index names records the disk no longer
  /// holds (which `records(from:)` refuses): for a caller that has verified the journal and reads
  /// only up to the end of its intact part (`VerificationReport.lastSequence`).
  package func records(from sequence: UInt64, reportingLoss: Bool) throws -> JournalCursor {
    try JournalCursor(reader: self, start: .sequence(max(sequence, 1)), reportingLoss: reportingLoss)
  }

  /// Every record from `sequence` on (or from the first one stamped at or after `since`), also
  /// of a journal whose index names segments the directory lacks, which `records(from:)` refuses
  /// as the cursor is made: this cursor reads the segments there are and throws the same
  /// `.sequenceBreak`, naming the missing segment, only where the read reaches it. For a reader
  /// that reads past damage (`rewind log`): a cursor made after a missing segment reads on.
  package func records(from sequence: UInt64, since: Int64? = nil, readingAroundMissingSegments: Bool) throws
    -> JournalCursor
  {
    try JournalCursor(
      reader: self, start: since.map { .time($0) } ?? .sequence(max(sequence, 1)),
      readingAroundMissingSegments: readingAroundMissingSegments)
  }

  /// Every record from the first one stamped at or after `timestamp` (ns since 1970) on.
  public func records(since timestamp: Int64) throws -> JournalCursor {
    try JournalCursor(reader: self, start: .time(timestamp))
  }

  /// The record with sequence number `sequence`, or nil if the journal does not reach it yet.
  public func record(_ sequence: UInt64) throws -> JournalRecord? {
    try record(sequence, readingAroundMissingSegments: false)
  }

  /// `record(_:)`, also of a journal whose index names segments the directory lacks when
  /// `readingAroundMissingSegments` (as `records(from:since:readingAroundMissingSegments:)`): a
  /// record before or after such a segment is returned, and one it held throws its located
  /// `.sequenceBreak` (`record(_:)` refuses the journal instead).
  package func record(_ sequence: UInt64, readingAroundMissingSegments: Bool) throws -> JournalRecord? {
    let cursor = try records(from: sequence, readingAroundMissingSegments: readingAroundMissingSegments)
    guard let record = try cursor.next(), record.sequence == sequence else { return nil }
    return record
  }

  /// The last sequence number written so far (0 when empty).
  public func lastSequence() throws -> UInt64 {
    let cursor = try records(from: .max)
    return try cursor.lastSequenceReached()
  }

  /// The batches the sparse index names in the segment named `file` past byte `offset`, in
  /// order: where a read can go on after a damaged batch header there, whose extent is unknown.
  /// The index names only batches a writer wrote, and a cursor moved to one
  /// (`JournalCursor.moveToBatch(at:in:startingAt:)`) checks the header it finds against the
  /// entry, so every entry of the index file that is well-formed is used, past a segment it names
  /// and the directory lacks too (where the cursors' index stops). Empty when the index names none.
  package func indexedBatches(in file: String, after offset: Int64) -> [IndexEntry] {
    guard let layout = try? JournalDirectory(path: directory, io: io) else { return [] }
    return SparseIndex.wellFormedEntries(directory: directory, journalID: layout.journalID, io: io).filter {
      Layout.segmentName(firstSequence: $0.segment) == file && $0.offset > offset
    }
  }

  /// Makes the records through `sequence` durable, whatever policy the writer follows: syncs the
  /// data of the last segment if `sequence` lies in it (a sealed segment was synced before the
  /// next one was made). For whatever is derived from records and kept on disk, such as a
  /// snapshot, so that it never outlives them: under `none` a power loss can take the active
  /// segment's unsynced tail, and the next writer numbers new records over it.
  /// The last segment is the last file named like one whose segment header holds for its name:
  /// a file named like a later segment that is none (a copy saved under another number, junk) is
  /// not where the writer appends, and syncing it would leave the records unsynced.
  /// - Throws: `JournalError` `.io` if the segment cannot be opened or synced.
  public func makeDurable(through sequence: UInt64) throws {
    let layout = try JournalDirectory(path: directory, io: io)
    guard let last = try layout.segments.last(where: { try layout.isSegment($0) }), last <= sequence else { return }
    let name = Layout.segmentName(firstSequence: last)
    do {
      let fd = try io.open(directory + "/" + name, flags: O_RDONLY, mode: 0)
      defer { io.close(fd) }
      try io.sync(fd, metadata: false, path: name)
    } catch {
      throw JournalError(error, directory: directory, file: name)
    }
  }

  /// Records from `sequence` on, waiting for new ones as they are committed, every
  /// `pollInterval`. Ends only with an error (`.shortened` when the journal was cut under it and
  /// written again) or when the consuming task is cancelled.
  public func follow(from sequence: UInt64 = 1, pollInterval: Duration = .milliseconds(10)) -> JournalFollower {
    JournalFollower(reader: self, start: sequence, pollInterval: pollInterval)
  }

  /// `follow(from:pollInterval:)`, reading around segments the index names and the directory
  /// lacks, for a follower that starts after them (`rewind tail -f`).
  package func follow(from sequence: UInt64, pollInterval: Duration, readingAroundMissingSegments: Bool)
    -> JournalFollower
  {
    var follower = JournalFollower(reader: self, start: sequence, pollInterval: pollInterval)
    follower.readingAroundMissingSegments = readingAroundMissingSegments
    return follower
  }

  /// The sparse index for cursors: the cached one while `layout` lists the segments it was loaded
  /// for (and, without `cachingIndex`, while the files have the stamps they had then), otherwise
  /// loaded (and cached).
  func index(for layout: JournalDirectory) -> SparseIndex {
    guard indexCache.whileUnchanged else {
      if let cached = indexCache.index(segments: layout.segments, stamps: []) { return cached }
      let index = loadIndex(layout)
      indexCache.keep(index, segments: layout.segments, stamps: [])
      return index
    }
    // Nil stamps (a file gone, or `lstat` failing): loaded, not kept.
    let stamps = stamps(of: layout)
    if let stamps, let cached = indexCache.index(segments: layout.segments, stamps: stamps) { return cached }
    let (index, readWhole) = loadIndexReportingFailures(layout)
    // Kept only when it was read whole (a failed read leaves it short for this cursor alone), the
    // files have the same stamps after the load as before it (none changed while it was read),
    // and none changed within the reader's settling time (`settledNanoseconds`) before the load:
    // on a file system whose clock ticks coarsely, two changes within one tick can leave equal
    // stamps on different bytes. Settling is asked first: a journal being written fails it, and
    // is then spared stamping every file a second time at each cursor.
    if let stamps, readWhole, Self.settled(stamps, for: indexCache.settling), stamps == self.stamps(of: layout) {
      indexCache.keep(index, segments: layout.segments, stamps: stamps)
    }
    return index
  }

  /// How long before now every stamped file must have last changed for a load to be kept: longer
  /// than the coarsest clock a file system stamps changes by (one second, for ext4's small inodes).
  package static let settledNanoseconds: Int64 = 2_000_000_000

  /// Whether every file of `stamps` last changed at least `settling` nanoseconds ago.
  private static func settled(_ stamps: [FileStamp?], for settling: Int64) -> Bool {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let limit = now.nanoseconds - settling
    return stamps.allSatisfy { ($0?.changed ?? .min) <= limit && ($0?.modified ?? .min) <= limit }
  }

  /// The stamps of what `loadIndex` reads: the index file (nil stamp while there is none: loaded,
  /// it is an empty index), then each segment, whose size bounds the entries kept.
  private func stamps(of layout: JournalDirectory) -> [FileStamp?]? {
    var stamps: [FileStamp?] = [io.stamp(directory + "/" + Layout.indexName)]
    stamps.reserveCapacity(layout.segments.count + 1)
    for first in layout.segments {
      guard let stamp = io.stamp(directory + "/" + Layout.segmentName(firstSequence: first)) else { return nil }
      stamps.append(stamp)
    }
    return stamps
  }

  /// Forgets the cached sparse index (if any): the next cursor loads it again.
  package func dropCachedIndex() { indexCache.drop() }

  /// Whether a cached index is held (for tests).
  package var hasCachedIndex: Bool { indexCache.isHolding }

  /// Loads the sparse index, keeping the entries that fit the segments as they are now.
  package func loadIndex(_ layout: JournalDirectory) -> SparseIndex { loadIndexReportingFailures(layout).index }

  /// `loadIndex`, and whether every file it reads was read (see
  /// `SparseIndex.loadReportingFailures`; a segment that does not open counts as a failure too).
  private func loadIndexReportingFailures(_ layout: JournalDirectory) -> (index: SparseIndex, readWhole: Bool) {
    var sizes: [UInt64: Int64] = [:]
    var readWhole = true
    for first in layout.segments {
      if let file = try? layout.open(segment: first) { sizes[first] = file.size } else { readWhole = false }
    }
    let (index, _, indexReadWhole) = SparseIndex.loadReportingFailures(
      directory: directory, journalID: layout.journalID, segments: sizes, io: io)
    return (index, readWhole && indexReadWhole)
  }
}

/// A sparse index loaded for a list of segments, shared by the copies of a `JournalReader`.
private final class IndexCache: Sendable {
  /// Whether the index is reused only while the files keep their stamps (otherwise while the
  /// segments keep their names).
  let whileUnchanged: Bool
  /// `JournalReader.init`'s `indexSettling`.
  let settling: Int64
  private let held = Lock<(segments: [UInt64], stamps: [FileStamp?], index: SparseIndex)?>(nil)

  init(whileUnchanged: Bool, settling: Int64) {
    self.whileUnchanged = whileUnchanged
    self.settling = settling
  }

  /// The index, if one is held for `segments` (and, `whileUnchanged`, for `stamps`).
  func index(segments: [UInt64], stamps: [FileStamp?]) -> SparseIndex? {
    held.withLock { held in
      guard let held, held.segments == segments, !whileUnchanged || held.stamps == stamps else { return nil }
      return held.index
    }
  }

  func keep(_ index: SparseIndex, segments: [UInt64], stamps: [FileStamp?]) {
    held.withLock { $0 = (segments, stamps, index) }
  }

  var isHolding: Bool { held.withLock { $0 != nil } }

  func drop() { held.withLock { $0 = nil } }
}
