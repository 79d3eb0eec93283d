import Foundation
import Rewind
import RewindJournal

/// The selection options `log`, `export` and `tail` share: a sequence range, a time range, an
/// event name, an origin and an entity. Parsed and checked against the journal before anything
/// is printed, so a selection outside the journal is a clear error rather than empty output. A
/// range that starts inside it and ends past it (`--to`, `--until`) reads to its end, as
/// `sed -n 5,999p` does: the journal may grow meanwhile, and what it holds is what was asked.
struct EventFilter {
  static let options: Set<String> = ["from", "to", "since", "until", "type", "origin", "entity"]

  var from: UInt64 = 1
  /// Whether `--from` was given: then it names a record, which an empty journal does not hold
  /// (the default, 1, selects nothing).
  var fromGiven = false
  var to: UInt64 = .max
  var since: Int64?
  /// `--since` as typed, which the messages about it quote (`since` may be rounded or clamped).
  var sinceTyped: String?
  var until: Int64?
  var name: String?
  var origin: String?
  var entity: String?
  /// The width of the lines that show the events' payloads, which are rendered only as far as
  /// they take (`AuditedEvent.init(_:lineWidth:)`); nil: whole. Whole anyway with `--entity`,
  /// which looks for the id in the whole payload.
  var lineWidth: Int?

  init(_ args: Arguments) throws(UsageError) {
    for option in ["from", "to"] {
      if let text = args.value(option) { try RecordKey.refuseAsSequence(text, "--" + option) }
    }
    // Any sequence number a journal can hold: a --to past the journal's end reads to its end.
    from = try args.sequence("from", default: 1, from: 1)
    fromGiven = args.value("from") != nil
    to = try args.sequence("to", default: .max, from: 1)
    guard from <= to else { throw UsageError("--from \(from) is after --to \(to)") }
    // Past what a timestamp holds, a --until reads to the end and a --since from the start; the
    // other two select nothing, whatever the journal holds (a record stamped at the very
    // extreme is still inside them).
    since = try args.value("since").map { text throws(UsageError) in
      try ISO8601.parse(text, option: "since", refusing: 1, roundingUp: true)
    }
    sinceTyped = args.value("since")
    until = try args.value("until").map { text throws(UsageError) in
      try ISO8601.parse(text, option: "until", refusing: -1)
    }
    if let since, let until, since > until, let sinceTyped, let untilTyped = args.value("until") {
      // A --since finer than a nanosecond starts at the next one: two equal times that fine
      // select no nanosecond a record can be stamped with (helper-219, Dec 7).
      guard ISO8601.parse(sinceTyped).map({ $0 > until }) ?? true else {
        throw UsageError(
          "--since \(sinceTyped) and --until \(untilTyped) select no time a record can be stamped with (records are "
            + "stamped to the nanosecond, and a finer --since starts at the next one: \(isoTime(since)), after "
            + "\(isoTime(until)))")
      }
      throw UsageError("--since \(sinceTyped) is after --until \(untilTyped)")
    }
    name = args.value("type")
    origin = args.value("origin")
    if let text = args.value("entity") {
      guard let id = RecordKey.identifier(text) else {
        throw UsageError("--entity needs an identifier of 32 hexadecimal digits (as log shows them), not '\(text)'")
      }
      entity = id
    }
  }

  /// Whether the selection asks for more than a range of sequence numbers, so that matching no
  /// event is an error: a name, an origin, an entity or times. Over no record at all (an empty
  /// journal), an `--until` asks no more than a `--to` does: nothing is listed, exit 0 (a script's
  /// `--until 9999-12-31` reads to the end, however much there is).
  func isNarrowed(anyRecordRead: Bool) -> Bool {
    name != nil || origin != nil || entity != nil || since != nil || (until != nil && anyRecordRead)
  }

  /// The times the selection takes records from (`--since` through `--until`), or nil when it
  /// takes them whatever their stamps.
  var times: ClosedRange<Int64>? {
    since == nil && until == nil ? nil : (since ?? .min)...(until ?? .max)
  }

  /// Checks the range's start against the journal's end, when damage does not hide it, and
  /// returns that end (nil when damage hides it).
  /// - Throws: `UsageError` when the range starts past the end of the journal.
  @discardableResult
  func checkStart(_ reader: JournalReader) throws -> UInt64? {
    // Damage that hides the end (a loss the index witnesses there) leaves nothing to check the
    // start against: the read shows what is intact before the damage, then reports it.
    guard let last = try readableEnd(reader) else { return nil }
    try check(reader, last: last)
    return last
  }

  /// A cursor at the first record the range may include, reading around missing segments
  /// (`PastDamage` reads past them).
  func cursor(_ reader: JournalReader) throws -> JournalCursor {
    try reader.records(from: from, since: from <= 1 ? since : nil, readingAroundMissingSegments: true)
  }

