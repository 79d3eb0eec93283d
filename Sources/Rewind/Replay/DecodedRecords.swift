internal import Foundation
internal import RewindJournal

/// One journal record, decoded: an event of the model, or a checkpoint record (a checkpoint of
/// format 1, a mark, or a mark's digest).
enum DecodedRecord: Sendable {
  case event(RecordedEvent)
  case checkpoint(sequence: UInt64, Checkpoint)
  case checkpointMark(sequence: UInt64, CheckpointMark)
  case checkpointDigest(sequence: UInt64, CheckpointDigest)

  var sequence: UInt64 {
    switch self {
    case .event(let recorded): recorded.envelope.sequence
    case .checkpoint(let sequence, _), .checkpointMark(let sequence, _), .checkpointDigest(let sequence, _): sequence
    }
  }
}

/// The records `first...last` of a journal, decoded in order.
///
/// For long ranges a producer thread reads and decompresses batches of records into a bounded
/// queue while the consumer applies the previous ones, so both cores work and memory holds at most
/// `batchesInFlight` batches. Decoding goes where there is idle capacity: the producer decodes a
/// batch itself only while the consumer has other batches waiting (the producer is ahead);
/// otherwise it hands the batch over raw and the consumer decodes each record just before applying
/// it. Decoding is pure, so who decodes changes nothing but the speed. Short ranges are decoded on
/// the calling thread. Not thread-safe: one consumer calls `next()`.
final class DecodedRecords<M: Model> {
  private let registry: EventRegistry<M>
  private let tables: EventTables
  /// The read-ahead queue, nil when read inline (internal for tests).
  let queue: RecordQueue?
  private var inline: RawBatches?
  /// What is left of the current batch (one of the two), last first: `next()` moves each record
  /// out of the end instead of copying it, with its strings, arrays and event box, and leaves
  /// nothing behind to destroy later. Only `next()` touches them (no dynamic exclusivity checks).
  @exclusivity(unchecked) private var decoded: [DecodedRecord] = []
  @exclusivity(unchecked) private var raw: [JournalRecord] = []
  /// The current batch when the reading thread decoded it for `applyNext` (see `applyOnly`).
  @exclusivity(unchecked) private var applicable = ApplicableBatch()

  /// `applyOnly`: the caller only calls `applyNext` (it looks at no record), so the reading thread
  /// decodes batches into lists of events by type (`ApplicableBatch`), not into `DecodedRecord`s.
  /// `digests`: records whose digests are taken as they are read (for the snapshots written
  /// from this replay).
  init(
    registry: EventRegistry<M>, reader: JournalReader, first: UInt64, last: UInt64, options: ReplayOptions,
    applyOnly: Bool = false, digests: RecordDigests? = nil
  ) throws {
    self.registry = registry
    self.tables = registry.tables
    let size = max(1, options.recordsPerBatch)
    // Only the records `first...last` need to be there: a segment the index names and the
    // directory lacks is met where the read reaches it (the journal's located `.sequenceBreak`),
    // not refused before the records ahead of it (or after it, from a snapshot) are read.
    func cursor() throws -> JournalCursor { try reader.records(from: first, readingAroundMissingSegments: true) }
    if last < first {
      queue = nil
    } else if last - first < UInt64(size) * 2 || options.batchesInFlight <= 0 {
      inline = RawBatches(cursor: try cursor(), last: last, digests: digests)
      queue = nil
    } else {
      let batches = SendableBox(RawBatches(cursor: try cursor(), last: last, digests: digests))
      let queue = RecordQueue(capacity: options.batchesInFlight)
      // Decode on the producer while at least this many batches wait for the consumer.
      let ahead = max(1, options.batchesInFlight / 4)
      do {
        try Threads.start(named: "rewind.replay.decode") { [registry, tables] in
          var batches = batches.value
          queue.produce { backlog throws -> RecordBatch? in
            guard var records = try batches.next(size: size) else { return nil }
            if backlog >= ahead {
              // A record that does not decode: the batch goes over raw, so that the consumer applies
              // (or hands out) the records before it and meets the error in its place, as when it
              // decodes the batch itself.
              if applyOnly, let batch = try? decodeApplicable(records, tables: tables, registry: registry) {
                return .applicable(batch)
              }
              if !applyOnly, let decoded = try? decodeReversed(records, tables: tables, registry: registry) {
                return .decoded(decoded)
              }
            }
            records.reverse()
            return .raw(records)
          }
        }
        self.queue = queue
      } catch {
        // No reading thread (the process is at its thread limit): read inline, as a short range
        // is, rather than wait for batches no thread will bring.
        self.queue = nil
        inline = batches.value
      }
    }
  }

