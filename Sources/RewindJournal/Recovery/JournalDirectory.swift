import Glibc

/// What a journal directory holds, as found by listing it.
package struct JournalDirectory {
  package let path: String
  package let io: any FileIO
  package let journalID: JournalID
  /// First sequence numbers of the segment files, ascending.
  package var segments: [UInt64]

  /// Lists and checks `path`: it must hold a readable manifest.
  /// - Parameter listing: false leaves `segments` empty, for a caller that opens a segment it
  ///   knows by name (`openChecked(segment:)`) and needs no listing of a directory that may hold
  ///   thousands of them.
  package init(path: String, io: any FileIO, listing: Bool = true) throws {
    self.path = path
    self.io = io
    self.journalID = try Manifest.load(directory: path, io: io).1
    self.segments = listing ? try Self.listSegments(path, io: io) : []
  }

  package static func listSegments(_ path: String, io: any FileIO) throws -> [UInt64] {
    do {
      return try io.contentsOfDirectory(path).compactMap(Layout.firstSequence(ofSegmentNamed:)).sorted()
    } catch {
      throw JournalError(error, directory: path)
    }
  }

  package mutating func refresh() throws {
    segments = try Self.listSegments(path, io: io)
  }

  /// Whether `segments` (as last listed) holds the segment starting at `firstSequence`: a
  /// binary search, `segments` being ascending.
  package func lists(_ firstSequence: UInt64) -> Bool {
    var low = 0
    var high = segments.count
    while low < high {
      let mid = (low + high) / 2
      if segments[mid] < firstSequence { low = mid + 1 } else { high = mid }
    }
    return low < segments.count && segments[low] == firstSequence
  }

  package func open(segment firstSequence: UInt64) throws -> SegmentFile {
    do {
      return try SegmentFile(directory: path, firstSequence: firstSequence, io: io)
    } catch {
      throw JournalError(error, directory: path, file: Layout.segmentName(firstSequence: firstSequence))
    }
  }

  /// Opens a segment and checks its header: right journal, right first sequence number. The
  /// header is read through the file's read-ahead window, for a reader that goes on to read the
  /// batches after it; `alone`, by itself (`SegmentFile.headerAlone()`), for a look at one place.
  package func openChecked(segment firstSequence: UInt64, alone: Bool = false) throws -> SegmentFile {
    let file = try open(segment: firstSequence)
    let header: Result<SegmentHeader, SegmentHeader.Problem>
    do {
      header = try alone ? file.headerAlone() : file.header()
    } catch {
      throw JournalError(error, directory: path, file: file.name)
    }
    if let problem = Self.problem(with: header, expecting: firstSequence, journalID: journalID) {
      throw JournalError(.corrupt, problem, directory: path, file: file.name, offset: 0)
    }
    return file
  }

  /// Whether the file named like segment `firstSequence` is one by its header (this journal's,
  /// starting where its name says), read by itself.
  /// - Throws: `JournalError` when the file cannot be opened or read.
  package func isSegment(_ firstSequence: UInt64) throws -> Bool {
    do {
      _ = try openChecked(segment: firstSequence, alone: true)
      return true
    } catch let error as JournalError where error.code == .corrupt {
      return false
    }
  }

  /// Whether the file named like segment `first` is a stray file as `verify` tells one
  /// (`JournalReader.strayFile`: no index entry whose checksum holds names it, and it is a copy
  /// of a present segment or holds no valid header and no batch; a file named for sequence 0
  /// whatever it holds). A file whose header holds for its name costs one read of the header;
  /// any other, a read of the index file and a look through it.
  /// - Throws: `JournalError` when a file cannot be opened or read.
  package func isStrayFile(_ first: UInt64) throws -> Bool {
    if first != 0, try isSegment(first) { return false }
    let named = SparseIndex.scanWellFormed(directory: path, journalID: journalID, io: io).namedSegments
    return try JournalReader.strayFile(first, in: self, namedByIndex: named.contains(first)) != nil
  }

  /// The first file listed after segment `first` that is no stray file (`isStrayFile`): the
  /// segment that follows it. A file that cannot be read counts as a segment (its damage is met
  /// where a read reaches it). Nil when there is none.
  package func segment(after first: UInt64) -> UInt64? {
    segments.first { $0 > first && (try? isStrayFile($0)) != true }
  }

  /// What is wrong with a decoded segment header, or nil.
  package static func problem(
    with header: Result<SegmentHeader, SegmentHeader.Problem>, expecting firstSequence: UInt64, journalID: JournalID
  ) -> String? {
    switch header {
    case .failure(.truncated): "segment header cut short"
    case .failure(.notASegment): "not a Rewind segment (no segment header)"
    case .failure(.checksumMismatch): "segment header checksum mismatch"
    case .failure(.unsupportedVersion(let v)): "segment format \(v) is not supported"
    case .success(let h) where h.journalID != journalID: "segment belongs to another journal (\(h.journalID))"
    case .success(let h) where h.firstSequence != firstSequence:
      "segment header says it starts at \(h.firstSequence), its name says \(firstSequence)"
    case .success: nil
    }
  }

  /// The journal id every segment's header names, when there are segments, they all name one id,
  /// and the manifest names another: then the manifest alone is likelier wrong than every segment
  /// (`Journal.repair` refuses such a journal). Nil otherwise, also when a header cannot be read.
  package func journalIDOfEverySegmentButTheManifest() -> JournalID? {
    var named: Set<JournalID> = []
    for segment in segments {
      guard case .success(let header)? = try? open(segment: segment).headerAlone() else { return nil }
      named.insert(header.journalID)
    }
    guard named.count == 1, let segmentsID = named.first, segmentsID != journalID else { return nil }
    return segmentsID
  }

  /// Builds a `JournalError` for damage found in a segment.
  package func error(_ damage: BatchDamage, in file: SegmentFile, expecting: UInt64) -> JournalError {
    let code: JournalError.Code =
      switch damage.kind {
      case .sequenceBreak: .sequenceBreak
      case .badHeader(.exceedsLimits): .limitExceeded
      default: .corrupt
      }
    let successor = segment(after: file.firstSequence)
    // A segment that is not the last, cut short inside a batch (its header or its frame runs past
    // the end of the file, so nothing follows it): the records up to the successor's first are
    // in no file (as `verify` reports it, and `repair` refuses it), or none are, when the
    // successor starts where the records before the cut end.
    let cut =
      successor != nil && (damage.kind == .truncatedFrame || damage.kind == .truncatedHeader)
      && damage.header.map({ $0.firstSequence == expecting }) ?? true
    let gone = cut ? successor.flatMap { $0 > expecting ? expecting...($0 - 1) : nil } : nil
    let sequences =
      gone ?? damage.sequences(expecting: expecting) ?? expecting...expecting
    let message =
      switch damage.kind {
      case _ where cut && gone != nil:
        damage.kind.description + " in a segment that is not the last: the next segment starts at sequence "
          + "\(successor ?? 0), so the records from \(expecting) on are gone"
      case _ where cut:
        damage.kind.description + " in a segment that is not the last; the next segment starts at sequence "
          + "\(expecting), so no records are missing, but readers stop here"
      case .zeroFilled where successor == expecting:
        "zeros from here to the end of a segment that is not the last (a writer cuts its preallocated space "
          + "before it seals a segment); the next segment starts at sequence \(expecting), so no records are "
          + "missing, but readers stop here"
      case .zeroFilled:
        "zeros from here to the end of a segment that is not the last: a writer cuts its preallocated space "
          + "before it seals a segment, so records may be missing here"
      case .badHeader(.exceedsLimits):
        damage.kind.description + ": the journal was written, or compacted, with larger limits than these; open it "
          + "with a limits.maxBatchBytes large enough for this batch (nothing was changed)"
      default: damage.kind.description
      }
    var error = JournalError(
      code, message, directory: path, file: file.name, offset: damage.offset, sequences: sequences)
    // Zeros, or a cut batch, that hold no record: the advice says that nothing committed is
    // damaged. Records gone before an intact segment: that only a backup brings them back.
    error.holdsNoRecord = (damage.kind == .zeroFilled || cut) && successor == expecting
    error.missingBeforeIntactSegments = gone != nil
    // A frame that fails its checksum under a header that holds: its records are the header's,
    // stamped within its range.
    if damage.kind == .frameChecksumMismatch, let header = damage.header, header.firstSequence == expecting,
      header.minTimestamp <= header.maxTimestamp
    {
      error.timestamps = header.minTimestamp...header.maxTimestamp
    }
    return error
  }
}