  /// Checks the range against a journal that ends at sequence `last`. With `following` (`tail -f`,
  /// which goes on to show the events appended after `last`), a `--since` after the last event,
  /// or in an empty journal, is a time to wait for, not an error, and so is a `--from` of the
  /// next record to be written, `last + 1` (1 in an empty journal): only new events.
  /// - Throws: `UsageError` when the range starts past that end (by sequence or by time): a
  ///   `--from` given past it (following, past `last + 1`), `--from 1` of an empty journal too,
  ///   as a `--since` there is.
  func check(_ reader: JournalReader, last: UInt64, following: Bool = false) throws {
    if following ? from > last + 1 : from > last && (from > 1 || fromGiven) {
      let end = last == 0 ? "the journal is empty" : "the journal ends at sequence \(last)"
      throw UsageError(
        "--from \(from) is out of range: \(end)"
          + (following ? "; -f --from \(last + 1) follows from the next event to be written" : ""))
    }
    if let since, !following {
      let holding = try reader.records(from: last, readingAroundMissingSegments: true)
      guard let lastRecord = try holding.next(), lastRecord.sequence == last else {
        throw UsageError("--since \(sinceTyped ?? isoTime(since)) is out of range: the journal is empty")
      }
      // Timestamps need not increase (a clock set back): an earlier record may be stamped after
      // the last one, so the range is empty only when no record is stamped at or after `since`.
      if since > lastRecord.timestamp,
        try reader.records(from: 1, since: since, readingAroundMissingSegments: true).next() == nil
      {
        throw UsageError(
          "--since \(sinceTyped ?? isoTime(since)) is out of range: the last event (\(last)) is at "
            + "\(isoTime(lastRecord.timestamp)), "
            + "and no event is stamped at or after it"
        )
      }
    }
  }

  /// Calls `body` with each record the selection holds and its event, in order, at most `limit`
  /// times: what `log` and `export` print. The journal is read as it ended when the call began:
  /// records a writer appends meanwhile are left out (a read that followed them would not end
  /// while a writer kept ahead of a slow reader; `tail -f` follows). `reading` is called with every record read in the
  /// range, matching or not (for progress, which a narrow selection would otherwise stall).
  /// Damage met on the way (a frame that fails its checksum, a segment missing before intact
  /// ones) whose records are known is read past: `readingOn` is called with it and the sequence
  /// number the read goes on from, and the read goes on there (an auditor needs every intact
  /// record); the call then ends with `DamageMet` naming what was passed. Damage that cannot be
  /// read past (records gone at the end, a damaged batch header whose extent is unknown) ends it.
  /// - Throws: `UsageError` when the range starts past the end of the journal, or when a narrowed
  ///   selection matches no event of the journal in `directory`; `DamageMet` after damage; what
  ///   `body` throws.
  func forEachEvent(
    in reader: JournalReader, directory: String, limit: Int = .max,
    reading: (JournalRecord) -> Void = { _ in },
    readingOn: (JournalError, UInt64) -> Void = { _, _ in },
    _ body: (JournalRecord, AuditedEvent) throws -> Void
  ) throws {
    // Through the end found now, when damage does not hide it (then the damage ends the read).
    let to = min(to, try checkStart(reader) ?? .max)
    var records = try PastDamage(reader: reader, directory: directory, through: to) { try cursor(reader) }
    // Damage before `--from`, which the cursor met skipping to it, is no part of the selection,
    // nor a frame stamped outside its times.
    records.from = from
    records.times = times
    var shown = 0
    var readThrough = from - 1
    // Nothing is read past `to`: damage after it (the next segment's header damaged, say) is no
    // part of the selection, which is whole.
    while shown < limit, readThrough < to {
      let next: JournalRecord?
      do {
        next = try records.next(readingOn: readingOn)
      } catch let error as JournalError where error.isDamage {
        throw DamageMet(error: error, readThrough: readThrough, from: from, passed: records.passed)
      }
      guard let record = next else { break }
      if isPast(record) || record.sequence > to { break }
      readThrough = record.sequence
      reading(record)
      let event = AuditedEvent(record, lineWidth: rendering)
      guard matches(record, event) else { continue }
      try body(record, event)
      shown += 1
    }
    // Damage that hides the end from `readableEnd()` skipped the start's check (`checkStart`).
    // A cursor that stepped over it by its batch header on the way to `--from` and found nothing
    // read to the journal's end: a `--from` past that end is out of range, as in an intact
    // journal, not an empty selection (exit 0, nothing said).
    if fromGiven, readThrough == from - 1, records.passed.isEmpty, let end = records.cursor?.expectedSequence,
      from >= end
    {
      try check(reader, last: end - 1)
    }
    if let last = records.passed.last {
      var met = DamageMet(error: last, readThrough: readThrough, from: from, passed: records.passed, readToTheEnd: true)
      // The limit, not the selection's end, ended the output: say so, not "every other event".
      if shown == limit { met.limit = limit }
      throw met
    }
    if shown == 0 && isNarrowed(anyRecordRead: readThrough >= from) { throw nothingMatches(directory) }
  }

