/// A group that has been through the write stage: each append's outcome, and what was written
/// for it. Under `always` and `batched` it waits in the sync stage for an `fdatasync` that began
/// after its write ended; under `none` it is acknowledged at once.
struct WrittenGroup {
  var appends: [PendingAppend]
  /// Each append's outcome once the group is durable (or its failure already), in order.
  var outcomes: [Result<ClosedRange<UInt64>, JournalError>]
  /// Whether bytes were written that a sync must cover before the group is acknowledged.
  var wrote: Bool
  /// The active segment's end after this group, and the segment it went to.
  var end: Int64
  var fd: Int32
  var path: String
  var name: String
  /// The journal's last sequence number once this group is acknowledged.
  var lastSequence: UInt64
  var indexEntries: [IndexEntry]

  init(
    appends: [PendingAppend], outcomes: [Result<ClosedRange<UInt64>, JournalError>], wrote: Bool, end: Int64,
    fd: Int32, path: String, name: String, lastSequence: UInt64, indexEntries: [IndexEntry]
  ) {
    self.appends = appends
    self.outcomes = outcomes
    self.wrote = wrote
    self.end = end
    self.fd = fd
    self.path = path
    self.name = name
    self.lastSequence = lastSequence
    self.indexEntries = indexEntries
  }

  /// A group that wrote nothing: every append fails with `error` (none when there are no appends).
  init(failing appends: [PendingAppend], with error: JournalError?, lastSequence: UInt64) {
    self.init(
      appends: appends, outcomes: error.map { e in appends.map { _ in .failure(e) } } ?? [], wrote: false, end: 0,
      fd: -1, path: "", name: "", lastSequence: lastSequence, indexEntries: [])
  }
}
