/// When an append is acknowledged, relative to the disk.
public enum Durability: Sendable, Equatable, CustomStringConvertible {
  /// Each group of appends is written and fsynced before any of them is acknowledged. Groups form
  /// from whatever is waiting while the previous group is being synced; when several callers
  /// waited for the previous group, the writer waits (at most about one fsync's duration) for as
  /// many to wait again before it syncs (a caller per append, or per command a model's manager
  /// batched into its append). Survives power loss.
  case always
  /// Appends wait up to `maxDelay` to be written and fsynced as one group, then are
  /// acknowledged. The wait ends early when a frame is full, when no append has arrived for
  /// an eighth of `maxDelay`, or when as many callers wait as waited for the last group (a
  /// caller per append, or per command a model's manager batched into its append). Survives
  /// power loss; trades latency for larger, better compressed frames and fewer syncs. After two
  /// waits in a row that gathered nothing, groups of one caller are written without waiting
  /// (a producer that waits for each append gets nothing by it), but for every sixteenth, which
  /// waits to notice producers that have come; once a wait gathers something, every group
  /// waits again.
  case batched(maxDelay: Duration)
  /// Acknowledged once written to the operating system, without waiting for an fsync (a segment
  /// is synced only as it is sealed, its first three quarters in the background beforehand).
  /// Survives the process being killed, not a power loss or kernel crash. Either sync failing
  /// stops the journal (`.durabilityLost`): the background one at the next append, which is not
  /// written, or at `close()`, which keeps it as `Journal.failure`.
  case none

  /// `batched` with a 2 ms delay.
  public static let batched = Durability.batched(maxDelay: .milliseconds(2))

  public var description: String {
    switch self {
    case .always: "always"
    case .batched(let delay): "batched(\(delay))"
    case .none: "none"
    }
  }
}

/// Sizes a reader accepts and a writer produces. They protect readers from hostile or damaged
/// input: no declared size beyond these makes a reader allocate.
public struct JournalLimits: Sendable, Equatable {
  /// The largest payload of one record.
  public var maxRecordBytes: Int
  /// The largest decoded content of one frame, and so of one appended batch.
  public var maxBatchBytes: Int

  public init(maxRecordBytes: Int = 4 << 20, maxBatchBytes: Int = 16 << 20) {
    self.maxRecordBytes = maxRecordBytes
    self.maxBatchBytes = maxBatchBytes
  }

  /// The largest limits a writer accepts (`JournalOptions.maximumBatchBytes`): they read every
  /// journal, whatever limits it was written with. A reader with smaller limits fails with
  /// `.limitExceeded` at a batch larger than they allow. The `rewind` tool and the model layer
  /// (replay, time travel, snapshots, a manager's start-up) read with these; a hostile header can
  /// then make a reader allocate up to about 2 GiB for one batch, and never more than about 255
  /// times the bytes of its frame, which must be in the file with its checksum holding.
  public static let largest = JournalLimits(
    maxRecordBytes: JournalOptions.maximumBatchBytes - Layout.recordHeaderSize,
    maxBatchBytes: JournalOptions.maximumBatchBytes)
}

