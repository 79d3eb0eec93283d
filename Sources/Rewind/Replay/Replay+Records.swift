public import RewindJournal

extension Replay {
  /// Rebuilds `M` from records kept outside a journal (an export, another database), given in
  /// sequence order from 1: the same decoding, upcasting and applying as a journal's replay, so
  /// the same records rebuild the same state.
  /// - Throws: `ReplayError`: `.malformedRecord` for a record out of sequence or not in the
  ///   record layout, `.unknownEvent` or `.undecodableEvent` locating an event the model cannot read.
  public static func rebuild<M: Model>(_ type: M.Type, records: some Sequence<JournalRecord>) throws -> Result<M> {
    let registry = M.makeRegistry()
    var state = M()
    var context = ApplyContext(recording: false)
    var last: UInt64 = 0
    for record in records {
      guard record.sequence == last + 1 else {
        throw ReplayError(.malformedRecord, sequence: record.sequence, underlying: "expected sequence \(last + 1)")
      }
      if case .event(let recorded) = try DecodedRecords.decode(record, registry: registry) {
        registry.apply(recorded.event, to: &state, context: &context)
      }
      last = record.sequence
    }
    return Result(state: state, lastSequence: last)
  }
}
