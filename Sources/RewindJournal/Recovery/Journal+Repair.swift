import Glibc

/// What `Journal.repair` moved (or, for a dry run, would move) into quarantine.
public struct RepairReport: Sendable, Equatable {
  /// Everything moved, in order: first, bytes that are no batch ending sealed segments whose
  /// successors start right after their last records, each alone (they hold no record; every
  /// segment stays); then the damaged segment's bytes from the first damage on, then every later
  /// segment whole. Only bytes that exist move: a loss that left none (committed
  /// frames turned to zeros, or a segment cut short) has no entry here; `damage` names it.
  public var moved: [QuarantinedBytes] = []
  /// Zeros cut off the end of sealed segments whose successors start right after their last
  /// records (`verify`: "no records are missing, but readers stop here"): each segment, the byte
  /// offset it is cut at and how many bytes of zeros went. They hold no record, so nothing of them
  /// is kept and every segment stays.
  public var zerosCut: [QuarantinedBytes] = []
  /// Segment headers written again, first of all (`JournalProblem.headerRebuildable`): each
  /// segment whose header failed its checks over batches that hold, the damaged bytes (offset 0,
  /// `length` 44) kept at `movedTo`. The segment stays, its records with it.
  public var headersRewritten: [QuarantinedBytes] = []
  /// The damage the repair starts from (the first problem `verify` found, or the unfinished tail
  /// of the last segment); nil when the journal was sound and there was nothing to do.
  public var damage: JournalProblem?
  /// The journal's last sequence number after the repair.
  public var lastSequence: UInt64 = 0
  /// The verification that found the damage.
  public var verification: VerificationReport
  /// True when this was only a plan.
  public var dryRun: Bool
}

