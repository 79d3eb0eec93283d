/// Reads the corpus journal from sequence 1 in a fresh process after dropping its pages from
/// the page cache: events/s, MB/s of payload, and the child's peak memory at a tenth of the
/// journal and at all of it (bounded reading keeps the two close).
struct JournalReadScenario: Scenario {
  let name = "journal.read"
  let summary = "cold sequential read of the corpus journal in a child process"

  func run(in context: BenchContext) async throws {
    let total = context.corpus.count
    for limit in [max(total / 10, 1), total] {
      evictFromPageCache(context.corpusDirectory)
      let result = try ChildProcess.run(
        .read, directory: context.corpusDirectory, limit: limit, resultPath: context.path("read-\(limit).json"))
      guard result.events == limit else {
        throw BenchError("the read child saw \(result.events) records, expected \(limit)")
      }
      let configuration = "\(limit) events, cold"
      context.record(name, configuration, "events/s", Double(result.events) / result.seconds, "ev/s")
      context.record(name, configuration, "payload MB/s", Double(result.payloadBytes) / result.seconds / 1e6, "MB/s")
      context.record(name, configuration, "peak memory", Double(result.peakBytes) / 1e6, "MB")
    }
  }
}

/// Replays the corpus journal into the Notebook stores (`Replay.rebuild`) in a fresh process:
/// events/s and peak memory, at a tenth of the journal and at all of it. The peak includes the
/// rebuilt state, which grows with the number of live notes.
struct ReplayScenario: Scenario {
  let name = "replay"
  let summary = "cold Replay.rebuild of the Notebook workspace in a child process"

  func run(in context: BenchContext) async throws {
    let total = context.corpus.count
    for limit in [max(total / 10, 1), total] {
      evictFromPageCache(context.corpusDirectory)
      let result = try ChildProcess.run(
        .replay, directory: context.corpusDirectory, limit: limit, resultPath: context.path("replay-\(limit).json"))
      guard result.events == limit else {
        throw BenchError("the replay child applied \(result.events) events, expected \(limit)")
      }
      let configuration = "\(limit) events, cold"
      context.record(name, configuration, "events/s", Double(result.events) / result.seconds, "ev/s")
      context.record(name, configuration, "peak memory", Double(result.peakBytes) / 1e6, "MB")
    }
  }
}
