import Glibc

/// Where the writer continues after opening: the end of the last segment, and the index built so far.
package struct WriterStart {
  package var segments: [UInt64]
  package var endOffset: Int64
  package var nextSequence: UInt64
  package var maxTimestamp: Int64
  package var index: SparseIndex
  /// Offset of the last index entry in the active segment (for the interval rule).
  package var lastIndexedOffset: Int64
  package var report: RecoveryReport
  /// Whether the index file on disk already holds exactly `index`.
  package var indexIsCurrent: Bool
  /// The last segment's file size: `endOffset` plus any zeros preallocated after it.
  package var fileSize: Int64
}

/// Opening for writing: checks every segment header, checks every frame of the last segment,
/// moves a torn tail aside, and brings the sparse index up to date.
package struct JournalRecovery {
  let directory: JournalDirectory
  let options: JournalOptions
  var io: any FileIO { directory.io }
  var path: String { directory.path }

  package init(directory: JournalDirectory, options: JournalOptions) {
    self.directory = directory
    self.options = options
  }

  /// The error for the file named like segment `first`, whose header does not hold, when it is a
  /// stray file as `verify` tells one (`JournalReader.strayFile`: a copy of another segment, or no
  /// segment header and no batch, and no index entry names it): it holds nothing committed, and
  /// `repair` moves it aside alone. Nil when it is a segment, damaged or not. Not moved aside
  /// here, but for a last file that holds no batch (the caller's rule): a copy is not what a
  /// crash leaves, nor is junk before the last segment.
  private func strayFileError(_ first: UInt64) -> JournalError? {
    // Named as `verify` (and `JournalDirectory.isStrayFile`) count it: by any entry whose
    // checksum holds, after damage in the index file too.
    let named = SparseIndex.scanWellFormed(directory: path, journalID: directory.journalID, io: io).namedSegments
      .contains(first)
    guard let stray = try? JournalReader.strayFile(first, in: directory, namedByIndex: named) else { return nil }
    return JournalError(stray: stray, directory: path)
  }

  package func run() throws -> WriterStart {
    var report = RecoveryReport()
    var segments = directory.segments
    let quarantine = Quarantine(directory: path, io: io)

    // Leftovers of an interrupted segment creation hold no committed records; keep them aside.
    for name in (try? io.contentsOfDirectory(path)) ?? [] where name.hasSuffix(Layout.segmentSuffix + ".tmp") {
      // Its size before the move, so that the report says what went aside (it said 0 bytes).
      let length = io.stamp(path + "/" + name)?.size ?? 0
      let moved = try wrap { () throws in try quarantine.moveFile(name) }
      report.movedAside.append(
        QuarantinedBytes(
          segment: name, offset: 0, length: length, movedTo: moved, reason: "unfinished segment creation",
          sequences: nil))
    }

    if let entry = SparseIndex.entryBeyondSegments(
      directory: path, journalID: directory.journalID, segments: segments, io: io)
    {
      // Through the last batch the index names in that segment, at least.
      let lastNamed =
        SparseIndex.lastEntry(
          directory: path, journalID: directory.journalID, segment: entry.segment, atOrAfter: 0, io: io) ?? entry
      var error = JournalError(
        .sequenceBreak,
        "the index names segment \(Layout.segmentName(firstSequence: entry.segment)), which is missing: "
          + "committed records from sequence \(entry.segment) on are gone"
          + Quarantine.whereMissing(
            segment: Layout.segmentName(firstSequence: entry.segment), directory: path, io: io),
        directory: path, file: Layout.segmentName(firstSequence: entry.segment), offset: 0,
        sequences: entry.segment...max(entry.segment, lastNamed.firstSequence))
      error.sequencesMayGoFurther = true
      throw error
    }
    if segments.isEmpty {
      try createSegment(firstSequence: 1)
      segments = [1]
    }
    if segments[0] == 0 {
      var error = JournalError(
        .sequenceBreak,
        "a file named like a segment starting at sequence 0, which no segment does (sequence numbers start at 1); "
          + "rewind repair moves it aside",
        directory: path, file: Layout.segmentName(firstSequence: 0), offset: 0)
      error.isStrayFile = true  // nothing committed is damaged: the advice says so
      throw error
    }
    guard segments[0] == 1 else {
      throw JournalError.segmentBreak(
        "the first segment starts at sequence \(segments[0]); earlier segments are missing", expected: 1,
        next: segments[0], directory: path, file: Layout.segmentName(firstSequence: segments[0]), offset: 0)
    }

    // Every segment but the last must have a valid header; a last segment whose header is torn
    // (and which holds nothing valid) is the trace of a crash while it was being made.
    var sizes: [UInt64: Int64] = [:]
    // Records of a last segment moved aside here that the index vouches for: committed, and gone.
    var lostWithSegment: MissingRecords?
    // The last record a torn tail moved aside declares, when its batch header's checksum holds.
    var lastDeclaredMoved: UInt64 = 0
    // A last segment with a bad header, after others: moved aside only once every check below has
    // passed, so that an opening that fails (a batch too large for these limits, damage in a
    // sealed segment) leaves the directory as it found it. Moved at once, the next opening found
    // the index naming a segment gone and refused the journal with a `sequenceBreak`.
    var setAside: (file: SegmentFile, problem: String)?
    for (position, first) in segments.enumerated() {
      let file = try directory.open(segment: first)
      let header = try wrap(file.name) { () throws in try file.header() }
      if let problem = JournalDirectory.problem(with: header, expecting: first, journalID: directory.journalID) {
        let isLast = position == segments.count - 1
        let holdsData = try wrap(file.name) { () throws in
          try file.hasValidBatchHeader(after: 0)
        }
        guard isLast, !holdsData, segments.count > 1 || file.size < Int64(Layout.segmentHeaderSize) else {
          throw strayFileError(first) ?? JournalError(.corrupt, problem, directory: path, file: file.name, offset: 0)
        }
        // Segments are created durably before any index entry names them: one that does names
        // committed records, which must be reported, not numbered over in silence.
        if let named = SparseIndex.lastEntry(
          directory: path, journalID: directory.journalID, segment: first, atOrAfter: 0, io: io)
        {
          lostWithSegment = MissingRecords(
            segment: file.name, offset: 0, sequences: first...max(first, named.firstSequence),
            indexedOffset: named.offset)
        }
        segments.removeLast()
        guard segments.isEmpty else {
          setAside = (file, problem)
          break
        }
        // The only segment, shorter than its header: moved at once, for the new one of its name.
        let moved = try wrap(file.name) { () throws in try quarantine.moveFile(file.name) }
        report.movedAside.append(
          QuarantinedBytes(
            segment: file.name, offset: 0, length: file.size, movedTo: moved, reason: problem, sequences: nil))
        try createSegment(firstSequence: 1)
        segments = [1]
        sizes[1] = Int64(Layout.segmentHeaderSize)
        break
      }
      sizes[first] = file.size
    }

    // The index: keep the valid prefix. Scanning resumes at the last segment's first entry (the
    // last segment is always checked in full) or, if it has none, at the last entry before it.
    let last = segments[segments.count - 1]
    let (loaded, validBytes) = SparseIndex.load(
      directory: path, journalID: directory.journalID, segments: sizes, io: io)
    var index = try deepChecked(loaded)
    let kept = index.entries
    let indexFileSize = fileSize(Layout.indexName)
    if let firstInLast = index.entries.firstIndex(where: { $0.segment == last }),
      index.entries[firstInLast].offset != Int64(Layout.segmentHeaderSize)
    {
      index.entries.removeSubrange(firstInLast...)
    }

    var segmentPosition = 0
    var offset = Int64(Layout.segmentHeaderSize)
    var nextSequence: UInt64 = 1
    var maxTimestamp = Int64.min
    if let resume = index.entries.first(where: { $0.segment == last }) ?? index.entries.last {
      segmentPosition = segments.firstIndex(of: resume.segment)!
      offset = resume.offset
      nextSequence = resume.firstSequence
      maxTimestamp = resume.maxTimestampBefore
    }
    var lastIndexedOffset: Int64 = 0
    var fileSize = Int64(Layout.segmentHeaderSize)

    // Sealed segments the scan below does not reach: check that each ends cleanly, one before
    // the next segment's first sequence, walking batch headers from its last index entry (cheap).
    // A segment the index names nowhere (an index append failed, and a later writer appended
    // entries after the gap) is walked from its start, and its entries are derived on the way.
    var derived: [IndexEntry] = []
    var timestampBefore = Int64.min  // the largest timestamp of the records before `at`
    for position in 0..<segmentPosition {
      let first = segments[position]
      let file = try directory.open(segment: first)
      let entry = index.entries.last(where: { $0.segment == first })
      var at = entry?.offset ?? Int64(Layout.segmentHeaderSize)
      var expected = entry?.firstSequence ?? first
      timestampBefore = entry?.maxTimestampBefore ?? timestampBefore
      var lastIndexed: Int64 = 0
      walk: while true {
        switch try wrap(
          file.name, { try file.batch(at: at, expecting: expected, checkFrame: false, limits: options.limits) })
        {
        case .batch(let header, _):
          if entry == nil, lastIndexed == 0 || at - lastIndexed >= Int64(options.indexIntervalBytes) {
            derived.append(
              IndexEntry(
                firstSequence: header.firstSequence, segment: first, offset: at, maxTimestampBefore: timestampBefore))
            lastIndexed = at
          }
          timestampBefore = max(timestampBefore, header.maxTimestamp)
          at += header.totalLength
          expected = header.lastSequence + 1
        case .end:
          break walk
        case .damaged(let damage):
          throw directory.error(damage, in: file, expecting: expected)
        }
      }
      if segments[position + 1] != expected {
        throw JournalError.segmentBreak(
          "segment ends at sequence \(expected - 1), but the next one starts at \(segments[position + 1])",
          expected: expected, next: segments[position + 1], directory: path, file: file.name, offset: at)
      }
    }
    if !derived.isEmpty {
      index.entries = (index.entries + derived).sorted { ($0.segment, $0.offset) < ($1.segment, $1.offset) }
    }

    while true {
      let first = segments[segmentPosition]
      let isLast = segmentPosition == segments.count - 1
      let file = try directory.open(segment: first)
      if offset == Int64(Layout.segmentHeaderSize), first != nextSequence {
        throw JournalError.segmentBreak(
          "segment starts at sequence \(first), but the previous one ends at \(nextSequence - 1)",
          expected: nextSequence, next: first, directory: path, file: file.name, offset: 0)
      }
      // Entries the index already has for this segment stay; new ones follow the interval rule.
      let existing = index.entries.last(where: { $0.segment == first })?.offset ?? 0
      lastIndexedOffset = existing
      fileSize = file.size
      scan: while true {
        let read = try wrap(file.name) { () throws in
          try file.batch(at: offset, expecting: nextSequence, checkFrame: isLast, limits: options.limits)
        }
        switch read {
        case .batch(let header, _):
          if offset > existing,
            lastIndexedOffset == 0 || offset - lastIndexedOffset >= Int64(options.indexIntervalBytes)
          {
            index.entries.append(
              IndexEntry(
                firstSequence: header.firstSequence, segment: first, offset: offset, maxTimestampBefore: maxTimestamp))
            lastIndexedOffset = offset
          }
          maxTimestamp = max(maxTimestamp, header.maxTimestamp)
          nextSequence = header.lastSequence + 1
          offset += header.totalLength
        case .end:
          break scan
        case .damaged(let damage) where isLast && damage.kind == .zeroFilled:
          // Space the writer preallocated and had not written: the end of the journal. The next
          // writer writes over it.
          break scan
        case .damaged(let damage):
          // Looked for after the damaged batch's frame when its header's checksum holds (its
          // frame's bytes are its content: `SegmentFile.scanStart(after:)`), as readers look.
          let followed = try wrap(file.name) { () throws in
            try file.hasValidBatchHeader(after: damage)
          }
          // A header whose checksum holds is whole, even if it is wrong or too large for these
          // limits: committed, not torn, so never moved aside.
          if !isLast || followed || !damage.kind.canBeTorn {
            throw directory.error(damage, in: file, expecting: nextSequence)
          }
          // Only the torn bytes move aside, not the preallocated zeros after them.
          let (moved, length) = try wrap(file.name) { () throws in
            try quarantine.moveTail(of: file.name, from: damage.offset, upTo: try file.tornEnd(of: damage))
          }
          fileSize = damage.offset
          lastDeclaredMoved = damage.header?.lastSequence ?? 0
          if let moved {
            report.movedAside.append(
              QuarantinedBytes(
                segment: file.name, offset: damage.offset, length: length, movedTo: moved,
                reason: "torn tail: " + damage.kind.description, sequences: damage.header?.sequences))
          }
          index.removeEntries(from: first, offset: damage.offset)
          lastIndexedOffset = index.entries.last(where: { $0.segment == first })?.offset ?? 0
          break scan
        }
      }
      if isLast { break }
      segmentPosition += 1
      offset = Int64(Layout.segmentHeaderSize)
    }

    // Entries are written only for committed batches: one of the last segment at or after where
    // it now ends names records that are gone (zeros or a damaged frame where they were, or the
    // file ends before them: those entries are not in `loaded`, which keeps only entries inside
    // the segments). They cannot be brought back; say so rather than number new records over them
    // in silence.
    if let named = SparseIndex.lastEntry(
      directory: path, journalID: directory.journalID, segment: last, atOrAfter: offset, io: io)
    {
      let through = max(
        nextSequence, named.firstSequence, lostWithSegment?.sequences.upperBound ?? 0, lastDeclaredMoved)
      report.missingRecords = MissingRecords(
        segment: Layout.segmentName(firstSequence: last), offset: offset, sequences: nextSequence...through,
        indexedOffset: named.offset)
    } else if var lost = lostWithSegment {
      lost.sequences = nextSequence...max(nextSequence, lost.sequences.upperBound)
      report.missingRecords = lost
    }

    // The index file is rewritten unless it was whole and already said all of this. A whole one
    // holds its header at least: an empty file (a crash or a full disk between the writer's
    // truncation and its header) is damaged, not an index of no entry the writer could append to.
    let damaged =
      indexFileSize != validBytes || validBytes < SparseIndex.headerSize || kept.count < loaded.entries.count
    let indexIsCurrent = !damaged && index.entries == kept
    if !indexIsCurrent {
      let common = zip(kept, index.entries).prefix(while: { $0 == $1 }).count
      report.indexEntriesRebuilt = index.entries.count - common
      report.indexRepairReason = indexFileSize == nil ? "missing" : damaged ? "damaged" : "stale"
    }
    if let (file, problem) = setAside {
      let moved = try wrap(file.name) { () throws in try quarantine.moveFile(file.name) }
      report.movedAside.append(
        QuarantinedBytes(
          segment: file.name, offset: 0, length: file.size, movedTo: moved, reason: problem, sequences: nil))
    }
    report.lastSequence = nextSequence - 1
    return WriterStart(
      segments: segments, endOffset: offset, nextSequence: nextSequence, maxTimestamp: maxTimestamp, index: index,
      lastIndexedOffset: lastIndexedOffset, report: report, indexIsCurrent: indexIsCurrent, fileSize: fileSize)
  }

  private func fileSize(_ name: String) -> Int64? {
    guard let fd = try? io.open(path + "/" + name, flags: O_RDONLY, mode: 0) else { return nil }
    defer { io.close(fd) }
    return try? io.size(fd, path: name)
  }

  /// Keeps the prefix of index entries that really point at a batch header with their sequence.
  private func deepChecked(_ index: SparseIndex) throws -> SparseIndex {
    var kept = SparseIndex()
    var files: [UInt64: SegmentFile] = [:]
    for entry in index.entries {
      let file: SegmentFile
      if let open = files[entry.segment] {
        file = open
      } else {
        file = try directory.open(segment: entry.segment)
        files = [entry.segment: file]
      }
      guard let bytes = try? file.bytes(at: entry.offset, count: Layout.batchHeaderSize),
        case .success(let header) = BatchHeader.decode(bytes, limits: options.limits),
        header.firstSequence == entry.firstSequence
      else { break }
      kept.entries.append(entry)
    }
    return kept
  }

  /// Creates an empty segment durably: header into a temporary file, fsync, rename, directory fsync.
  package func createSegment(firstSequence: UInt64) throws {
    let header = SegmentHeader(journalID: directory.journalID, firstSequence: firstSequence).encoded()
    let name = Layout.segmentName(firstSequence: firstSequence)
    try wrap(name) { () throws in
      try io.writeFileAtomically(header, to: path + "/" + name, directory: path)
    }
  }

  private func wrap<T>(_ file: String? = nil, _ body: () throws -> T) throws -> T {
    try JournalError.wrapping(directory: path, file: file, body)
  }
}
