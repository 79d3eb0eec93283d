/// Records from a starting point on, then each new one as it is committed: the journal's `tail -f`.
/// Polls the files every `pollInterval`, so it works across processes. Ends (returns nil) when
/// the consuming task is cancelled; throws on damage, and when the journal was cut and written
/// again under it (see `Iterator.next()`).
public struct JournalFollower: AsyncSequence, Sendable {
  public typealias Element = JournalRecord

  let reader: JournalReader
  let start: UInt64
  let pollInterval: Duration

  public func makeAsyncIterator() -> Iterator {
    Iterator(reader: reader, nextSequence: Swift.max(start, 1), pollInterval: pollInterval)
  }

  public struct Iterator: AsyncIteratorProtocol {
    let reader: JournalReader
    var nextSequence: UInt64
    let pollInterval: Duration
    var cursor: JournalCursor?
    /// Whether a record was returned yet (a batch only skipped over is not checked).
    var returned = false

    init(reader: JournalReader, nextSequence: UInt64, pollInterval: Duration) {
      self.reader = reader
      self.nextSequence = nextSequence
      self.pollInterval = pollInterval
    }

    /// - Throws: `JournalError` `.shortened` when a record read after the last one returned (by
    ///   another read from disk: at a poll that found new records, or as a lagging follower reads
    ///   on) follows a batch that is no longer there as it was read: the journal was cut at or
    ///   before it (by `repair`) and written again, so the records returned before and those
    ///   read now belong to two histories. The check reads one batch header (`JournalReader
    ///   .holds(_:)`), once per read from disk, not per record.
    public mutating func next() async throws -> JournalRecord? {
      while !Task.isCancelled {
        if cursor == nil { cursor = try reader.records(from: nextSequence) }
        let cursor = cursor!
        // The batch of the last record returned, when its records are all returned.
        let previous =
          returned ? cursor.lastBatch.flatMap { $0.header.lastSequence + 1 == nextSequence ? $0 : nil } : nil
        let reads = cursor.reads
        if let record = try cursor.next() {
          if let previous, cursor.reads != reads, cursor.lastBatch != previous, try !reader.holds(previous) {
            throw cut(previous)
          }
          nextSequence = record.sequence + 1
          returned = true
          return record
        }
        if cursor.hasSegment == false { self.cursor = nil }  // made before the first segment existed
        do { try await Task.sleep(for: pollInterval) } catch { return nil }
      }
      return nil
    }

    private func cut(_ batch: BatchPlace) -> JournalError {
      JournalError(
        .shortened,
        "the journal was cut and written again while it was followed: the batch that held the last records read "
          + "is no longer there, and other records stand under its numbers (and perhaps under earlier ones)",
        directory: reader.directory, file: Layout.segmentName(firstSequence: batch.segment), offset: batch.offset,
        sequences: batch.header.sequences)
    }
  }
}
