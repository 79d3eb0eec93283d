/// Reads records in order from a starting point. Call `next()` until it returns nil; calling it
/// again later picks up records committed since. Not thread-safe: one cursor, one consumer.
public final class JournalCursor {
  enum Start {
    case sequence(UInt64)
    case time(Int64)
  }

  private let reader: JournalReader
  /// These two are read for every batch; accessed only by the cursor's one consumer (no dynamic
  /// exclusivity checks).
  @exclusivity(unchecked) private var layout: JournalDirectory
  @exclusivity(unchecked) private var file: SegmentFile?
  /// Whether the journal had a segment when the cursor was made: a cursor made between a new
  /// journal's manifest and its first segment never looks for one (its follower makes a new one).
  var hasSegment: Bool { file != nil }
  private var offset: Int64 = 0
  /// The last batch read (or skipped over by its header): the one whose records `next()` returns
  /// now, or returned last. A reader checks by it later that the journal still holds what it read
  /// (`JournalReader.holds(_:)`).
  /// Set for every batch; accessed only by the cursor's one consumer (no dynamic exclusivity
  /// checks).
  @exclusivity(unchecked) package private(set) var lastBatch: BatchPlace?
  /// Reads from disk so far, in every segment file the cursor has had open: when it changed
  /// across `next()`, the record returned was read after the ones before it, and the journal may
  /// have been cut and written again in between (`JournalFollower` checks then).
  package var reads: Int { readsBefore + (file?.reads ?? 0) }
  /// Whether the last `next()` that returned nil stopped at bytes that are neither a batch nor
  /// preallocated zeros, nor the clean end of the file, and took them for a frame still being
  /// written: for a reader that read past this place before, they can also be another history's
  /// frame written over a cut (or the file can end before it), which `JournalFollower` checks.
  /// Set for every batch `next()` loads; accessed only by the cursor's one consumer (no dynamic
  /// exclusivity checks, which cost replay about 50 instructions a record of one-record frames).
  @exclusivity(unchecked) package private(set) var stoppedAtUnfinishedBytes = false
  /// Whether the segment file the cursor reads (if any) is still the journal's file of its name:
  /// a cursor at the end of a segment that `repair` moved aside would otherwise wait at the end
  /// of that file for ever, and `JournalFollower` checks it when a poll finds nothing new.
  package var readsAFileStillInPlace: Bool { file?.isStillInItsPlace ?? true }
  @exclusivity(unchecked) private var readsBefore = 0
  /// The first sequence number of the next batch.
  private var expected: UInt64 = 1
  /// Records before the start are skipped; nil once the start is reached.
  private var start: Start?
  /// Whether the current position came from the index (and may be stale).
  private var positionedByIndex = false
  /// The first damaged batch stepped over on the way to the start (`steppedOver`), located, and
  /// its first sequence number: thrown instead of any damage met before the start is reached, so
  /// that an error still names the first damage and the records before it as the ones read
  /// intact. Nil once the start is reached.
  /// Behind a reference: `trimToStart` clears it for every batch, and clearing an optional that
  /// holds a `JournalError` inline cost about 125 instructions a record in replay (callgrind).
  private var steppedDamage: SteppedDamage?
  /// The furthest batch the index named when the cursor was made (`SparseIndex.lastNamed`): the
  /// cursor must not end before it.
  private let lastNamed: IndexEntry?
  /// With `readingAroundMissingSegments`, the segments the index named and the directory lacked
  /// when the cursor was made: reported where the read reaches each one, not as it is made.
  private var missingSegments: [(segment: UInt64, lastNamed: UInt64)] = []
  /// The current batch's records not yet returned, last first: `next()` takes them from the end,
  /// so a record is moved out without leaving an empty one in its place to be destroyed later.
  /// Accessed only by the cursor's one consumer (no dynamic exclusivity checks).
  @exclusivity(unchecked) private var buffer: [JournalRecord] = []
  /// Frames reach the decoder only after their CRC-32C (batch header) matched, so LZ4's own
  /// xxHash32 checksums of the same frame are not computed again (`JournalReader.verify()` does).
  private let decoder = LZ4FrameDecoder(verifyChecksums: false)

