import Foundation
import Rewind
import RewindJournal

enum LogCommand: RewindCommand {
  static let name = "log"
  static let summary = "list records"
  static let help = """
    Usage: rewind log DIR [--from SEQ] [--limit N] [--json]

    Lists records in order: sequence number, time (ISO 8601, UTC), size and the payload (as text
    when it is UTF-8, otherwise hexadecimal). With --json, one object per line.

    Example: rewind log /tmp/j --from 100 --limit 10

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
    let args = try Arguments(arguments, options: ["from", "limit"], flags: ["json"])
    let directory = try args.directory()
    let from = try args.integer("from", default: 1, range: 1...Int.max)
    let limit = try args.integer("limit", default: Int.max)
    let cursor = try JournalReader(directory: directory).records(from: UInt64(from))
    var shown = 0
    while shown < limit, let record = try cursor.next() {
      let text = String(validating: record.payload, as: UTF8.self)
      if args.flag("json") {
        let payload = text.map(jsonString) ?? "\"\(hex(record.payload))\""
        output.out(
          #"{"seq":\#(record.sequence),"time":"\#(isoTime(record.timestamp))","bytes":\#(record.payload.count),"payload":\#(payload)}"#
            + "\n")
      } else {
        output.out(
          "\(record.sequence)\t\(isoTime(record.timestamp))\t\(record.payload.count) B\t\(text ?? hex(record.payload))\n"
        )
      }
      shown += 1
    }
    return .success
  }

  static func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
  }

  static func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out + "\""
  }
}