  /// The last `count` events the selection holds up to sequence `last` (the journal's end when it
  /// was read), oldest first: the last of what `forEachEvent` would show, for `tail`. Reads
  /// backwards in windows that double, so the end of a large journal costs what it shows.
  /// With `following`, a `--since` past that end is not an error (see `check`): there are none.
  /// Damage a window meets that it cannot read past (`PastDamage`) is read past all the same when
  /// a later window was read: from that window's first sequence, which it read from. Met in the
  /// window that holds the last events, it ends them, as damage that hides the end does: the last
  /// events are those before it, and `stopped` is set to it and the last sequence read before it.
  /// - Throws: `UsageError` when the range starts past the end of the journal; what reading throws.
  func lastEvents(
    in reader: JournalReader, directory: String, through last: UInt64, count: Int, following: Bool = false,
    passed: inout [JournalError], stopped: inout (error: JournalError, readThrough: UInt64)?,
    readingOn: (JournalError, UInt64) -> Void = { _, _ in }
  ) throws -> [AuditedEvent] {
    try check(reader, last: last, following: following)
    guard count > 0 else { return [] }
    let top = min(to, last)
    // The first sequence the selection may include: where `cursor` would start, reading past
    // damage as it does (a missing first segment, say, before the first record since then).
    var first = from
    if let since, from <= 1 {
      // Read past damage, as `forEachEvent` does; a record the damage held may be stamped at or
      // after `since` (timestamps need not increase), so the selection may start at its first:
      // the windows that reach back over it then meet it and report it.
      var found = try PastDamage(reader: reader, directory: directory, through: top) {
        try reader.records(from: 1, since: since, readingAroundMissingSegments: true)
      }
      found.times = times
      var record: JournalRecord?
      repeat { record = try found.next(readingOn: { _, _ in }) } while record.map { $0.timestamp < since } == true
      let damaged = found.passed.compactMap { $0.sequences?.lowerBound }.min()
      guard let start = [record?.sequence, damaged].compactMap({ $0 }).min(), start <= top else { return [] }
      first = start
    }
    var end = top
    var window = UInt64(count)
    var found: [[AuditedEvent]] = []
    var total = 0
    // Damage read past, said once the last events are known: a window reads from its start, and
    // may meet damage before the events it finds (said, it exited 3 for damage `log` of the same
    // events does not meet).
    var met: [(error: JournalError, resume: UInt64)] = []
    let meet = { (error: JournalError, resume: UInt64) in met.append((error, resume)) }
    var seen = passed
    while end >= first && total < count {
      let start = end - first + 1 > window ? end - window + 1 : first
      let wanted = count - total
      var matching: [AuditedEvent] = []
      var records = try PastDamage(reader: reader, directory: directory, through: end, passed: seen) {
        try reader.records(from: start, readingAroundMissingSegments: true)
      }
      records.times = times
      // The window is `start...end`: damage its cursor meets before `start` (a damaged frame
      // before the one that holds it) belongs to an earlier window, and the records such a read
      // goes on from before `start` to that window too (read here, they came out twice, and
      // reported the damage where `log` of the same selection does not meet it).
      records.from = start
      // Not asked for a record past `end`: damage may stand right after it (`tail` of a journal
      // whose end it hides reads up to the record before it).
      var more = true
      var readThrough = start - 1
      defer { seen = records.passed }
      do {
        while more, let record = try records.next(readingOn: meet), record.sequence <= end {
          guard record.sequence >= start else { continue }
          more = record.sequence < end
          readThrough = record.sequence
          let event = AuditedEvent(record, lineWidth: rendering)
          guard matches(record, event) else { continue }
          matching.append(event)
          // Trimmed when twice what is wanted (written so that -n near Int.max cannot overflow).
          if matching.count - wanted >= wanted { matching.removeFirst(matching.count - wanted) }
        }
      } catch let error as JournalError where error.isDamage {
        if end < top {
          // A later window read from `end + 1`: the records from the damage up to there are not
          // read, those after it were; the events before it count as the window's.
          records.pass(error, end + 1, meet)
        } else {
          // The window that holds the last events: nothing after the damage can be read, and
          // the last events are those before it.
          stopped = (error, readThrough)
        }
      }
      let kept = matching.suffix(wanted)
      found.append(Array(kept))
      total += kept.count
      guard start > first else { break }
      end = start - 1
      window = window > UInt64.max / 2 ? .max : window * 2
    }
    let events = found.reversed().flatMap { $0 }
    // What may have held one of the last events: damage after the first of them, or anywhere in
    // the selection when fewer than `count` were found.
    let before = total < count ? 0 : events.first?.sequence ?? 0
    // A place's records lie before the read went on (`resume`), whether or not it names them (a
    // segment whose header is damaged names none).
    for place in met.sorted(by: { $0.resume < $1.resume })
    where min(place.error.sequences?.upperBound ?? .max, place.resume - 1) > before {
      readingOn(place.error, place.resume)
      passed.append(place.error)
    }
    return events
  }

