/// One place where a journal is damaged.
public struct JournalProblem: Sendable, Equatable, CustomStringConvertible {
  /// The segment file (or other file) concerned, relative to the journal directory.
  public var file: String
  /// Byte offset in `file` where the damage starts.
  public var offset: Int64
  /// The sequence numbers affected, as far as they can be known.
  public var sequences: ClosedRange<UInt64>?
  /// What is wrong.
  public var message: String
  /// `sequences` ends at the last record known gone (the first of the last batch the index
  /// names there, or the last a damaged batch's intact header declares, if later): later records
  /// may be gone too, and nothing is left to count them by.
  public var sequencesMayGoFurther = false
  /// The records `sequences` names are gone while later segments are intact (a segment missing
  /// before others, or one cut short or ending in zeros before its successor). Only a backup
  /// brings them back:
  /// `Journal.repair` refuses a journal whose first problem is this, moving nothing.
  public var missingBeforeIntactSegments = false
  /// The file is named like a segment but is none of the journal's: the index names it nowhere,
  /// and either its segment header is not valid and no valid batch header follows in it (it holds
  /// nothing committed), or its header names another segment the directory holds, whole (a copy
  /// under another name). Its name is no evidence of records before it or of a break in the
  /// sequence, and `Journal.repair` moves it aside alone.
  package var strayFile = false
  /// Zeros ending a segment that is not the last, whose successor starts right after its last
  /// record: they hold no record, and readers stop at them (repair cuts them, keeping every
  /// segment).
  package var zerosOnly = false
  /// Bytes that are no batch (no header there holds, or one that holds numbers its records from
  /// the successor's first but its frame is cut off; no valid one follows) ending a segment that
  /// is not the last, whose successor starts right after its last record: they hold no record of
  /// their own, since every number up to the successor's first was read before them. Readers stop at
  /// them and read on at the successor; `Journal.repair` moves them aside, keeping every segment.
  package var holdsNoRecord = false
  /// A segment header damaged in a few bits over batches that hold, on the evidence
  /// `JournalReader.headerCanBeRebuilt` asks for (the manifest's id but for a few bits, the first
  /// batch numbering the name's record, the index naming the segment, no segment of another
  /// journal): every field of the header follows from the manifest and the name
  /// (`SegmentHeader.rebuilt`), so `Journal.repair` writes it again, keeping the damaged bytes in
  /// `quarantine/`, instead of moving the segment and every later one aside.
  package var headerRebuildable = false

  public var description: String {
    var text = "\(file) at byte offset \(offset)"
    if let sequences { text += ", " + JournalError.describe(sequences, mayGoFurther: sequencesMayGoFurther) }
    return text + ": " + message
  }
}

/// What a full check of a journal found.
public struct VerificationReport: Sendable, Equatable {
  /// Damage to committed data, each located. Empty when the journal is sound.
  public var problems: [JournalProblem] = []
  /// An incomplete last frame: a write in progress, or a crash's torn tail that the next writer
  /// will move aside. Not a problem of committed data.
  public var unfinishedTail: JournalProblem?
  /// Zeros at the end of the last segment, after its last frame: space a live writer
  /// preallocated (or one that crashed left), read as the end of the journal. Not a problem.
  public var preallocatedBytes: Int64 = 0
  /// Notes about derived data (the index) that the next writer rebuilds by itself: a missing,
  /// damaged or empty index. Not problems.
  public var notes: [String] = []
  /// Segments with records that an index with entries names nowhere (see `UnindexedRecords`),
  /// in order. Derived data the next writer rebuilds: not problems. On a live journal, the
  /// newest segment can be listed while its writer is between a batch and its entry.
  public var unindexed: [UnindexedRecords] = []
  /// When every segment names one journal id and the manifest another (each segment is then
  /// reported as belonging to another journal): that id. The manifest alone is likelier wrong;
  /// `Journal.repair` refuses such a journal (`badManifest`) and moves nothing. Put this id back
  /// in `manifest.json` if the segments are this journal's.
  public var segmentsJournalID: JournalID?
  public var segments = 0
  public var batches = 0
  public var records: UInt64 = 0
  /// The last sequence number of the intact prefix of the journal.
  public var lastSequence: UInt64 = 0
  /// The last sequence number of any batch read whole, after damage too: the journal's end as
  /// written, where the damage leaves batches after it (`lastSequence` when it is sound). A
  /// snapshot at or before it lies inside the journal, which replay can start from.
  public var lastSequenceRead: UInt64 = 0
  public var bytesOnDisk: Int64 = 0
  public var bytesDecoded: Int64 = 0

