import Foundation
import Rewind
import RewindJournal

func ratio(_ report: VerificationReport) -> String {
  report.bytesOnDisk == 0 ? "-" : String(format: "%.2f", Double(report.bytesDecoded) / Double(report.bytesOnDisk))
}

/// ISO 8601 with nanoseconds, UTC.

func isoTime(_ nanoseconds: Int64) -> String {
  let seconds = nanoseconds >= 0 ? nanoseconds / 1_000_000_000 : (nanoseconds - 999_999_999) / 1_000_000_000
  let fraction = nanoseconds - seconds * 1_000_000_000
  var time = time_t(seconds)
  var parts = tm()
  gmtime_r(&time, &parts)
  return String(
    format: "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
    parts.tm_hour,
    parts.tm_min, parts.tm_sec, fraction)
}