  deinit { queue?.cancel() }

  /// Waits until the reading thread has filled the queue (`batchesInFlight` batches wait), or
  /// finished; returns at once for a short range read inline. For tests that need it ahead.
  func waitForReadAhead() { queue?.waitUntilFull() }

  /// The next record, or nil after `last` (or the end of the journal).
  func next() throws -> DecodedRecord? {
    while true {
      precondition(applicable.steps.isEmpty, "DecodedRecords made for applyNext only")
      if !decoded.isEmpty { return decoded.removeLast() }
      if !raw.isEmpty { return try decodeRecord(raw.removeLast(), tables: tables, registry: registry) }
      guard try refill() else { return nil }
    }
  }

  /// Applies the next record to `state` (an event; a checkpoint is decoded and changes nothing)
  /// and returns its sequence number, or nil after `last`. The same as applying what `next()`
  /// returns, for a caller that does not look at the decoded record: a record still raw is decoded
  /// straight into its apply when its event is current, without the `any Event` box, envelope and
  /// `DecodedRecord` that `next()` would build and the caller free.
  func applyNext(to state: inout M, context: inout ApplyContext) throws -> UInt64? {
    while true {
      if let sequence = applicable.applyNext(to: &state, tables: tables, context: &context) { return sequence }
      if !decoded.isEmpty {
        switch decoded.removeLast() {
        case .event(let recorded):
          tables.apply(recorded.event, to: &state, context: &context)
          return recorded.envelope.sequence
        case .checkpoint(let sequence, _), .checkpointMark(let sequence, _), .checkpointDigest(let sequence, _):
          return sequence
        }
      }
      if !raw.isEmpty {
        let record = raw.removeLast()
        let location = try eventLocation(of: record, tables: tables)
        if location.nameIndex != EventTables.checkpointNameIndex,
          try tables.decodeApplying(
            location, payload: record.payload, sequence: record.sequence, to: &state, context: &context)
        {
          return record.sequence
        }
        // A checkpoint, an old version to upcast or an unknown name: the general path, with its
        // checks and errors.
        if case .event(let recorded) = try decodeRecord(record, tables: tables, registry: registry) {
          tables.apply(recorded.event, to: &state, context: &context)
        }
        return record.sequence
      }
      guard try refill() else { return nil }
    }
  }

  /// Applies every record left to `state`, as `applyNext` one after another would, and returns
  /// how many it applied and the last one's sequence number (`sequence` if none). For a caller
  /// that looks at nothing between records: a batch the reading thread decoded by type is applied
  /// run by run (`ApplicableBatch.applyRest`), each run of events of one type in one call into
  /// code specialized for that type and the model. A decoding error is thrown, as by `applyNext`,
  /// with every record before it applied.
  func applyAll(to state: inout M, context: inout ApplyContext, after sequence: UInt64) throws
    -> (lastSequence: UInt64, count: Int)
  {
    var count = 0
    var last = sequence
    while true {
      if let run = withUnsafeMutablePointer(
        to: &state, { applicable.applyRest(to: UnsafeMutableRawPointer($0), tables: tables, context: &context) })
      {
        count += run.count
        last = run.lastSequence
      } else if !decoded.isEmpty || !raw.isEmpty {
        // A batch handed over as records: one by one, as `applyNext` does.
        guard let sequence = try applyNext(to: &state, context: &context) else { continue }
        count += 1
        last = sequence
      } else if try !refill() {
        return (last, count)
      }
      context.touched.removeAll(keepingCapacity: true)
    }
  }