  /// The error for a narrowed selection that matches no event of the journal in `directory`.
  func nothingMatches(_ directory: String) -> UsageError {
    UsageError("no event in \(directory) matches: \(summary)")
  }

  /// Whether the record's place and time are past the range, so no later record can match
  /// (by sequence only: times need not be monotonic).
  func isPast(_ record: JournalRecord) -> Bool { record.sequence > to }

  /// The line width each event is rendered for (`lineWidth`, unless `--entity` needs the whole).
  var rendering: Int? { entity == nil ? lineWidth : nil }

  func matches(_ record: JournalRecord, _ event: AuditedEvent) -> Bool {
    guard record.sequence >= from, record.sequence <= to else { return false }
    if let since, record.timestamp < since { return false }
    if let until, record.timestamp > until { return false }
    // By bytes, as `stats` counts names and origins and a JSON reader compares them: a composed
    // é and e with a combining accent are two origins (String's == takes them as one).
    if let name {
      guard let actual = event.header?.name else { return false }
      if name.hasSuffix("*") {
        guard actual.utf8.starts(with: name.dropLast().utf8) else { return false }
      } else if !actual.utf8.elementsEqual(name.utf8) {
        return false
      }
    }
    if let origin, event.header.map({ $0.origin.name.utf8.elementsEqual(origin.utf8) }) != true { return false }
    if let entity, !event.mentions(entity) { return false }
    return true
  }

  /// What the selection was, for the message when nothing matched.
  var summary: String {
    var parts: [String] = []
    // Quoted: a name or origin may hold a comma or end in a space, which would read as the
    // message's own punctuation.
    if let name { parts.append("named '\(name)'") }
    if let origin { parts.append("from origin '\(origin)'") }
    if let entity { parts.append("mentioning entity \(entity)") }
    if let since { parts.append("since \(isoTime(since))") }
    if let until { parts.append("until \(isoTime(until))") }
    if from > 1 || to != .max { parts.append("in sequences \(from)-\(to == .max ? "end" : String(to))") }
    return parts.joined(separator: ", ")
  }
}

/// A cursor that reads past damage whose records are known (`DamageMet.readOnPoints`), from
/// where a cursor gets past it, up to sequence `through`: an auditor needs every intact record.
/// Its cursors read around missing segments (`JournalReader.records(from:since:
/// readingAroundMissingSegments:)`), so one the index names is damage met where the read
/// reaches it, read past when a segment follows.
struct PastDamage {
  let reader: JournalReader
  let directory: String
  /// No read goes on past this sequence number.
  let through: UInt64
  /// Damage whose records all lie before this sequence number, met by a cursor skipping to it, is
  /// read past in silence: it is no part of what is read.
  var from: UInt64 = 0
  /// The selection's times (`--since`, `--until`), or nil: a damaged frame read past right after
  /// it, whose batch header stamps its records outside them (`JournalError.timestamps`), is no
  /// part of the selection either, and is read past in silence too.
  var times: ClosedRange<Int64>?
  /// Nil when making the first cursor met damage (`metFirst`: the first segment is missing).
  var cursor: JournalCursor?
  /// The damage met making the first cursor, not yet read past.
  private var metFirst: JournalError?
  /// The damage read past, in order.
  var passed: [JournalError] = []
  /// The first record after damage read past, read before the damage is reported as passed.
  private var pending: JournalRecord?
  /// The sequence number of the last record returned (0: none): a read goes on only past it, so
  /// no record is returned twice or out of order, whatever a damaged place's read-on points say.
  private var returned: UInt64 = 0

  /// - Parameter opening: makes the first cursor; damage it throws is met as the first read's.
  init(
    reader: JournalReader, directory: String, through: UInt64, passed: [JournalError] = [],
    opening: () throws -> JournalCursor
  ) throws {
    (self.reader, self.directory, self.through, self.passed) = (reader, directory, through, passed)
    do {
      cursor = try opening()
    } catch let error as JournalError where error.isDamage {
      metFirst = error
    }
  }

  /// The next record; nil at the end. Damage it reads past is given to `readingOn` with the
  /// sequence number the read goes on from.
  /// - Throws: the `JournalError` of damage it cannot read past.
  mutating func next(readingOn: (JournalError, UInt64) -> Void) throws -> JournalRecord? {
    let record = try read(readingOn: readingOn)
    if let record { returned = record.sequence }
    return record
  }

