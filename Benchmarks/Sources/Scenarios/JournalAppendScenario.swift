internal import Foundation
internal import RewindJournal

/// The corpus appended straight to a `Journal`, one command's record per append, under each
/// durability policy from 1 and 64 concurrent producers, and 1,000 records per append from one;
/// each configuration `BenchOptions.appendRounds` times, the median run reported, and once more
/// for the latencies (`appendRounds`).
struct JournalAppendScenario: Scenario {
  let name = "journal.append"
  let summary = "Journal.append of the corpus records: events/s, MB/s, bytes/event, ack latency"

  func run(in context: BenchContext) async throws {
    let corpus = context.corpus
    let rounds = context.options.appendRounds
    for (label, durability) in durabilities {
      for producers in [1, 64] {
        let count = appendCount(durability: durability, producers: producers, options: context.options)
        let directory = context.path("journal-\(label)-\(producers)")
        let runs = try await appendRounds(rounds) { timing in
          try await Self.appendRun(to: directory, durability, records: count) { journal in
            try await runProducers(producers, count: count, timing: timing) { index in
              try await journal.append(corpus[index])
            }
          }
        }
        try context.recordAppendRuns(name, Self.configuration(label, producers), runs)
      }
    }
    // Bulk appends (an import, a sync pull): 1,000 records per append from one producer.
    let batches = Self.batches(of: corpus)
    for (label, durability) in durabilities where durability != .batched {
      let directory = context.path("journal-\(label)-bulk")
      let runs = try await appendRounds(rounds) { timing in
        try await Self.appendRun(to: directory, durability, records: corpus.count) { journal in
          try await runProducers(1, count: batches.count, timing: timing) { index in
            try await journal.append(batches[index])
          }
        }
      }
      try context.recordAppendRuns(name, Self.bulkConfiguration(label), runs)
    }
  }

  /// One run: a new journal in `directory` (whatever an earlier round left there removed), the
  /// appends `body` makes to it timed, and the bytes it holds once closed.
  private static func appendRun(
    to directory: String, _ durability: Durability, records: Int, _ body: (Journal) async throws -> Latencies
  ) async throws -> AppendRun {
    try? FileManager.default.removeItem(atPath: directory)
    let journal = try Journal(directory: directory, options: benchJournalOptions(durability))
    let (seconds, latencies) = try await timedAsync { try await body(journal) }
    journal.close()
    return AppendRun(events: records, seconds: seconds, latencies: latencies, bytesOnDisk: bytesOnDisk(directory))
  }

  static let bulkSize = 1_000

  static func bulkConfiguration(_ durability: String) -> String {
    "\(durability), 1 producer, \(bulkSize) records per append"
  }

  /// The corpus cut into appends of `bulkSize` records.
  static func batches(of corpus: [NewRecord]) -> [[NewRecord]] {
    stride(from: 0, to: corpus.count, by: bulkSize).map { Array(corpus[$0..<min($0 + bulkSize, corpus.count)]) }
  }

  static func configuration(_ durability: String, _ producers: Int) -> String {
    "\(durability), \(producers) producer\(producers == 1 ? "" : "s")"
  }
}

/// How many appends a configuration makes: the whole corpus when nothing waits for a disk, fewer
/// when each append waits for an fsync (the rate is steady long before the end).
func appendCount(durability: Durability, producers: Int, options: BenchOptions) -> Int {
  if durability == .none { return options.corpusEvents }
  let count = producers == 1 ? options.syncedAppends : options.concurrentSyncedAppends
  return min(count, options.corpusEvents)
}