extension Journal {
  /// Quarantines everything from the first damaged frame on, so the intact prefix can be
  /// opened and appended to again. Nothing is deleted: moved bytes go to `quarantine/`, and the
  /// report says exactly what moved. Zeros ending a sealed segment whose successor starts right
  /// after its last record hold no record: they are cut first (`zerosCut`), keeping every segment;
  /// so do bytes that are no batch there, moved aside alone first (`moved`); and the rest of the
  /// damage, if any, is judged as the journal then stands. Takes the writer's lock, so it refuses to run while a writer
  /// has the journal open. A file named like a segment that holds nothing committed (no valid
  /// segment header, no valid batch, named by no index entry) moves aside alone. A repair stopped
  /// part way (killed, or a move failing) is finished by the next one.
  ///
  /// - Parameters:
  ///   - directory: the journal's directory.
  ///   - dryRun: only report what would be moved. A plan reads only: it takes no lock, writes
  ///     nothing (not even a `LOCK` file), and works while a writer holds the journal, whose
  ///     appends may change what a repair made later finds.
  ///   - options: the file operations (`io`) and the limits the journal is read with (`limits`).
  /// - Throws: `JournalError`: `.locked` when a writer holds the journal (not for a plan);
  ///   `.badManifest` when every segment names one journal and the manifest another, and
  ///   `.sequenceBreak` when the damage starts with records missing before segments that are
  ///   there (the first segment missing, or one in the middle): moving nothing, plan or not, as
  ///   moving every segment after the damage aside would lose intact records; `.staleIndex` when
  ///   everything was moved (durably, as the plan says) but the index could not be removed:
  ///   readers report the moved records as lost until it is gone. Running the repair again once
  ///   the cause is fixed finishes it.
  public static func repair(directory: String, dryRun: Bool = false, options: JournalOptions = JournalOptions()) throws
    -> RepairReport
  {
    let io = options.io
    // A plan only reads, as `verify` does: it takes no lock (creating no LOCK file) and works
    // while a writer has the journal open, though what it finds may change as the writer appends.
    let lockPath = directory + "/" + Layout.lockName
    var lockFD: Int32?
    // Unlock explicitly (harmless when not locked): a child process forked meanwhile shares the
    // descriptor until it execs, and would otherwise keep the lock.
    defer {
      if let lockFD {
        io.unlock(lockFD, path: lockPath)
        io.close(lockFD)
      }
    }
    if !dryRun {
      do {
        lockFD = try io.open(lockPath, flags: O_RDWR | O_CREAT, mode: 0o600)
      } catch {
        throw JournalError(error, directory: directory, file: Layout.lockName)
      }
      // A failure to lock (`flock` refused: a file system without locks, say) is reported as it is,
      // as a writer's opening reports it: it is no other writer.
      let taken: Bool
      do {
        taken = try lockFD.map { try DirectoryLock.take($0, path: lockPath, io: io) } ?? false
      } catch {
        throw JournalError(error, directory: directory, file: Layout.lockName)
      }
      guard taken else { throw JournalError.locked(directory: directory, lockFD: lockFD) }
    }
    let reader = try JournalReader(directory: directory, limits: options.limits, io: io)
    // Judged as the journal will stand once the damaged segment headers that can be are written
    // again: their segments' records are intact after them.
    let verification = try reader.verify(progress: nil, rebuildingHeaders: true)
    var report = RepairReport(verification: verification, dryRun: dryRun)
    report.lastSequence = verification.lastSequence
    // Stray files (named like segments, holding nothing committed) move aside alone, each: their
    // names say nothing about where the journal's damage is. Zeros that hold no record are cut
    // (below). The rest moves from the first other damage on.
    let headers = verification.problems.filter(\.headerRebuildable)
    let strays = verification.problems.filter(\.strayFile)
    let zeros = verification.problems.filter(\.zerosOnly)
    let tails = verification.problems.filter(\.holdsNoRecord)
    var damage =
      verification.problems.first { !$0.strayFile && !$0.zerosOnly && !$0.holdsNoRecord && !$0.headerRebuildable }
      ?? verification.unfinishedTail
    guard let reported = strays.first ?? damage ?? zeros.first ?? tails.first ?? headers.first else { return report }
    report.damage = reported

    var layout = try JournalDirectory(path: directory, io: io)
    try refuseIfOnlyTheManifestDisagrees(layout)
    let strayNames = Set(strays.map(\.file))
    layout.segments.removeAll { strayNames.contains(Layout.segmentName(firstSequence: $0)) }
    if let damage { try refuseIfRecordsAreMissingBeforeIntactSegments(damage, layout) }
    let quarantine = Quarantine(directory: directory, io: io)
    // Damaged segment headers over batches that hold are written again before anything moves:
    // every field follows from the manifest and the file's name, and the damaged bytes are kept.
    // Only of segments that stay: one from the damage on moves whole, its header as it is.
    let staying = headers.filter { header in
      guard let damage else { return true }
      let segment = Layout.firstSequence(ofSegmentNamed: header.file) ?? 0
      let damaged = Layout.firstSequence(ofSegmentNamed: damage.file) ?? 0
      return segment < damaged || (segment == damaged && damage.offset > Int64(Layout.segmentHeaderSize))
    }
    for problem in staying {
      var entry = QuarantinedBytes(
        segment: problem.file, offset: 0, length: Int64(Layout.segmentHeaderSize),
        movedTo: Layout.quarantineName + "/", reason: problem.message, sequences: nil)
      if !dryRun {
        do {
          entry.movedTo = try quarantine.rewriteHeader(
            of: problem.file, journalID: layout.journalID,
            firstSequence: Layout.firstSequence(ofSegmentNamed: problem.file) ?? 0)
        } catch {
          throw JournalError(error, directory: directory, file: problem.file)
        }
      }
      report.headersRewritten.append(entry)
    }
    for stray in strays {
      var entry = QuarantinedBytes(
        segment: stray.file, offset: 0, length: 0, movedTo: Layout.quarantineName + "/", reason: stray.message,
        sequences: nil)
      do {
        entry.length = try SegmentFile(
          directory: directory, firstSequence: Layout.firstSequence(ofSegmentNamed: stray.file) ?? 0, io: io
        ).size
        if !dryRun { entry.movedTo = try quarantine.moveFile(stray.file) }
      } catch {
        throw JournalError(error, directory: directory, file: stray.file)
      }
      report.moved.append(entry)
    }
    // Zeros ending sealed segments whose successors start right after their last records: they
    // hold no record, and readers stop at them. Cut, keeping every segment and the index (which
    // names no batch in them): moved from there on as other damage is, the intact segments after
    // them left the journal, and the next writer numbered new records over theirs.
    var problems = verification.problems
    // Bytes that are no batch ending sealed segments whose successors start right after their
    // last records: they hold no record either. Moved aside (they are not zeros: kept for a
    // look), keeping every segment, as the zeros are cut.
    for tail in tails {
      var entry = QuarantinedBytes(
        segment: tail.file, offset: tail.offset, length: 0, movedTo: Layout.quarantineName + "/", reason: tail.message,
        sequences: nil)
      do {
        let segment = try SegmentFile(
          directory: directory, firstSequence: Layout.firstSequence(ofSegmentNamed: tail.file) ?? 0, io: io)
        entry.length = max(0, segment.size - tail.offset)
        if !dryRun {
          let (movedTo, length) = try quarantine.moveTail(of: tail.file, from: tail.offset)
          entry.length = length
          entry.movedTo = movedTo ?? ""
        }
      } catch {
        throw JournalError(error, directory: directory, file: tail.file)
      }
      report.moved.append(entry)
    }
    if !zeros.isEmpty || !tails.isEmpty {
      for cut in zeros {
        var entry = QuarantinedBytes(
          segment: cut.file, offset: cut.offset, length: 0, movedTo: "", reason: cut.message, sequences: nil)
        do {
          let segment = try SegmentFile(
            directory: directory, firstSequence: Layout.firstSequence(ofSegmentNamed: cut.file) ?? 0, io: io)
          entry.length = max(0, segment.size - cut.offset)
          if !dryRun { _ = try quarantine.moveTail(of: cut.file, from: cut.offset, upTo: cut.offset) }
        } catch {
          throw JournalError(error, directory: directory, file: cut.file)
        }
        report.zerosCut.append(entry)
      }
      if dryRun {
        // Where the journal would end: before the other damage, or where a reader finds its end
        // (from the last segment, not by walking through the zeros). Damage that names no
        // records at a segment's start (its header damaged) ends it before that segment's first:
        // the end a reader finds would be past it, and the plan would leave out the snapshots
        // the repair then moves.
        let beforeTheDamage = damage.flatMap { damage in
          damage.sequences.map { max($0.lowerBound, 1) - 1 }
            ?? (damage.offset <= Int64(Layout.segmentHeaderSize)
              ? Layout.firstSequence(ofSegmentNamed: damage.file).map { max($0, 1) - 1 } : nil)
        }
        report.lastSequence = beforeTheDamage ?? (try? reader.lastSequence()) ?? report.lastSequence
      } else {
        // Read again with the zeros cut: the other damage is judged as the journal now stands.
        let again = try reader.verify(progress: nil, rebuildingHeaders: true)
        problems = again.problems
        damage =
          again.problems.first { !$0.strayFile && !$0.holdsNoRecord && !$0.headerRebuildable } ?? again.unfinishedTail
        report.lastSequence = again.lastSequence
      }
    }
    // Only stray files, zeros and headers written again: the index names none of them, or
    // names batches that stay, so it stays.
    guard let first = damage else { return report }
    let damagedSegment = Layout.firstSequence(ofSegmentNamed: first.file) ?? 0
    // Last segment first, the damaged one last: a repair that stops part way (killed, or a
    // move failing) leaves the segments up to the damaged one whole and a run of the later ones,
    // which the next repair takes for what it is (the damage, then segments missing at the end
    // that the index names) and finishes. Moved first, the damaged segment's tail left a gap
    // before intact segments, which the next repair refuses and `verify` sends to a backup.
    // The report still lists the moves in order.
    var moved: [QuarantinedBytes] = []
    for segment in layout.segments.reversed() where segment >= damagedSegment {
      let name = Layout.segmentName(firstSequence: segment)
      let file = try layout.open(segment: segment)
      // A segment whose header is damaged, or whose first frame is, goes whole.
      let from = segment > damagedSegment || first.offset <= Int64(Layout.segmentHeaderSize) ? 0 : first.offset
      // Of the last segment, moved whole or in part, the bytes up to its preallocated zeros
      // (those are not kept), judged as opening judges a torn tail: all of the damaged frame, a
      // frame's last bytes being its checksum's, which can be zeros. A sealed segment has no
      // preallocated space, so zeros at its end are data. Judged on one read, unlike the damage
      // (`verify` reads a damaged batch again when a valid header follows it, in case a writer
      // was storing it): the repair holds the lock, so no writer stores meanwhile, and a plan
      // made beside a writer only says how far the bytes reach at the moment it reads them.
      // A segment the index names a later one after is sealed, also when it is the last left (a
      // repair stopped after moving the later ones aside): moved to its end, as it would have been.
      let sealed =
        segment != layout.segments.last
        || problems.contains {
          !$0.strayFile && (Layout.firstSequence(ofSegmentNamed: $0.file) ?? 0) > segment
        }
      let end: Int64
      do {
        end =
          sealed
          ? file.size : try file.keptEnd(from: from == 0 ? min(file.size, Int64(Layout.segmentHeaderSize)) : from)
      } catch {
        throw JournalError(error, directory: directory, file: name)
      }
      var entry = QuarantinedBytes(
        segment: name, offset: from, length: end - from, movedTo: "", reason: first.message, sequences: nil)
      if segment > damagedSegment { entry.reason = "follows the damaged segment \(first.file)" }
      if dryRun {
        entry.movedTo = Layout.quarantineName + "/"
      } else {
        do {
          if from == 0 {
            entry.movedTo = try quarantine.moveFile(name, upTo: end)
          } else {
            let (movedTo, length) = try quarantine.moveTail(of: name, from: from, upTo: end)
            entry.movedTo = movedTo ?? ""
            entry.length = length
          }
        } catch {
          throw JournalError(error, directory: directory, file: name)
        }
      }
      // Of a loss that left no bytes (zeros, or the file ends there), nothing is set aside.
      if from == 0 || entry.length > 0 { moved.append(entry) }
    }
    report.moved += moved.reversed()
    if !dryRun {
      // The index is derived; the next writer rebuilds it for what remains. Left in place, it
      // still names what moved, and every reader would report those records lost: the repair
      // is not done. It goes last, after the moves: before them, it is the only witness of a
      // loss that left no bytes, which a failed move would leave unrepaired and unreported.
      // The removal is durable only once the directory is synced: a power loss before that can
      // bring the index back, and with it a `sequenceBreak` at the next opening.
      var removed = false
      do {
        try io.removeFile(directory + "/" + Layout.indexName)
        removed = true
        try io.syncDirectory(directory)
      } catch {
        var failure = JournalError(error, directory: directory, file: Layout.indexName)
        failure.code = .staleIndex
        let what =
          removed
          ? "could not make the index's removal durable (the directory's fsync failed)" : "could not remove the index"
        failure.message =
          (report.moved.isEmpty
            ? "repair \(what), which still names the records lost"
            : "repair moved the damaged part aside but \(what), which still names what moved")
          + " (\(error))"
        throw failure
      }
    }
    return report
  }

