internal import Foundation
internal import RewindJournal

/// The corpus records inserted into SQLite from the same producer counts, compared with the
/// journal's appends:
/// - grouped commits by a writer thread, synchronous=OFF, against the journal without fsync (`none`);
/// - the same with synchronous=FULL, against the journal's group commit with fsync (`always`);
/// - a commit per append by the caller under a lock, synchronous=OFF (`none`) and FULL (`always`;
///   64 producers make fewer appends than the journal's, which their configuration names);
/// - bulk: 1,000 records per transaction from one producer.
/// Each configuration `BenchOptions.appendRounds` times, the median run reported, and once more
/// for the latencies, as the journal's (`appendRounds`).
struct SQLiteAppendScenario: Scenario {
  let name = "sqlite.append"
  let summary = "SQLite (WAL, prepared INSERT, one writer) on the same records and producers"

  /// One way of committing: its label, SQLite's `synchronous` setting, who commits, and the
  /// journal durability it is compared with.
  struct Variant: Sendable {
    var label: String
    var synchronous: String
    var commit: SQLiteAppender.Commit
    var rewind: String

    static let groupedOff = Variant(
      label: "grouped, synchronous=OFF", synchronous: "OFF", commit: .grouped, rewind: "none")
    static let groupedFull = Variant(
      label: "grouped, synchronous=FULL", synchronous: "FULL", commit: .grouped, rewind: "always")
    static let eachAppendOff = Variant(
      label: "commit per append under a lock, synchronous=OFF", synchronous: "OFF", commit: .eachAppend, rewind: "none")
    static let eachAppendFull = Variant(
      label: "commit per append under a lock, synchronous=FULL", synchronous: "FULL", commit: .eachAppend,
      rewind: "always")
    static let all = [groupedOff, groupedFull, eachAppendOff, eachAppendFull]
  }

  /// How many appends `variant` makes from `producers`: as many as the journal configuration it is
  /// compared with, except a durable commit per append from 64 producers, which makes
  /// `BenchOptions.syncedAppends` (each commit waits for its own fsync: the journal's count would
  /// take hours); `configuration` says so.
  static func appendCount(_ variant: Variant, producers: Int, options: BenchOptions) -> Int {
    if variant.commit == .eachAppend && variant.rewind != "none" {
      return min(options.syncedAppends, options.corpusEvents)
    }
    return journalAppendCount(variant, producers: producers, options: options)
  }

  /// The appends of the journal configuration `variant` is compared with.
  static func journalAppendCount(_ variant: Variant, producers: Int, options: BenchOptions) -> Int {
    let durability = durabilities.first { $0.0 == variant.rewind }?.1 ?? .none
    return rewind_bench.appendCount(durability: durability, producers: producers, options: options)
  }

  /// The configuration a variant's figures are recorded under: its label and producers, and its
  /// count of appends where it is not the journal's.
  static func configuration(_ variant: Variant, producers: Int, options: BenchOptions) -> String {
    var configuration = "\(variant.label), \(producers) producer\(producers == 1 ? "" : "s")"
    let count = appendCount(variant, producers: producers, options: options)
    let journal = journalAppendCount(variant, producers: producers, options: options)
    if count != journal {
      configuration += ", \(Report.format(Double(count))) appends (the journal's: \(Report.format(Double(journal))))"
    }
    return configuration
  }

  /// The configuration of the bulk appends' figures.
  static func bulkConfiguration(synchronous: String) -> String {
    "synchronous=\(synchronous), 1 producer, \(JournalAppendScenario.bulkSize) records per transaction"
  }

  func run(in context: BenchContext) async throws {
    let corpus = context.corpus
    for variant in Variant.all {
      for producers in [1, 64] {
        let count = Self.appendCount(variant, producers: producers, options: context.options)
        let path = context.path("sqlite-\(variant.synchronous)-\(variant.commit)-\(producers).db")
        let runs = try await appendRounds(context.options.appendRounds) { timing in
          try await Self.appendRun(
            to: path, synchronous: variant.synchronous, commit: variant.commit, records: count, in: context
          ) { appender in
            try await runProducers(producers, count: count, timing: timing) { index in
              try await appender.append(corpus[index])
            }
          }
        }
        let run = runs.median
        var all = runs.latencies
        let configuration = Self.configuration(variant, producers: producers, options: context.options)
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
          baseline: "sqlite", name, configuration, "ack p50", try all.requiredMilliseconds(0.5), "ms",
          comparedWith: (journal, rewind, "ack p50"))
        context.record(
          baseline: "sqlite", name, configuration, "ack p99", try all.requiredMilliseconds(0.99), "ms",
          comparedWith: (journal, rewind, "ack p99"))
      }
    }
    // Bulk: 1,000 records per transaction from one producer, as the journal's bulk appends.
    let batches = JournalAppendScenario.batches(of: corpus)
    for (synchronous, rewind) in [("OFF", "none"), ("FULL", "always")] {
      let path = context.path("sqlite-bulk-\(synchronous).db")
      let runs = try await appendRounds(context.options.appendRounds) { timing in
        try await Self.appendRun(
          to: path, synchronous: synchronous, commit: .eachAppend, records: corpus.count, in: context
        ) { appender in
          try await runProducers(1, count: batches.count, timing: timing) { index in
            try await appender.append(batches[index])
          }
        }
      }
      let run = runs.median
      let configuration = Self.bulkConfiguration(synchronous: synchronous)
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
  /// -wal and -shm files), the appends `body` makes to it timed, and the bytes of the database
  /// and its WAL once checkpointed (not the -shm file: SQLite's shared-memory index of the WAL,
  /// which it removes when the connection closes).
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
      bytesOnDisk: [path, path + "-wal"].reduce(0) { $0 + fileBytes($1) })
  }
}
