/// What one run of `rewind-bench` measures and how big it is.
struct BenchOptions: Sendable {
  enum Mode: String, Sendable { case small, full }

  var mode: Mode = .small
  /// `--json F`; by default the committed results for a full run, and a file under `.build/` for
  /// a small one, which would otherwise replace the full run's figures that RESULTS.md quotes.
  var json: String?
  var jsonPath: String { json ?? (mode == .full ? "Benchmarks/results/latest.json" : ".build/bench-small.json") }
  /// Where the journals, databases and JSON files of the run are written (`--work`): emptied
  /// first (`ScratchDirectory.prepare`) and kept at the end; when nil, a new one in /tmp, removed
  /// at the end.
  var workDirectory: String?
  /// Runs only the scenarios whose name contains one of these (all when empty).
  var only: [String] = []
  var seed: UInt64 = 0x5EED_2026
  /// Overrides the corpus size of the mode.
  var events: Int?
  /// `--markdown F`: print the results file F as Markdown tables and run nothing.
  var markdown: String?
  /// `--help` or `-h`: print the usage and run nothing.
  var help = false

  /// Whether the scenario `name` runs: every one without `--only`, else those whose name contains
  /// one of its values.
  func runs(_ name: String) -> Bool { only.isEmpty || only.contains { name.contains($0) } }

  /// Events in the corpus: the Notebook history every scenario and baseline works on.
  var corpusEvents: Int { events ?? (mode == .full ? 1_000_000 : 20_000) }
  /// Appends per run where each append waits for an fsync of its own (one producer), or where a
  /// baseline commits each append durably: enough for a steady rate, few enough to finish.
  var syncedAppends: Int { mode == .full ? 20_000 : 500 }
  /// Appends per run for 64 producers with a durable policy.
  var concurrentSyncedAppends: Int { mode == .full ? 500_000 : 5_000 }
  /// How many times the corpus is repeated for the long read (10M events in full mode).
  var readRepeats: Int { mode == .full ? 10 : 2 }
  /// Random seeks in the corpus journal.
  var seeks: Int { mode == .full ? 2_000 : 100 }
  /// Runs of each append configuration (the journal's, SQLite's, the managers'), whose rates move
  /// most with the minute on a shared machine: the median run is reported, with the lowest and
  /// highest events/s beside it.
  var appendRounds: Int { mode == .full ? 3 : 1 }
  /// Sync pulls of `ManagerAppendScenario.notesPerPull` new notes through the manager per configuration.
  var syncPulls: Int { mode == .full ? 200 : 5 }
  /// Commands through the managers per configuration.
  var managerCommands: Int { mode == .full ? 20_000 : 500 }

  static let usage = """
    usage: rewind-bench [--small|--full] [--json PATH] [--work DIR] [--only NAME]... [--seed N] [--events N]
           rewind-bench --markdown RESULTS.json
           rewind-bench --help

      --small      CI-sized (the default): 20k events, a smoke test that the harness works
      --full       1M events, each append configuration run three times (the median reported);
                   build with -c release (make bench)
      --json PATH  where to write the results (default Benchmarks/results/latest.json with --full,
                   .build/bench-small.json without: a small run never replaces the full results)
      --work DIR   scratch directory for journals and baselines, kept afterwards (default: a
                   new one in /tmp, removed afterwards); emptied first, so it must be new, empty
                   or one an earlier run made (it holds the file .rewind-bench-scratch)
      --only NAME  run only scenarios whose name contains NAME (repeatable)
      --seed N     workload seed (default 0x5EED2026)
      --events N   corpus size instead of the mode's (the other sizes follow the mode)
      --markdown F prints the results file F (what --json wrote) as Markdown tables, and runs
                   nothing (Benchmarks/RESULTS.md quotes them); it takes no other argument
      --help, -h   prints this and runs nothing

    Exit status: 0 when every scenario ran and the results were written (or the tables printed),
    1 when a scenario or the harness failed (or F could not be read), 2 on a usage error or a
    --work directory that it may not empty.
    """

  /// A seed as `--seed` takes it: decimal, or hexadecimal after `0x`.
  static func seed(_ value: String) -> UInt64? {
    let digits = value.hasPrefix("0x") ? String(value.dropFirst(2)) : value
    return UInt64(digits, radix: value.hasPrefix("0x") ? 16 : 10)
  }

  /// Parses the command line; returns nil (after printing why) on a usage error. `--help` and
  /// `--markdown` are options like the others, in any position; `--markdown` with anything else
  /// is a usage error, since it runs nothing the others could change.
  static func parse(_ arguments: [String]) -> BenchOptions? {
    var options = BenchOptions()
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--small": options.mode = .small
      case "--full": options.mode = .full
      case "--json", "--work", "--only", "--seed", "--events", "--markdown":
        guard let value = rest.popFirst() else {
          printError("\(argument) needs a value\n\(usage)")
          return nil
        }
        switch argument {
        case "--json": options.json = value
        case "--work": options.workDirectory = value
        case "--only": options.only.append(value)
        case "--markdown": options.markdown = value
        case "--events":
          guard let events = Int(value), events >= 10 else {
            printError("--events: a number ≥ 10, not \(value)")
            return nil
          }
          options.events = events
        default:
          guard let seed = seed(value) else {
            printError("--seed: not a number: \(value)")
            return nil
          }
          options.seed = seed
        }
      case "--help", "-h": options.help = true
      default:
        printError("unknown argument: \(argument)\n\(usage)")
        return nil
      }
    }
    if options.markdown != nil && !options.help && arguments.count != 2 {
      printError("--markdown F prints a results file and runs nothing: it takes no other argument\n\(usage)")
      return nil
    }
    return options
  }
}
