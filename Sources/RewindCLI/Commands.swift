import Foundation
import Rewind
import RewindJournal

enum DemoCommand: Command {
  static let help = """
    Usage: rewind demo [DIR] [--records N] [--producers K] [--durability always|batched|none] [--seed S]

    Appends N event-like records (default 100000) from K concurrent producers (default 8) to the
    journal in DIR (default ./\(RewindTool.defaultDemoDirectory)), then prints throughput and sizes.
    With --seed the payloads are the same on every run.

    Example: rewind demo /tmp/j --records 200000 --durability batched

    """

  static func run(_ arguments: [String], output: RewindTool.Output) async throws -> RewindTool.ExitCode {
    if printsHelp(arguments, output) { return .success }
    let args = try Arguments(arguments, options: ["records", "producers", "durability", "seed"], flags: [])
    let directory = try args.directory(default: RewindTool.defaultDemoDirectory)
    let total = try args.integer("records", default: 100_000, range: 1...100_000_000)
    let producers = try args.integer("producers", default: 8, range: 1...1024)
    let seed = UInt64(try args.integer("seed", default: 1))
    var options = JournalOptions()
    switch args.value("durability") ?? "batched" {
    case "always": options.durability = .always
    case "batched": options.durability = .batched
    case "none": options.durability = .none
    case let other: throw UsageError("--durability must be always, batched or none, not '\(other)'")
    }
    let journal = try Journal(directory: directory, options: options)
    if !journal.recovery.isClean {
      for moved in journal.recovery.movedAside { output.err("recovered: \(moved)\n") }
    }
    let before = journal.lastSequence
    let clock = ContinuousClock()
    let started = clock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
      for producer in 0..<producers {
        let share = total / producers + (producer < total % producers ? 1 : 0)
        group.addTask {
          var random = DemoRandom(seed: seed &+ UInt64(producer) &* 0x9E37_79B9)
          var written = 0
          while written < share {
            let count = min(share - written, Int(random.next() % 16) + 1)
            let records = (0..<count).map { i in
              NewRecord(
                timestamp: 1_700_000_000_000_000_000 + Int64(producer) * 1_000_000 + Int64(written + i),
                payload: random.payload(producer: producer, index: written + i))
            }
            try await journal.append(records)
            written += count
          }
        }
      }
      try await group.waitForAll()
    }
    let elapsed = started.duration(to: clock.now)
    journal.close()
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let report = try JournalReader(directory: directory).verify()
    output.out(
      """
      journal demo: \(directory)
        appended      \(journal.lastSequence - before) records from \(producers) producers (\(options.durability))
        throughput    \(Int(Double(journal.lastSequence - before) / max(seconds, 1e-9))) records/s in \(String(format: "%.3f", seconds)) s
        journal       \(report.records) records, \(report.batches) frames, \(report.segments) segments
        size          \(report.bytesOnDisk) bytes on disk, \(report.bytesDecoded) decoded (ratio \(ratio(report)))
        integrity     \(report.isSound ? "sound" : "\(report.problems.count) problems")

      """)
    return report.isSound ? .success : .findings
  }
}

/// Payloads for the demo: event-like JSON text, reproducible from the seed.
struct DemoRandom {
  private var random: SeededRandom
  init(seed: UInt64) { random = SeededRandom(seed: seed) }

  mutating func next() -> UInt64 { random.next() }

  mutating func payload(producer: Int, index: Int) -> [UInt8] {
    let kinds = ["note.created", "note.retitled", "note.tagged", "tag.removed", "reading.item.added"]
    let kind = kinds[Int(next() % UInt64(kinds.count))]
    let words = ["draft", "meeting", "ideas", "groceries", "swift", "journal", "replay", "notes"]
    let title = (0..<3).map { _ in words[Int(next() % UInt64(words.count))] }.joined(separator: " ")
    return Array(
      #"{"name":"\#(kind)","noteID":"n-\#(producer)-\#(index / 4)","title":"\#(title)","origin":"user","n":\#(next() % 1000)}"#
        .utf8)
  }
}

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

enum LogCommand: Command {
  static let help = """
    Usage: rewind log DIR [--from SEQ] [--limit N] [--json]

    Lists records in order: sequence number, time (ISO 8601, UTC), size and the payload (as text
    when it is UTF-8, otherwise hexadecimal). With --json, one object per line.

    Example: rewind log /tmp/j --from 100 --limit 10

    """

  static func run(_ arguments: [String], output: RewindTool.Output) throws -> RewindTool.ExitCode {
    if printsHelp(arguments, output) { return .success }
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

enum StatsCommand: Command {
  static let help = """
    Usage: rewind stats DIR

    Records, frames, segments, time span, bytes on disk and decoded, and the compression ratio.

    """

  static func run(_ arguments: [String], output: RewindTool.Output) throws -> RewindTool.ExitCode {
    if printsHelp(arguments, output) { return .success }
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

enum VerifyCommand: Command {
  static let help = """
    Usage: rewind verify DIR

    Checks every segment header, batch header and frame checksum, decodes every LZ4 frame and
    checks record framing and sequence continuity. Exit 0 when sound; exit 1 with a report that
    locates every problem (segment, byte offset, sequence range).

    """

  static func run(_ arguments: [String], output: RewindTool.Output) throws -> RewindTool.ExitCode {
    if printsHelp(arguments, output) { return .success }
    let directory = try Arguments(arguments, options: [], flags: []).directory()
    let report = try JournalReader(directory: directory).verify()
    for problem in report.problems { output.out("problem: \(problem)\n") }
    if let tail = report.unfinishedTail {
      output.out(
        "note: unfinished last frame (a write in progress, or a torn tail the next writer moves aside): \(tail)\n")
    }
    for note in report.notes { output.out("note: \(note)\n") }
    output.out(
      report.isSound
        ? "sound: \(report.records) records in \(report.batches) frames, \(report.segments) segments, last sequence \(report.lastSequence)\n"
        : "damaged: \(report.problems.count) problem(s); intact up to sequence \(report.lastSequence). `rewind repair \(directory)` moves the damaged part aside.\n"
    )
    return report.isSound ? .success : .findings
  }
}

enum RepairCommand: Command {
  static let help = """
    Usage: rewind repair DIR [--yes]

    Moves everything from the first damaged frame on into DIR/quarantine/ (nothing is deleted),
    after saying exactly what it will move. Without --yes it only shows the plan.

    """

  static func run(_ arguments: [String], output: RewindTool.Output) throws -> RewindTool.ExitCode {
    if printsHelp(arguments, output) { return .success }
    let args = try Arguments(arguments, options: [], flags: ["yes"])
    let directory = try args.directory()
    let plan = try Journal.repair(directory: directory, dryRun: true)
    if plan.moved.isEmpty {
      output.out("nothing to repair: the journal is sound (last sequence \(plan.lastSequence))\n")
      return .success
    }
    for entry in plan.moved {
      output.out(
        "will move \(entry.length) bytes of \(entry.segment) from byte offset \(entry.offset): \(entry.reason)\n")
    }
    guard args.flag("yes") else {
      output.out("run again with --yes to move them; the journal would then end at sequence \(plan.lastSequence)\n")
      return .findings
    }
    let done = try Journal.repair(directory: directory)
    for entry in done.moved { output.out("\(entry)\n") }
    output.out("repaired: the journal ends at sequence \(done.lastSequence)\n")
    return .success
  }
}