  private mutating func read(readingOn: (JournalError, UInt64) -> Void) throws -> JournalRecord? {
    if let record = pending {
      pending = nil
      return record
    }
    while true {
      do {
        if cursor == nil, let metFirst { throw metFirst }
        return try cursor?.next()
      } catch let error as JournalError where error.isDamage {
        // On only from where a cursor gets past it: after its records when they are known (a
        // damaged batch header names its first record alone, and a cursor checks the last
        // segment's frames again), else at each batch the index names past it in its segment in
        // turn, else at the next segment (a sealed segment cut short, one missing before it).
        var met = error
        var resumed = false
        // Read-on points at or below this were tried: each place read past moves it forward.
        // Never at or before the last record returned: a point there (an index entry or a
        // segment's name that disagrees with the records, as only a crafted file can) would
        // return records again, and meet this damage again, for ever.
        var tried = returned
        // The places met on the way: one met again is not read past again (two places whose
        // read-on points lead to each other would otherwise be read past in turn for ever).
        var visited: Set<String> = [Self.place(error)]
        meeting: while true {
          let points = DamageMet.readOnPoints(after: met, reader: reader).filter { $0 > tried }
          for resume in points where resume <= through {
            do {
              guard let candidate = try cursor(from: resume, after: met) else { continue }
              pending = try candidate.next()
              cursor = candidate
              pass(met, resume, readingOn)
              resumed = true
              break meeting
            } catch let again as JournalError where again.isDamage {
              // Another damaged place right where the read would go on (damaged frames one after
              // the other): read past in turn when its records are known, not skipped with every
              // intact record up to the next segment, unlocated.
              guard !visited.contains(Self.place(again)),
                DamageMet.readOnPoints(after: again, reader: reader).contains(where: { $0 > resume })
              else { continue }
              visited.insert(Self.place(again))
              pass(met, resume, readingOn)
              // `resume` itself is tried again after `again`: a cursor from it alone may start
              // past `again` (bytes that are no batch ending a sealed segment, after a damaged
              // frame: the record at `resume` opens the next segment, intact).
              (met, tried) = (again, resume - 1)
              continue meeting
            }
          }
          if let beyond = points.first(where: { $0 > through }) {
            // The damage reaches past what is to be read: nothing more to read.
            pass(met, beyond, readingOn)
            return nil
          }
          break
        }
        guard resumed else { throw met }
        if let record = pending {
          pending = nil
          return record
        }
      }
    }
  }
}

extension PastDamage {
  /// Where a damaged place is: its file and byte offset.
  fileprivate static func place(_ error: JournalError) -> String { "\(error.file ?? "")#\(error.offset ?? -1)" }

  /// A cursor from `resume`, reading around missing segments: right after the batch `met`
  /// locates when `resume` follows the records its header names and that header still holds (a
  /// frame that fails its checksum). A cursor made from `resume` alone checks that frame again
  /// when it is in the last segment, where frames are checked as they are skipped, and would go
  /// on only at a later read-on point, leaving out the intact batches up to it.
  ///
  /// At a batch the index names past `met` in its segment, the cursor is moved to that batch when
  /// the header there holds and matches the entry (nil otherwise: no read goes on there), so that
  /// damage in its frame is met there, not read from the segment's start, where `met` is met again.
  fileprivate func cursor(from resume: UInt64, after met: JournalError) throws -> JournalCursor? {
    let cursor = try reader.records(from: resume, readingAroundMissingSegments: true)
    guard met.code == .corrupt, let file = met.file, let offset = met.offset else { return cursor }
    if let sequences = met.sequences, sequences.upperBound < .max, sequences.upperBound + 1 == resume,
      try cursor.moveAfterBatch(at: offset, in: file, numbering: sequences)
    {
      return cursor
    }
    guard let entry = reader.indexedBatches(in: file, after: offset).first(where: { $0.firstSequence == resume })
    else { return cursor }
    return try cursor.moveToBatch(at: entry.offset, in: file, startingAt: resume) ? cursor : nil
  }

  /// Records `error` as read past (once: `tail` may meet it from two windows) and says so; not
  /// when its records lie before `from`.
  ///
  /// Damage the read goes on from at the first record it names (bytes ending a segment whose
  /// successor starts there) held no record: it is marked so (`holdsNoRecord`), and said so, also
  /// where the reader's error could not tell (a batch header that declares no payload).
  mutating func pass(_ error: JournalError, _ resume: UInt64, _ readingOn: (JournalError, UInt64) -> Void) {
    guard resume > from, !passed.contains(where: { Self.place($0) == Self.place(error) }) else { return }
    if let times, let stamps = error.timestamps, !stamps.overlaps(times),
      let sequences = error.sequences, sequences.upperBound < .max, resume == sequences.upperBound + 1
    {
      return
    }
    var error = error
    if let first = error.sequences?.lowerBound, resume <= first { error.holdsNoRecord = true }
    readingOn(error, resume)
    passed.append(error)
  }
}

