internal import Foundation
internal import Notebook
internal import RewindJournal
internal import Synchronization

/// What a checkpoint costs the manager's other commands: on a copy of the corpus journal (the
/// whole Notebook history as state), one producer issues `createNote` commands back to back, first
/// alone, then while `recordCheckpoint()` runs beside it; the latencies of the commands issued
/// while the checkpoint was under way, and the checkpoint's own duration, are recorded.
struct CheckpointScenario: Scenario {
  let name = "checkpoint"
  let summary = "createNote latency while recordCheckpoint() runs on the corpus state"

  func run(in context: BenchContext) async throws {
    let directory = context.path("checkpoint-journal")
    try? FileManager.default.removeItem(atPath: directory)
    try FileManager.default.copyItem(atPath: context.corpusDirectory, toPath: directory)
    let manager = try NotebookManager(
      directory: directory, options: JournalOptions(durability: .none),
      ids: NotebookWorkload.identifiers(seed: context.options.seed &+ 0xC4))
    defer { manager.close() }
    let notebook = try await manager.createNotebook(title: "Checkpoints")
    let configuration = "\(context.options.corpusEvents) events of state, none, 1 producer"

    var alone = Latencies()
    for index in 0..<200 {
      let start = monotonicNanos()
      _ = try await manager.createNote(in: notebook, title: "alone \(index)")
      alone.add(monotonicNanos() - start)
    }
    context.record(name, configuration, "command alone p50", try alone.requiredMilliseconds(0.5), "ms")
    context.record(name, configuration, "command alone max", try alone.requiredMilliseconds(1), "ms")

    var during = Latencies()
    var checkpointNanos: UInt64 = 0
    let rounds = context.options.mode == .full ? 3 : 1
    for round in 0..<rounds {
      let started = monotonicNanos()
      // Commands from this task until the checkpoint is recorded (or failed): each one's latency
      // counts.
      let finished = LockedFlag()
      let checkpoint = Task {
        defer { finished.set() }
        try await manager.recordCheckpoint()
        return monotonicNanos()
      }
      var index = 0
      while !finished.isSet {
        let start = monotonicNanos()
        _ = try await manager.createNote(in: notebook, title: "during \(round).\(index)")
        during.add(monotonicNanos() - start)
        index += 1
      }
      checkpointNanos = max(checkpointNanos, try await checkpoint.value - started)
    }
    context.record(name, configuration, "checkpoint duration, longest", Double(checkpointNanos) / 1e6, "ms")
    context.record(name, configuration, "commands during checkpoints", Double(during.samples.count), "")
    context.record(name, configuration, "command during checkpoint p50", try during.requiredMilliseconds(0.5), "ms")
    context.record(name, configuration, "command during checkpoint p99", try during.requiredMilliseconds(0.99), "ms")
    context.record(name, configuration, "command during checkpoint max", try during.requiredMilliseconds(1), "ms")
  }
}

/// A flag one task sets and another polls.
private final class LockedFlag: Sendable {
  private let flag = Mutex(false)
  var isSet: Bool { flag.withLock { $0 } }
  func set() { flag.withLock { $0 = true } }
}