  /// Throws `.badManifest` when every segment belongs to one journal and the manifest names
  /// another: the one file is likelier wrong than all of them, and moving every segment aside
  /// would empty the journal. A journal whose segments disagree among themselves, or with a
  /// manifest some of them agree with, is repaired as usual.
  private static func refuseIfOnlyTheManifestDisagrees(_ layout: JournalDirectory) throws {
    guard let segmentsID = layout.journalIDOfEverySegmentButTheManifest() else { return }
    throw JournalError(
      .badManifest,
      "the manifest names journal \(layout.journalID), but "
        + (layout.segments.count == 1 ? "the only segment belongs" : "all \(layout.segments.count) segments belong")
        + " to journal \(segmentsID): the manifest is likelier wrong than every segment, and repair would move "
        + "them all aside. Nothing was moved. If these segments are this journal's, set the manifest's journalID "
        + "to \(segmentsID).",
      directory: layout.path, file: Layout.manifestName)
  }

  /// Throws `.sequenceBreak` when the damage starts with records missing before segments that
  /// are there (the first segment missing, or one in the middle, or one cut short before its
  /// successor): repair would move those intact segments aside, the first case leaving an empty
  /// journal, and only a backup brings the missing records back.
  private static func refuseIfRecordsAreMissingBeforeIntactSegments(
    _ damage: JournalProblem, _ layout: JournalDirectory
  ) throws {
    guard damage.missingBeforeIntactSegments, let sequences = damage.sequences,
      let next = layout.segments.first(where: { $0 > sequences.upperBound })
    else { return }
    let name = Layout.segmentName(firstSequence: next)
    let message =
      sequences.lowerBound == 1
      ? "the journal's first records are missing: no segment holds them, and repair would move every segment "
        + "aside, leaving an empty journal. Nothing was moved"
      : "records are missing between segments: no segment holds them, and repair would move \(name) and every "
        + "later segment aside, intact as they are. Nothing was moved. To keep only the records before the gap "
        + "instead, move those segments out of the journal directory yourself, then run repair again"
    var error = JournalError(
      .sequenceBreak, message, directory: layout.path, file: damage.file, offset: damage.offset, sequences: sequences)
    error.missingBeforeIntactSegments = true
    throw error
  }
}