  /// Takes the next batch; false at the end.
  private func refill() throws -> Bool {
    while true {
      decoded = []
      raw = []
      let spent = applicable
      applicable = ApplicableBatch()
      if let queue, !spent.lists.isEmpty {
        // Its events hold what their applies left in them (the old values they swapped out of
        // the model): destroyed on the reading thread, which allocated most of them.
        queue.retire(consume spent)
      }
      if let queue {
        // The queue hands over its only reference to the batch, so moving records out of it does
        // not copy it.
        switch try queue.take() {
        case .decoded(let records)?: decoded = records
        case .raw(let records)?: raw = records
        case .applicable(let batch)?: applicable = batch
        case nil: return false
        }
      } else if inline != nil {
        guard var next = try inline?.next(size: 64) else {
          inline = nil
          return false
        }
        next.reverse()
        raw = next
      } else {
        return false
      }
      if !decoded.isEmpty || !raw.isEmpty || !applicable.steps.isEmpty { return true }
    }
  }

  static func decode(_ record: JournalRecord, registry: EventRegistry<M>) throws -> DecodedRecord {
    try decodeRecord(record, tables: registry.tables, registry: registry)
  }
}

/// The records of a journal through `last`, in batches, not yet decoded.
///
/// An error of the journal's cursor part way through a batch comes after the records read before
/// it: the batch is returned and the error thrown by the next call, so that those records are
/// applied whoever decodes them. Once `last` is read, the cursor is not read again: the frame after
/// it is not decompressed, nor the journal's end checked, so damage there does not fail a replay
/// that stops before it.
struct RawBatches {
  private let cursor: JournalCursor
  private let last: UInt64
  private var finished = false
  private var pending: (any Error)?
  private let digests: RecordDigests?
  /// The place in `digests.sequences` of the next record to take a digest of.
  private var nextDigest = 0

  init(cursor: JournalCursor, last: UInt64, digests: RecordDigests? = nil) {
    self.cursor = cursor
    self.last = last
    self.digests = digests
  }

  /// Most records a batch makes room for before reading them.
  static let reservedAtMost = 4_096

  /// Up to `size` records, or nil at the end.
  mutating func next(size: Int) throws -> [JournalRecord]? {
    if let error = pending {
      pending = nil
      finished = true
      throw error
    }
    if finished { return nil }
    var batch: [JournalRecord] = []
    // Room for a huge `size` is made as records come: the journal may hold far fewer.
    batch.reserveCapacity(min(size, Self.reservedAtMost))
    do {
      while batch.count < size {
        guard let record = try cursor.next(), record.sequence <= last else {
          finished = true
          break
        }
        if let digests { digests.take(record, isLast: record.sequence == last, next: &nextDigest) }
        batch.append(record)
        if record.sequence == last {
          finished = true
          break
        }
      }
    } catch {
      if batch.isEmpty {
        finished = true
        throw error
      }
      pending = error
    }
    return batch.isEmpty ? nil : batch
  }
}

/// The digests (`SnapshotFile.recordDigest(of:)`) of chosen records, taken as a replay reads
/// them: what a snapshot of the state after one of them records of it, as the replay that built
/// the state read it. Read back from the journal afterwards instead, the record could be another
/// one: a writer whose group failed cuts it off and numbers new records over it.
///
/// `@unchecked Sendable`: `taken` is read and written only while holding `lock`, glibc's mutex
/// (through `NSLock`), which ThreadSanitizer sees (a contended `Mutex` takes a lock it does not:
/// see `Lock`).
final class RecordDigests: @unchecked Sendable {
  /// The records chosen, ascending.
  let sequences: [UInt64]
  /// Whether the last record of the replay's range is chosen too.
  let last: Bool
  private let lock = NSLock()
  private var taken: [UInt64: [UInt8]] = [:]

  init(of sequences: some Sequence<UInt64>, last: Bool = false) {
    self.sequences = Array(Set(sequences)).sorted()
    self.last = last
  }

  /// The digest of record `sequence`, if the replay read it.
  func digest(_ sequence: UInt64) -> [UInt8]? { lock.withLock { taken[sequence] } }

  /// Takes `record`'s digest if it is chosen (read in ascending order: `next` is the place in
  /// `sequences` of the next one, kept by the reading side).
  func take(_ record: JournalRecord, isLast: Bool, next: inout Int) {
    while next < sequences.count, sequences[next] < record.sequence { next += 1 }
    let chosen = next < sequences.count && sequences[next] == record.sequence
    guard chosen || (last && isLast) else { return }
    let digest = SnapshotFile.recordDigest(of: record)
    lock.withLock { taken[record.sequence] = digest }
  }
}

