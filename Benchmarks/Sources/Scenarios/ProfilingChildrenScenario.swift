internal import Foundation
internal import Notebook
internal import Rewind
internal import RewindJournal

/// The child kinds no other scenario runs, each once with a small LIMIT: the ones RESULTS.md's
/// instruction counts come from (`valgrind --tool=callgrind rewind-bench --child KIND …`), so
/// that a kind that stopped working fails the smoke test in CI rather than the next profile. Its
/// figures only say that each ran; they time nothing worth comparing.
struct ProfilingChildrenScenario: Scenario {
  let name = "profiling.children"
  let summary = "each profiling child kind run once, small (a smoke test of what the profiles use)"

  func run(in context: BenchContext) async throws {
    // A copy of the corpus journal with a snapshot at its end, for `snapshot` (the corpus
    // journal itself stays as the manager wrote it, without snapshots, for the other scenarios).
    let journal = context.path("profiling-journal")
    try CompactionScenario.copyJournal(context.corpusDirectory, to: journal)
    let rebuilt = try Replay.rebuild(Workspace.self, directory: journal)
    try SnapshotStore(journal: journal).write(rebuilt.state, at: rebuilt.lastSequence)
    let live = rebuilt.state.notebooks.count + rebuilt.state.notes.count + rebuilt.state.readingList.count

    let runs: [(kind: ChildProcess.Kind, directory: String, limit: Int, expected: Int)] = [
      (.manager, context.path("profiling-manager"), 200, 200),
      (.managerConcurrent, context.path("profiling-manager-64"), 128, 128),
      (.history, context.path("profiling-history"), 200, 0),
      (.pulls, context.path("profiling-pulls"), 2 * ManagerAppendScenario.notesPerPull, 0),
      (.append, journal, 500, 500),
      (.appendBulk, journal, 2_000, 2_000),
      (.appendConcurrent, journal, 128, 128),
      (.jump, journal, 3, 3),
      (.seek, journal, 20, 20),
      (.snapshot, journal, Int(rebuilt.lastSequence), live),
    ]
    for run in runs {
      let result = try ChildProcess.run(
        run.kind, directory: run.directory, limit: run.limit,
        resultPath: context.path("profiling-\(run.kind.rawValue).json"))
      // A history's or a pull's count is of the events its commands recorded: any shows it ran.
      guard run.expected == 0 ? result.events > 0 : result.events == run.expected else {
        throw BenchError("the \(run.kind.rawValue) child reported \(result.events) events, not \(run.expected)")
      }
      context.record(name, run.kind.rawValue, "events", Double(result.events), "")
    }
  }
}