  /// - Parameter reportingLoss: whether to refuse a journal whose index names records the disk no
  ///   longer holds (`SparseIndex.missingSegments`, `lastNamed`); false only for a caller that has
  ///   verified the journal and reads its intact part knowingly.
  /// - Parameter readingAroundMissingSegments: with `reportingLoss`, a segment the index names and
  ///   the directory lacks is reported (`.sequenceBreak`, naming it) only where the read reaches
  ///   it, not as the cursor is made: a reader that reads past damage (`rewind log`) reads the
  ///   segments before it, and a cursor made after it, the ones after.
  init(reader: JournalReader, start: Start, reportingLoss: Bool = true, readingAroundMissingSegments: Bool = false)
    throws
  {
    self.reader = reader
    self.layout = try JournalDirectory(path: reader.directory, io: reader.io)
    self.start = start
    let index = reader.index(for: layout)
    lastNamed = reportingLoss ? index.lastNamed : nil
    if reportingLoss, !index.missingSegments.isEmpty {
      if readingAroundMissingSegments {
        try layout.refresh()
        missingSegments = index.missingSegments.filter { !layout.segments.contains($0.segment) }
      } else {
        try Self.refuseMissingSegment(index, layout: &layout, reader: reader)
      }
    }
    var entry: IndexEntry? =
      switch start {
      case .sequence(let sequence): index.entry(atOrBefore: sequence)
      case .time(let timestamp): index.entry(before: timestamp)
      }
    // An entry in an earlier segment than the one that holds the start is no help (the index
    // may stop short, at a gap or where it went stale): start from that segment instead. The
    // file listed last at or before the start is that segment unless it is a stray file, which
    // is looked at only when the entry is in another segment.
    var holdingSegment: UInt64? =
      if case .sequence(let sequence) = start { layout.segments.last(where: { $0 <= sequence }) } else { nil }
    if case .sequence(let sequence) = start, let listed = holdingSegment, entry?.segment != listed {
      holdingSegment = try segment(holding: sequence)
    }
    if !missingSegments.isEmpty, case .sequence(let sequence) = start, let holdingSegment,
      (entry?.segment ?? 0) < holdingSegment
    {
      // The index as loaded stops at the first segment it names that is missing. Read around it,
      // its well-formed entries after it place the start as well: each is checked where it is
      // used, as any entry is (a header that does not match it: read from the segment's start).
      entry =
        SparseIndex.wellFormedEntries(directory: reader.directory, journalID: layout.journalID, io: reader.io).last {
          $0.firstSequence <= sequence && $0.segment == holdingSegment
        } ?? entry
    }
    if let entry, layout.segments.contains(entry.segment), entry.segment >= (holdingSegment ?? 0) {
      try position(segment: entry.segment, offset: entry.offset, expected: entry.firstSequence)
      positionedByIndex = true
    } else {
      try positionAtSegmentStart(for: start, holding: holdingSegment)
    }
  }

  /// Throws `.sequenceBreak` naming the first segment that index entries name and the directory
  /// does not hold: committed records are gone (FORMAT.md, "The sparse index"). The directory is
  /// listed again first: it was listed before the index was read, and a writer creates a segment
  /// (durably) before any entry names it.
  private static func refuseMissingSegment(
    _ index: SparseIndex, layout: inout JournalDirectory, reader: JournalReader
  ) throws {
    try layout.refresh()
    guard let missing = index.missingSegments.first(where: { !layout.segments.contains($0.segment) }) else { return }
    throw missingSegmentError(missing, layout: layout, reader: reader)
  }

  /// The `.sequenceBreak` for a segment the index names (through sequence `lastNamed` at least)
  /// that the directory as `layout` lists it lacks.
  private static func missingSegmentError(
    _ missing: (segment: UInt64, lastNamed: UInt64), layout: JournalDirectory, reader: JournalReader
  ) -> JournalError {
    let next = layout.segment(after: missing.segment)
    let through = max(missing.lastNamed, next.map { $0 - 1 } ?? 0)
    let name = Layout.segmentName(firstSequence: missing.segment)
    var error = JournalError(
      .sequenceBreak,
      "segment \(name) is missing, but the index names it: committed records "
        + (next == nil ? "from sequence \(missing.segment) on" : "\(missing.segment)-\(through)") + " are gone"
        + Quarantine.whereMissing(segment: name, directory: reader.directory, io: reader.io),
      directory: reader.directory, file: name, offset: 0, sequences: missing.segment...through)
    // The last segment: gone through its last batch the index names, at least. An earlier one:
    // exactly the records before the next, which is intact.
    error.sequencesMayGoFurther = next == nil
    error.missingBeforeIntactSegments = next != nil
    return error
  }

