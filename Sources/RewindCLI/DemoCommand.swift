import Foundation
import Rewind
import RewindJournal

enum DemoCommand: RewindCommand {
  static let name = "demo"
  static let summary = "write a demo journal with concurrent producers"
  static let help = """
    Usage: rewind demo [DIR] [--records N] [--producers K] [--durability always|batched|none] [--seed S]

    Appends N event-like records (default 100000) from K concurrent producers (default 8) to the
    journal in DIR (default ./\(RewindTool.defaultDemoDirectory)), then prints throughput and sizes.
    With --seed the payloads are the same on every run.

    Example: rewind demo /tmp/j --records 200000 --durability batched

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
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