  public var isSound: Bool { problems.isEmpty }
}

extension JournalReader {
  /// Checks every byte of the journal: segment headers, batch header and frame checksums,
  /// LZ4 decoding with its own checksums, record framing, sequence continuity within and across
  /// segments. Keeps going after damage (resynchronising on the next valid batch header), so
  /// every damaged place is reported, not just the first. Reads only; safe while a writer appends.
  ///
  /// - Throws: `JournalError` `.limitExceeded` for a batch whose header checksum holds but which
  ///   declares more than the reader's `limits`, or a record of a whole frame larger than them: a
  ///   journal written with larger limits, to be read with them (`JournalLimits.largest` reads
  ///   any), not damage to report.
  public func verify(progress: ((UInt64) -> Void)? = nil) throws -> VerificationReport {
    try verify(progress: progress, rebuildingHeaders: false)
  }

  /// `verify`, and with `rebuildingHeaders` as a repair judges the journal: a segment header it
  /// can write again (`JournalProblem.headerRebuildable`) is still a problem, but the segment's
  /// records count as intact after it, as they will once the header is written.
  package func verify(progress: ((UInt64) -> Void)?, rebuildingHeaders: Bool) throws -> VerificationReport {
    let layout = try JournalDirectory(path: directory, io: io)
    var report = VerificationReport()
    let decoder = LZ4FrameDecoder()
    var expected: UInt64 = 1
    var intact = true
    // Loaded before the walk, so its entries name batches written before it began: in the last
    // segment, one where the walk finds zeros or an unfinished frame means committed records
    // turned to zeros (which read as preallocated space), not a write in progress.
    let index = loadIndex(layout)
    // Each entry is checked against the batch it names as the walk passes it, while it is intact.
    let indexFile = SparseIndex.scanForVerify(directory: directory, journalID: layout.journalID, io: io)
    // Files named like segments that are none are set aside first: their names say nothing.
    let segments = try Self.strayFiles(layout, namedByIndex: indexFile.namedSegments, into: &report)
    // Of the last segment, also entries past its end (a file cut short), which `index` leaves out.
    let lastSegment = segments.last ?? 0
    let named = SparseIndex.lastEntry(
      directory: directory, journalID: layout.journalID, segment: lastSegment, atOrAfter: 0, io: io)
    // `damaged`: the header, whose checksum holds, of a damaged batch at `offset`; its records are
    // gone too, and it counts them.
    func committedBeyond(_ offset: Int64, in file: SegmentFile, damaged: BatchHeader? = nil) -> JournalProblem? {
      // A later segment the index names (and the directory lacks: this one is the last there):
      // a writer makes it only once this one is sealed whole, so records this one lacks before
      // that segment's first were committed. A repair stopped after moving the later segments
      // aside leaves this. (Ending just before it, this one lacks none: the missing segment is
      // reported on its own.)
      if let later = index.missingSegments.first(where: { $0.segment > file.firstSequence }),
        case let through = max(later.segment - 1, damaged?.lastSequence ?? 0), through >= expected
      {
        return JournalProblem(
          file: file.name, offset: offset, sequences: expected...through,
          message:
            "the segment reads as ending here (zeros or an unfinished frame follow, or the file ends), but the index "
            + "names a later segment, \(Layout.segmentName(firstSequence: later.segment)), which a writer makes only "
            + "once this one is sealed whole: committed records are missing")
      }
      guard let entry = named, entry.segment == file.firstSequence, entry.offset >= offset else { return nil }
      let through = max(expected, entry.firstSequence, damaged?.lastSequence ?? 0)
      return JournalProblem(
        file: file.name, offset: offset, sequences: expected...through,
        message:
          "the segment reads as ending here (zeros or an unfinished frame follow, or the file ends), but the index names "
          + "a batch starting at sequence \(entry.firstSequence) at byte offset \(entry.offset): "
          + "committed records are missing", sequencesMayGoFurther: true)
    }
    // A segment header naming another journal: the manifest may be the damage, so no damaged
    // header is written again with its id (repair then moves or refuses, as before). Looked for
    // once, at the first damaged header: a sound journal's headers are not read twice.
    var foreign: Bool?
    func foreignSegments() -> Bool {
      if let foreign { return foreign }
      let found = segments.contains { segment in
        guard case .success(let header)? = try? layout.open(segment: segment).headerAlone() else { return false }
        return header.journalID != layout.journalID
      }
      foreign = found
      return found
    }
    var entryCheck = EntryCheck(entries: indexFile.entries)
    // Named by any entry whose checksum holds: one damaged entry is one note, not also a note for
    // each later segment that only entries after it name.
    let namedSegments = index.entries.isEmpty ? [] : indexFile.namedSegments
    if let first = segments.first, first != 1 {
      report.problems.append(
        JournalProblem(
          file: Layout.segmentName(firstSequence: first), offset: 0, sequences: 1...(first - 1),
          message: "segments before this one are missing: the journal's first records are gone",
          missingBeforeIntactSegments: true))
      intact = false
    }
    for (position, first) in segments.enumerated() {
      let isLast = position == segments.count - 1
      let file = try layout.open(segment: first)
      report.segments += 1
      report.bytesOnDisk += file.size
      if first != expected && !(position == 0 && first != 1) {
        report.problems.append(
          JournalProblem(
            file: file.name, offset: 0, sequences: JournalError.breakSequences(expected: expected, next: first),
            message: "segment starts at sequence \(first), but the previous one ends at \(expected - 1)",
            missingBeforeIntactSegments: first > expected))
        intact = false
      }
      expected = first
      let header = try file.header()
      if let problem = JournalDirectory.problem(with: header, expecting: first, journalID: layout.journalID) {
        // Not a stray file (see `strayFiles`): valid batches follow the header, or the index
        // names the segment. Its records were committed; they move with it if it is repaired,
        // unless the header can be written again. Its batches are walked all the same, as every
        // frame is past damage: counted (`rewind stats` figures every segment file), checked,
        // and followed by the next segment without a break in the sequence being reported for
        // the records they hold.
        let rebuildable =
          try !foreignSegments()
          && Self.headerCanBeRebuilt(
            header, of: file, first: first, journalID: layout.journalID,
            indexed: indexFile.entries.filter { $0.segment == first }, limits: limits)
        var found = JournalProblem(
          file: file.name, offset: 0, sequences: nil,
          message: problem
            + (rebuildable
              ? "; the batches after it hold (the first starts at sequence \(first), as the file's name says), and "
                + "the header follows from the manifest and the name: repair writes it again"
              : "; the segment holds committed records (valid batches follow, or the index names it)"))
        found.headerRebuildable = rebuildable
        report.problems.append(found)
        if !(rebuildable && rebuildingHeaders) { intact = false }
        // A file no longer than a segment header holds no batch to walk.
        if file.size <= Int64(Layout.segmentHeaderSize) { continue }
      }
      var offset = Int64(Layout.segmentHeaderSize)
      // The records of the segment's valid batches, for `unindexed`.
      var segmentRecords: ClosedRange<UInt64>?
      defer {
        if let segmentRecords, !index.entries.isEmpty, !namedSegments.contains(first) {
          report.unindexed.append(UnindexedRecords(segment: file.name, sequences: segmentRecords))
        }
      }
      // How often the batch at `offset` was read again because it changed while it was judged
      // (see below); back to 0 at each batch read whole.
      var rereads = 0
      walk: while true {
        var damage: BatchDamage?
        switch try file.batch(at: offset, expecting: expected, checkFrame: true, limits: limits) {
        case .end:
          if intact { entryCheck.passed(segment: first, offset: offset) }
          if isLast, let lost = committedBeyond(offset, in: file) {
            report.problems.append(lost)
            intact = false
          }
          break walk
        case .damaged(let found) where isLast && found.kind == .zeroFilled:
          report.preallocatedBytes = file.size - found.offset
          if let lost = committedBeyond(found.offset, in: file) {
            report.problems.append(lost)
            intact = false
          }
          break walk
        case .damaged(let found):
          damage = found
        case .batch(let header, let frame):
          rereads = 0
          do {
            _ = try BatchCodec.decode(frame, header: header, decoder: decoder, limits: limits)
            if intact { entryCheck.batch(header, segment: first, offset: offset, in: file.name) }
            report.batches += 1
            report.records += UInt64(header.recordCount)
            report.bytesDecoded += Int64(header.contentLength)
            if intact { report.lastSequence = header.lastSequence }
            report.lastSequenceRead = max(report.lastSequenceRead, header.lastSequence)
            // A valid batch starts where the one before it ended, so the first batch's start
            // and this one's end bound the segment's records.
            if header.lastSequence >= header.firstSequence {
              segmentRecords = (segmentRecords?.lowerBound ?? header.firstSequence)...header.lastSequence
            }
            expected = header.lastSequence + 1
            offset += header.totalLength
            progress?(header.lastSequence)
            continue walk
          } catch let failure as BatchDecodingFailure where failure.exceedsLimits {
            // A whole record too large for these limits, not damage (see `.exceedsLimits` below).
            throw failure.error(directory: directory, file: file.name, offset: offset, sequences: header.sequences)
          } catch {
            damage = BatchDamage(
              offset: offset, kind: .undecodable((error as? BatchDecodingFailure)?.reason ?? "\(error)"), header: header
            )
          }
        }
        guard let damage else { continue }
        if case .badHeader(.exceedsLimits) = damage.kind {
          // A whole batch too large for these limits, not damage: reported as a problem, `repair`
          // would move committed records aside. The caller must read with larger limits.
          throw layout.error(damage, in: file, expecting: expected)
        }
        // Where the walk goes on, and whether anything valid follows at all: from the end of the
        // damaged batch's frame when its header's checksum holds (its frame's bytes are its
        // content, not batches), as readers and opening look (`SegmentFile.scanStart(after:)`).
        // Whatever these limits, as they judge it: a batch too large for them is as committed as
        // any (the walk then fails there with `limitExceeded`, as it does without damage before).
        let resume = try file.nextValidBatchHeader(after: damage, limits: .largest)
        // As for readers (`JournalCursor.judge`): in the last segment, that header may have been
        // stored since the damage was read, by a writer storing through its mapping, which
        // finished the damaged frame first. Read it again: if it reads differently, walk on
        // from it (a few times at most: a writer stores a frame once).
        if isLast, resume != nil, damage.kind.canBeTorn, rereads < 16 {
          rereads += 1
          let again = try file.batch(at: damage.offset, expecting: expected, checkFrame: true, limits: limits)
          let same = if case .damaged(let now) = again { now == damage } else { false }
          if !same { continue walk }
        }
        let sequences = damage.sequences(expecting: expected)
        let problem = JournalProblem(
          file: file.name, offset: damage.offset, sequences: sequences ?? (expected...expected),
          message: damage.kind.description)
        if damage.kind == .zeroFilled {
          // Zeros to the end of a segment that has a successor: the writer cuts them before it
          // seals a segment, so they stand for the records up to the next segment's first, gone
          // while the segments after are intact (reported here once, not again as a break).
          let next = segments[position + 1]
          let gone = next > expected ? expected...(next - 1) : nil
          let what =
            gone == nil
            ? "; the next segment starts at sequence \(next), so no records are missing, but readers stop here"
            : ": they stand for the records before the next segment's first (\(next)), which are gone"
          var zeros = JournalProblem(
            file: file.name, offset: damage.offset, sequences: gone,
            message: "zeros from here to the end of a segment that is not the last (a writer cuts its "
              + "preallocated space before it seals a segment)" + what,
            missingBeforeIntactSegments: gone != nil)
          zeros.zerosOnly = gone == nil
          report.problems.append(zeros)
          intact = false
          expected = max(expected, next)
          break walk
        }
        if resume == nil, isLast {
          // Damage with nothing valid after it (cut short by the end of the file, followed by
          // preallocated zeros, or filling the file to its end): unfinished, not committed, as
          // readers and opening judge it, whatever its bytes are. Not a frame whose checksums
          // hold but whose sequence or content is wrong: no write in progress and no crash leaves
          // one (opening refuses the one, readers fail on the other).
          // Not the damaged frame's bytes: a frame may end in zeros (its checksum's).
          report.preallocatedBytes = file.size - (try file.tornEnd(of: damage))
          if damage.kind.canBeTorn {
            if let lost = committedBeyond(damage.offset, in: file, damaged: damage.header) {
              report.problems.append(lost)
              intact = false
            } else {
              report.unfinishedTail = problem
            }
            break walk
          }
        }
        // Also a batch whose header holds but whose frame is cut off, numbered from the record
        // expected (a segment restored from a copy taken while a writer was writing): every
        // number it names is the successor's.
        if resume == nil, !isLast, damage.header.map({ $0.firstSequence == expected }) ?? true,
          segments[position + 1] == expected
        {
          // Reported as holding no record, not as the record expected here (which the next
          // segment starts with): repair moved every segment from here on aside for it, the
          // intact ones too, and the next writer numbered new records over theirs.
          var tail = JournalProblem(
            file: file.name, offset: damage.offset, sequences: nil,
            message: damage.kind.description + ", from here to the end of a segment that is not the last; the next "
              + "segment starts at sequence \(expected), so no records are missing, but readers stop here")
          tail.holdsNoRecord = true
          report.problems.append(tail)
          intact = false
          break walk
        }
        // A segment that is not the last cut short inside a batch (its header or its frame runs
        // past the end of the file, nothing valid after it) before a successor that starts
        // later: the records from the one expected up to the successor's first are in no file,
        // as when a segment is cut at a batch's end (a break in the sequence, above). Only a
        // backup brings them back: repair moved every segment from here on aside for them, the
        // intact ones too, and the next writer numbered new records over theirs.
        if resume == nil, !isLast, damage.kind == .truncatedFrame || damage.kind == .truncatedHeader,
          damage.header.map({ $0.firstSequence == expected }) ?? true, segments[position + 1] > expected
        {
          let next = segments[position + 1]
          report.problems.append(
            JournalProblem(
              file: file.name, offset: damage.offset, sequences: expected...(next - 1),
              message: damage.kind.description + " in a segment that is not the last: the next segment starts at "
                + "sequence \(next), so the records from \(expected) on are gone",
              missingBeforeIntactSegments: true))
          intact = false
          expected = next
          break walk
        }
        report.problems.append(problem)
        intact = false
        guard let (next, header) = resume else {
          // The damaged batch's header, when it holds and follows on, says where its records end:
          // a next segment starting right after them is no break (this damage, reported once).
          if let damaged = damage.header, damaged.firstSequence == expected {
            expected = max(expected, damaged.lastSequence + 1)
          } else if !isLast, segments[position + 1] > expected {
            // A header that does not hold or breaks the sequence, nothing valid after it, in a
            // segment with a successor: a writer seals a segment whole before it makes the next,
            // so the damaged bytes hold the records up to the successor's first (this damage,
            // reported once, not again as a break; helper-217 and helper-219, Dec 7).
            report.problems[report.problems.count - 1].sequences = expected...(segments[position + 1] - 1)
            expected = segments[position + 1]
          }
          break walk
        }
        offset = next
        expected = header.firstSequence
      }
    }
    // Segments the index names and the directory lacks, last or in the middle (listed again: a
    // writer creates a segment before any entry names it, perhaps after the first listing).
    let present = index.missingSegments.isEmpty ? layout.segments : try JournalDirectory.listSegments(directory, io: io)
    let absent = index.missingSegments.map(\.segment).filter { !present.contains($0) }
    for missing in index.missingSegments where !present.contains(missing.segment) {
      // Before a later segment, present or missing too: exactly the records up to it. The last:
      // through the last batch the index names in it, at least.
      let next = present.first { $0 > missing.segment }
      let bound = [next, absent.first { $0 > missing.segment }].compactMap { $0 }.min()
      let through = max(missing.lastNamed, (bound ?? 1) - 1)
      let name = Layout.segmentName(firstSequence: missing.segment)
      let problem = JournalProblem(
        file: name, offset: 0, sequences: missing.segment...through,
        message: "this segment is missing, but the index names it: committed records are gone"
          + Quarantine.whereMissing(segment: name, directory: directory, io: io),
        sequencesMayGoFurther: bound == nil, missingBeforeIntactSegments: next != nil)
      // A gap before a segment that is there was reported by the walk already (the first
      // segments missing, or a break in the sequence), at the segment after it: this names the
      // missing file, in that report's place. One loss, one problem.
      let reported = report.problems.firstIndex {
        $0.missingBeforeIntactSegments && $0.sequences?.contains(missing.segment) == true
      }
      if next != nil, let reported, let sequences = report.problems[reported].sequences {
        if sequences.lowerBound == missing.segment {
          report.problems[reported] = problem
        } else {
          // A loss that starts before the missing segment (a segment cut short before it): its
          // own records, named where they were, then the missing file's.
          report.problems[reported].sequences = sequences.lowerBound...(missing.segment - 1)
          report.problems.insert(problem, at: reported + 1)
        }
      } else {
        report.problems.append(problem)
      }
    }
    report.segmentsJournalID = layout.journalIDOfEverySegmentButTheManifest()
    if !io.fileExists(directory + "/" + Layout.indexName) {
      report.notes.append("the index is missing; the next writer rebuilds it")
    } else if let damage = indexFile.damage {
      // Every entry is checked, not only those a reader needs: readers use the entries before
      // the damage and read on from there, so nothing else shows it.
      report.notes.append(
        "the index is damaged at byte offset \(damage.offset) (\(damage.reason)); readers use only the entries "
          + "before it, and the next writer rebuilds the rest")
    } else if index.entries.isEmpty && report.batches > 0 {
      report.notes.append("the index is damaged or empty; the next writer rebuilds it")
    }
    if let mismatch = entryCheck.first {
      report.notes.append(
        "the index's entry \(mismatch)"
          + (entryCheck.count > 1 ? " (\(entryCheck.count) entries disagree with the batches they name)" : "")
          + ". Readers check an entry's sequence number, not its timestamp column: a wrong one can make a read "
          + "by time (log --since) skip records. Delete the index file and the next writer rebuilds it")
    }
    if let pad = indexFile.nonZeroPads.first {
      report.notes.append(
        "the index entry at byte offset \(pad) has non-zero bytes 32-35, which are 0"
          + (indexFile.nonZeroPads.count > 1 ? " (so have \(indexFile.nonZeroPads.count - 1) more entries)" : "")
          + "; readers ignore them")
    }
    if indexFile.partialBytes > 0 {
      report.notes.append(
        "the index ends in \(indexFile.partialBytes) bytes of an unfinished entry (an append in progress, or one "
          + "a crash cut); readers ignore them, and the next writer cuts them")
    }
    return report
  }
}

