public import RewindJournal

/// A read-only view of a journal's past: the state at any sequence number or time, stepping,
/// jumping, `diff`, `blame` and `bisect`.
///
/// Side effects are impossible by construction: a time machine holds a `JournalReader` (which
/// takes no lock and writes nothing) and plain model values. It has no journal writer, no manager,
/// no observers and no jobs; applying an event to a value is a pure function.
///
/// Seeking costs O(interval) applied events, not O(history): a seek starts from the nearest state
/// at or before its target among the in-memory keyframes (the state at every
/// `keyframeInterval`-th sequence number passed on the way, at most `maxKeyframes` of them, the
/// least recently used dropped first) and the usable snapshots on disk (written every N records by
/// the manager's `maintain` job or `rewind snapshot`). It reads a snapshot only when no keyframe is
/// within `keyframeSpacing` of the target and reading the file costs less than replaying from the
/// nearest keyframe: a file of B bytes counts as B / 400 records (reading and checking a state
/// costs in proportion to the whole state, a replay only to the distance). With snapshots every N
/// records a seek applies fewer than N + B / 400 records (of the snapshot it passed over as
/// dearer), or `keyframeSpacing` when that is more; a seek near a keyframe applies fewer than the
/// spacing. A seek whose replay meets damage (a frame that fails
/// its checksum, a missing segment) starts again from the newest usable snapshot after the
/// damage, if one lies at or before its target, however much dearer that is.
/// `prepare()` lays keyframes over the whole history in one replay (or as far as a memory limit
/// allows: ``prepare(memoryLimit:through:)``), after which every seek up to the last of them applies fewer
/// than their spacing (`KeyframeCoverage.spacing`) records and, after a whole history's, reads
/// no file but the journal. Keyframes are
/// cheap to keep: a `Store` shares its unchanged nodes with its copies, so those passed in one
/// replay share what did not change between them. A state read from a snapshot file shares
/// nothing with the others: the keyframe kept at it, and those replayed from it, hold a state
/// of their own.
/// `recordsApplied` counts the work. Not thread-safe: one user at a time.
///
/// A journal cut under it (by `rewind repair`) and written again has other records under the
/// numbers its keyframes stand for: every call that reads records first reads the header of the
/// batch that ended the journal as last read, at its place, and throws `JournalError`
/// `.shortened` when it is no longer there, rather than apply the new records to a state of the
/// old. Open a new time machine then.
public final class TimeMachine<M: SnapshotModel> {
  private let reader: JournalReader
  private let registry: EventRegistry<M>
  private let snapshots: SnapshotStore?
  private var options = ReplayOptions()
  private var keyframes: [UInt64: (state: M, used: UInt64)] = [:]
  private var uses: UInt64 = 0
  private let interval: UInt64
  private let maxKeyframes: Int
  /// Records between the keyframes seeks keep: `interval`, or wider after `prepare()` (unless its
  /// memory limit stopped it).
  public private(set) var keyframeSpacing: UInt64
  /// The spacing of the keyframes the last `prepare` laid (nil before one): `keep` drops them
  /// last.
  private var preparedSpacing: UInt64?

  /// The last sequence number of the journal as last read (see `refresh()`); `UInt64.max` while
  /// damage hides it (`endHiddenBy`).
  public private(set) var lastSequence: UInt64
  /// The damage that hid the journal's end when it was last read (a damaged frame past the
  /// sparse index's last entry, committed records gone at the end or in a segment missing between
  /// intact ones), or nil. States before it are served as from an intact journal; a seek that
  /// reaches it, and `prepare()`, throw the journal's error locating it. Damage before the index's
  /// last entry hides no end: a seek that replays through it throws it.
  public private(set) var endHiddenBy: JournalError?
  /// The last sequence number read intact before the damage that hides the journal's end
  /// (`endHiddenBy`), when the journal was last read; `lastSequence` while nothing hides it.
  /// `blame`, `bisect`, `firstFailure`, `commandEnd` and `prepare` look at the records up to it
  /// when given it as `through`: without it they read to the end, and so throw the damage.
  public private(set) var lastIntactSequence: UInt64
  /// The journal's end as last read, with the batch that ended it: every call that reads records,
  /// and `refresh()` before it takes records past it, checks that the batch is still there
  /// (`checkEndInPlace()`; nil while damage hides the end, when `intactBatch` is checked instead).
  /// Internal, not private, for the tests that check which batch it checks. After a compaction
  /// its batch is the compacted frame that holds the records of the batch read (`batchAsRead`).
  private(set) var end: JournalEnd?
  /// The batch that ended the journal when it was read (at opening or the last refresh), which
  /// `end` names until a compaction moves its records.
  private var batchAsRead: BatchPlace?
  /// While damage hides the end (`end` nil): the batch that holds `lastIntactSequence`, the last
  /// record served, which `checkEndInPlace()` checks as it checks `end`'s batch otherwise (nil
  /// when there is no such record, or it could not be found). A journal cut below it and written
  /// again has other records under the numbers served.
  private var intactBatch: BatchPlace?
  /// While damage hides the end: the furthest record served past the damage (from a snapshot
  /// after it) and the batch that holds it, which `checkEndInPlace()` checks too. A repair moves
  /// that part aside and a writer numbers new records over it: the states kept past the damage
  /// then stand for records gone, and `intactBatch`, before the damage, is still in place. Nil
  /// when nothing past the damage was served.
  private var servedPastDamage: (sequence: UInt64, batch: BatchPlace)?
  /// Where the time machine stands: `state` is the state after this record (0: the empty state).
  public private(set) var position: UInt64 = 0
  /// The state at `position`.
  public private(set) var state = M()
  /// The snapshots skipped, with why, by the last seek that looked for a snapshot file to start
  /// from (each such seek replaces the list; one that reads none leaves it), newest first: those
  /// it found unusable, and those an earlier seek found unusable, which it passed over unread.
  public private(set) var skippedSnapshots: [SnapshotProblem] = []
  /// Snapshot files found unusable, with why: not read again, and passed over for the usable
  /// ones before them.
  private var unusableSnapshots: [UInt64: SnapshotProblem] = [:]
  /// Records applied by every seek so far: the cost of time travel, for tests and benchmarks.
  public private(set) var recordsApplied = 0
  /// Times a seek looked for a snapshot file to start from.
  public private(set) var snapshotsRead = 0
  /// Called as seeks, `blame` and `firstFailure` apply records: every
  /// `ReplayOptions.progressInterval` records and at the end of each pass. For progress displays.
  public var progress: ((ReplayProgress) -> Void)?

