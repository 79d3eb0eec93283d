internal import Glibc
internal import Notebook
internal import RewindJournal
internal import Synchronization

/// What scenarios share during one run.
///
/// `@unchecked Sendable`: scenarios run one after another on one task. `figures`, `corpus`,
/// `events` and `corpusDirectory` are written only between scenarios' awaits by the scenario
/// that owns the moment; the `Mutex` around `figures` keeps recording safe from producer tasks.
final class BenchContext: @unchecked Sendable {
  let options: BenchOptions
  /// The scratch directory for this run.
  let work: String
  /// The Notebook history as journal records, in sequence order (set by `CorpusScenario`).
  var corpus: [NewRecord] = []
  /// The journal the corpus was written to through `NotebookManager`: a replayable history.
  var corpusDirectory = ""
  private let recorded = Mutex<[Figure]>([])
  private let noted = Mutex<[String]>([])

  init(options: BenchOptions, work: String) {
    self.options = options
    self.work = work
  }

  var figures: [Figure] { recorded.withLock { $0 } }

  /// Whether the scenario `name` produced what it leaves for later ones: false only when `--only`
  /// left it out (a later scenario that finds nothing where it should throws otherwise).
  func ran(_ name: String) -> Bool { options.runs(name) }

  /// A fresh, not yet existing path in the scratch directory.
  func path(_ name: String) -> String { work + "/" + name }

  /// Records a Rewind figure.
  func record(
    _ scenario: String, _ configuration: String, _ metric: String, _ value: Double, _ unit: String,
    system: String = "rewind"
  ) {
    let figure = Figure(
      scenario: scenario, system: system, configuration: configuration, metric: metric, value: value, unit: unit)
    recorded.withLock { $0.append(figure) }
  }

  /// Records a baseline's figure and its ratio to the Rewind figure `rewind` names (scenario,
  /// configuration, metric). The ratio is computed only when the two measure the same thing: the
  /// same metric in the same unit. A pair that does not is a mistake in the harness, recorded
  /// without a ratio and reported in `problems`.
  func record(
    baseline system: String, _ scenario: String, _ configuration: String, _ metric: String, _ value: Double,
    _ unit: String, comparedWith rewind: (scenario: String, configuration: String, metric: String)
  ) {
    let key = "\(rewind.scenario)|rewind|\(rewind.configuration)|\(rewind.metric)"
    let figureKey = "\(scenario)|\(system)|\(configuration)|\(metric)"
    let problem = recorded.withLock { figures -> String? in
      let reference = figures.first { $0.key == key }
      var problem: String?
      if let reference, reference.metric != metric || reference.unit != unit {
        problem = "\(figureKey) (\(unit)) is compared with \(key) (\(reference.unit)): not the same metric"
      } else if reference == nil && options.only.isEmpty {
        // With every scenario run, the figure must exist: it was renamed, or its scenario failed.
        problem = "\(figureKey) is compared with \(key), which was not measured"
      }
      let ratio = reference.flatMap { problem == nil && $0.value > 0 ? value / $0.value : nil }
      figures.append(
        Figure(
          scenario: scenario, system: system, configuration: configuration, metric: metric, value: value, unit: unit,
          comparedWith: ratio == nil ? nil : key, ratio: ratio))
      return problem
    }
    if let problem { noted.withLock { $0.append(problem) } }
  }

  /// What went wrong in recording figures that no scenario threw for (a baseline compared with a
  /// figure that measures something else, or, when every scenario ran, with one that was not
  /// measured): a run with any fails.
  var problems: [String] { noted.withLock { $0 } }

  /// Records an append configuration's figures from its runs (`appendRounds`): the median run's
  /// events/s, MB/s written and bytes per event on disk, with the spread of events/s, and the
  /// acknowledgement p50 and p99 of the run timed append by append. `eventsOnDisk`: how many
  /// events the bytes on disk hold, if set-up wrote some beside the run's (a manager's first
  /// notebook).
  func recordAppendRuns(
    _ scenario: String, _ configuration: String, _ runs: AppendRuns, eventsOnDisk: Int? = nil
  ) throws {
    let run = runs.median
    var latencies = runs.latencies
    let bytes = Double(run.bytesOnDisk)
    record(scenario, configuration, "events/s", run.eventsPerSecond, "ev/s")
    recordSpread(scenario, configuration, runs)
    record(scenario, configuration, "MB/s written", bytes / run.seconds / 1e6, "MB/s")
    record(scenario, configuration, "bytes/event on disk", bytes / Double(eventsOnDisk ?? run.events), "B")
    record(scenario, configuration, "ack p50", try latencies.requiredMilliseconds(0.5), "ms")
    record(scenario, configuration, "ack p99", try latencies.requiredMilliseconds(0.99), "ms")
  }

  /// Records the slowest and fastest events/s of a configuration's runs (from `appendRounds`),
  /// beside the median its scenario records; nothing for a single run.
  func recordSpread(_ scenario: String, _ configuration: String, _ runs: AppendRuns, system: String = "rewind") {
    let runs = runs.runs
    guard runs.count > 1, let slowest = runs.first, let fastest = runs.last else { return }
    record(
      scenario, configuration, "events/s, lowest of \(runs.count)", slowest.eventsPerSecond, "ev/s", system: system)
    record(
      scenario, configuration, "events/s, highest of \(runs.count)", fastest.eventsPerSecond, "ev/s", system: system)
  }

  /// The value of a recorded figure, if it was measured.
  func value(_ scenario: String, _ configuration: String, _ metric: String, system: String = "rewind") -> Double? {
    let key = "\(scenario)|\(system)|\(configuration)|\(metric)"
    return recorded.withLock { $0.first { $0.key == key }?.value }
  }
}

/// The options the append benchmarks open journals with. With `REWIND_BENCH_UNMAPPED` set in the
/// environment (child processes inherit it), appends under `none` use `pwrite` instead of a
/// mapping of the active segment (`JournalOptions.mapsActiveSegment`), to compare the two.
func benchJournalOptions(_ durability: Durability) -> JournalOptions {
  var options = JournalOptions(durability: durability)
  options.mapsActiveSegment = getenv("REWIND_BENCH_UNMAPPED") == nil
  return options
}