/// The journal's last sequence number; nil when damage hides it (`JournalReader.readableEnd()`;
/// a missing segment hides it only when it is the last one).
func readableEnd(_ reader: JournalReader) throws -> UInt64? {
  switch try reader.readableEnd(readingAroundMissingSegments: true) {
  case .success(let last): last
  case .failure: nil
  }
}

/// Damage met part way through a read, after the records before it were read intact and written
/// out (`log`, `export`, `tail`): the journal's error, which locates the damage and names the
/// sequences gone, and what was read before it, so that output cut short cannot pass for the
/// whole selection. Exit 3, as for any journal that cannot be read.
struct DamageMet: Error, CustomStringConvertible {
  /// The damage that ended the read; with `readToTheEnd`, the last one read past.
  var error: JournalError
  /// The last sequence number read (below the selection's start: none).
  var readThrough: UInt64
  /// The selection's first sequence number.
  var from: UInt64
  /// Whether only the last events up to `readThrough` were written out (`tail`).
  var lastOnly = false
  /// The damaged places read past, each reported as it was met (`readOnMessage`).
  var passed: [JournalError] = []
  /// Whether the read went on past every damage it met, to the selection's end.
  var readToTheEnd = false
  /// The `--limit` that ended the output after the damage was read past, if one did.
  var limit: Int?

  init(
    error: JournalError, readThrough: UInt64, from: UInt64, lastOnly: Bool = false, passed: [JournalError] = [],
    readToTheEnd: Bool = false
  ) {
    (self.error, self.readThrough, self.from, self.lastOnly) = (error, readThrough, from, lastOnly)
    (self.passed, self.readToTheEnd) = (passed, readToTheEnd)
  }

  var description: String {
    let places = counted(passed.count, "place")
    if readToTheEnd {
      // The first place in full, with the journal's advice, so that the last line stands alone.
      let written =
        if let limit {
          "the other events of the selection through sequence \(readThrough), up to --limit \(limit), were"
        } else if lastOnly {
          "the last other events of the selection were"
        } else {
          "every other event of the selection was"
        }
      if !passed.isEmpty && passed.allSatisfy(\.holdsNoRecord) {
        // No record was left out: bytes that are none, each read past at the record expected there.
        let all =
          if let limit {
            "the events of the selection through sequence \(readThrough), up to --limit \(limit), were"
          } else if lastOnly {
            "the last events of the selection were"
          } else {
            "every event of the selection was"
          }
        return errorSentence(passed[0]) + "The journal holds bytes that are no record in \(places), each located "
          + "above where it was met: no record was left out, and " + all + " written out"
      }
      return errorSentence(passed.first ?? error) + "The journal is damaged in \(places), each located above "
        + "where it was met: the records named there were not read, and " + written + " written out"
    }
    let others = passed.isEmpty ? "" : " (but for the records of the \(counted(passed.count, "damaged place")) above)"
    let read =
      readThrough < from
      ? "No record of the selection was read before the damage"
      : "The records through sequence \(readThrough) read intact\(others), and "
        + (lastOnly
          ? "the last events of the selection up to there were" : "every event of the selection up to there was")
        + " written out before this message"
    return errorSentence(error) + read + "; nothing past the damage was read (`rewind verify` lists "
      + "every damaged place; `--from` a sequence number after one reads what follows it)."
  }

  /// What `log`, `export` and `tail` say as they read past damage: where it is and what it holds
  /// (the journal's error, its advice left for the end), and where the read goes on; when that
  /// is past `end`, the selection's last sequence number (`--to`), that the selection ends there
  /// and nothing more is read.
  static func readOnMessage(_ error: JournalError, from resume: UInt64, through end: UInt64 = .max) -> String {
    var plain = error
    plain.code = .io  // the same place and message, without the advice: the last message gives it
    plain.directory = nil
    plain.missingBeforeIntactSegments = false
    plain.holdsNoRecord = false
    if let first = error.sequences?.lowerBound, resume <= first {
      // Damage whose extent is unknown (no batch header holds) at the end of a segment whose
      // successor starts where it would: it held none of the records read on from.
      return "\(plain); the next segment starts at sequence \(resume), so no record was skipped, reading on from there"
    }
    let skipped = error.sequences.map { first in
      first.lowerBound < resume - 1 ? "sequences \(first.lowerBound)-\(resume - 1)" : "sequence \(first.lowerBound)"
    }
    guard resume <= end else {
      return "\(plain); \(skipped ?? "its records") not read, and the selection ends at sequence \(end): "
        + "nothing after it is read"
    }
    return "\(plain); \(skipped ?? "its records") not read, reading on from sequence \(resume)"
  }