  /// Opens the journal in `directory` for reading, standing at the empty state. Reads it whatever
  /// limits it was written with (`JournalLimits.largest`).
  /// - Parameters:
  ///   - directory: the journal's directory.
  ///   - keyframeInterval: records between kept states; seeking replays at most about this many.
  ///   - maxKeyframes: the most states kept at once (at least 2); past it, the least recently
  ///     used one goes, and `prepare()` spaces its keyframes to fit.
  ///   - useSnapshots: start seeks from snapshot files when they are closer than any keyframe.
  public init(
    directory: String, keyframeInterval: UInt64 = 1024, maxKeyframes: Int = 1024, useSnapshots: Bool = true
  ) throws {
    // Every seek opens a cursor: the sparse index is loaded once, not at each (see `refresh()`).
    reader = try Replay.reader(directory, cachingIndex: true)
    registry = M.makeRegistry()
    snapshots = useSnapshots ? SnapshotStore(journal: directory) : nil
    interval = max(1, keyframeInterval)
    keyframeSpacing = interval
    self.maxKeyframes = max(2, maxKeyframes)
    do {
      end = try reader.end()
      batchAsRead = end?.batch
    } catch let damage as JournalError where damage.isDamage {
      end = nil
      endHiddenBy = damage
    }
    lastSequence = end?.lastSequence ?? .max
    lastIntactSequence = try end?.lastSequence ?? reader.intactEnd().last
    if end == nil, lastIntactSequence > 0 {
      // Also when a segment missing after it hides the end: read around it, as replay reads the
      // records before it.
      intactBatch = try? reader.batch(holding: lastIntactSequence, readingAroundMissingSegments: true)
      batchAsRead = intactBatch
    }
    options.verifyCheckpoints = false
  }

  /// Sees records written since the journal was last read (and the index entries written for them),
  /// and the snapshots that the journal's growth makes usable: those found past its end before,
  /// which now lie within it, are looked at again. Before it takes the new end, it reads the
  /// header of the batch that ended the journal as last read at its place again (one read): the
  /// records it holds must be the ones read.
  /// - Throws: `JournalError` `.shortened` when the journal now ends before `lastSequence`
  ///   (records were moved aside by a repair, or the directory replaced), or when the batch that
  ///   ended it is no longer there as read (the journal was cut at or before it and written
  ///   again, to the same end or past it: other records stand under the same numbers). The
  ///   states this time machine holds may show records that are gone, so it serves none of them
  ///   as current. It is left as it was; open a new one. Other `JournalError`s when the journal
  ///   cannot be read, damage that hides its end among them (it is left as it was). One opened
  ///   with its end hidden takes the end once it can be read, having checked that the records it
  ///   served (through `lastIntactSequence`) are still there, as for an end it read.
  public func refresh() throws {
    reader.dropCachedIndex()
    let before = endHiddenBy == nil ? lastSequence : lastIntactSequence
    let now = try reader.end()
    guard now.lastSequence >= before else { throw shortened(endingAt: now.lastSequence, before: before) }
    // States served past the damage stand on records the new end may not hold as read.
    try checkServedPastDamage()
    if (end?.batch ?? intactBatch) != now.batch { try checkEndInPlace() }
    end = now
    intactBatch = nil
    servedPastDamage = nil
    batchAsRead = now.batch
    lastSequence = now.lastSequence
    lastIntactSequence = now.lastSequence
    endHiddenBy = nil
    // Every snapshot marked unusable since the last refresh was judged against `before`: one
    // past it was unusable for that alone. Damaged ones stay skipped.
    unusableSnapshots = unusableSnapshots.filter { $0.key <= before || $0.key > lastSequence }
  }

  /// Throws `.shortened` unless the batch that ended the journal as last read is still there as
  /// read (one read of its header, at its place): a journal cut at or before it and written again
  /// has other records under its numbers, which a seek from a keyframe would apply to a state of
  /// the records gone, serving a state of neither history. Every call that reads records checks it
  /// first (the cut goes unseen only while it happens during that call), and serves nothing once it
  /// is gone: a journal that now ends before it may have been written again below its end too.
  /// While damage hides the end, the batch that holds the last record read intact is checked
  /// instead (`intactBatch`). Once compaction has rewritten
  /// the batch's segment with the same records, the compacted frame that holds the last of them
  /// is checked from then on (one header read again, not that frame's records at every call).
  private func checkEndInPlace() throws {
    try checkServedPastDamage()
    guard let checked = end?.batch ?? intactBatch else { return }
    if let now = try reader.place(of: checked) {
      if now != checked { moveCheckedBatch(to: now) }
      return
    }
    // The compacted frame checked since may be gone while the batch as read stands in its place
    // again (the files from before the compaction put back): its records are the ones read.
    let read = batchAsRead ?? checked
    if read != checked, let now = try reader.place(of: read) {
      moveCheckedBatch(to: now)
      return
    }
    let now = journalEnd(atMost: lastIntactSequence)
    if now < lastIntactSequence { throw shortened(endingAt: now, before: lastIntactSequence) }
    let file = Layout.segmentName(firstSequence: read.segment)
    throw JournalError(
      .shortened,
      "the journal was cut and written again since this time machine read it: the batch that ended it then is "
        + "no longer there, other records stand under its numbers (and perhaps under earlier ones), and its "
        + "states may show the records gone",
      directory: reader.directory, file: file, offset: read.offset, sequences: read.header.sequences)
  }

