internal import Foundation
internal import Notebook
internal import Rewind
internal import RewindJournal

/// New notes through `NotebookManager` under each durability policy, from 1 and 64 concurrent
/// producers, and in sync pulls of 1,000 from one (`runSyncPulls`): the whole funnel (validate,
/// encode, journal, apply) per command. Bytes on disk are the journal directory's (segments and
/// index) after the run. Each configuration `BenchOptions.appendRounds` times, the median run
/// reported, and once more for the latencies (`appendRounds`).
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
        let runs = try await appendRounds(context.options.appendRounds) { timing in
          try? FileManager.default.removeItem(atPath: directory)
          let manager = try NotebookManager(
            directory: directory, options: benchJournalOptions(durability),
            ids: NotebookWorkload.identifiers(seed: context.options.seed &+ UInt64(producers)))
          let notebook = try await manager.createNotebook(title: "Benchmark")
          let (seconds, latencies) = try await timedAsync {
            try await runProducers(producers, count: count, timing: timing) { index in
              _ = try await manager.createNote(in: notebook, title: inputs[index].0, body: inputs[index].1)
            }
          }
          manager.close()
          return AppendRun(events: count, seconds: seconds, latencies: latencies, bytesOnDisk: bytesOnDisk(directory))
        }
        let configuration = "\(label), \(producers) producer\(producers == 1 ? "" : "s")"
        try context.recordAppendRuns(name, configuration, runs, eventsOnDisk: count + 1)
      }
    }
    try await runSyncPulls(in: context)
  }

  static let notesPerPull = 1_000

  static func pullConfiguration(_ durability: String) -> String {
    "\(durability), 1 producer, \(notesPerPull) synced notes per command"
  }

  /// `count` pulls' worth of notes new to a notebook, `notesPerPull` each: random identifiers,
  /// the workload's titles and bodies, up to two tags.
  static func syncPulls(_ count: Int, seed: UInt64) -> [[RemoteNote]] {
    var random = SeededRandom(seed: seed ^ 0x5C)
    return (0..<count).map { _ in
      (0..<notesPerPull).map { _ in
        RemoteNote(
          id: NoteID(Identifier(high: random.next(), low: random.next())),
          title: WorkloadText.words(2...7, using: &random), body: WorkloadText.words(8...30, using: &random),
          tags: (0..<Int(random.next() % 3)).map { _ in WorkloadText.tag(using: &random) })
      }
    }
  }

  /// The manager's bulk path, as the journal's bulk appends are the journal's: sync pulls
  /// (`applySyncedNotes`) of `notesPerPull` notes new to the notebook, one command each, from one
  /// producer; each note is its own `note.created` event. The notes are made before the timed part.
  private func runSyncPulls(in context: BenchContext) async throws {
    let pulls = Self.syncPulls(context.options.syncPulls, seed: context.options.seed)
    let events = pulls.count * Self.notesPerPull
    for (label, durability) in durabilities where durability != .batched {
      let directory = context.path("manager-\(label)-pulls")
      let runs = try await appendRounds(context.options.appendRounds) { timing in
        try? FileManager.default.removeItem(atPath: directory)
        let manager = try NotebookManager(
          directory: directory, options: benchJournalOptions(durability),
          ids: NotebookWorkload.identifiers(seed: context.options.seed))
        let notebook = try await manager.createNotebook(title: "Benchmark")
        let (seconds, latencies) = try await timedAsync {
          try await runProducers(1, count: pulls.count, timing: timing) { index in
            let created = try await manager.applySyncedNotes(pulls[index], into: notebook)
            guard created == Self.notesPerPull else {
              throw BenchError("a sync pull recorded \(created) events, expected \(Self.notesPerPull)")
            }
          }
        }
        manager.close()
        return AppendRun(events: events, seconds: seconds, latencies: latencies, bytesOnDisk: bytesOnDisk(directory))
      }
      try context.recordAppendRuns(name, Self.pullConfiguration(label), runs, eventsOnDisk: events + 1)
    }
  }
}

/// The durability policies, labelled as in the tables.
let durabilities: [(String, Durability)] = [("none", .none), ("batched", .batched), ("always", .always)]

/// Runs `count` operations, spread round-robin over `producers` concurrent tasks, and returns
/// every operation's latency when `timing` is `.eachAppend` (none when `.whole`).
func runProducers(
  _ producers: Int, count: Int, timing: AppendTiming,
  _ operation: @escaping @Sendable (Int) async throws -> Void
) async throws -> Latencies {
  try await withThrowingTaskGroup(of: Latencies.self) { group in
    for producer in 0..<producers {
      group.addTask {
        var latencies = Latencies()
        var index = producer
        switch timing {
        case .whole:
          while index < count {
            try await operation(index)
            index += producers
          }
        case .eachAppend:
          latencies.reserve(count / producers + 1)
          while index < count {
            let start = monotonicNanos()
            try await operation(index)
            latencies.add(monotonicNanos() - start)
            index += producers
          }
        }
        return latencies
      }
    }
    var all = Latencies()
    if timing == .eachAppend { all.reserve(count) }
    for try await latencies in group { all.add(contentsOf: latencies) }
    return all
  }
}