/// How a journal is opened for writing.
public struct JournalOptions: Sendable {
  /// When appends are acknowledged. Default: `.always`.
  public var durability: Durability = .always
  /// A segment is rolled when the next group of appends, counted by its decoded bytes (records
  /// before compression), would take it past this size. Content that compresses so leaves a
  /// segment short of it; content that does not (stored raw) can take a segment past it by the
  /// framing of the group written last, 75 bytes a frame and 8 per 64 KiB block (FORMAT.md,
  /// "Segments"), and a group larger than this is written to a segment of its own, as large as
  /// it. Default 64 MiB.
  public var segmentTargetBytes: Int = 64 << 20
  /// Group commit gathers waiting appends into one frame up to about this many decoded bytes
  /// (never more than `limits.maxBatchBytes`, which readers with the same limits accept).
  /// Default 1 MiB.
  public var frameTargetBytes: Int = 1 << 20
  /// A sparse index entry is written at least every this many segment bytes. Default 64 KiB.
  public var indexIntervalBytes: Int = 64 << 10
  /// Under `always` and `batched`, the writer keeps the active segment's file ahead of its last
  /// frame, in chunks of this many bytes written with zeros (FORMAT.md, "Writing"): a group's
  /// `fdatasync` then persists its frames only, not also the file's growth (measured on ext4:
  /// about 0.13 against 0.19 ms per sync, which bounds durable appends). The zeros are cut when a
  /// segment is sealed and when the journal is closed, so sealed segments and closed journals
  /// end at their last frame; after a crash they read as the end of the journal. A chunk that
  /// does not fit on the disk leaves the frames to grow the file themselves (the segment
  /// preallocates no more), so it fails no append that would fit without it. Groups of more than
  /// 64 KiB on average grow the file themselves. Under `none` the space is allocated
  /// (`fallocate`), not written, for `mapsActiveSegment`. 0 turns it (and the mapping) off.
  /// Default 4 MiB.
  public var preallocationBytes: Int = 4 << 20
  /// Under `none`, small groups of frames (one record per append) are stored through a shared
  /// memory mapping of the active segment instead of one `pwrite` each (FORMAT.md, "Mapped
  /// appends"), in windows of `preallocationBytes` allocated ahead with `fallocate`. Where that
  /// fails (a full disk, a file system without `fallocate` or `mmap`, or one that does not write
  /// allocated space in place) the segment falls back to `pwrite`. The trade: a disk error while
  /// the kernel reads a page back stops the process (SIGBUS) where `pwrite` would have failed the
  /// append with `EIO`; set false to keep `pwrite`. Off when `preallocationBytes` is 0. Default
  /// true.
  public var mapsActiveSegment = true
  /// Compact each segment once it is sealed, on a low-priority background thread: rewrite it
  /// into large LZ4HC frames, about 2.9x smaller for the benchmark's Notebook events
  /// (FORMAT.md, "Compaction"; `Journal.compactSealedSegments()` does the same on demand).
  /// Segments sealed before the journal was opened are compacted too. Default false: compaction
  /// costs one to two CPU-seconds per 64 MiB segment, which a writer process should choose to
  /// spend (and benchmarks of appends must not include); turn it on for journals that live long.
  public var compactsSealedSegments: Bool = false
  /// Seal the last segment when opening, if it holds a record: sync it and start a new, empty
  /// segment after it, into which this writer appends. Compaction rewrites sealed segments only
  /// (never the one a writer appends to), so this is how the whole of a journal at rest is
  /// compacted: open it with this set, then `compactSealedSegments()` (`rewind compact --all`).
  /// Each such opening leaves one more segment file; meant for archiving a journal, not for
  /// every opening. The seal comes after recovery (a torn tail is moved aside first); with
  /// `compactsSealedSegments` too, the segment sealed so is compacted in the background with
  /// the others sealed before. Default false.
  public var sealsLastSegmentOnOpening: Bool = false
  /// The most threads that compress the blocks of one frame of several 64 KiB blocks (a bulk
  /// append, or a group of many appends), the thread writing the frame among them; the others
  /// come from Dispatch's pool (`DispatchQueue.concurrentPerform`). 1 compresses every frame on
  /// the writing thread alone. A frame's bytes are the same whatever this is (FORMAT.md, "Data
  /// frame"). Frames of one block (up to 64 KiB of records) are always compressed by one thread.
  /// Default nil: one per active processor.
  public var compressionThreads: Int?
  /// Create the directory and an empty journal if there is none. Default true. The directory's
  /// parent must exist (it is not created). A journal is created only where neither a manifest
  /// nor a segment is; other files there are left alone and do not stop it, so give a journal a
  /// directory of its own. With false, a directory that does not exist, or holds no journal, is
  /// `.notAJournal`.
  public var createIfMissing: Bool = true
  public var limits = JournalLimits()
  /// The id for a journal created by this open; random by default. Tests fix it for golden files.
  public var newJournalID: JournalID?
  /// The system-call seam (tests inject faults through it).
  package var io: any FileIO = PosixFileIO()
  /// Under `always`, the longest the writer waits for the last group's callers to be back before
  /// it syncs what is queued: it waits about as long as the last sync took, but no longer than
  /// this (`Durability.always`). A test lengthens it to see the wait, which otherwise lasts a few
  /// milliseconds at most. Default 2 ms.
  package var alwaysGatherLimit: Duration = .milliseconds(2)

  public init(durability: Durability = .always) {
    self.durability = durability
  }

  /// The smallest `segmentTargetBytes` accepted: room for the segment header and a small frame.
  public static let minimumSegmentTargetBytes = 1 << 10
  /// The largest `preallocationBytes` accepted: the writer rounds it up to whole pages and maps a
  /// window of it under `none`; beyond this its arithmetic could overflow (and a chunk larger than
  /// a segment gains nothing: it is never allocated past the segment's target size).
  public static let maximumPreallocationBytes = 1 << 30
  /// The largest `limits.maxBatchBytes` a writer accepts: LZ4 compresses at most 2,113,929,216
  /// bytes at once (`LZ4_MAX_INPUT_SIZE`), below the batch header's 32-bit content length.
  public static let maximumBatchBytes = 0x7E00_0000
  /// The largest `compressionThreads` accepted (each thread that takes part keeps a 16 KiB
  /// compression state for the journal's lifetime).
  public static let maximumCompressionThreads = 256

  /// What is wrong with these options, naming the field and the value; nil when they can be used.
  /// `Journal.init` refuses options with a problem before touching the disk.
  public var problem: String? {
    if case .batched(let delay) = durability, delay < .zero {
      return "durability .batched(maxDelay: \(delay)): the delay must not be negative"
    }
    if segmentTargetBytes < Self.minimumSegmentTargetBytes {
      return "segmentTargetBytes is \(segmentTargetBytes); it must be at least \(Self.minimumSegmentTargetBytes)"
    }
    if frameTargetBytes < 1 { return "frameTargetBytes is \(frameTargetBytes); it must be at least 1" }
    if indexIntervalBytes < 1 { return "indexIntervalBytes is \(indexIntervalBytes); it must be at least 1" }
    if preallocationBytes < 0 || preallocationBytes > Self.maximumPreallocationBytes {
      return "preallocationBytes is \(preallocationBytes); it must be from 0 (off) to \(Self.maximumPreallocationBytes)"
    }
    if let threads = compressionThreads, threads < 1 || threads > Self.maximumCompressionThreads {
      return "compressionThreads is \(threads); it must be from 1 to \(Self.maximumCompressionThreads), "
        + "or nil (one per active processor)"
    }
    let largestPayload = Self.maximumBatchBytes - Layout.recordHeaderSize
    if limits.maxRecordBytes < 0 || limits.maxRecordBytes > largestPayload {
      return "limits.maxRecordBytes is \(limits.maxRecordBytes); it must be from 0 to \(largestPayload)"
    }
    let largestRecord = limits.maxRecordBytes + Layout.recordHeaderSize
    if limits.maxBatchBytes < largestRecord || limits.maxBatchBytes > Self.maximumBatchBytes {
      return "limits.maxBatchBytes is \(limits.maxBatchBytes); it must be from \(largestRecord) (a record of "
        + "limits.maxRecordBytes with its \(Layout.recordHeaderSize)-byte header) to \(Self.maximumBatchBytes)"
    }
    return nil
  }
}