  /// Throws `.shortened` unless the batch of the furthest record served past the damage that hides
  /// the end (`servedPastDamage`) is still there as read (moved by a compaction: followed).
  private func checkServedPastDamage() throws {
    guard end == nil, let served = servedPastDamage else { return }
    if let now = try reader.place(of: served.batch) {
      if now != served.batch { servedPastDamage = (served.sequence, now) }
      return
    }
    throw JournalError(
      .shortened,
      "the journal was cut and written again since this time machine read it past the damage that hid its end: "
        + "the batch that held the last record it served there is no longer there as read, and its states may "
        + "show records gone",
      directory: reader.directory, file: Layout.segmentName(firstSequence: served.batch.segment),
      offset: served.batch.offset, sequences: (lastIntactSequence + 1)...served.sequence)
  }

  /// Takes `place` for the batch `checkEndInPlace()` checks from now on (`end`'s, or while damage
  /// hides the end, `intactBatch`).
  private func moveCheckedBatch(to place: BatchPlace) {
    if end != nil { end?.batch = place } else { intactBatch = place }
  }

  /// Where the journal's intact records end now, at most `bound` (where a read just found them
  /// ending): `intactEnd()` read again, for the error of a journal that got shorter.
  private func journalEnd(atMost bound: UInt64) -> UInt64 {
    min((try? reader.intactEnd().last) ?? bound, bound)
  }

  /// The journal ends at `now`, before `before`, the end this time machine read: records were
  /// moved aside (by a repair) or the directory replaced.
  private func shortened(endingAt now: UInt64, before: UInt64) -> JournalError {
    JournalError(
      .shortened,
      "the journal now ends at sequence \(now), before the end this time machine read (\(before)): "
        + "the records after it are gone, and its states may show them",
      directory: reader.directory, sequences: (now + 1)...max(now + 1, before))
  }

  // MARK: Moving

  /// Moves to the state after record `sequence` (clamped to the journal) and returns it.
  @discardableResult
  public func jump(to sequence: UInt64) throws -> M {
    let target = min(sequence, lastSequence)
    state = try state(at: target)
    position = target
    return state
  }

  /// Moves `count` records forward (or back, when negative), stopping at either end.
  @discardableResult
  public func step(by count: Int = 1) throws -> M {
    let target =
      count >= 0
      ? position.addingReportingOverflow(UInt64(count)).partialValue
      : position - min(position, UInt64(count.magnitude))
    return try jump(to: target)
  }

  /// The last sequence number the state at `timestamp` includes (see `ReplayTarget.time`).
  public func sequence(atTime timestamp: Int64) throws -> UInt64 {
    try checkEndInPlace()
    return try Replay.resolve(.time(timestamp), reader: reader)
  }

  /// Moves to the state at `timestamp` (see `ReplayTarget.time`).
  @discardableResult
  public func jump(toTime timestamp: Int64) throws -> M {
    try jump(to: sequence(atTime: timestamp))
  }

  /// Lays keyframes over the whole journal in one replay, so that every later seek starts
  /// within `keyframeSpacing` records of its target: the spacing becomes the larger of the
  /// keyframe interval and the history divided among `maxKeyframes`. Memory: stores share what
  /// did not change between keyframes (see `Store`), so the keyframes cost what the history
  /// changed, not `maxKeyframes` copies of the state: the nodes on the path to each record
  /// changed between two keyframes (`keyframeFootprint`; about 1.5 KB per event of the
  /// benchmark's Notebook history). Costs one replay, from the keyframe before the first one
  /// missing (or the empty state) through the last, reading no snapshot; seeks after it never
  /// read snapshot files either (unless the memory limit stopped it).
  ///
  /// - Parameter memoryLimit: the bytes of tree nodes this time machine's keyframes may hold
  ///   before `prepare` stops laying them, those kept before the call included, counted as
  ///   `keyframeFootprint` counts them (nil: no limit). `prepare` stops at the first keyframe
  ///   that takes them past it, keeping that one (so they may end past the limit by its new
  ///   nodes, also when it is the last keyframe, which stops nothing: `stoppedByLimit` is then
  ///   false), and lays none when they are past it already: the keyframes then cover the history through the
  ///   last one it reached (`KeyframeCoverage.through`), and a seek up to `spacing − 1` past
  ///   that starts within the spacing. Seeks then keep keyframes every `keyframeInterval`
  ///   records they pass again (`keyframeSpacing` goes back to it), as without `prepare`: at
  ///   every multiple of the wider spacing, a seek to the end of a long history would lay the
  ///   keyframes the limit refused. Those keyframes count toward `maxKeyframes`, the least
  ///   recently used dropped first, but the ones `prepare` laid only when no other is left: so
  ///   the limit bounds what `prepare` lays, and seeks after it keep what seeks keep without
  ///   it. The count errs high: a keyframe the replay drops or lays again still counts. A later
  ///   call goes on from the last keyframe, under the limit it is given. With a limit, the
  ///   nodes are counted as each keyframe is laid, each new node once, in a set of their
  ///   addresses (`StorageCensus`): 32 MB for the 2 million nodes of the benchmark's 1M-event
  ///   history (1,511 MB), and about a quarter more time (Benchmarks/HISTORY.md, "A memory
  ///   limit for `prepare` (Dec 4)").
  /// - Returns: the spacing, how far the keyframes reach, and whether the limit stopped them.
  /// - Parameter through: the last sequence number the keyframes cover (nil: `lastSequence`;
  ///   `lastIntactSequence` lays them over the records before damage that hides the end).
  /// - Throws: `endHiddenBy`, laying nothing, when damage hides the journal's end and `through`
  ///   is nil or past `lastIntactSequence`; a `JournalError` locating damage the replay meets
  ///   (the keyframes laid before it stay, and seeks keep keyframes every `keyframeInterval`
  ///   records again, as after a memory limit stopped it).
  @discardableResult
  public func prepare(memoryLimit: Int? = nil, through: UInt64? = nil) throws -> KeyframeCoverage {
    // Past the records read intact (`lastSequence` is then `UInt64.max`), the replay would reach
    // the damage: it is thrown before any keyframe is laid or the spacing is reckoned from a
    // number no journal reaches (which overflowed).
    if let endHiddenBy, through.map({ $0 > lastIntactSequence }) ?? true { throw endHiddenBy }
    try checkEndInPlace()
    let end = min(through ?? lastSequence, lastSequence)
    let spacing = max(interval, (end + UInt64(maxKeyframes) - 2) / UInt64(maxKeyframes - 1))
    keyframeSpacing = spacing
    preparedSpacing = spacing
    let last = end / spacing * spacing
    // One replay, from the keyframe before the first one missing through the last one: every
    // keyframe on the way is kept (again) as it is passed.
    guard
      let missing = stride(from: spacing, through: last, by: Int(spacing)).first(where: { keyframes[$0] == nil })
    else { return KeyframeCoverage(spacing: spacing, through: last, stoppedByLimit: false) }
    let (base, start) = nearestKeyframe(atOrBefore: missing - 1)
    guard let memoryLimit else {
      do {
        _ = try replay(from: base, after: start, through: last)
      } catch {
        // As below: damage ended the keyframes short, and seeks past them keep keyframes every
        // `keyframeInterval` records again, not at the wide spacing.
        keyframeSpacing = interval
        throw error
      }
      return KeyframeCoverage(spacing: spacing, through: last, stoppedByLimit: false)
    }
    // Every keyframe counts, `base` among them (or it is the empty state). The census knows a
    // node by its address, so what it counted stays alive until it ends: the keyframes kept
    // before are held here (the replay may drop some of them from `keyframes`), and of those it
    // lays, at most `maxKeyframes − 1`, each used more recently than any other, none is dropped.
    let held = keyframes.values.map(\.state)
    var census = StorageCensus()
    for state in held { census.add(state) }
    var through = start
    var stopped = census.footprint.bytes > memoryLimit
    if !stopped {
      do {
        _ = try replay(from: base, after: start, through: last) { sequence, state in
          through = sequence
          census.add(state)
          if sequence < last, census.footprint.bytes > memoryLimit { throw KeyframeLimitReached() }
        }
      } catch is KeyframeLimitReached {
        stopped = true
      } catch {
        // Damage ended the keyframes short: as when the limit stops them (below), seeks past them
        // keep keyframes every `keyframeInterval` records again, not at the wide spacing.
        keyframeSpacing = interval
        throw error
      }
    }
    withExtendedLifetime(held) {}
    guard stopped else { return KeyframeCoverage(spacing: spacing, through: last, stoppedByLimit: false) }
    keyframeSpacing = interval
    return KeyframeCoverage(spacing: spacing, through: through, stoppedByLimit: true)
  }

