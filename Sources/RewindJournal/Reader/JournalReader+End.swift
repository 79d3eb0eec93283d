/// Where a journal ended when a reader looked: its last sequence number and the batch that ended
/// it, by place and header. A reader that keeps what it read (a time machine's states, a
/// follower's records) looks again later with `JournalReader.holds(_:)` before it takes records
/// past it: a journal cut back (by `repair`, or a torn tail moved aside) and written again to
/// the same end or past it holds other records under the same sequence numbers, which only the
/// place tells.
package struct JournalEnd: Equatable, Sendable {
  /// The last sequence number (0: the journal was empty).
  package var lastSequence: UInt64
  /// The batch that holds `lastSequence`; nil when the journal was empty.
  package var batch: BatchPlace?
}

/// A batch as a reader found it: its segment, the byte offset of its header there, and the
/// header, whose checksums cover its sequence numbers, timestamps and frame (FORMAT.md, "Batch
/// header frame").
package struct BatchPlace: Equatable, Sendable {
  /// The segment's first sequence number (its name).
  package var segment: UInt64
  package var offset: Int64
  package var header: BatchHeader
}

extension JournalReader {
  /// The journal's end as it is now. Costs what `lastSequence()` costs: the batches after the
  /// last index entry are read by their headers. Only when the last segment holds no batch yet
  /// is the batch that ends the previous one read, and decoded.
  package func end() throws -> JournalEnd {
    let cursor = try records(from: .max)
    let last = try cursor.lastSequenceReached()
    if last == 0 { return JournalEnd(lastSequence: 0, batch: nil) }
    if let batch = cursor.lastBatch, batch.header.lastSequence == last {
      return JournalEnd(lastSequence: last, batch: batch)
    }
    guard let batch = try batch(holding: last) else {
      // The journal changed between the two looks: what `holds(_:)` would say of any end.
      throw JournalError(
        .shortened, "the journal changed while its end was looked for: sequence \(last) is no longer where it was",
        directory: directory, sequences: last...last)
    }
    return JournalEnd(lastSequence: last, batch: batch)
  }

  /// The batch that holds record `sequence` as the journal stands now (its record read, and
  /// decoded); nil when the journal does not hold it. With `readingAroundMissingSegments`, a
  /// segment the index names and the directory lacks, after it, does not keep it from being found.
  package func batch(holding sequence: UInt64, readingAroundMissingSegments: Bool = false) throws -> BatchPlace? {
    let cursor = try records(from: sequence, readingAroundMissingSegments: readingAroundMissingSegments)
    guard try cursor.next()?.sequence == sequence else { return nil }
    return cursor.lastBatch
  }

  /// Whether `batch` is still in the journal as it was found: its header, read again at its place,
  /// is the same. Otherwise the journal was cut at or before it, and perhaps written again over
  /// the place (records under the same numbers are not the ones read), unless compaction
  /// rewrote its segment (FORMAT.md, "Compaction": the same records in larger frames), which
  /// the segment header's flag tells; then the batch's records are read and must match its
  /// header: numbers, count, decoded size and timestamp range.
  /// Costs one segment header and one batch header read (each by itself), and the records of one
  /// compacted frame after a compaction. A reader that checks the same batch again and again
  /// takes `place(of:)` instead, which names the compacted frame to check from then on.
  /// - Throws: `JournalError` when the journal cannot be read.
  package func holds(_ batch: BatchPlace) throws -> Bool {
    try place(of: batch) != nil
  }

  /// Where the records of `batch` stand now: `batch` itself while it is in place (as
  /// `holds(_:)` finds it), the compacted frame that holds its last record when compaction
  /// rewrote its segment and kept them, nil when they are gone. Checking that frame from then on
  /// costs a batch header's read again, not the compacted frame's records at every check.
  /// - Throws: `JournalError` when the journal cannot be read.
  package func place(of batch: BatchPlace) throws -> BatchPlace? {
    // Its segment is looked for by name, not in a listing of the directory: a follower catching
    // up checks at every segment it reaches, which made reading N segments list it N times.
    let layout = try JournalDirectory(path: directory, io: io, listing: false)
    guard io.fileExists(directory + "/" + Layout.segmentName(firstSequence: batch.segment)) else { return nil }
    // The two headers alone: a read window ahead of each (64 KiB) would be read at every check.
    let file = try layout.openChecked(segment: batch.segment, alone: true)
    do {
      if try file.batchHeaderAlone(at: batch.offset, limits: limits) == batch.header,
        batch.offset + batch.header.totalLength <= file.size
      {
        return batch
      }
      guard case .success(let segmentHeader) = try file.headerAlone(), segmentHeader.isCompacted else { return nil }
    } catch {
      throw JournalError(error, directory: directory, file: file.name)
    }
    return try compactedPlace(of: batch.header)
  }

