/// Records from a starting point on, then each new one as it is committed: the journal's `tail -f`.
/// Polls the files every `pollInterval`, so it works across processes. Ends (returns nil) when
/// the consuming task is cancelled; throws on damage, and when the journal was cut and written
/// again under it (see `Iterator.next()`).
public struct JournalFollower: AsyncSequence, Sendable {
  public typealias Element = JournalRecord

  let reader: JournalReader
  let start: UInt64
  let pollInterval: Duration
  /// Whether its cursors read around segments the index names and the directory lacks
  /// (`JournalReader.records(from:since:readingAroundMissingSegments:)`): a follower from after
  /// such a segment never reaches it.
  var readingAroundMissingSegments = false

  public func makeAsyncIterator() -> Iterator {
    var iterator = Iterator(reader: reader, nextSequence: Swift.max(start, 1), pollInterval: pollInterval)
    iterator.readingAroundMissingSegments = readingAroundMissingSegments
    return iterator
  }

  public struct Iterator: AsyncIteratorProtocol {
    let reader: JournalReader
    var nextSequence: UInt64
    let pollInterval: Duration
    var readingAroundMissingSegments = false
    var cursor: JournalCursor?
    /// The batch the follower stood right after when it dropped a cursor whose segment file was
    /// replaced: the next cursor reads the journal as it is then, so a cut made meanwhile would
    /// leave it nothing to check. Checked in its stead (by the first record the new cursor
    /// returns, or as `previous` below) until that cursor reads the same batch or a record is
    /// returned.
    var anchor: BatchPlace?
    /// The journal's id as the first cursor found it: a cut found later names another journal
    /// when the directory holds one now (moved away and replaced).
    var journalID: JournalID?

    init(reader: JournalReader, nextSequence: UInt64, pollInterval: Duration) {
      self.reader = reader
      self.nextSequence = nextSequence
      self.pollInterval = pollInterval
    }

    /// - Throws: `JournalError` `.shortened` when the batch that held the last records returned
    ///   (before any is returned, the batch that ends right before the start, if the follower
    ///   read past it) is no longer there as it was read: the journal was cut at or before it (by
    ///   `repair`) and perhaps written again, so the records returned before and any read now
    ///   belong to two histories. Checked when a record comes from another read from disk (at a
    ///   poll that found new records, or as a lagging follower reads on), when what stands after
    ///   that batch does not read as a batch (before it is reported as damage), and when it reads
    ///   as a frame still being written (a new frame across the place, or a file that now ends
    ///   before it). The check reads one batch header (`JournalReader.holds(_:)`), not per
    ///   record. Checked too when a poll finds nothing new and the segment file read is no longer
    ///   the journal's file of its name (moved aside by `repair`): every poll that finds nothing
    ///   new compares the two (two `stat` calls); if the batch is still there, the follower reads
    ///   on from a new cursor and checks the batch again by the first record that cursor returns.
    ///   While only preallocated zeros or nothing stand where the follower reads on, a cut goes
    ///   unseen until something is written there. Other `JournalError`s on damage.
    public mutating func next() async throws -> JournalRecord? {
      while !Task.isCancelled {
        if cursor == nil {
          let made = try reader.records(from: nextSequence, readingAroundMissingSegments: readingAroundMissingSegments)
          // A new cursor has read no batch to check a cut by, and one made at a segment's start
          // (the last segment holds no batch yet) reads none before the start: the batch that
          // ends right before the start is found once, when the follower starts.
          if anchor == nil, nextSequence > 1, made.lastBatch?.header.lastSequence != nextSequence - 1 {
            anchor = try? reader.batch(holding: nextSequence - 1)
          }
          if journalID == nil { journalID = try? reader.id }
          cursor = made
        }
        let cursor = cursor!
        // The batch the follower stands right after: that of the last record returned, when its
        // records are all returned, or the one skipped over that ends right before the start (a
        // follower from the end, as `rewind tail -f`'s, has read the journal that far too).
        let own = cursor.lastBatch.flatMap { $0.header.lastSequence + 1 == nextSequence ? $0 : nil }
        if let anchor, own == anchor { self.anchor = nil }
        let previous = anchor ?? own
        let reads = cursor.reads
        let record: JournalRecord?
        do {
          record = try cursor.next()
        } catch let error as JournalError {
          // What stands where the follower read on is not the next batch: damage, unless the
          // journal was cut before that place and written again across it.
          if let previous, (try? reader.holds(previous)) == false { throw cut(previous) }
          throw error
        }
        if let record {
          if let previous, anchor != nil || cursor.reads != reads, cursor.lastBatch != previous,
            try !reader.holds(previous)
          {
            throw cut(previous)
          }
          nextSequence = record.sequence + 1
          anchor = nil
          return record
        }
        // Bytes that read as a frame still being written: or a frame written over a cut, across
        // the place (or the file now ends before it).
        if let previous, cursor.stoppedAtUnfinishedBytes, (try? reader.holds(previous)) == false { throw cut(previous) }
        // The segment read is no longer the journal's (`repair` moved it aside, perhaps under a
        // writer that made another of its name since, or compaction replaced it): waiting at the
        // end of the file held open would wait for ever. Cut if what was read is gone; otherwise
        // read on from a new cursor, checking what was read by `anchor` until it has read it too.
        if !cursor.readsAFileStillInPlace {
          if let previous, try !reader.holds(previous) { throw cut(previous) }
          anchor = previous
          self.cursor = nil
        }
        if cursor.hasSegment == false { self.cursor = nil }  // made before the first segment existed
        do { try await Task.sleep(for: pollInterval) } catch { return nil }
      }
      return nil
    }

    private func cut(_ batch: BatchPlace) -> JournalError {
      let what =
        if let journalID, let now = try? reader.id, now != journalID {
          "the directory holds another journal now (\(now), where \(journalID) was followed): the batch that held "
            + "the last records read is not in it, and any records under their numbers are that journal's"
        } else {
          "the journal was cut, and perhaps written again, while it was followed: the batch that held the last "
            + "records read is no longer there as it was read, so they are gone, and any records under their numbers "
            + "now (and perhaps under earlier ones) are others"
        }
      return JournalError(
        .shortened, what, directory: reader.directory, file: Layout.segmentName(firstSequence: batch.segment),
        offset: batch.offset, sequences: batch.header.sequences)
    }
  }
}