  /// Thrown inside `prepare(memoryLimit:through:)`'s replay to end it at the keyframe that passed the limit.
  private struct KeyframeLimitReached: Error {}

  // MARK: Looking

  /// The state after record `sequence` (clamped to the journal), without moving.
  public func state(at sequence: UInt64) throws -> M {
    try state(at: sequence, readingSnapshots: true)
  }

  private func state(at sequence: UInt64, readingSnapshots: Bool) throws -> M {
    let served = try seek(sequence, readingSnapshots: readingSnapshots)
    // Past the damage that hides the end (from a snapshot after it): its batch is checked from
    // now on, as `intactBatch` is.
    let target = min(sequence, lastSequence)
    if end == nil, target > lastIntactSequence, target > servedPastDamage?.sequence ?? 0,
      let batch = try? reader.batch(holding: target, readingAroundMissingSegments: true)
    {
      servedPastDamage = (target, batch)
    }
    return served
  }

  private func seek(_ sequence: UInt64, readingSnapshots: Bool) throws -> M {
    // Before a snapshot is read and kept: after a cut, it may stand for the other history.
    try checkEndInPlace()
    let target = min(sequence, lastSequence)
    var (base, start) = nearestKeyframe(atOrBefore: target)
    if position <= target && position >= start {
      base = state
      start = position
    }
    // A snapshot is read only when no keyframe lies within the spacing and reading it costs less
    // than replaying from where the seek would otherwise start: reading and checking one costs in
    // proportion to the whole state, replaying only to the distance.
    if readingSnapshots, let snapshots, target - start > keyframeSpacing,
      // The closest not found unusable before: one that was is not read again, nor does it keep
      // the seek from the usable ones before it.
      let closest = snapshots.sequences().last(where: { $0 <= target && unusableSnapshots[$0] == nil }),
      closest > start,
      Self.snapshotIsCheaper(bytes: snapshots.fileBytes(closest), at: closest, than: start, toward: target),
      let snapshot = readSnapshot(atOrBefore: closest, toward: target), snapshot.sequence > start
    {
      (base, start) = snapshot
      keep(base, at: start)
    }
    do {
      return try replay(from: base, after: start, through: target)
    } catch let damage as JournalError where damage.isDamage && readingSnapshots {
      // The replay met damage before the target. Only a read that reaches damage meets it: a
      // usable snapshot after it (passed over as dearer than the replay) serves the target still.
      let after = max(start, damage.sequences?.upperBound ?? start)
      guard let snapshots,
        let closest = snapshots.sequences().last(where: { $0 <= target && unusableSnapshots[$0] == nil }),
        closest > after, let snapshot = readSnapshot(atOrBefore: closest, toward: target), snapshot.sequence > after
      else { throw damage }
      keep(snapshot.state, at: snapshot.sequence)
      return try replay(from: snapshot.state, after: snapshot.sequence, through: target)
    }
  }

  /// Reads the newest usable snapshot at or before `closest` (for a seek to `target`), noting
  /// those found unusable (`skippedSnapshots`); nil if none is usable.
  private func readSnapshot(atOrBefore closest: UInt64, toward target: UInt64) -> (state: M, sequence: UInt64)? {
    guard let snapshots else { return nil }
    let found = snapshots.latest(M.self, atOrBefore: closest, lastSequence: lastSequence)
    // Those passed over unread are skipped too: newest first, as `latest` lists its own.
    let passed = unusableSnapshots.values.filter { $0.sequence > closest && $0.sequence <= target }
    skippedSnapshots = (passed + found.problems).sorted { $0.sequence > $1.sequence }
    for problem in found.problems { unusableSnapshots[problem.sequence] = problem }
    snapshotsRead += 1
    return found.snapshot
  }

  /// Snapshot file bytes read and checked in about the time a seek replays one record. Measured
  /// with the Notebook model on its 1M-event journal (Benchmarks/HISTORY.md): the 46 MB snapshot at
  /// its end read and checked in 0.56 s (12 ns a byte), and a seek's replay, which keeps a
  /// keyframe every 1,024 records, at about 5 µs a record (`prepare()` of the journal: 4.95 s).
  static var snapshotBytesPerRecord: Int64 { 400 }

