/// Why a bounded change stream (`Manager.changes(bufferingAtMost:)`) ended before its manager
/// closed. The stream delivered every change through `lastDelivered`, in order, and none after
/// it: the reader missed changes, and whatever it keeps up to date from them is stale until it
/// catches up.
///
/// To catch up, subscribe again, then either rebuild from the manager's `current` state (and
/// skip the new stream's changes through its `lastSequence`), or read the manager's
/// `lastSequence` and the journal's records from `lastDelivered + 1` (`JournalReader.records(from:)`)
/// through it, then the new stream's changes after it. Not further than that number: records
/// past it may be written and not yet committed (a group whose sync then fails is cut off the
/// journal and never announced), and the next change is not known to start until it comes.
public struct ChangeStreamError: Error, Sendable, Equatable, CustomStringConvertible {
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }
    public var description: String { name }

    /// The reader fell behind: as many changes as the stream buffers waited unread when another
    /// was committed. That change and every later one were not delivered.
    public static let fellBehind = Code("fellBehind")
  }

  public var code: Code
  /// The last sequence number of the last change the stream delivered: the reader has seen
  /// every change through it, and none after.
  public var lastDelivered: UInt64
  /// How many changes the stream buffered at most.
  public var limit: Int

  public init(_ code: Code, lastDelivered: UInt64, limit: Int) {
    self.code = code
    self.lastDelivered = lastDelivered
    self.limit = limit
  }

  public var description: String {
    switch code {
    case .fellBehind:
      "the change stream's reader fell behind: \(limit) \(limit == 1 ? "change" : "changes") waited unread, "
        + "the most it buffers, when sequence \(lastDelivered + 1) was committed; it delivered every change "
        + "through sequence \(lastDelivered) and none after. Subscribe again and rebuild from the manager's "
        + "current state, or read the journal from sequence \(lastDelivered + 1) through the manager's lastSequence"
    default:
      "the change stream ended (\(code)) after delivering sequence \(lastDelivered)"
    }
  }
}