/// A record's event header and the index of its name in `tables.names` (nil if not there), or a
/// `.malformedRecord` error naming the record.
func eventHeader(of record: JournalRecord, tables: EventTables) throws -> (EventRecord.Header, Int?) {
  do {
    return try EventRecord.header(of: record.payload, names: tables.names)
  } catch {
    throw ReplayError(.malformedRecord, sequence: record.sequence, underlying: error.description)
  }
}

/// The name's index, version and event offset of a record (`EventRecord.locate`), for the paths
/// that decode a current event straight into its list or its apply; errors as `eventHeader`'s.
func eventLocation(of record: JournalRecord, tables: EventTables) throws -> EventRecord.Location {
  do {
    return try EventRecord.locate(record.payload, names: tables.names)
  } catch {
    throw ReplayError(.malformedRecord, sequence: record.sequence, underlying: error.description)
  }
}

/// Decodes one record: the event (current versions through `tables`, older ones upcast by
/// `registry`) with its envelope, or a checkpoint record. A free function, so that calling it per
/// record from generic code looks up no generic metadata.
func decodeRecord<M: Model>(_ record: JournalRecord, tables: EventTables, registry: EventRegistry<M>) throws
  -> DecodedRecord
{
  let (header, nameIndex) = try eventHeader(of: record, tables: tables)
  // The checkpoint records' names are the first in `tables.names`, in `Checkpoint.recordNames`' order.
  if let kind = nameIndex ?? Checkpoint.recordNames.firstIndex(of: header.name),
    kind <= EventTables.checkpointDigestNameIndex
  {
    // Version 1 of each is all this code reads: a later one may mean something else by the same
    // fields (a digest by another algorithm), and is refused as any event of an unknown version.
    guard header.version == Checkpoint.version else {
      throw ReplayError(
        .unknownEvent, sequence: record.sequence, name: header.name, version: header.version,
        underlying: "Rewind's own checkpoint records are read at version \(Checkpoint.version) only")
    }
    do {
      let decoder = FieldDecoder()
      switch kind {
      case EventTables.checkpointNameIndex:
        return .checkpoint(
          sequence: record.sequence, try decoder.decode(Checkpoint.self, from: record.payload, at: header.bodyOffset))
      case EventTables.checkpointMarkNameIndex:
        return .checkpointMark(
          sequence: record.sequence,
          try decoder.decode(CheckpointMark.self, from: record.payload, at: header.bodyOffset))
      default:
        return .checkpointDigest(
          sequence: record.sequence,
          try decoder.decode(CheckpointDigest.self, from: record.payload, at: header.bodyOffset))
      }
    } catch {
      throw ReplayError(
        .undecodableEvent, sequence: record.sequence, name: header.name, version: header.version,
        underlying: String(describing: error))
    }
  }
  let event =
    try tables.decode(header, nameIndex: nameIndex, payload: record.payload, sequence: record.sequence)
    ?? registry.decode(header, payload: record.payload, sequence: record.sequence)
  let envelope = Envelope(
    sequence: record.sequence, timestamp: record.timestamp, name: header.name, version: header.version,
    origin: header.origin, commandID: header.commandID)
  return .event(RecordedEvent(envelope: envelope, event: event))
}

/// `records` decoded by `decodeRecord`, last first (as `DecodedRecords` hands them out). Decoded
/// in order, so the first record that does not decode is the error, and each is stored straight
/// into its place from the end: reversing the array afterwards swapped every record through the
/// enum's outlined copy, with a retain and release of each of its parts (about 270 instructions
/// a record).
func decodeReversed<M: Model>(_ records: [JournalRecord], tables: EventTables, registry: EventRegistry<M>) throws
  -> [DecodedRecord]
{
  let count = records.count
  return try [DecodedRecord](unsafeUninitializedCapacity: count) { buffer, initialized in
    var filled = 0
    do {
      for record in records {
        (buffer.baseAddress! + (count - 1 - filled)).initialize(
          to: try decodeRecord(record, tables: tables, registry: registry))
        filled += 1
      }
    } catch {
      // The records decoded before the error sit at the end of the buffer; `initialized` stays 0.
      (buffer.baseAddress! + (count - filled)).deinitialize(count: filled)
      throw error
    }
    initialized = count
  }
}