  /// Whether starting from the snapshot after record `snapshot`, of `bytes` bytes (nil: unknown),
  /// costs less than replaying records `start+1 ... target`: the file counted as
  /// `snapshotBytesPerRecord` bytes a record, plus the records after it. An unknown size is read:
  /// reading finds what is wrong with the file.
  static func snapshotIsCheaper(bytes: Int64?, at snapshot: UInt64, than start: UInt64, toward target: UInt64)
    -> Bool
  {
    guard let bytes else { return true }
    let reading = UInt64(max(0, bytes) / snapshotBytesPerRecord) + (target - snapshot)
    return reading < target - start
  }

  /// The state after applying records `start+1 ... target` to `base`, keeping a keyframe at every
  /// multiple of the spacing passed, and calling `laid` with each one kept (it may throw to end
  /// the replay there).
  private func replay(
    from base: M, after start: UInt64, through target: UInt64, laid: ((UInt64, M) throws -> Void)? = nil
  ) throws -> M {
    var result = base
    // Within the spacing (every seek after a whole `prepare()`), the records are read and
    // decoded on this thread: a reading thread costs more to start and hand batches over than it
    // saves on so few records, and on a busy machine it may wait for a core.
    var options = options
    if target - start <= keyframeSpacing { options.batchesInFlight = 0 }
    let applied = try Replay.apply(
      registry: registry, reader: reader, to: &result, after: start, through: target, options: options,
      progress: progress,
      observe: nil,
      observeSequence: { [self] sequence, state in
        if sequence % keyframeSpacing == 0 {
          keep(state, at: sequence)
          try laid?(sequence, state)
        }
      }, applied: { [self] _ in recordsApplied += 1 })
    // The records stopped before the target: not the target's state. Damage hid the end there,
    // or records read intact are gone since (the journal got shorter without a `refresh()`,
    // which would say so).
    if applied.lastSequence < target {
      if let endHiddenBy, applied.lastSequence >= lastIntactSequence { throw endHiddenBy }
      throw shortened(endingAt: journalEnd(atMost: applied.lastSequence), before: lastIntactSequence)
    }
    return result
  }

  /// The state at `timestamp` (see `ReplayTarget.time`), without moving.
  public func state(atTime timestamp: Int64) throws -> M {
    try state(at: sequence(atTime: timestamp))
  }

  /// The event recorded at `sequence`, or nil if it is a checkpoint or lies past `lastSequence`:
  /// the journal's end as this time machine last read it, where its other calls stop too (records
  /// written since are seen after `refresh()`). A segment missing after it is not read, as seeks
  /// do not read it (it throws when it holds `sequence`).
  /// - Throws: `JournalError` `.shortened` when the record is gone since the end was read (the
  ///   journal now ends before it), as `refresh()` would say, also when damage hid the end past
  ///   it; damage where it lies.
  public func event(at sequence: UInt64) throws -> RecordedEvent? {
    guard sequence > 0, sequence <= lastSequence else { return nil }
    try checkEndInPlace()
    guard let record = try reader.record(sequence, readingAroundMissingSegments: true) else {
      // Past the records read intact (damage hid the end there): none to have lost.
      guard sequence <= lastIntactSequence else { return nil }
      throw shortened(endingAt: journalEnd(atMost: sequence - 1), before: lastIntactSequence)
    }
    if case .event(let recorded) = try DecodedRecords.decode(record, registry: registry) { return recorded }
    return nil
  }

  /// The first event after `sequence` (through `lastSequence`) for which `predicate` holds, read in
  /// one forward pass; nil if there is none.
  public func firstEvent(after sequence: UInt64, where predicate: (RecordedEvent) -> Bool) throws -> RecordedEvent? {
    guard sequence < lastSequence else { return nil }
    try checkEndInPlace()
    let records = try DecodedRecords(
      registry: registry, reader: reader, first: sequence + 1, last: lastSequence, options: options)
    while let record = try records.next() {
      if case .event(let recorded) = record, predicate(recorded) { return recorded }
    }
    return nil
  }

  /// The record-level changes from the state after `from` to the state after `to`.
  public func diff(from: UInt64, to: UInt64) throws -> StateDiff {
    StateDiff.between(try state(at: from), try state(at: to), from: from, to: to)
  }

  // MARK: Blame and bisect

  /// Every event that touched the record `id` of `store` (through `lastSequence`), with the record
  /// after each (nil once removed). Replays the whole journal. `through` ends the pass there (nil:
  /// at `lastSequence`; see `lastIntactSequence`).
  public func blame<R>(_ store: KeyPath<M, Store<R>>, id: R.ID, through: UInt64? = nil) throws -> [Blame<R>] {
    let key = ChangeKey.record(M()[keyPath: store].name, id)
    return try blame(key, through: through) { state in state[keyPath: store].find(id: id) }
  }

  /// Every event that changed the value store, with the value after each. `through` ends the
  /// pass there (nil: at `lastSequence`; see `lastIntactSequence`).
  public func blame<V>(_ store: KeyPath<M, ValueStore<V>>, through: UInt64? = nil) throws -> [Blame<V>] {
    try blame(ChangeKey.value(M()[keyPath: store].name), through: through) { state in state[keyPath: store].value }
  }

  /// Every event that touched the entity `id` (a record's id as text, in whichever store holds
  /// it, or a value store's name), with the record after each (nil once removed). One pass over
  /// the journal's events; an id no event touched gives an empty list. When records of two
  /// stores have ids of that text, the store the first event touched is the one listed
  /// (`blameNamingOtherStores` names the others). Formats the ids of the records each event
  /// touched: the record after a match is found by its id.
  /// `through` ends the pass there (nil: at `lastSequence`; see `lastIntactSequence`). An
  /// identifier typed in capitals that no event touched as typed is looked for again as the
  /// lowercase digits stores key records by (another pass).
  public func blame(entity id: String, through: UInt64? = nil) throws -> [EntityBlame] {
    try blameNamingOtherStores(entity: id, through: through).entries
  }

