import Foundation
import Rewind
import RewindJournal

extension VerifyCommand {
  /// The decoding part of `verify` when no registered model replays the journal: every record's
  /// envelope and fields are decoded as the audit commands render them, without the app's types.
  /// A record with Rewind's envelope whose fields do not decode is a problem; a record without the
  /// envelope (another kind of journal) is counted, not a problem.
  /// - Returns: whether every event decoded.
  static func verifyDecoding(_ reader: JournalReader, through last: UInt64, context: RewindTool.Context) throws
    -> Bool
  {
    let output = context.output
    var events = 0
    var others = 0
    var problems = 0
    let progress = ProgressLine("decoding", context: context)
    defer { progress.finish() }  // an error then starts a line of its own
    let cursor = last > 0 ? try reader.records(from: 1) : nil
    while let record = try cursor?.next(), record.sequence <= last {
      progress.update(record.sequence, of: last)
      guard let header = try? EventRecord.header(of: record.payload) else {
        others += 1
        continue
      }
      events += 1
      do {
        _ = try FieldRenderer.json(Array(record.payload[header.bodyOffset...]))
      } catch {
        problems += 1
        progress.finish()
        output.out(
          visible(
            "problem: sequence \(record.sequence): \(header.name) v\(header.version) has Rewind's envelope but its "
              + "fields do not decode (\(error); \(AuditedEvent.fieldBytes)); "
              + "`rewind show \(shellWord(reader.directory)) \(record.sequence)` shows its bytes"
          ) + "\n")
      }
    }
    progress.finish()
    var line = "decoded: \(counted(events, "event")) field by field"
    if others > 0 {
      line += ", \(notRewindEvents(others)) (not checked)"
    }
    line += problems == 0 ? ", all sound\n" : problems == 1 ? ", 1 does not decode\n" : ", \(problems) do not decode\n"
    output.out(line)
    return problems == 0
  }
}