/// `records` decoded for a caller that only applies them (`DecodedRecords.applyNext`): each event
/// whose name and version are current goes into the list of its type, without an `any Event` box
/// or an envelope; any other record (a checkpoint, an old version to upcast) is decoded by
/// `decodeRecord`. Decoded in order, so the first record that does not decode is the error, as for
/// `decodeReversed`.
func decodeApplicable<M: Model>(_ records: [JournalRecord], tables: EventTables, registry: EventRegistry<M>) throws
  -> ApplicableBatch
{
  var batch = ApplicableBatch()
  batch.steps.reserveCapacity(records.count)
  for record in records {
    let location = try eventLocation(of: record, tables: tables)
    if location.nameIndex != EventTables.checkpointNameIndex,
      try tables.decode(location, payload: record.payload, sequence: record.sequence, into: &batch.lists)
    {
      batch.steps.append(ApplicableBatch.Step(sequence: record.sequence, list: location.nameIndex.unsafelyUnwrapped))
    } else {
      batch.others.append(try decodeRecord(record, tables: tables, registry: registry))
      batch.steps.append(ApplicableBatch.Step(sequence: record.sequence, list: -batch.others.count))
    }
  }
  return batch
}

/// A batch of records decoded for a caller that only applies them: the events of current types in
/// one list per type (by name index), the other records whole, and the order to apply them in.
struct ApplicableBatch: Sendable {
  struct Step: Sendable {
    var sequence: UInt64
    /// The index in `lists` of the list holding this record's event; for a record in `others`,
    /// `-1 - ` its index there.
    var list: Int
  }

  var steps: [Step] = []
  var lists: [DecodedEvents?] = []
  var others: [DecodedRecord] = []
  /// The index in `steps` of the next record to apply.
  var next = 0

  /// Applies the next record to `state` (an event; a checkpoint changes nothing) and returns its
  /// sequence number; nil when every record is applied.
  mutating func applyNext<M: Model>(to state: inout M, tables: EventTables, context: inout ApplyContext) -> UInt64? {
    guard next < steps.count else { return nil }
    let step = steps[next]
    next += 1
    if step.list >= 0 {
      let events = lists[step.list].unsafelyUnwrapped
      withUnsafeMutablePointer(to: &state) { events.applyNext(to: UnsafeMutableRawPointer($0), context: &context) }
    } else if case .event(let recorded) = others[-1 - step.list] {
      tables.apply(recorded.event, to: &state, context: &context)
    }
    return step.sequence
  }

  /// Applies every record not yet applied, in order, to the model `model` points at (of the
  /// model type `tables` were made for), as `applyNext` one after another would: each run of
  /// consecutive events of one type in one call (`DecodedEvents.apply(count:to:context:)`).
  /// Returns how many records it applied and the last one's sequence number; nil if none were left.
  mutating func applyRest(to model: UnsafeMutableRawPointer, tables: EventTables, context: inout ApplyContext)
    -> (count: Int, lastSequence: UInt64)?
  {
    let start = next
    let end = steps.count
    guard start < end else { return nil }
    steps.withUnsafeBufferPointer { steps in
      var index = start
      while index < end {
        let list = steps[index].list
        var runEnd = index + 1
        if list >= 0 {
          while runEnd < end && steps[runEnd].list == list { runEnd += 1 }
          lists[list].unsafelyUnwrapped.apply(count: runEnd - index, to: model, context: &context)
        } else if case .event(let recorded) = others[-1 - list] {
          tables.apply(recorded.event, toModelAt: model, context: &context)
        }
        index = runEnd
      }
    }
    next = end
    return (end - start, steps[end - 1].sequence)
  }
}

/// Moves a non-`Sendable` value into the one thread that uses it from then on.
struct SendableBox<Value>: @unchecked Sendable {
  let value: Value
  init(_ value: Value) { self.value = value }
}

/// A batch handed from the reading thread to the applying one, decoded already or still raw; its
/// records last first (the consumer takes them from the end).
enum RecordBatch: Sendable {
  case decoded([DecodedRecord])
  case raw([JournalRecord])
  /// Decoded for `applyNext` only, in order (not last first).
  case applicable(ApplicableBatch)
}

