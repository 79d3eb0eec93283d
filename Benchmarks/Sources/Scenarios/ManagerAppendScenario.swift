internal import Foundation
internal import Notebook
internal import RewindJournal

/// New notes through `NotebookManager` under each durability policy, from 1 and 64 concurrent
/// producers: the whole funnel (validate, encode, journal, apply) per command. Bytes on disk are
/// the journal directory's (segments and index) after the run. Each configuration
/// `BenchOptions.appendRounds` times, the median run reported.
struct ManagerAppendScenario: Scenario {
  let name = "manager.append"
  let summary = "createNote through NotebookManager: events/s and acknowledgement latency"

  func run(in context: BenchContext) async throws {
    let count = context.options.managerCommands
    var texts = NotebookWorkload(seed: context.options.seed)
    let inputs = (0..<count).map { _ in (texts.words(2...7), texts.words(8...30)) }
    for (label, durability) in durabilities {
      for producers in [1, 64] {
        let directory = context.path("manager-\(label)-\(producers)")
        let runs = try await appendRounds(context.options.appendRounds) { _ in
          try? FileManager.default.removeItem(atPath: directory)
          let manager = try NotebookManager(
            directory: directory, options: benchJournalOptions(durability),
            ids: NotebookWorkload.identifiers(seed: context.options.seed &+ UInt64(producers)))
          let notebook = try await manager.createNotebook(title: "Benchmark")
          let (seconds, latencies) = try await timedAsync {
            try await runProducers(producers, count: count) { index in
              _ = try await manager.createNote(in: notebook, title: inputs[index].0, body: inputs[index].1)
            }
          }
          manager.close()
          return AppendRun(events: count, seconds: seconds, latencies: latencies, bytesOnDisk: bytesOnDisk(directory))
        }
        let run = runs.median
        var all = run.latencies
        let configuration = "\(label), \(producers) producer\(producers == 1 ? "" : "s")"
        let bytes = Double(run.bytesOnDisk)
        context.record(name, configuration, "events/s", run.eventsPerSecond, "ev/s")
        context.recordSpread(name, configuration, runs)
        context.record(name, configuration, "MB/s written", bytes / run.seconds / 1e6, "MB/s")
        context.record(name, configuration, "bytes/event on disk", bytes / Double(count + 1), "B")
        context.record(name, configuration, "ack p50", all.percentileMilliseconds(0.5), "ms")
        context.record(name, configuration, "ack p99", all.percentileMilliseconds(0.99), "ms")
      }
    }
  }
}

/// The durability policies, labelled as in the tables.
let durabilities: [(String, Durability)] = [("none", .none), ("batched", .batched), ("always", .always)]

/// Runs `count` operations, spread round-robin over `producers` concurrent tasks, and returns
/// every operation's latency.
func runProducers(
  _ producers: Int, count: Int, _ operation: @escaping @Sendable (Int) async throws -> Void
) async throws -> Latencies {
  try await withThrowingTaskGroup(of: Latencies.self) { group in
    for producer in 0..<producers {
      group.addTask {
        var latencies = Latencies()
        latencies.reserve(count / producers + 1)
        var index = producer
        while index < count {
          let start = monotonicNanos()
          try await operation(index)
          latencies.add(monotonicNanos() - start)
          index += producers
        }
        return latencies
      }
    }
    var all = Latencies()
    all.reserve(count)
    for try await latencies in group { all.add(contentsOf: latencies) }
    return all
  }
}