  /// Where to try to read on after damage, in order: after the records it names, when a frame's
  /// batch header holds (their numbers exact) or records are missing before an intact segment (a
  /// segment missing in the middle or at the start); then, for damage in a segment, each batch
  /// the index names in it past the damage, in order (after a damaged batch header, whose extent
  /// is unknown: a later one when the batch an earlier one names is damaged too, or its header
  /// does not match the entry), then the first record of the next segment. None when the damage ends what can be
  /// counted (records gone at the end, the last segment missing). In increasing order: damage
  /// without a header that holds names only the record expected there, yet at the end of a sealed
  /// segment whose successor starts with that record, the next segment is where to go on (tried
  /// after the record following it, that record was skipped though intact).
  ///
  /// A batch inside a segment whose header holds but does not follow on (a sequence break there:
  /// no torn write leaves one) numbers no record for certain: it is read on from the batches the
  /// index names after it and the next segment only (helper-217, Dec 7: `log` stopped there).
  static func readOnPoints(after error: JournalError, reader: JournalReader) -> [UInt64] {
    let breakInSegment = error.code == .sequenceBreak && (error.offset ?? 0) > 0 && !error.missingBeforeIntactSegments
    guard error.code == .corrupt || breakInSegment || error.missingBeforeIntactSegments, !error.sequencesMayGoFurther
    else { return [] }
    let directory = reader.directory
    var points: [UInt64] = []
    if !breakInSegment, let last = error.sequences?.upperBound, last < .max { points.append(last + 1) }
    if error.code == .corrupt || breakInSegment, let file = error.file, let offset = error.offset {
      for entry in reader.indexedBatches(in: file, after: offset) where entry.firstSequence > points.last ?? 0 {
        points.append(entry.firstSequence)
      }
    }
    // The next segment, passing over stray files: a read on from a stray's name would seek the
    // segment before it, which holds the damage.
    if error.code == .corrupt || breakInSegment, let file = error.file,
      let first = Layout.firstSequence(ofSegmentNamed: file),
      let layout = try? JournalDirectory(path: directory, io: PosixFileIO()), layout.lists(first),
      let next = layout.segment(after: first), !points.contains(next)
    {
      points.append(next)
    }
    return points.sorted()
  }
}

/// ISO 8601 times as users type them.
enum ISO8601 {
  /// Parses `2026-01-01`, `2026-01-01T10:00`, `2026-01-01T10:00:00`, with optional fractional
  /// seconds (up to nanoseconds) and a zone (`Z`, `+02:00`, `-0500`, `+02`; UTC when absent; a
  /// lowercase `t` and `z` as RFC 3339 allows), into
  /// nanoseconds since 1970-01-01T00:00:00Z. A time an Int64 of nanoseconds cannot hold (before
  /// 1677-09-21T00:12:43.145224192Z or after 2262-04-11T23:47:16.854775807Z) is the first or last
  /// one it holds: no record is stamped outside, so `--until 9999-12-31` is after every record,
  /// as it reads, and `--since 0001-01-01` before every record. Second 60 is taken only where a
  /// leap second can be, in the last minute of a UTC day (as the midnight after it). Nil for text
  /// that is no time.
  /// For `--OPTION TEXT`: a usage error for text that is no time, and for a time on side
  /// `refusing` (1: after, -1: before) of every time a record can have, where the option selects
  /// nothing. A time finer than a nanosecond is the nanosecond it falls in, or with `roundingUp`
  /// the next one: the first a record at or after it can be stamped with (a lower bound's).
  static func parse(_ text: String, option: String, refusing side: Int, roundingUp: Bool = false) throws(UsageError)
    -> Int64
  {
    guard let (value, outside) = parseWithin(text, roundingUp: roundingUp) else {
      throw UsageError(
        "--\(option) needs an ISO 8601 time such as 2026-01-01T09:30:00Z or 2026-01-01, not '\(text)'"
          + leapSecondHint(text))
    }
    guard outside == 0 || outside != side else {
      throw UsageError(
        "--\(option) \(text) is out of range: \(side > 0 ? "after" : "before") every time a record can have "
          + "(\(isoTime(side > 0 ? .max : .min)))")
    }
    return value
  }

  static func parse(_ text: String) -> Int64? { parseWithin(text)?.time }

  /// For text refused only for its second 60 outside the last minute of a UTC day: why, to add
  /// to the message ("" otherwise).
  static func leapSecondHint(_ text: String) -> String {
    // The second's digits, where `parseWithin` reads them: after `YYYY-MM-DDThh:mm:` (a `:60`
    // elsewhere, a minute of 60, is another mistake).
    var bytes = Array(text.utf8)
    guard bytes.count >= 19, bytes[16] == UInt8(ascii: ":"), bytes[17] == UInt8(ascii: "6"),
      bytes[18] == UInt8(ascii: "0")
    else { return "" }
    bytes.replaceSubrange(17..<19, with: Array("59".utf8))
    guard parseWithin(String(decoding: bytes, as: UTF8.self)) != nil else { return "" }
    return " (second 60 stands only in the last minute of a UTC day, for a leap second)"
  }