  /// `blame(entity:through:)`, and the other stores (sorted by name) whose records of that id's
  /// text events touched too, which it does not list. `store`: list the records of that store
  /// (or the value store of that name, when it is `id`), not the first store touched.
  package func blameNamingOtherStores(entity id: String, in store: String? = nil, through: UInt64? = nil) throws
    -> (entries: [EntityBlame], otherStores: [String])
  {
    let spellings = Identifier.spellings(of: id)
    for spelling in spellings.dropLast() {
      let found = try blame(spelledAs: spelling, in: store, through: through)
      if !found.entries.isEmpty { return found }
    }
    return try blame(spelledAs: spellings[spellings.count - 1], in: store, through: through)
  }

  private func blame(spelledAs id: String, in store: String?, through: UInt64?) throws -> (
    entries: [EntityBlame], otherStores: [String]
  ) {
    // The store the first match pinned (another store may hold a record with the same id's
    // text), and the record's id as its store types it (nil for a value store).
    var found: (store: String, id: (any Sendable)?)?
    var entries: [EntityBlame] = []
    var others: Set<String> = []
    try forEachEvent(keepingRecordIDs: true, wholeCommands: false, through: through) {
      recorded, state, touched, touchedRecords in
      var matched = false
      for record in touchedRecords {
        let pinned =
          found.map { $0.store == record.store && $0.id != nil } ?? (store.map { $0 == record.store } ?? true)
        guard String(describing: record.id) == id else { continue }
        if !pinned {
          others.insert(record.store)
        } else if !matched {
          found = (record.store, record.id)
          matched = true
        }
      }
      if !matched, found.map({ $0.id == nil }) ?? (store.map { $0 == id } ?? true), touched.contains(.value(id)) {
        found = (id, nil)
        matched = true
      } else if touched.contains(.value(id)), found.map({ $0.id != nil }) ?? (store != nil) {
        others.insert(id)  // a value store of that name, beside the records listed
      }
      guard matched, let found else { return true }
      let holder = StateInspector.stores(of: state).first { $0.name == found.store }
      let after: (any Sendable)? =
        if let recordID = found.id { holder?.record(id: recordID) } else { holder?.record(described: "") }
      entries.append(EntityBlame(event: recorded, store: found.store, id: id, after: after))
      return true
    }
    return (entries, others.sorted())
  }

  private func blame<V: Sendable>(_ key: ChangeKey, through: UInt64?, read: (M) -> V?) throws -> [Blame<V>] {
    try blame(matching: { $0 == key }, through: through, read: read)
  }

  private func blame<V: Sendable>(matching: (ChangeKey) -> Bool, through: UInt64?, read: (M) -> V?) throws
    -> [Blame<V>]
  {
    var entries: [Blame<V>] = []
    try forEachEvent(keepingRecordIDs: false, wholeCommands: false, through: through) { recorded, state, touched, _ in
      if touched.contains(where: matching) { entries.append(Blame(event: recorded, after: read(state))) }
      return true
    }
    return entries
  }

  /// The first event after `position` (through `lastSequence`; `through` ends the pass sooner)
  /// that touched the entity `id`: a record whose id's text is `id`, in any store, or the value
  /// store named `id`. Found by replaying on from the state at `position`, not from the start as
  /// `blame(entity:)` replays: what `rewind debug`'s `find entity` moves to. Nil when none does.
  /// An identifier typed in capitals that no event after `position` touched as typed is looked
  /// for again as the lowercase digits stores key records by (another pass).
  package func nextEvent(touchingEntity id: String, through: UInt64? = nil) throws -> RecordedEvent? {
    for spelling in Identifier.spellings(of: id) {
      var found: RecordedEvent?
      try forEachEvent(keepingRecordIDs: true, wholeCommands: false, through: through, from: (state, position)) {
        recorded, _, touched, touchedRecords in
        guard touched.contains(.value(spelling)) || touchedRecords.contains(where: { "\($0.id)" == spelling }) else {
          return true
        }
        found = recorded
        return false
      }
      if let found { return found }
    }
    return nil
  }

  /// Applies the records through `lastSequence` to the empty state, recording what each touched,
  /// and after each event calls `body` with it, the state after it, the keys it touched and (when
  /// `keepingRecordIDs`, when they stand for the records' keys) the ids of the records it touched;
  /// stops after an event for which `body` returns false. With `wholeCommands`, only after the
  /// last event of each command (the next event's command id differs, or the journal ends), with
  /// what the command's events touched: the states readers see (TheFunnel.md). Reports
  /// progress as seeks do, and where it stopped. `start`: the state after record `sequence` to
  /// apply the records after it to, instead of the empty state (its events are not shown again).
  private func forEachEvent(
    keepingRecordIDs: Bool, wholeCommands: Bool, through: UInt64? = nil,
    from start: (state: M, sequence: UInt64)? = nil,
    _ body: (RecordedEvent, M, Set<ChangeKey>, [(store: String, id: any Sendable)]) throws -> Bool
  ) throws {
    let lastSequence = min(through ?? self.lastSequence, self.lastSequence)
    let first = (start?.sequence ?? 0) + 1
    guard lastSequence >= first else { return }
    try checkEndInPlace()
    let records = try DecodedRecords(
      registry: registry, reader: reader, first: first, last: lastSequence, options: options)
    var state = start?.state ?? M()
    var context = ApplyContext(keepingRecordIDs: keepingRecordIDs)
    var count = 0
    let interval = max(1, options.progressInterval)
    /// The last event applied, not yet shown to `body`: with `wholeCommands`, until the next
    /// event (or the end) says whether its command goes on.
    var pending: RecordedEvent?
    func show(_ recorded: RecordedEvent, stoppingAt sequence: UInt64) throws -> Bool {
      pending = nil
      guard try body(recorded, state, context.touched, context.touchedRecordIDs) else {
        progress?(ReplayProgress(sequence: sequence, target: lastSequence, recordsApplied: count))
        return false
      }
      context.touched.removeAll(keepingCapacity: true)
      context.touchedRecordIDs.removeAll(keepingCapacity: true)
      return true
    }
    while let record = try records.next() {
      count += 1
      if let progress, count % interval == 0 {
        progress(ReplayProgress(sequence: record.sequence, target: lastSequence, recordsApplied: count))
      }
      guard case .event(let recorded) = record else { continue }  // a checkpoint changes nothing
      if let before = pending, before.envelope.commandID != recorded.envelope.commandID {
        guard try show(before, stoppingAt: before.envelope.sequence) else { return }
      }
      registry.apply(recorded.event, to: &state, context: &context)
      pending = recorded
      if !wholeCommands, try !show(recorded, stoppingAt: record.sequence) { return }
    }
    if let last = pending, try !show(last, stoppingAt: lastSequence) { return }
    progress?(ReplayProgress(sequence: lastSequence, target: lastSequence, recordsApplied: count))
  }

