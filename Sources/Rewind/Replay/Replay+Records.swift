public import RewindJournal

extension Replay {
  /// Rebuilds `M` from records kept outside a journal (an export, another database), given in
  /// sequence order from 1: the same decoding, upcasting and applying as a journal's replay (a
  /// batch of records at a time, on the calling thread), so the same records rebuild the same
  /// state.
  /// - Throws: `ReplayError`: `.outOfSequence` for a record out of sequence, `.malformedRecord`
  ///   for one not in the record layout, `.unknownEvent` or `.undecodableEvent` locating an event
  ///   the model cannot read.
  public static func rebuild<M: Model>(_ type: M.Type, records: some Sequence<JournalRecord>) throws -> Result<M> {
    let registry = M.makeRegistry()
    let tables = registry.tables
    var state = M()
    var context = ApplyContext(recording: false)
    var last: UInt64 = 0
    var batch: [JournalRecord] = []
    batch.reserveCapacity(recordsPerBatch)
    // Decoded and applied a batch at a time, as a journal's replay applies them: the events of
    // current types by type, each run of one type in one call specialized for the model.
    func applyBatch() throws {
      var decoded = try decodeApplicable(batch, tables: tables, registry: registry)
      batch.removeAll(keepingCapacity: true)
      _ = withUnsafeMutablePointer(to: &state) {
        decoded.applyRest(to: UnsafeMutableRawPointer($0), tables: tables, context: &context)
      }
      context.touched.removeAll(keepingCapacity: true)
    }
    for record in records {
      guard record.sequence == last + 1 else {
        try applyBatch()  // a record before it that does not decode is the first error
        throw ReplayError(.outOfSequence, sequence: record.sequence, underlying: "expected sequence \(last + 1)")
      }
      batch.append(record)
      last = record.sequence
      if batch.count == recordsPerBatch { try applyBatch() }
    }
    try applyBatch()
    return Result(state: state, lastSequence: last)
  }

  /// How many records `rebuild(_:records:)` decodes before applying them.
  private static let recordsPerBatch = 1_024
}
