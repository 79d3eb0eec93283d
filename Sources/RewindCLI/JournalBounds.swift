import Foundation
import Rewind
import RewindJournal

/// A journal's bounds (last sequence number, first and last times), and sequence numbers and times
/// parsed and checked against them, for the replay-level commands.
/// Damage that hides the journal's end leaves no end to check against: a target is then taken
/// as given, and the replay to it reports the damage if it lies there or past it. A segment the
/// index names and the directory lacks, before intact ones, hides the end so too: the records
/// before it are read around it (`records(from:since:readingAroundMissingSegments:)`), as replay
/// reads them, and a read that reaches it throws its located error.
struct JournalBounds {
  var directory: String
  /// Nil when damage hides it (`hiddenBy`).
  var lastSequence: UInt64?
  /// The damage that hides the end (`JournalReader.readableEnd()`), or nil.
  var hiddenBy: JournalError?
  /// The timestamp of the first record (nil for an empty journal), or the damage that holds it
  /// (the first segment missing too): thrown only by `time(_:)`, so that a target that needs no
  /// time (sequence 0, the empty state) is served whatever holds the first record.
  var firstTime: Result<Int64?, JournalError>
  /// The timestamp of the last record (nil for an empty journal, and when damage hides the end).
  var lastTime: Int64?

  /// - Throws: `JournalError` when the directory is not a readable journal.
  init(directory: String) throws {
    self.directory = directory
    let reader = try openJournal(directory)
    switch try reader.readableEnd() {
    case .success(let last): lastSequence = last
    case .failure(let damage): hiddenBy = damage
    }
    do {
      firstTime = .success(try reader.records(from: 1, readingAroundMissingSegments: true).next()?.timestamp)
    } catch let error as JournalError where error.isDamage {
      firstTime = .failure(error)
    }
    lastTime = try lastSequence.flatMap { $0 == 0 ? nil : try reader.record($0)?.timestamp }
  }

  /// Refuses a journal whose end damage hides, for a command that reads its whole history
  /// (`snapshot`, which writes the last state).
  /// - Throws: the journal's error locating the damage.
  func requireEnd() throws {
    if let hiddenBy { throw hiddenBy }
  }

  /// What a sequence number may be: `0...LAST`, or from 0 when damage hides the end.
  private var range: String { lastSequence.map { "0...\($0)" } ?? "0 on (damage hides the journal's end)" }

  /// The timestamp of record `sequence`, or nil (0, or beyond the journal). Read around a missing
  /// segment after it, as replay reads the records before one.
  func timestamp(of sequence: UInt64) throws -> Int64? {
    guard sequence > 0 else { return nil }
    return try JournalReader(directory: directory, limits: .largest).record(
      sequence, readingAroundMissingSegments: true)?
      .timestamp
  }

  /// `text` as a sequence number in 0...lastSequence (from 0 on when damage hides the end).
  func sequence(_ text: String, what: String = "sequence number") throws(UsageError) -> UInt64 {
    try RecordKey.refuseAsSequence(text, what)
    guard let value = Arguments.sequenceNumber(text) else {
      if let negative = Int(text), negative < 0 {
        throw UsageError(
          "\(what) \(negative) is out of range: sequence numbers start at 0 (the empty state); "
            + "give one in \(range)")
      }
      // Digits no UInt64 holds are a whole number too, past every record's.
      if Arguments.isPastEverySequenceNumber(text) {
        guard lastSequence == nil else { throw beyond(text, what) }
        throw UsageError("\(what) \(text) is past every sequence number (at most \(UInt64.max)); give one in \(range)")
      }
      throw UsageError("\(what) '\(text)' is not a whole number; give one in \(range)")
    }
    if lastSequence.map({ value > $0 }) == true { throw beyond(String(value), what) }
    return value
  }

  /// Sequence number `number` (as digits), given as `what`, is past the journal's last.
  private func beyond(_ number: String, _ what: String) -> UsageError {
    UsageError(
      "\(what) \(number) is beyond the journal's last sequence number \(lastSequence ?? 0) (\(directory)); "
        + "give one in \(range)")
  }

  /// `text` (ISO 8601) as nanoseconds, within the journal's first and last record times.
  /// `what` names it in the errors (an option, `--at`, or "time").
  /// - Throws: `UsageError`; the `JournalError` of damage that holds the first record.
  func time(_ text: String, what: String = "time") throws -> Int64 {
    guard let value = ISO8601.parse(text) else {
      throw UsageError(
        "\(what) '\(text)' is not ISO 8601 (like 2024-05-01T12:00:00Z or 2024-05-01T12:00:00.5+02:00)"
          + ISO8601.leapSecondHint(text))
    }
    guard let first = try firstTime.get(), lastTime != nil || hiddenBy != nil else {
      throw UsageError("the journal \(directory) is empty: there is no time to go to")
    }
    guard value >= first else {
      throw UsageError(
        "\(what) \(text) is before the journal's first record, stamped \(isoTime(first)); give a time from then on")
    }
    // Timestamps need not increase: a time after the last record's is still inside the journal
    // when a record is stamped at or after it (the target is then the record before the first
    // one stamped after it, or the end).
    // With the end hidden, the replay to the time reports the damage if the time lies there.
    guard let last = lastTime else { return value }
    guard value <= last || (try? recordExists(atOrAfter: value)) == true else {
      throw UsageError(
        "\(what) \(text) is after every record's time (the last record is stamped \(isoTime(last))); "
          + "give one from \(isoTime(first)) to the latest record's time")
    }
    return value
  }

  /// Whether some record is stamped at or after `timestamp`.
  private func recordExists(atOrAfter timestamp: Int64) throws -> Bool {
    try JournalReader(directory: directory, limits: .largest).records(since: timestamp).next() != nil
  }

  /// The target of `--to SEQ` or `--at TIME` (at most one), or the end.
  func target(_ args: Arguments) throws -> ReplayTarget {
    switch (args.value("to"), args.value("at")) {
    case (.some, .some): throw UsageError("give either --to SEQ or --at TIME, not both")
    case (.some(let to), nil): return .sequence(try sequence(to, what: "--to"))
    case (nil, .some(let at)): return .time(try time(at, what: "--at"))
    case (nil, nil): return .end
    }
  }
}