extension JournalReader {
  /// Whether a segment header that fails its checks can be written again
  /// (`JournalProblem.headerRebuildable`), on this evidence:
  /// - its bytes are damaged: no segment header's magic, size and tag, or a checksum that does
  ///   not hold (one whose checksum holds says what was written, another journal's id, another
  ///   first sequence or a newer format, and is left as it is);
  /// - the journal id it holds is the manifest's but for at most `idBitsDamaged` bits (a header
  ///   overwritten whole, or another journal's segment under this name, is not this evidence);
  /// - the batch after it holds, its frame checked, numbering the first record the name says;
  /// - the index, whose header names the manifest's journal (`indexed`: its entries naming the
  ///   segment; none when it names another, which may be the manifest's damage), names the
  ///   segment, the file reaching each entry's place, and no batch header that holds there
  ///   numbers other records (the review of the day's change, Dec 7: another journal's segment
  ///   and a wrong manifest were both taken for this journal's).
  static func headerCanBeRebuilt(
    _ header: Result<SegmentHeader, SegmentHeader.Problem>, of file: SegmentFile, first: UInt64,
    journalID: JournalID, indexed: [IndexEntry], limits: JournalLimits
  ) throws -> Bool {
    switch header {
    case .failure(.checksumMismatch), .failure(.notASegment): break
    default: return false
    }
    guard file.size > Int64(Layout.segmentHeaderSize), !indexed.isEmpty else { return false }
    let stored = try file.bytes(at: 16, count: 16)
    let bitsOff = zip(stored, journalID.bytes).reduce(0) { $0 + ($1.0 ^ $1.1).nonzeroBitCount }
    guard bitsOff <= idBitsDamaged,
      case .batch(let batch, _) = try file.batch(
        at: Int64(Layout.segmentHeaderSize), expecting: first, checkFrame: true, limits: limits),
      batch.firstSequence == first
    else { return false }
    // No entry contradicted: the file reaches each entry's place, and a batch header that holds
    // there numbers the records the entry says (one numbered otherwise reads as a sequence
    // break). A batch header damaged there is damage of its own, reported and repaired where it
    // is: it contradicts nothing, and one bit of it must not cost the whole segment.
    for entry in indexed {
      guard entry.offset < file.size else { return false }
      switch try file.batch(at: entry.offset, expecting: entry.firstSequence, checkFrame: false, limits: limits) {
      case .batch: continue
      case .damaged(let damage):
        if case .sequenceBreak = damage.kind { return false }
      case .end: return false
      }
    }
    return true
  }

