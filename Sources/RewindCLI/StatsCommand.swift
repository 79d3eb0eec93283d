import Foundation
import Rewind
import RewindJournal

enum StatsCommand: RewindCommand {
  static let name = "stats"
  static let summary = "sizes, counts and compression of a journal"
  static let help = """
    Usage: rewind stats DIR

    Records, frames, segments, time span, bytes on disk and decoded, and the compression ratio.

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
    let directory = try Arguments(arguments, options: [], flags: []).directory()
    let reader = try JournalReader(directory: directory)
    let report = try reader.verify()
    let cursor = try reader.records()
    let first = try cursor.next()
    output.out(
      """
      journal     \(directory) (id \(try reader.id))
      records     \(report.records) (sequences 1-\(report.lastSequence))
      frames      \(report.batches) (\(report.batches == 0 ? 0 : report.records / UInt64(report.batches)) records per frame on average)
      segments    \(report.segments)
      first       \(first.map { isoTime($0.timestamp) } ?? "-")
      bytes       \(report.bytesOnDisk) on disk, \(report.bytesDecoded) decoded, ratio \(ratio(report))

      """)
    return .success
  }
}