/// A bounded queue of batches between one producer thread and one consumer, and the way back:
/// batches the consumer has applied (`retire`), which the producer lets go.
///
/// `@unchecked Sendable`: `batches`, `retired`, `head`, `finished`, `cancelled`, `producerDone`,
/// `producerWaits` and `consumerWaits` are read and written only while holding `condition`.
final class RecordQueue: @unchecked Sendable {
  private let condition = NSCondition()
  private let capacity: Int
  private var batches: [Result<RecordBatch, any Error>] = []
  /// Applied batches for the producer to destroy: at most about `capacity` of them, since the
  /// producer takes them each time it reads a batch and the consumer retires only batches it
  /// took from the queue.
  private var retired: [ApplicableBatch] = []
  private var head = 0
  private var finished = false
  private var cancelled = false
  private var producerDone = false
  /// Who sleeps on `condition`: a side is woken only when it waits, and the producer, once it
  /// found the queue full, only when the consumer has taken it down to `refillAt` batches. Waking
  /// it for every batch taken made a full queue cost two thread switches a batch.
  private var producerWaits = false
  private var consumerWaits = false
  private let refillAt: Int

  init(capacity: Int) {
    self.capacity = max(1, capacity)
    self.refillAt = self.capacity / 2
  }

  /// Runs on the producer thread: calls `read` until it returns nil, throws, or the consumer cancels.
  /// `read` is told how many batches wait for the consumer (its backlog) when it is called. The
  /// batches retired to it are destroyed before each call, and when it ends.
  func produce(_ read: (_ backlog: Int) throws -> RecordBatch?) {
    var spent: [ApplicableBatch] = []
    defer {
      condition.lock()
      finished = true
      // The last batches retired: from now on `retire` destroys them itself.
      swap(&spent, &retired)
      condition.broadcast()
      condition.unlock()
      spent = []
      // Only then done, so that a consumer that cancels (or drops the replay) finds every batch
      // it retired destroyed.
      condition.lock()
      producerDone = true
      condition.broadcast()
      condition.unlock()
    }
    while true {
      condition.lock()
      let backlog = batches.count - head
      swap(&spent, &retired)
      condition.unlock()
      // Destroyed here, outside the lock: what the applies left in the events, freed on this
      // thread rather than the applying one.
      spent.removeAll(keepingCapacity: true)
      let item: Result<RecordBatch, any Error>
      do {
        guard let batch = try read(backlog) else { return }
        item = .success(batch)
      } catch {
        item = .failure(error)
      }
      condition.lock()
      while batches.count - head >= capacity && !cancelled {
        producerWaits = true
        condition.wait()
      }
      producerWaits = false
      if cancelled {
        condition.unlock()
        return
      }
      batches.append(item)
      if consumerWaits { condition.signal() }
      condition.unlock()
      if case .failure = item { return }
    }
  }

  /// Hands an applied batch back for the producer to destroy; once the producer has finished, the
  /// batch is destroyed here, by the caller.
  func retire(_ batch: consuming ApplicableBatch) {
    condition.lock()
    if finished {
      condition.unlock()
      return
    }
    retired.append(consume batch)
    condition.unlock()
  }

  /// The next batch, nil when the producer finished; rethrows the producer's error in order.
  func take() throws -> RecordBatch? {
    condition.lock()
    while head == batches.count && !finished {
      consumerWaits = true
      condition.wait()
    }
    consumerWaits = false
    guard head < batches.count else {
      condition.unlock()
      return nil
    }
    let item = batches[head]
    batches[head] = .success(.raw([]))  // the consumer's reference is then the only one
    head += 1
    if head > 64 {
      batches.removeFirst(head)
      head = 0
    }
    if producerWaits && batches.count - head <= refillAt { condition.signal() }
    condition.unlock()
    return try item.get()
  }

  /// Waits until the queue is full (or the producer finished): for tests that need the producer
  /// ahead of the consumer, so that it decodes batches itself.
  func waitUntilFull() {
    condition.lock()
    while batches.count - head < capacity && !finished {
      // A producer asleep until the queue is down to `refillAt` would not fill it: wake it.
      if producerWaits { condition.signal() }
      consumerWaits = true
      condition.wait()
    }
    consumerWaits = false
    condition.unlock()
  }

  /// Stops the producer and waits for its thread to leave the queue, the batches retired to it
  /// destroyed.
  func cancel() {
    condition.lock()
    cancelled = true
    condition.broadcast()
    while !producerDone { condition.wait() }
    condition.unlock()
  }
}