  /// The most bits of a damaged segment header's journal id that may differ from the manifest's
  /// for the header to be written again: damage, not another journal's id (two random ids differ
  /// in about 64 of their 128 bits).
  static let idBitsDamaged = 8

  /// The segments of `layout` but its stray files, which are reported in `report` as problems
  /// (`JournalProblem.strayFile`). A stray file is named like a segment, but its segment header is
  /// not valid, no valid batch header follows in it, and no index entry names it: nothing shows
  /// it ever held a committed record, so its name says nothing about the sequence numbers before
  /// it (a garbage file named like a later segment is not records missing before it). A segment
  /// whose header is damaged but whose batches are there, or that the index names, is no stray:
  /// its records were committed, and it is damage where it stands.
  package static func strayFiles(
    _ layout: JournalDirectory, namedByIndex: Set<UInt64>, into report: inout VerificationReport
  )
    throws -> [UInt64]
  {
    var segments: [UInt64] = []
    for first in layout.segments {
      guard let stray = try strayFile(first, in: layout, namedByIndex: namedByIndex.contains(first)) else {
        segments.append(first)
        continue
      }
      report.problems.append(stray)
    }
    return segments
  }

  /// The problem of the file named like segment `first` (`JournalProblem.strayFile`) when it is a
  /// stray file (see `strayFiles`); nil when it is a segment, damaged or not. `namedByIndex`:
  /// whether an index entry names it.
  package static func strayFile(_ first: UInt64, in layout: JournalDirectory, namedByIndex: Bool) throws
    -> JournalProblem?
  {
    // Sequence numbers start at 1: whatever this file holds, it is no segment of the journal
    // (the checks below, and the report of segments missing before the first, count from 1).
    if first == 0 {
      var stray = JournalProblem(
        file: Layout.segmentName(firstSequence: 0), offset: 0, sequences: nil,
        message: "a file named like a segment starting at sequence 0, which no segment does (sequence numbers "
          + "start at 1): it holds no record of the journal (repair moves it aside alone)")
      stray.strayFile = true
      return stray
    }
    let file = try layout.open(segment: first)
    var problem: String?
    var copyOf: String?
    do {
      // Its header alone: the walk that follows reads the segment from its start.
      let header = try file.headerAlone()
      problem = JournalDirectory.problem(with: header, expecting: first, journalID: layout.journalID)
      if problem != nil, !namedByIndex, let original = try Self.original(of: header, in: layout) {
        copyOf = original
      } else if problem != nil, try namedByIndex || file.hasValidBatchHeader(after: 0) {
        // Scanned for batch headers only when its header is not valid: a sound journal is read once.
        problem = nil
      }
    } catch {
      throw JournalError(error, directory: layout.path, file: file.name)
    }
    guard let problem else { return nil }
    var stray = JournalProblem(
      file: file.name, offset: 0, sequences: nil,
      message: problem
        + (copyOf.map {
          "; \($0) is that segment, with a valid header: this file is a copy of it under another name, "
            + "and the index names it nowhere (repair moves it aside alone)"
        }
          ?? "; no valid batch follows in it and the index names it nowhere: a stray file named like a segment, "
          + "holding no committed record (repair moves it aside alone)"))
    stray.strayFile = true
    return stray
  }