  /// The compacted frame that holds the last of the records `header` numbers, when they are all
  /// there, as many, as large and stamped within the same range (compaction keeps each record's
  /// bytes; writers write the range exact); nil otherwise.
  private func compactedPlace(of header: BatchHeader) throws -> BatchPlace? {
    let cursor = try records(from: header.firstSequence)
    var count: UInt32 = 0
    var contentLength = 0
    var timestamps = (min: Int64.max, max: Int64.min)
    while count < header.recordCount, let record = try cursor.next() {
      guard record.sequence == header.firstSequence + UInt64(count) else { return nil }
      count += 1
      contentLength += Layout.recordHeaderSize + record.payload.count
      timestamps = (min(timestamps.min, record.timestamp), max(timestamps.max, record.timestamp))
    }
    guard count == header.recordCount, contentLength == Int(header.contentLength),
      timestamps.min == header.minTimestamp, timestamps.max == header.maxTimestamp
    else { return nil }
    return cursor.lastBatch
  }
}

extension JournalReader {
  /// The journal's last sequence number (`lastSequence()`), or the damage that hides it: records
  /// that a reader meets part way (`JournalError.isDamage`: a damaged frame, committed records
  /// gone). The records before that damage are still read intact; a reader that needs only those
  /// (a replay to a target before it) goes on, and meets the same error if it reads that far.
  /// - Throws: `JournalError` for what is no damage part way: no journal, a failed system call.
  /// With `readingAroundMissingSegments`, a segment the index names and the directory lacks
  /// hides the end only when it is the last one (`records(from:since:readingAroundMissingSegments:)`).
  package func readableEnd(readingAroundMissingSegments: Bool = false) throws -> Result<UInt64, JournalError> {
    do {
      let cursor = try records(from: .max, readingAroundMissingSegments: readingAroundMissingSegments)
      return .success(try cursor.lastSequenceReached())
    } catch let error as JournalError where error.isDamage {
      return .failure(error)
    }
  }
}

extension JournalReader {
  /// `readableEnd()` with, when damage hides the end, the last sequence number read before it:
  /// the records through `last` are intact as `readableEnd()` reads them (those of the last
  /// segment read whole, those of sealed segments passed over by their batch headers), and
  /// `hiddenBy` (nil when the end is read) locates the damage after them.
  /// - Throws: `JournalError` for what is no damage part way, as `readableEnd()`.
  package func intactEnd() throws -> (last: UInt64, hiddenBy: JournalError?) {
    var start = UInt64.max
    while true {
      var cursor: JournalCursor?
      do {
        cursor = try records(from: start)
        return (try cursor?.lastSequenceReached() ?? 0, nil)
      } catch let error as JournalError where error.isDamage {
        // Refused as the cursor was made, by the segment it would start in (its header damaged,
        // or a file named like a segment that is none): read up to it from the record before
        // it, in the segment before, which finds where the records before it end.
        if cursor == nil, let name = error.file, let first = Layout.firstSequence(ofSegmentNamed: name), first > 1,
          first - 1 < start, directory(holds: name)
        {
          start = first - 1
          continue
        }
        // Refused so with nothing before it, or by a segment the index names and the directory
        // lacks: the records before the first one gone.
        let next = cursor?.expectedSequence ?? error.sequences?.lowerBound ?? 1
        return (next - min(next, 1), error)
      }
    }
  }

  /// Whether the journal's directory holds a file named `name`.
  private func directory(holds name: String) -> Bool { io.fileExists(directory + "/" + name) }
}

extension JournalError {
  /// Damage to committed data, or committed records gone: what a reader meets part way and can
  /// read up to (not a directory that is no journal, a lock, a failed system call).
  package var isDamage: Bool { code == .corrupt || code == .sequenceBreak }
}