  /// `parse`'s time, and whether the text named one before (-1) or after (1) every time an Int64
  /// of nanoseconds holds, and so every record's: 0 within. Nil for text that is no time. Digits
  /// past the ninth of a fraction are dropped (the nanosecond the time falls in), or with
  /// `roundingUp`, when any of them is not 0, the time is the next nanosecond.
  static func parseWithin(_ text: String, roundingUp: Bool = false) -> (time: Int64, outside: Int)? {
    var chars = Array(text.utf8)[...]
    func number(_ digits: Int) -> Int? {
      guard chars.count >= digits else { return nil }
      var value = 0
      for _ in 0..<digits {
        let c = chars.removeFirst()
        guard (0x30...0x39).contains(c) else { return nil }
        value = value * 10 + Int(c - 0x30)
      }
      return value
    }
    func take(_ c: Character) -> Bool {
      guard chars.first == c.asciiValue else { return false }
      chars.removeFirst()
      return true
    }
    guard let year = number(4), take("-"), let month = number(2), take("-"), let day = number(2) else { return nil }
    var hour = 0
    var minute = 0
    var second = 0
    var nanos: Int64 = 0
    // A digit past the ninth that is not 0: the time lies inside a nanosecond, after its start.
    var finer = false
    // RFC 3339 allows a lowercase t (and z, below) as ISO 8601's T.
    if take("T") || take("t") || take(" ") {
      guard let h = number(2), take(":"), let m = number(2) else { return nil }
      hour = h
      minute = m
      if take(":") {
        guard let s = number(2) else { return nil }
        second = s
        if take(".") || take(",") {
          var digits = 0
          while let c = chars.first, (0x30...0x39).contains(c) {
            chars.removeFirst()
            if digits < 9 { nanos = nanos * 10 + Int64(c - 0x30) } else if c != 0x30 { finer = true }
            digits += 1
          }
          guard digits > 0 else { return nil }
          for _ in digits..<max(digits, 9) { nanos *= 10 }
        }
      }
    }
    var offset = 0
    if take("Z") || take("z") {
    } else if let sign = chars.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
      chars.removeFirst()
      guard let h = number(2), h < 24 else { return nil }
      // Hours alone (`+02`, ISO 8601's ±hh), or hours and minutes, with a colon or without.
      var m = 0
      if !chars.isEmpty {
        _ = take(":")
        guard let minutes = number(2), minutes < 60 else { return nil }
        m = minutes
      }
      offset = (h * 3600 + m * 60) * (sign == UInt8(ascii: "-") ? -1 : 1)
    }
    guard chars.isEmpty, (1...12).contains(month), hour < 24, minute < 60, second < 61 else { return nil }
    // A day the month does not have (2026-02-31) is refused, not rolled over into the next month.
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    guard (1...[31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]).contains(day) else {
      return nil
    }
    var parts = tm()
    parts.tm_year = Int32(year - 1900)
    parts.tm_mon = Int32(month - 1)
    parts.tm_mday = Int32(day)
    parts.tm_hour = Int32(hour)
    parts.tm_min = Int32(minute)
    parts.tm_sec = Int32(second)
    let seconds = Int64(timegm(&parts)) - Int64(offset)
    // A leap second (`:60`) ends a UTC day, and reads as the midnight after it, as POSIX time
    // counts it; in any other minute it is no time.
    guard second < 60 || seconds % 86_400 == 0 else { return nil }
    // Nanoseconds in an Int64 reach from 1677-09-21T00:12:43.145224192Z to
    // 2262-04-11T23:47:16.854775807Z; a time outside is before or after every record's, and
    // stands as the first or last of them (a script's `--until 9999-12-31` reads to the end).
    // Before 1970 with a fraction, a second nearer zero and a negative fraction: the first
    // nanoseconds an Int64 holds (1677-09-21T00:12:43.2Z) have their whole second outside it.
    let borrow = seconds < 0 && nanos > 0
    let (product, overflow) = (borrow ? seconds + 1 : seconds).multipliedReportingOverflow(by: 1_000_000_000)
    let (sum, overflowAgain) = product.addingReportingOverflow(borrow ? nanos - 1_000_000_000 : nanos)
    guard !overflow, !overflowAgain else { return seconds < 0 ? (.min, -1) : (.max, 1) }
    guard roundingUp && finer else { return (sum, 0) }
    // Inside the last nanosecond an Int64 holds, the next is after every record's time.
    return sum == .max ? (.max, 1) : (sum + 1, 0)
  }
}