  /// The name of the segment a misnamed file's header names, when it is this journal's, the
  /// directory holds that segment, and its own header is valid: the file is a copy of a segment
  /// under another name (its records are that segment's), nothing missing or out of place.
  private static func original(
    of header: Result<SegmentHeader, SegmentHeader.Problem>, in layout: JournalDirectory
  ) throws -> String? {
    guard case .success(let copy) = header, copy.journalID == layout.journalID,
      layout.segments.contains(copy.firstSequence)
    else { return nil }
    let original = try layout.open(segment: copy.firstSequence)
    guard
      JournalDirectory.problem(
        with: try original.headerAlone(), expecting: copy.firstSequence, journalID: layout.journalID) == nil
    else { return nil }
    return original.name
  }
}

/// Compares the index's well-formed entries, in order, with the batches a walk of the segments
/// finds: each must name a batch header by its offset and first sequence, and carry the largest
/// timestamp of the records before that batch. Only while the walk is intact: after damage, what
/// the entries name is judged by the problems reported.
private struct EntryCheck {
  let entries: [IndexEntry]
  var next = 0
  /// The largest timestamp (as batch headers state them) of the records before the walk's place.
  var timestampBefore = Int64.min
  /// The first disagreement, described, and how many entries disagree.
  var first: String?
  var count = 0

