/// Records from a starting point on, then each new one as it is committed: the journal's `tail -f`.
/// Polls the files every `pollInterval`, so it works across processes. Ends (returns nil) when
/// the consuming task is cancelled; throws on damage.
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

    public mutating func next() async throws -> JournalRecord? {
      while !Task.isCancelled {
        if cursor == nil { cursor = try reader.records(from: nextSequence) }
        if let record = try cursor!.next() {
          nextSequence = record.sequence + 1
          return record
        }
        if cursor?.hasSegment == false { cursor = nil }  // made before the first segment existed
        do { try await Task.sleep(for: pollInterval) } catch { return nil }
      }
      return nil
    }
  }
}
