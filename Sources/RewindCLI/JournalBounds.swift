import Foundation
import Rewind
import RewindJournal

/// A journal's bounds (last sequence number, first and last times), and sequence numbers and times
/// parsed and checked against them, for the replay-level commands.
struct JournalBounds {
  var directory: String
  var lastSequence: UInt64
  /// Timestamps of the first and last records (nil for an empty journal).
  var firstTime: Int64?
  var lastTime: Int64?

  /// - Throws: `JournalError` when the directory is not a readable journal.
  init(directory: String) throws {
    self.directory = directory
    let reader = try JournalReader(directory: directory)
    lastSequence = try reader.lastSequence()
    firstTime = try reader.records(from: 1).next()?.timestamp
    lastTime = lastSequence == 0 ? nil : try reader.record(lastSequence)?.timestamp
  }

  /// The timestamp of record `sequence`, or nil (0, or beyond the journal).
  func timestamp(of sequence: UInt64) throws -> Int64? {
    guard sequence > 0 else { return nil }
    return try JournalReader(directory: directory).record(sequence)?.timestamp
  }

  /// `text` as a sequence number in 0...lastSequence.
  func sequence(_ text: String, what: String = "sequence number") throws(UsageError) -> UInt64 {
    guard let value = UInt64(text) else {
      throw UsageError("\(what) '\(text)' is not a whole number; give one in 0...\(lastSequence)")
    }
    guard value <= lastSequence else {
      throw UsageError(
        "\(what) \(value) is beyond the journal's last sequence number \(lastSequence) (\(directory)); "
          + "give one in 0...\(lastSequence)")
    }
    return value
  }

  /// `text` (ISO 8601) as nanoseconds, within the journal's first and last record times.
  func time(_ text: String) throws(UsageError) -> Int64 {
    guard let value = parseISOTime(text) else {
      throw UsageError("time '\(text)' is not ISO 8601 (like 2024-05-01T12:00:00Z or 2024-05-01T12:00:00.5+02:00)")
    }
    guard let first = firstTime, let last = lastTime else {
      throw UsageError("the journal \(directory) is empty: there is no time to go to")
    }
    guard value >= first, value <= last else {
      throw UsageError(
        "time \(text) is outside the journal's records, \(isoTime(first)) to \(isoTime(last)); give a time in that range"
      )
    }
    return value
  }

  /// The target of `--to SEQ` or `--at TIME` (at most one), or the end.
  func target(_ args: Arguments) throws(UsageError) -> ReplayTarget {
    switch (args.value("to"), args.value("at")) {
    case (.some, .some): throw UsageError("give either --to SEQ or --at TIME, not both")
    case (.some(let to), nil): return .sequence(try sequence(to, what: "--to"))
    case (nil, .some(let at)): return .time(try time(at))
    case (nil, nil): return .end
    }
  }
}

/// Parses ISO 8601 date-times: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, to nanoseconds since 1970.
func parseISOTime(_ text: String) -> Int64? {
  let scalars = Array(text.utf8)
  func number(_ range: Range<Int>) -> Int? {
    guard range.upperBound <= scalars.count else { return nil }
    var value = 0
    for index in range {
      guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(scalars[index]) else { return nil }
      value = value * 10 + Int(scalars[index] - UInt8(ascii: "0"))
    }
    return value
  }
  guard scalars.count >= 20, scalars[4] == UInt8(ascii: "-"), scalars[7] == UInt8(ascii: "-"),
    scalars[10] == UInt8(ascii: "T") || scalars[10] == UInt8(ascii: " "), scalars[13] == UInt8(ascii: ":"),
    scalars[16] == UInt8(ascii: ":"), let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
    let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
    (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
  else { return nil }
  var index = 19
  var nanoseconds: Int64 = 0
  if index < scalars.count, scalars[index] == UInt8(ascii: ".") {
    index += 1
    var digits = 0
    while index < scalars.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(scalars[index]) {
      if digits < 9 { nanoseconds = nanoseconds * 10 + Int64(scalars[index] - UInt8(ascii: "0")) }
      digits += 1
      index += 1
    }
    guard digits > 0 else { return nil }
    for _ in digits..<max(digits, 9) { nanoseconds *= 10 }
  }
  var offset = 0
  guard index < scalars.count else { return nil }
  if scalars[index] == UInt8(ascii: "Z") {
    index += 1
  } else if scalars[index] == UInt8(ascii: "+") || scalars[index] == UInt8(ascii: "-") {
    guard scalars.count == index + 6, scalars[index + 3] == UInt8(ascii: ":"), let h = number(index + 1..<index + 3),
      let m = number(index + 4..<index + 6)
    else { return nil }
    offset = (h * 60 + m) * 60 * (scalars[index] == UInt8(ascii: "+") ? 1 : -1)
    index += 6
  }
  guard index == scalars.count else { return nil }
  var parts = tm()
  parts.tm_year = Int32(year - 1900)
  parts.tm_mon = Int32(month - 1)
  parts.tm_mday = Int32(day)
  parts.tm_hour = Int32(hour)
  parts.tm_min = Int32(minute)
  parts.tm_sec = Int32(second)
  let seconds = Int64(timegm(&parts)) - Int64(offset)
  let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
  guard !overflow else { return nil }
  return scaled + nanoseconds
}