  init(entries: [IndexEntry]) { self.entries = entries }

  mutating func batch(_ header: BatchHeader, segment: UInt64, offset: Int64, in name: String) {
    defer { timestampBefore = max(timestampBefore, header.maxTimestamp) }
    passed(segment: segment, offset: offset)
    guard next < entries.count, entries[next].segment == segment, entries[next].offset == offset else { return }
    let entry = entries[next]
    if entry.firstSequence != header.firstSequence {
      disagree(
        "names sequence \(entry.firstSequence) at byte offset \(offset) of \(name), where the batch starts at "
          + "sequence \(header.firstSequence)")
    } else if entry.maxTimestampBefore != timestampBefore {
      disagree(
        "says the records before sequence \(entry.firstSequence) are stamped at most \(entry.maxTimestampBefore), "
          + "but the largest of their timestamps is \(timestampBefore)")
    }
    next += 1
  }

  /// The walk reached `offset` of `segment`: entries before it that named no batch it found.
  mutating func passed(segment: UInt64, offset: Int64) {
    while next < entries.count, (entries[next].segment, entries[next].offset) < (segment, offset) {
      let entry = entries[next]
      disagree(
        "names a batch starting at sequence \(entry.firstSequence) at byte offset \(entry.offset) of "
          + "\(Layout.segmentName(firstSequence: entry.segment)), where no batch starts")
      next += 1
    }
  }

  private mutating func disagree(_ what: String) {
    count += 1
    if first == nil { first = "\(next + 1) (byte offset \(SparseIndex.headerSize + next * IndexEntry.size)) \(what)" }
  }
}
