/// One benchmark scenario. Scenarios run in registry order and share a `BenchContext`: the
/// corpus, the corpus journal, and every figure recorded so far (a baseline looks up the Rewind
/// figure it is compared with).
///
/// To add one (say, time travel once `TimeMachine` lands): write a type conforming to this
/// protocol, record figures with `context.record`, and list it in `ScenarioRegistry.all`.
protocol Scenario: Sendable {
  /// Short and stable: `--only` matches it and the results JSON groups by it.
  var name: String { get }
  /// One line for the table's heading.
  var summary: String { get }
  func run(in context: BenchContext) async throws
}

/// Every scenario, in the order they run. Earlier ones leave what later ones need in the context:
/// `CorpusScenario` writes the Notebook history through the manager first.
enum ScenarioRegistry {
  static let all: [any Scenario] = [
    CorpusScenario(),
    ManagerAppendScenario(),
    JournalAppendScenario(),
    SQLiteAppendScenario(),
    JournalReadScenario(),
    ReplayScenario(),
    SQLiteReadScenario(),
    SQLiteRebuildScenario(),
    JSONLinesScenario(),
    LZ4ToolScenario(),
    CompactionScenario(),
    SeekScenario(),
    QueryScenario(),
    InvalidationScenario(),
    TimeTravelScenario(),
    CheckpointScenario(),
    ProfilingChildrenScenario(),
  ]
}

/// A scenario's failure to run, with what to do about it.
struct BenchError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}