  /// With `readingAroundMissingSegments`: the error for a missing segment the index named that
  /// starts at `first`, the read having reached it; nil when the index named none there.
  private func missingSegment(startingAt first: UInt64) -> JournalError? {
    guard let missing = missingSegments.first(where: { $0.segment == first }) else { return nil }
    return Self.missingSegmentError(missing, layout: layout, reader: reader)
  }

  /// At the end of what is on disk (the cursor at `offset` of `file`, or no segment at all):
  /// throws `.sequenceBreak` if the index named a batch there or beyond when the cursor was made.
  /// That batch was committed before the entry was written, and so before this read, which would
  /// have found it: its records are gone (zeros or an unfinished frame stand where they were, or
  /// the file or segment ends before them). Compaction rewrites only sealed segments, never the
  /// last one, where a cursor ends, so a stale entry is no false alarm here.
  private func endOfJournal() throws -> Bool {
    guard let lastNamed else { return false }
    let segment = file?.firstSequence ?? 0
    // Read around missing segments: the first one past what was read is where the journal ends.
    if let missing = missingSegments.first(where: { $0.segment > segment }) {
      throw Self.missingSegmentError(missing, layout: layout, reader: reader)
    }
    guard lastNamed.segment > segment || (lastNamed.segment == segment && lastNamed.offset >= offset) else {
      return false
    }
    let name = Layout.segmentName(firstSequence: lastNamed.segment)
    let place =
      lastNamed.segment == segment
      ? "at byte offset \(lastNamed.offset) of this segment" : "in segment \(name), after this one"
    var error = JournalError(
      .sequenceBreak,
      "the journal reads as ending here, but the index names a batch starting at sequence "
        + "\(lastNamed.firstSequence) \(place): committed records are gone",
      directory: reader.directory, file: file?.name ?? name, offset: file == nil ? 0 : offset,
      sequences: expected...max(expected, lastNamed.firstSequence))
    error.sequencesMayGoFurther = true
    throw error
  }

  private func position(segment: UInt64, offset: Int64, expected: UInt64) throws {
    readsBefore += file?.reads ?? 0
    do {
      file = try layout.openChecked(segment: segment)
    } catch let error as JournalError where error.code == .corrupt {
      // A stray file only when no segment follows it: one that does stands after records gone.
      // A look that fails leaves the damage as it was found.
      guard let stray = try? strayProblem(segment),
        layout.segments.allSatisfy({ $0 <= segment || (try? strayProblem($0)) != nil })
      else { throw error }
      throw strayError(stray)
    }
    self.offset = offset
    self.expected = expected
  }

  /// Without the index: the start of the segment that holds the start (or of the journal).
  /// `holding`: that segment, when the caller has chosen it already (`segment(holding:)`).
  private func positionAtSegmentStart(for start: Start, holding: UInt64? = nil) throws {
    positionedByIndex = false
    let segment: UInt64?
    switch start {
    case .sequence(let sequence): segment = try holding ?? self.segment(holding: sequence) ?? firstSegment()
    case .time: segment = try firstSegment()
    }
    guard let segment else {
      readsBefore += file?.reads ?? 0
      file = nil
      return
    }
    let wanted: UInt64 = if case .sequence(let sequence) = start { sequence } else { 1 }
    if segment > wanted {
      // The segment that would hold the start is missing: the journal starts at 1.
      if let missing = missingSegment(startingAt: 1) { throw missing }
      let name = Layout.segmentName(firstSequence: segment)
      throw JournalError.segmentBreak(
        "the first segment starts at sequence \(segment); earlier segments are missing", expected: 1, next: segment,
        directory: reader.directory, file: name, offset: 0)
    }
    try position(segment: segment, offset: Int64(Layout.segmentHeaderSize), expected: segment)
  }

  /// The next record, or nil when the journal (as written so far) has no more.
  /// - Throws: `JournalError` locating damage, or `.io`.
  public func next() throws -> JournalRecord? {
    while buffer.isEmpty {
      stoppedAtUnfinishedBytes = false
      do {
        guard try loadBatch() else { return nil }
      } catch let error as JournalError where error.isDamage {
        // Short of the start past a damaged batch stepped over: that damage, as before the step.
        guard let stepped = steppedDamage else { throw error }
        expected = stepped.first
        throw stepped.error
      }
    }
    // Moved out of the array (no copy, no retain and release of its payload), keeping its capacity.
    return buffer.removeLast()
  }