  /// The last sequence number of the command whose record is at `sequence`: the records after it
  /// while they are events with its command id, through `lastSequence` (`sequence` itself when it
  /// is 0, or not an event). Readers see the state after a whole command, never between its
  /// events (<doc:TheFunnel>): the state at `sequence` is one a reader sees when this
  /// returns `sequence`. `through` ends the command there at the latest (nil: `lastSequence`; see
  /// `lastIntactSequence`).
  public func commandEnd(from sequence: UInt64, through: UInt64? = nil) throws -> UInt64 {
    let lastSequence = min(through ?? self.lastSequence, self.lastSequence)
    guard sequence > 0, sequence < lastSequence else { return sequence }
    try checkEndInPlace()
    // One cursor over the command's records: a command of many events (a sync pull) lies in
    // one frame, which `record(_:)` per event would decode again for each. A missing segment
    // is met only if the command reaches it, as a seek meets it.
    let records = try reader.records(from: sequence, readingAroundMissingSegments: true)
    guard let first = try records.next(), let command = try? EventRecord.header(of: first.payload).commandID else {
      return sequence
    }
    var end = sequence
    while end < lastSequence, let next = try records.next(),
      (try? EventRecord.header(of: next.payload).commandID) == command
    {
      end = next.sequence
    }
    return end
  }

  /// The first sequence number whose state breaks `invariant`, found by bisection: like
  /// `git bisect`, it assumes that once broken the invariant stays broken. Nil if it holds at
  /// `lastSequence`. Probes only states after whole commands, the states readers see
  /// (<doc:TheFunnel>): a probe inside a command looks at the state after its last record, and the
  /// answer is the last record of the first command after which the invariant fails. Costs
  /// O(log(history)) seeks, each from the nearest keyframe or snapshot, or from the last state
  /// found to hold, which is kept for the next probe however few keyframes this time machine
  /// keeps (`maxKeyframes`): with two, the search replays about twice the history and holds
  /// about two states. `through` ends the search there (nil: at `lastSequence`; see
  /// `lastIntactSequence`): nil then means that it holds there.
  public func bisect(_ invariant: Invariant<M>, through: UInt64? = nil) throws -> UInt64? {
    let lastSequence = min(through ?? self.lastSequence, self.lastSequence)
    guard try !invariant.holds(state(at: lastSequence)) else { return nil }
    let empty = try state(at: 0)
    if !invariant.holds(empty) { return 0 }
    // The invariant at a sequence number is its value after that record's whole command.
    var good: UInt64 = 0
    var bad = lastSequence
    var held = (state: empty, at: UInt64(0))
    while bad - good > 1 {
      let middle = good + (bad - good) / 2
      let end = try commandEnd(from: middle, through: lastSequence)
      // Kept again before each probe: the keyframes the probes lay may have pushed it out.
      keep(held.state, at: held.at)
      let probed = try state(at: end)
      if invariant.holds(probed) {
        good = middle
        held = (probed, end)
      } else {
        bad = middle
      }
    }
    return try commandEnd(from: bad, through: lastSequence)
  }

  /// The first sequence number whose state breaks `invariant`, checking after every command (no
  /// assumption about later states): the last record of the first command after which it fails,
  /// as readers see states only between commands (<doc:TheFunnel>). Nil if it always
  /// holds. Replays the whole journal.
  ///
  /// An invariant over a store's records (``Invariant/init(_:everyRecordOf:reading:holds:)``) is checked
  /// incrementally: after a command that changed only records of its store, on those records
  /// alone (see there); after any other change, and for any other invariant, on the whole state.
  /// To check such an invariant on the whole state after every record, pass
  /// `Invariant(name, holds: invariant.holds)`. `through` ends the pass there (nil: at
  /// `lastSequence`; see `lastIntactSequence`).
  public func firstFailure(of invariant: Invariant<M>, through: UInt64? = nil) throws -> UInt64? {
    if !invariant.holds(M()) { return 0 }
    var found: UInt64?
    let holdsAfterChange = invariant.holdsAfterChange
    // The empty state holds: from there each state is checked given that the one before held.
    try forEachEvent(keepingRecordIDs: holdsAfterChange != nil, wholeCommands: true, through: through) {
      recorded, state, touched, touchedRecords in
      guard holdsAfterChange?(state, touched, touchedRecords) ?? invariant.holds(state) else {
        found = recorded.envelope.sequence
        return false
      }
      return true
    }
    return found
  }

  // MARK: Keyframes

  /// What the kept keyframes hold in their stores' trees, each node counted once however many
  /// keyframes share it (see `StorageFootprint`).
  public var keyframeFootprint: StorageFootprint { .of(keyframes.values.map(\.state)) }

  private func nearestKeyframe(atOrBefore sequence: UInt64) -> (M, UInt64) {
    guard let best = keyframes.keys.filter({ $0 <= sequence }).max(), let kept = keyframes[best] else {
      return (M(), 0)
    }
    uses += 1
    keyframes[best]?.used = uses
    return (kept.state, best)
  }

