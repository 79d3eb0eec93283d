/// Bytes moved out of the journal's data into its `quarantine/` folder: by recovery (a torn
/// tail) or by an explicit repair. Nothing is deleted; the file named here holds those bytes.
public struct QuarantinedBytes: Sendable, Equatable, CustomStringConvertible {
  /// The segment the bytes came from (file name inside the journal directory).
  public var segment: String
  /// Where they started in that segment.
  public var offset: Int64
  /// How many bytes were moved.
  public var length: Int64
  /// Where they are now, relative to the journal directory.
  public var movedTo: String
  /// Why they were moved.
  public var reason: String
  /// The sequence numbers the moved batches declared, as far as their headers could be read.
  public var sequences: ClosedRange<UInt64>?

  package init(
    segment: String, offset: Int64, length: Int64, movedTo: String, reason: String, sequences: ClosedRange<UInt64>?
  ) {
    self.segment = segment
    self.offset = offset
    self.length = length
    self.movedTo = movedTo
    self.reason = reason
    self.sequences = sequences
  }

  public var description: String {
    var text = "moved \(length) bytes of \(segment) from byte offset \(offset) to \(movedTo): \(reason)"
    if let sequences { text += " (declared sequences \(sequences.lowerBound)-\(sequences.upperBound))" }
    return text
  }
}

/// Committed records a journal no longer holds, found as it was opened: the sparse index names a
/// batch in the last segment at or after where that segment now ends (zeros, or a frame that does
/// not check, where the batch was). Index entries are written only for committed batches, so
/// these records were acknowledged; their bytes did not survive. Under `none` a power loss can do
/// that to the active segment's unsynced tail; under `always` or `batched` only damage can.
public struct MissingRecords: Sendable, Equatable, CustomStringConvertible {
  /// The segment (file name inside the journal directory).
  public var segment: String
  /// Where the segment now ends: the next append is written here.
  public var offset: Int64
  /// The records known to be gone: from the first one the journal no longer holds through the
  /// first record of the last batch the index names, or through the last record a damaged batch
  /// moved aside declares in its intact header, if later (later ones, if any, left no trace). The
  /// next append is numbered from `sequences.lowerBound` again.
  public var sequences: ClosedRange<UInt64>
  /// Where the index says that last batch began.
  public var indexedOffset: Int64

  public var description: String {
    "committed records \(sequences.lowerBound)-\(sequences.upperBound) (at least) are missing from \(segment): "
      + "it ends at byte offset \(offset), but the index names a batch at byte offset \(indexedOffset)"
  }
}

/// Committed records in a segment that the sparse index names nowhere: an index append failed
/// and the writer gave up on the file, or the index stops before the end of the journal. The
/// index is derived data, so nothing is lost: readers seeking into these records walk from an
/// earlier entry, and the next opening for writing derives the missing entries (its report calls
/// the index "stale").
public struct UnindexedRecords: Sendable, Equatable, CustomStringConvertible {
  /// The segment (file name inside the journal directory).
  public var segment: String
  /// The records of its valid batches, first to last.
  public var sequences: ClosedRange<UInt64>

  package init(segment: String, sequences: ClosedRange<UInt64>) {
    self.segment = segment
    self.sequences = sequences
  }

  public var description: String {
    "the index names no batch of \(segment) (sequences \(sequences.lowerBound)-\(sequences.upperBound)); "
      + "readers walk to them from an earlier entry, and the next writer derives their entries"
  }
}

/// What opening a journal for writing found and did.
public struct RecoveryReport: Sendable, Equatable {
  /// Torn tails moved aside: the incomplete last frame of a crash, never a frame whose
  /// checksums hold. A tail the index names a batch in was committed (the last segment cut short
  /// by damage, not by a crash): `missingRecords` then reports its records gone. (A manager's
  /// report adds the snapshot files past the journal's end that it moved aside.)
  public var movedAside: [QuarantinedBytes] = []
  /// Committed records that were found gone, if any (see `MissingRecords`). Opening goes on: the
  /// records cannot be brought back from this journal. This report is the only place that says
  /// so: opening rewrites the index without the entries that witnessed the loss, so `rewind
  /// verify` finds nothing after it (FORMAT.md: "it says so once"). Keep or show it; an app that
  /// opens through a `Manager` finds it in `Manager.recovery`, or, when `Manager.init` fails
  /// after opening, in the error it throws (`JournalError.openingRecovery`,
  /// `ReplayError.openingRecovery`).
  public var missingRecords: MissingRecords?
  /// Index entries that had to be rebuilt (the index is derived data).
  public var indexEntriesRebuilt: Int = 0
  /// Why the index was rebuilt, if it was ("missing", "stale", "damaged").
  public var indexRepairReason: String?
  /// The last sequence number in the journal after recovery (0 when empty).
  public var lastSequence: UInt64 = 0

  /// True when nothing had to be moved aside and nothing committed was missing.
  public var isClean: Bool { movedAside.isEmpty && missingRecords == nil }

  /// What was moved aside and what was found missing, one clause each, joined by "; " (empty
  /// when `isClean`): what an error carries when opening went on to fail after recovering
  /// (`JournalError.openingRecovery`).
  public var losses: String {
    (movedAside.map(\.description) + (missingRecords.map { [$0.description] } ?? [])).joined(separator: "; ")
  }

  /// What an error thrown after this opening adds to its description (`openingRecovery`): a
  /// sentence naming the `losses`, or nothing when clean.
  package var toldAfterAnError: String {
    isClean ? "" : ". Before this, opening the journal for writing had recovered: " + losses
  }
}