  /// Whether the record `next()` returned last was the last of its frame (an atomic batch, or
  /// after compaction several whole ones): the next one, if any, starts a frame.
  package var isAtBatchEnd: Bool { buffer.isEmpty }

  /// The sequence number the cursor reads next: every one before it was read (or skipped over
  /// by its batch header); after an error locating damage, the first one the damage took.
  package var expectedSequence: UInt64 { expected }

  /// Moves a cursor that has returned nothing yet to right after the batch at byte `offset` of
  /// the segment named `file`, when the header there still holds (its checksum) and numbers
  /// `sequences`: the read on past a frame that fails its checksum (`rewind log`), whose records
  /// its header names exactly. A cursor skipping to a start in the last segment checks each frame
  /// it passes (a whole header there may front a frame not written yet), so it would stop at that
  /// frame again. Returns whether it moved; it stays where it was otherwise.
  package func moveAfterBatch(at offset: Int64, in file: String, numbering sequences: ClosedRange<UInt64>) throws
    -> Bool
  {
    guard let (segmentFile, header) = try batchHeader(at: offset, in: file, expecting: sequences.lowerBound),
      header.sequences == sequences
    else { return false }
    move(to: segmentFile, offset: offset + header.totalLength, expected: sequences.upperBound + 1)
    return true
  }

  /// The segment named `file` and the header of the batch at byte `offset` in it, when the cursor
  /// has returned nothing yet and the header holds (its checksum; its frame is not read): for
  /// `moveAfterBatch` and `moveToBatch`. Nil otherwise.
  private func batchHeader(at offset: Int64, in file: String, expecting first: UInt64) throws -> (
    SegmentFile, BatchHeader
  )? {
    guard buffer.isEmpty, let segment = layout.segments.first(where: { Layout.segmentName(firstSequence: $0) == file })
    else { return nil }
    let segmentFile = try layout.openChecked(segment: segment)
    let read: BatchRead
    do {
      read = try segmentFile.batch(at: offset, expecting: first, checkFrame: false, limits: reader.limits)
    } catch {
      throw JournalError(error, directory: reader.directory, file: file)
    }
    guard case .batch(let header, _) = read else { return nil }
    return (segmentFile, header)
  }

  /// Places the cursor at byte `offset` of `segmentFile`, to read `expected` next, as no index
  /// entry placed it.
  private func move(to segmentFile: SegmentFile, offset: Int64, expected: UInt64) {
    readsBefore += self.file?.reads ?? 0
    self.file = segmentFile
    self.offset = offset
    self.expected = expected
    positionedByIndex = false
  }

  /// Moves a cursor that has returned nothing yet to the batch at byte `offset` of the segment
  /// named `file`, when the header there holds (its checksum) and its first record is `first`:
  /// the read on at a batch an index entry names past a damaged batch header (`rewind log`).
  /// Positioned so, not by the index, damage in that batch's frame is damage met there, not taken
  /// for a stale entry and read past from the segment's start (which would meet the damage before
  /// it again). Returns whether it moved; it stays where it was otherwise.
  package func moveToBatch(at offset: Int64, in file: String, startingAt first: UInt64) throws -> Bool {
    guard let (segmentFile, header) = try batchHeader(at: offset, in: file, expecting: first),
      header.firstSequence == first
    else { return false }
    move(to: segmentFile, offset: offset, expected: first)
    return true
  }

  /// Reads records on until the end; the last sequence number seen (or skipped over).
  func lastSequenceReached() throws -> UInt64 {
    while try next() != nil {}
    return expected - 1
  }

  private func skips(_ header: BatchHeader) -> Bool {
    switch start {
    case .sequence(let sequence): header.lastSequence < sequence
    case .time(let timestamp): header.maxTimestamp < timestamp
    case nil: false
    }
  }