  /// Keeps `state` as the keyframe at `sequence`; past `maxKeyframes`, drops the least recently
  /// used keyframe that is not on the last `prepare`'s spacing, or, with none such, the least
  /// recently used. After a `prepare` its memory limit stopped, seeks keep keyframes at the
  /// interval, and those must not push out the ones it laid (nor can a later `prepare` then
  /// push its own out: it lays at most `maxKeyframes − 1`).
  private func keep(_ state: M, at sequence: UInt64) {
    uses += 1
    keyframes[sequence] = (state, uses)
    guard keyframes.count > maxKeyframes else { return }
    let prepared = preparedSpacing ?? 0
    func rank(_ keyframe: (key: UInt64, value: (state: M, used: UInt64))) -> (Int, UInt64) {
      (prepared > 0 && keyframe.key % prepared == 0 ? 1 : 0, keyframe.value.used)
    }
    if let oldest = keyframes.min(by: { rank($0) < rank($1) }) { keyframes[oldest.key] = nil }
  }
}

/// How far ``TimeMachine/prepare(memoryLimit:through:)`` laid keyframes.
public struct KeyframeCoverage: Sendable, Equatable {
  /// Records between the keyframes `prepare` laid (`TimeMachine.keyframeSpacing` too, unless the
  /// limit stopped them: that is then back at the keyframe interval).
  public var spacing: UInt64
  /// The last keyframe: a seek to this sequence number or up to `spacing − 1` past it
  /// replays fewer than `spacing` records. The last multiple of the spacing in the journal,
  /// unless the memory limit stopped the keyframes before it (then the last keyframe laid, or
  /// the one `prepare` would have started from, if it laid none).
  public var through: UInt64
  /// Whether the memory limit stopped the keyframes before the end of the journal.
  public var stoppedByLimit: Bool
}

/// One event that touched a record, and the record after it (nil when the event removed it).
public struct Blame<Value: Sendable>: Sendable {
  public var event: RecordedEvent
  public var after: Value?
}

/// One event that touched an entity found by its id as text (``TimeMachine/blame(entity:through:)``), and
/// the record after it (nil when the event removed it).
public struct EntityBlame: Sendable {
  public var event: RecordedEvent
  /// The store holding the entity.
  public var store: String
  public var id: String
  public var after: (any Sendable)?
}

/// A named predicate over a model's state, for ``TimeMachine/bisect(_:through:)`` and
/// ``TimeMachine/firstFailure(of:through:)``.
public struct Invariant<M: Model>: Sendable {
  public var name: String
  /// Whether the invariant holds of a whole state. Setting it drops the incremental check of an
  /// invariant made by ``init(_:everyRecordOf:reading:holds:)``, which could disagree with the new one.
  public var holds: @Sendable (M) -> Bool {
    didSet { holdsAfterChange = nil }
  }

  /// Whether the invariant holds of a state after an apply, given that it held before: from the
  /// state after, the keys the apply touched other than records and the ids of the records it
  /// touched (with their stores' names; see `ApplyContext.touchedRecordIDs`). Nil when only
  /// `holds` can say.
  @usableFromInline typealias HoldsAfterChange =
    @Sendable (M, Set<ChangeKey>, [(store: String, id: any Sendable)]) -> Bool?

  /// The incremental check, for `firstFailure(of:through:)`; nil for an invariant checked whole.
  @usableFromInline private(set) var holdsAfterChange: HoldsAfterChange?

  public init(_ name: String, holds: @escaping @Sendable (M) -> Bool) {
    self.name = name
    self.holds = holds
  }

  /// An invariant over the records of one store: it holds when `holds(record, state)` is true of
  /// every record of `store` (asked through `Store.allSatisfy(_:)`, without building `all()`).
  ///
  /// ``TimeMachine/firstFailure(of:through:)`` checks it incrementally. When a record changed only records
  /// of `store` (and its grouping cache), the invariant holds after it exactly when `holds` is
  /// true of the changed records still present: the others, and what `holds` reads besides them,
  /// are as they were when it last held. After a change anywhere else, every record is asked.
  /// `holds` (the whole check) and `bisect` always ask every record.
  ///
  /// `reading` names the other stores and value stores `holds` reads (by key path): a change to
  /// any other part of the state cannot break it, and is passed over. Nil (the default): any
  /// change outside `store` may, and is followed by the whole check. A model whose commands often
  /// change stores the invariant does not read (a reading list beside its notes) should name the
  /// ones it does: otherwise `firstFailure` checks the whole state after each such command.
  ///
  /// - Precondition: `holds` reads only the record it is given and state whose changes the model
  ///   records as touched keys: its other stores and value stores (and state it marks with
  ///   `ApplyContext.touch(_:)`), only those in `reading` if given, not other records of `store`
  ///   or its grouping cache; `R`'s `==` compares everything `holds` reads of a record (a record
  ///   replaced by an equal one counts as unchanged: synthesized equality does); and no other
  ///   store of the model has `store`'s name. Each key path of `reading` leads to a `Store` or a
  ///   `ValueStore` of the model. Otherwise the incremental check can miss a failure that the
  ///   whole check finds.
  ///
  /// Inlinable, so that both checks are specialized for the record type where the invariant is
  /// made, as `Store`'s reads are.
  @inlinable public init<R: StoreRecord>(
    _ name: String, everyRecordOf store: any KeyPath<M, Store<R>> & Sendable,
    reading: [PartialKeyPath<M>]? = nil,
    holds: @escaping @Sendable (R, M) -> Bool
  ) {
    self.name = name
    self.holds = { state in state[keyPath: store].allSatisfy { holds($0, state) } }
    let storeName = M()[keyPath: store].name
    // The names of the stores read besides `store`; nil: any of them.
    let read = reading.map { paths in Set(paths.map { StateInspector.storeName(M(), at: $0) }) }
    holdsAfterChange = { state, touched, touchedRecords in
      // A change outside the store (another store, a value store, a hand-made key) can break
      // untouched records, unless `holds` does not read what changed: only the whole check can
      // say.
      func passedOver(_ other: String) -> Bool { read.map { !$0.contains(other) } ?? false }
      guard touched.allSatisfy({ $0.store == storeName ? $0.kind == .group : passedOver($0.store) }),
        touchedRecords.allSatisfy({ $0.store == storeName || passedOver($0.store) })
      else { return nil }
      let records = state[keyPath: store]
      for touch in touchedRecords where touch.store == storeName {
        guard let id = touch.id as? R.ID else { return nil }
        if let record = records.find(id: id), !holds(record, state) { return false }
      }
      return true
    }
  }
}
