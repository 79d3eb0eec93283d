internal import Notebook
internal import RewindJournal

/// Writes the Notebook history through `NotebookManager` (one producer, durability `.none`), which
/// is also the first "append through the manager" figure, then loads its records: the corpus every
/// later scenario appends, stores, encodes or reads.
struct CorpusScenario: Scenario {
  let name = "corpus"
  let summary = "Notebook history written through the manager; the events every scenario shares"

  func run(in context: BenchContext) async throws {
    let directory = context.path("corpus-journal")
    let (events, commands, seconds) = try await Self.writeHistory(
      events: context.options.corpusEvents, seed: context.options.seed, directory: directory)
    let disk = bytesOnDisk(directory)
    let configuration = Self.managerConfiguration
    context.record("manager.append", configuration, "events/s", Double(events) / seconds, "ev/s")
    context.record("manager.append", configuration, "commands/s", Double(commands) / seconds, "cmd/s")
    context.record("manager.append", configuration, "bytes/event on disk", Double(disk) / Double(events), "B")

    let cursor = try JournalReader(directory: directory).records(from: 1)
    var corpus: [NewRecord] = []
    corpus.reserveCapacity(events)
    var payloadBytes = 0
    while let record = try cursor.next() {
      payloadBytes += record.payload.count
      corpus.append(NewRecord(timestamp: record.timestamp, payload: record.payload))
    }
    guard corpus.count == events else {
      throw BenchError("the corpus journal holds \(corpus.count) records, the manager acknowledged \(events)")
    }
    context.corpus = corpus
    context.corpusDirectory = directory
    context.record("corpus", "\(events) events", "mean payload", Double(payloadBytes) / Double(events), "B")
    context.record("corpus", "\(events) events", "journal bytes/event", Double(disk) / Double(events), "B")
  }

  /// The configuration of the manager's figures for writing the history.
  static let managerConfiguration = "mixed commands, none, 1 producer"

  /// Writes the seeded Notebook history to a new journal in `directory` through `NotebookManager`
  /// (one producer, durability `.none`) until it holds at least `target` events. The same seed
  /// writes the same history, so a longer one starts with the records of a shorter one.
  ///
  /// `seconds` is the time the manager's commands took: commands are planned (their texts made) in
  /// rounds of 1,000 outside the timed part, as the other manager scenarios make their inputs
  /// before timing them.
  static func writeHistory(events target: Int, seed: UInt64, directory: String) async throws
    -> (events: Int, commands: Int, seconds: Double)
  {
    let manager = try NotebookManager(
      directory: directory, options: benchJournalOptions(.none),
      clock: NotebookWorkload.clock(seed: seed), ids: NotebookWorkload.identifiers(seed: seed))
    var workload = NotebookWorkload(seed: seed)
    var history = NotebookHistory()
    var commands = 0
    var seconds = 0.0
    while manager.lastSequence < UInt64(target) {
      let planned = (0..<1_000).map { _ in workload.next() }
      let (round, _) = try await timedAsync {
        // Stops where the history reaches the target, as one command at a time would.
        for command in planned where manager.lastSequence < UInt64(target) {
          try await history.run(command, on: manager)
          commands += 1
        }
      }
      seconds += round
    }
    let events = Int(manager.lastSequence)
    manager.close()
    return (events, commands, seconds)
  }
}