  /// Loads the next batch into `buffer`. Returns false at the end of what is written.
  private func loadBatch() throws -> Bool {
    var refreshed = false
    var rereads = 0
    while let file {
      let read: BatchRead
      do {
        // While skipping to the start, frames of sealed segments are passed over by their headers
        // alone. Not in the last segment: there a whole header may front a frame not written yet
        // (preallocated space is long enough to hold it), which only its checksum tells.
        if start == nil {
          read = try file.batch(at: offset, expecting: expected, checkFrame: true, limits: reader.limits)
        } else {
          let checked = layout.segments.last == file.firstSequence
          let peek = try file.batch(at: offset, expecting: expected, checkFrame: checked, limits: reader.limits)
          if case .batch(let header, _) = peek, checked || skips(header) {
            read = peek  // checked: the frame's read already
          } else {
            read = try file.batch(at: offset, expecting: expected, checkFrame: true, limits: reader.limits)
          }
        }
      } catch {
        throw JournalError(error, directory: reader.directory, file: file.name)
      }
      switch read {
      case .batch(let header, let frame):
        positionedByIndex = false
        lastBatch = BatchPlace(segment: file.firstSequence, offset: offset, header: header)
        offset += header.totalLength
        expected = header.lastSequence + 1
        if skips(header) { continue }
        do {
          // Into the array the previous batch left empty (`next()` empties it, keeping its capacity):
          // no allocation per batch. Then last first, for `next()`.
          if !buffer.isEmpty { buffer.removeAll(keepingCapacity: true) }
          try BatchCodec.decode(frame, header: header, decoder: decoder, limits: reader.limits, appendingTo: &buffer)
          if buffer.count > 1 { buffer.reverse() }
        } catch {
          buffer.removeAll(keepingCapacity: true)  // no records of a batch that does not decode
          offset -= header.totalLength
          expected = header.firstSequence
          throw (error as? BatchDecodingFailure ?? BatchDecodingFailure(reason: "\(error)")).error(
            directory: reader.directory, file: file.name, offset: offset, sequences: header.sequences)
        }
        trimToStart()
        if buffer.isEmpty { continue }
        return true
      case .end:
        if positionedByIndex, let start {
          // An entry points at a batch header, never at the end: the segment was rewritten
          // (compacted) since the index was read.
          reader.dropCachedIndex()
          try positionAtSegmentStart(for: start)
          continue
        }
        if try advanceSegment() { continue }
        if !refreshed {
          refreshed = true
          try refreshSize(file)
          continue
        }
        return try endOfJournal()
      case .damaged(let damage):
        if positionedByIndex, let start {
          // A stale index entry: find the place again without the index.
          reader.dropCachedIndex()
          try positionAtSegmentStart(for: start)
          continue
        }
        if !refreshed {
          refreshed = true
          try refreshSize(file)
          continue
        }
        switch try judge(damage, in: file) {
        case .unfinishedTail:
          stoppedAtUnfinishedBytes = damage.kind != .zeroFilled
          // Not the end of the journal when a later segment appeared meanwhile: read on later.
          guard layout.segment(after: file.firstSequence) == nil else { return false }
          // Files named past the last record are stray files (no segment follows this one):
          // named where the journal ends, as a read that ends at the end of a file names them
          // (`advanceSegment`). Those named inside this segment's range say nothing.
          if let later = layout.segments.first(where: { $0 >= expected }), let stray = try strayProblem(later) {
            throw strayError(stray)
          }
          return try endOfJournal()
        case .changed where rereads < Self.maximumRereads:
          rereads += 1
          continue
        case .damage:
          if let header = steppedOver(damage) {
            if steppedDamage == nil {
              steppedDamage = SteppedDamage(error: layout.error(damage, in: file, expecting: expected), first: expected)
            }
            offset += header.totalLength
            expected = header.lastSequence + 1
            continue
          }
          throw layout.error(damage, in: file, expecting: expected)
        case .changed:
          throw layout.error(damage, in: file, expecting: expected)
        }
      }
    }
    return try endOfJournal()
  }

