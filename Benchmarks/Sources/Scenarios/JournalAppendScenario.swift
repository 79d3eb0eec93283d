internal import RewindJournal

/// The corpus appended straight to a `Journal`, one command's record per append, under each
/// durability policy from 1 and 64 concurrent producers.
struct JournalAppendScenario: Scenario {
  let name = "journal.append"
  let summary = "Journal.append of the corpus records: events/s, MB/s, bytes/event, ack latency"

  func run(in context: BenchContext) async throws {
    let corpus = context.corpus
    for (label, durability) in durabilities {
      for producers in [1, 64] {
        let count = appendCount(durability: durability, producers: producers, options: context.options)
        let directory = context.path("journal-\(label)-\(producers)")
        let journal = try Journal(directory: directory, options: benchJournalOptions(durability))
        let (seconds, latencies) = try await timedAsync {
          try await runProducers(producers, count: count) { index in
            try await journal.append([corpus[index]])
          }
        }
        journal.close()
        let disk = bytesOnDisk(directory)
        var all = latencies
        let configuration = Self.configuration(label, producers)
        context.record(name, configuration, "events/s", Double(count) / seconds, "ev/s")
        context.record(name, configuration, "MB/s written", Double(disk) / seconds / 1e6, "MB/s")
        context.record(name, configuration, "bytes/event on disk", Double(disk) / Double(count), "B")
        context.record(name, configuration, "ack p50", all.percentileMilliseconds(0.5), "ms")
        context.record(name, configuration, "ack p99", all.percentileMilliseconds(0.99), "ms")
      }
    }
    // Bulk appends (an import, a sync pull): 1,000 records per append from one producer.
    let batches = Self.batches(of: corpus)
    for (label, durability) in durabilities where durability != .batched {
      let directory = context.path("journal-\(label)-bulk")
      let journal = try Journal(directory: directory, options: benchJournalOptions(durability))
      let (seconds, latencies) = try await timedAsync {
        try await runProducers(1, count: batches.count) { index in try await journal.append(batches[index]) }
      }
      journal.close()
      let disk = bytesOnDisk(directory)
      var all = latencies
      let configuration = Self.bulkConfiguration(label)
      context.record(name, configuration, "events/s", Double(corpus.count) / seconds, "ev/s")
      context.record(name, configuration, "MB/s written", Double(disk) / seconds / 1e6, "MB/s")
      context.record(name, configuration, "bytes/event on disk", Double(disk) / Double(corpus.count), "B")
      context.record(name, configuration, "ack p50", all.percentileMilliseconds(0.5), "ms")
      context.record(name, configuration, "ack p99", all.percentileMilliseconds(0.99), "ms")
    }
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
