internal import Foundation
internal import RewindJournal

/// Reads the corpus journal from sequence 1 in a fresh process after dropping its pages from
/// the page cache: events/s, MB/s of payload, and the child's peak memory at a tenth of the
/// journal and at all of it (bounded reading keeps the two close); then the same records as the
/// bulk appends wrote them, 1,000 per frame, to show what frame size costs a reader. Each the
/// fastest of three cold runs, with the highest peak of the three (`ChildProcess.fastest`).
struct JournalReadScenario: Scenario {
  let name = "journal.read"
  let summary = "cold sequential read of the corpus journal in a child process"

  func run(in context: BenchContext) async throws {
    let total = context.corpus.count
    for limit in [max(total / 10, 1), total] {
      let result = try ChildProcess.fastest(
        of: 3, .read, directory: context.corpusDirectory, limit: limit, events: limit,
        resultPath: context.path("read-\(limit).json"), cold: true)
      let configuration = "\(limit) events, cold"
      context.record(name, configuration, "events/s", Double(result.events) / result.seconds, "ev/s")
      context.record(name, configuration, "payload MB/s", Double(result.payloadBytes) / result.seconds / 1e6, "MB/s")
      context.record(name, configuration, "peak memory", Double(result.peakBytes) / 1e6, "MB")
    }
    // The same records in frames of 1,000 (the bulk appends' journal): what frame size costs a reader.
    let bulk = context.path("journal-none-bulk")
    if FileManager.default.fileExists(atPath: bulk) {
      try readBulk(bulk, in: context)
    } else if context.ran("journal.append") {
      throw BenchError("no bulk appends' journal at \(bulk): journal.append ran and did not leave one")
    }
    try await readRepeated(in: context)
  }

  /// The bulk appends' journal (`journal.append`), read cold in a child.
  private func readBulk(_ bulk: String, in context: BenchContext) throws {
    let total = context.corpus.count
    let result = try ChildProcess.fastest(
      of: 3, .read, directory: bulk, limit: total, events: total, resultPath: context.path("read-bulk.json"), cold: true
    )
    let configuration = "\(total) events, \(JournalAppendScenario.bulkSize) per frame, cold"
    context.record(name, configuration, "events/s", Double(result.events) / result.seconds, "ev/s")
    context.record(name, configuration, "payload MB/s", Double(result.payloadBytes) / result.seconds / 1e6, "MB/s")
    context.record(name, configuration, "peak memory", Double(result.peakBytes) / 1e6, "MB")
  }

  /// A long journal, for memory that must not grow with length: the corpus appended
  /// `readRepeats` times in bulk, then read cold in a child. Removed afterwards (it is large).
  private func readRepeated(in context: BenchContext) async throws {
    let repeats = context.options.readRepeats
    let directory = context.path("journal-repeated")
    let journal = try Journal(directory: directory, options: JournalOptions(durability: .none))
    let batches = JournalAppendScenario.batches(of: context.corpus)
    for _ in 0..<repeats {
      for batch in batches { try await journal.append(batch) }
    }
    journal.close()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let total = context.corpus.count * repeats
    let result = try ChildProcess.fastest(
      of: 3, .read, directory: directory, limit: total, events: total, resultPath: context.path("read-long.json"),
      cold: true)
    let configuration = "\(total) events (corpus ×\(repeats)), \(JournalAppendScenario.bulkSize) per frame, cold"
    context.record(name, configuration, "events/s", Double(result.events) / result.seconds, "ev/s")
    context.record(name, configuration, "journal bytes/event", Double(bytesOnDisk(directory)) / Double(total), "B")
    context.record(name, configuration, "peak memory", Double(result.peakBytes) / 1e6, "MB")
  }
}

/// Replays the corpus journal into the Notebook stores (`Replay.rebuild`) in a fresh process:
/// events/s and peak memory, at a tenth of the journal and at all of it, each the best of three
/// cold runs (as the liblz4 ceiling it is compared with is the best of three; the highest peak
/// of the three is recorded); then a history
/// `readRepeats` times as long (10M events in full mode), written for the purpose by the same
/// seeded workload (a valid history: the corpus repeated is not one), replayed the same way. The peak includes the
/// rebuilt state, which grows with the number of live records (recorded next to it).
struct ReplayScenario: Scenario {
  let name = "replay"
  let summary = "cold Replay.rebuild of the Notebook workspace in a child process"

  func run(in context: BenchContext) async throws {
    let total = context.corpus.count
    for limit in [max(total / 10, 1), total] {
      let result = try ChildProcess.fastest(
        of: 3, .replay, directory: context.corpusDirectory, limit: limit, events: limit,
        resultPath: context.path("replay-\(limit).json"), cold: true)
      let configuration = "\(limit) events, cold"
      context.record(name, configuration, "events/s", Double(limit) / result.seconds, "ev/s")
      context.record(name, configuration, "peak memory", Double(result.peakBytes) / 1e6, "MB")
      if let live = result.liveRecords { context.record(name, configuration, "live records", Double(live), "") }
    }
    try await replayLong(in: context)
  }

  /// The long history: written through the manager, replayed cold in a child, removed.
  private func replayLong(in context: BenchContext) async throws {
    let target = context.corpus.count * context.options.readRepeats
    let directory = context.path("journal-long-history")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    // The last command may take the history a few events past the target; replay stops at it.
    let (events, _, seconds) = try await CorpusScenario.writeHistory(
      events: target, seed: context.options.seed, directory: directory)
    // The fastest of three cold runs, with the highest peak, as the replays at n/10 and n events:
    // the target takes the slower of this and those, so one run of this would decide it alone.
    let result = try ChildProcess.fastest(
      of: 3, .replay, directory: directory, limit: target, events: target,
      resultPath: context.path("replay-long.json"), cold: true)
    let configuration = Self.longConfiguration(target)
    context.record(name, configuration, "events/s", Double(result.events) / result.seconds, "ev/s")
    context.record(name, configuration, "peak memory", Double(result.peakBytes) / 1e6, "MB")
    if let live = result.liveRecords { context.record(name, configuration, "live records", Double(live), "") }
    context.record(name, configuration, "history written at", Double(events) / seconds, "ev/s")
    context.record(name, configuration, "journal bytes/event", Double(bytesOnDisk(directory)) / Double(events), "B")
  }

  /// The configuration under which the long history's figures are recorded.
  static func longConfiguration(_ events: Int) -> String { "\(events) events (one history), cold" }
}