  /// The header of a damaged batch that a cursor still skipping to its start steps over, judged
  /// damage in committed data (a valid batch header follows it: `judge`): only a frame that fails
  /// its checksum under a header whose checksum holds, continues the sequence (`SegmentFile.batch`
  /// checked it) and numbers only records before the start. Its frame length is then whole, and a
  /// writer wrote the next batch at the end of its extent (`SegmentFile.scanStart(after:)`), where
  /// the cursor goes on, reading that batch's header as any other (its checksum, the next sequence
  /// number): no header is looked for, as `moveAfterBatch` reads on for `rewind log`. Without it,
  /// a start just after such a frame in the last segment (a snapshot's, past the last index entry
  /// before it) could not be reached, though sealed segments' frames are passed by their headers.
  /// Nil for a cursor looking for the end (`records(from: .max)`): its callers take every frame
  /// of the last segment it passes as checked (`readableEnd()`, `intactEnd()`: such damage hides
  /// the end).
  private func steppedOver(_ damage: BatchDamage) -> BatchHeader? {
    guard damage.kind == .frameChecksumMismatch, let header = damage.header, header.firstSequence == expected,
      skips(header)
    else { return nil }
    if case .sequence(let sequence) = start, sequence == .max { return nil }
    return header
  }

  /// Drops records before the start from the first batch that reaches it: those before the first
  /// that reaches it (at the end of `buffer`, which holds them last first).
  private func trimToStart() {
    let first: Int? =
      switch start {
      case .sequence(let sequence): buffer.lastIndex(where: { $0.sequence >= sequence })
      case .time(let timestamp): buffer.lastIndex(where: { $0.timestamp >= timestamp })
      case nil: nil
      }
    if let first { buffer.removeSubrange((first + 1)...) }
    start = nil
    if steppedDamage != nil { steppedDamage = nil }
  }

  /// At the end of a segment: moves to the next one if it exists (its name is the next sequence
  /// number). Returns true to read on (also when the current segment turned out to have grown).
  private func advanceSegment() throws -> Bool {
    let name = Layout.segmentName(firstSequence: expected)
    guard let file, file.firstSequence != expected else { return false }
    guard reader.io.fileExists(reader.directory + "/" + name) else {
      // No segment continues this one; if a later one exists, segments in between are missing.
      try layout.refresh()
      if let later = layout.segments.first(where: { $0 > expected }) {
        // The writer completes a segment before it creates the next, so look at this one's
        // size again (after listing): if it grew, read on in it.
        try refreshSize(file)
        if offset < file.size { return true }
        if let missing = missingSegment(startingAt: expected) { throw missing }
        // A stray file's name says nothing of the records before it: the gap, if any, runs up to
        // the next file that is a segment.
        var next = later
        var strays: [JournalProblem] = []
        while let stray = try strayProblem(next) {
          strays.append(stray)
          guard let after = layout.segments.first(where: { $0 > next }) else { throw strayError(strays[0]) }
          next = after
        }
        throw JournalError.segmentBreak(
          "segment starts at sequence \(next), but the previous one ends at \(expected - 1)"
            + (strays.isEmpty
              ? "" : " (\(strays.map(\.file).joined(separator: ", ")) between them holds no committed record)"),
          expected: expected, next: next, directory: reader.directory, file: Layout.segmentName(firstSequence: next),
          offset: 0)
      }
      return false
    }
    // Listed again only when the listing held lacks it (a writer made it since): not at every
    // segment reached, which made a read of N segments list the directory N times, each listing
    // N names long. The listing may then lack segments made since; where a read relies on
    // knowing the last segment (`judge`), it lists the directory itself.
    if !layout.lists(expected) { try layout.refresh() }
    try position(segment: expected, offset: Int64(Layout.segmentHeaderSize), expected: expected)
    return true
  }

  /// The segment that holds record `sequence`, if any does, as the directory lists them: the last
  /// one at or before it, passing over stray files (`JournalDirectory.isStrayFile`, the test
  /// `verify` makes), whose names say nothing of the records they hold. A file's name is all a
  /// listing says of the records in it; each file looked at costs a read of its header. Read on
  /// from the segment chosen, `next()` reaches each later segment by its name, so one chosen
  /// earlier than it might be leaves out no record, and a segment really missing after it is
  /// still met where the read reaches its name.
  private func segment(holding sequence: UInt64) throws -> UInt64? {
    for candidate in layout.segments.reversed() where candidate <= sequence {
      if try !layout.isStrayFile(candidate) { return candidate }
    }
    return nil
  }

  /// The first segment the directory lists, passing over stray files.
  private func firstSegment() throws -> UInt64? {
    for candidate in layout.segments where try !layout.isStrayFile(candidate) { return candidate }
    return nil
  }

