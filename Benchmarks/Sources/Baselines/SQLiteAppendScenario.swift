internal import RewindJournal

/// The corpus records inserted into SQLite from the same producer counts, compared with the
/// journal's appends:
/// - grouped commits by a writer thread, synchronous=OFF, against the journal without fsync (`none`);
/// - the same with synchronous=FULL, against the journal's group commit with fsync (`always`);
/// - a commit per append by the caller under a lock, synchronous=OFF (`none`) and FULL (`always`);
/// - bulk: 1,000 records per transaction from one producer.
struct SQLiteAppendScenario: Scenario {
  let name = "sqlite.append"
  let summary = "SQLite (WAL, prepared INSERT, one writer) on the same records and producers"

  func run(in context: BenchContext) async throws {
    let corpus = context.corpus
    let variants: [(label: String, synchronous: String, commit: SQLiteAppender.Commit, rewind: String)] = [
      ("grouped, synchronous=OFF", "OFF", .grouped, "none"),
      ("grouped, synchronous=FULL", "FULL", .grouped, "always"),
      ("commit per append under a lock, synchronous=OFF", "OFF", .eachAppend, "none"),
      ("commit per append under a lock, synchronous=FULL", "FULL", .eachAppend, "always"),
    ]
    for variant in variants {
      for producers in [1, 64] {
        let count: Int
        switch (variant.commit, variant.rewind) {
        case (_, "none"):
          count = appendCount(durability: .none, producers: producers, options: context.options)
        case (.grouped, _):
          count = appendCount(durability: .always, producers: producers, options: context.options)
        default: count = min(context.options.syncedAppends, corpus.count)
        }
        let path = context.path("sqlite-\(variant.synchronous)-\(variant.commit)-\(producers).db")
        let appender = try SQLiteAppender(path: path, synchronous: variant.synchronous, commit: variant.commit)
        let (seconds, latencies) = try await timedAsync {
          try await runProducers(producers, count: count) { index in
            try await appender.append([corpus[index]])
          }
        }
        appender.close()
        let disk = bytesOnDisk(context.work, prefix: path)
        var all = latencies
        let configuration = "\(variant.label), \(producers) producer\(producers == 1 ? "" : "s")"
        let rewind = JournalAppendScenario.configuration(variant.rewind, producers)
        let journal = "journal.append"
        context.record(
          baseline: "sqlite", name, configuration, "events/s", Double(count) / seconds, "ev/s",
          comparedWith: (journal, rewind, "events/s"))
        context.record(
          baseline: "sqlite", name, configuration, "bytes/event on disk", Double(disk) / Double(count), "B",
          comparedWith: (journal, rewind, "bytes/event on disk"))
        context.record(
          baseline: "sqlite", name, configuration, "ack p50", all.percentileMilliseconds(0.5), "ms",
          comparedWith: (journal, rewind, "ack p50"))
        context.record(
          baseline: "sqlite", name, configuration, "ack p99", all.percentileMilliseconds(0.99), "ms",
          comparedWith: (journal, rewind, "ack p99"))
      }
    }
    // Bulk: 1,000 records per transaction from one producer, as the journal's bulk appends.
    let batches = JournalAppendScenario.batches(of: corpus)
    for (synchronous, rewind) in [("OFF", "none"), ("FULL", "always")] {
      let path = context.path("sqlite-bulk-\(synchronous).db")
      let appender = try SQLiteAppender(path: path, synchronous: synchronous, commit: .eachAppend)
      let (seconds, _) = try await timedAsync {
        try await runProducers(1, count: batches.count) { index in try await appender.append(batches[index]) }
      }
      appender.close()
      let disk = bytesOnDisk(context.work, prefix: path)
      let configuration =
        "synchronous=\(synchronous), 1 producer, \(JournalAppendScenario.bulkSize) records per transaction"
      let reference = JournalAppendScenario.bulkConfiguration(rewind)
      context.record(
        baseline: "sqlite", name, configuration, "events/s", Double(corpus.count) / seconds, "ev/s",
        comparedWith: ("journal.append", reference, "events/s"))
      context.record(
        baseline: "sqlite", name, configuration, "bytes/event on disk", Double(disk) / Double(corpus.count), "B",
        comparedWith: ("journal.append", reference, "bytes/event on disk"))
    }
  }
}
