internal import Foundation
internal import RewindJournal

/// The corpus records inserted into SQLite from the same producer counts, compared with the
/// journal's appends:
/// - grouped commits by a writer thread, synchronous=OFF, against the journal without fsync (`none`);
/// - the same with synchronous=FULL, against the journal's group commit with fsync (`always`);
/// - a commit per append by the caller under a lock, synchronous=OFF (`none`) and FULL (`always`);
/// - bulk: 1,000 records per transaction from one producer.
/// Each configuration `BenchOptions.appendRounds` times, the median run reported, as the journal's.
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
        let runs = try await appendRounds(context.options.appendRounds) { _ in
          try await Self.appendRun(
            to: path, synchronous: variant.synchronous, commit: variant.commit, records: count, in: context
          ) { appender in
            try await runProducers(producers, count: count) { index in try await appender.append([corpus[index]]) }
          }
        }
        let run = runs.median
        var all = run.latencies
        let configuration = "\(variant.label), \(producers) producer\(producers == 1 ? "" : "s")"
        let rewind = JournalAppendScenario.configuration(variant.rewind, producers)
        let journal = "journal.append"
        context.record(
          baseline: "sqlite", name, configuration, "events/s", run.eventsPerSecond, "ev/s",
          comparedWith: (journal, rewind, "events/s"))
        context.recordSpread(name, configuration, runs, system: "sqlite")
        context.record(
          baseline: "sqlite", name, configuration, "bytes/event on disk", Double(run.bytesOnDisk) / Double(count), "B",
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
      let runs = try await appendRounds(context.options.appendRounds) { _ in
        try await Self.appendRun(
          to: path, synchronous: synchronous, commit: .eachAppend, records: corpus.count, in: context
        ) { appender in
          try await runProducers(1, count: batches.count) { index in try await appender.append(batches[index]) }
        }
      }
      let run = runs.median
      let configuration =
        "synchronous=\(synchronous), 1 producer, \(JournalAppendScenario.bulkSize) records per transaction"
      let reference = JournalAppendScenario.bulkConfiguration(rewind)
      context.record(
        baseline: "sqlite", name, configuration, "events/s", run.eventsPerSecond, "ev/s",
        comparedWith: ("journal.append", reference, "events/s"))
      context.recordSpread(name, configuration, runs, system: "sqlite")
      context.record(
        baseline: "sqlite", name, configuration, "bytes/event on disk", Double(run.bytesOnDisk) / Double(corpus.count),
        "B", comparedWith: ("journal.append", reference, "bytes/event on disk"))
    }
  }

  /// One run: a new database at `path` (whatever an earlier round left there removed, with its
  /// -wal and -shm files), the appends `body` makes to it timed, and the bytes it holds once
  /// closed.
  private static func appendRun(
    to path: String, synchronous: String, commit: SQLiteAppender.Commit, records: Int, in context: BenchContext,
    _ body: (SQLiteAppender) async throws -> Latencies
  ) async throws -> AppendRun {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    let appender = try SQLiteAppender(path: path, synchronous: synchronous, commit: commit)
    let (seconds, latencies) = try await timedAsync { try await body(appender) }
    appender.close()
    return AppendRun(
      events: records, seconds: seconds, latencies: latencies,
      bytesOnDisk: bytesOnDisk(context.work, prefix: path))
  }
}