  /// The problem of the file named like segment `first` when it is a stray file
  /// (`JournalReader.strayFile`, the test `verify` makes): nothing shows that it held a committed
  /// record. Nil when it is a segment, damaged or not.
  private func strayProblem(_ first: UInt64) throws -> JournalProblem? {
    let index = reader.index(for: layout)
    let named = index.entries.contains { $0.segment == first } || (index.lastNamed?.segment ?? 0) >= first
    return try JournalReader.strayFile(first, in: layout, namedByIndex: named)
  }

  /// The error for a stray file with no segment after it: it damages nothing committed, and its
  /// name says nothing about records missing before it.
  private func strayError(_ stray: JournalProblem) -> JournalError {
    JournalError(stray: stray, directory: reader.directory)
  }

  private func refreshSize(_ file: SegmentFile) throws {
    do { try file.refreshSize() } catch { throw JournalError(error, directory: reader.directory, file: file.name) }
  }

  /// What damage found in the current segment is.
  private enum Judgement {
    /// A frame still being written, a torn tail the next writer moves aside, or preallocated
    /// zeros: the end, for a reader, for now.
    case unfinishedTail
    /// The bytes judged changed since: a writer was storing them; read them again.
    case changed
    /// Committed data is damaged.
    case damage
  }

  /// How often one batch is read again because it changed while it was judged (`.changed`): a
  /// writer stores a frame once, so more means bytes that keep changing, reported as damage.
  private static let maximumRereads = 16

  /// Damage that ends the last segment with nothing valid after it is a frame still being
  /// written (or a torn tail the next writer will move aside): the end, for a reader, for now.
  /// So are zeros to the end of the last segment: space the writer preallocated and has not
  /// written yet (FORMAT.md, "Writing"); a frame being written over them reads as damage
  /// followed by zeros until it is complete.
  /// A header or frame whose checksums hold is never that (a frame written with larger limits
  /// than this reader's included): it is an error. Neither is damage with a valid header after
  /// it (after its frame, when its own header's checksum holds: `SegmentFile.scanStart(after:)`),
  /// unless the damaged batch reads differently when read again (`.changed`).
  private func judge(_ damage: BatchDamage, in file: SegmentFile) throws -> Judgement {
    if !damage.kind.canBeTorn { return .damage }
    try layout.refresh()
    guard layout.segment(after: file.firstSequence) == nil else {
      // A later segment exists, so this one was complete before it was created. If its size
      // changed since it was judged (it grew, or its preallocated zeros were cut when it was
      // sealed), or it now reads differently, the writer finished the frame and rolled over
      // meanwhile: not damage; the next read looks again from here.
      let judged = file.size
      try refreshSize(file)
      if file.size != judged { return .unfinishedTail }
      // Its size need not change: frames that fill its preallocated space exactly leave nothing
      // to cut. Sealed before the next segment appeared, it now reads as it stays: read again.
      do {
        if case .damaged = try file.batch(
          at: damage.offset, expecting: expected, checkFrame: true, limits: reader.limits)
        {
          return .damage
        }
      } catch {
        throw JournalError(error, directory: reader.directory, file: file.name)
      }
      return .unfinishedTail
    }
    if damage.kind == .zeroFilled { return .unfinishedTail }
    do {
      // Looked for after the damaged batch's frame when its header's checksum holds: a header
      // inside that frame is its content, not a later write (`SegmentFile.scanStart(after:)`).
      guard try file.hasValidBatchHeader(after: damage) else { return .unfinishedTail }
      // That header need not have been there when the damage was read: a writer storing through
      // its mapping (FORMAT.md, "Writing") writes inside the file's size, so a read can catch a
      // frame half stored and the scan after it find the next frame, stored since. The writer
      // finished the one before it began the next: read it again. Only if it still reads as it
      // did is it damage.
      let again = try file.batch(at: damage.offset, expecting: expected, checkFrame: true, limits: reader.limits)
      if case .damaged(let now) = again, now == damage { return .damage }
      return .changed
    } catch {
      throw JournalError(error, directory: reader.directory, file: file.name)
    }
  }
}

/// The first damaged batch a cursor stepped over on its way to its start (`JournalCursor.steppedDamage`).
private final class SteppedDamage {
  let error: JournalError
  let first: UInt64
  init(error: JournalError, first: UInt64) {
    self.error = error
    self.first = first
  }
}
