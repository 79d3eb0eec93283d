internal import Foundation
internal import Notebook
internal import Rewind
internal import RewindJournal

/// Random seeks in the corpus journal: `records(from:)` and the first `next()`, through one open
/// reader, against SQLite's `WHERE seq >= ? LIMIT 1` on the same records.
struct SeekScenario: Scenario {
  let name = "journal.seek"
  let summary = "seek to random sequence numbers: records(from:) + next()"

  func run(in context: BenchContext) async throws {
    let total = context.corpus.count
    var random = SeededRandom(seed: context.options.seed ^ 0x5EE4)
    let targets = (0..<context.options.seeks).map { _ in 1 + random.next() % UInt64(total) }
    let configuration = Self.configuration(total: total, seeks: targets.count)

    let reader = try JournalReader(directory: context.corpusDirectory)
    try Self.settle(reader)
    var latencies = Latencies()
    for target in targets {
      let start = monotonicNanos()
      let cursor = try reader.records(from: target)
      let record = try cursor.next()
      latencies.add(monotonicNanos() - start)
      guard record?.sequence == target else {
        throw BenchError("seek to \(target) read \(String(describing: record?.sequence))")
      }
    }
    context.record(name, configuration, "seek p50", try latencies.requiredMilliseconds(0.5), "ms")
    context.record(name, configuration, "seek p99", try latencies.requiredMilliseconds(0.99), "ms")

    // Time travel to a state, as it can be done today: replay from sequence 1 through the target
    // (no snapshots yet). A few targets only: each costs a replay of everything before it.
    var states = Latencies()
    for target in targets.prefix(Self.stateTargets(context.options)) {
      let start = monotonicNanos()
      let rebuilt = try Replay.rebuild(Workspace.self, directory: context.corpusDirectory, through: target)
      states.add(monotonicNanos() - start)
      guard rebuilt.lastSequence == target else {
        throw BenchError("state at \(target) stopped at \(rebuilt.lastSequence)")
      }
    }
    let stateConfiguration = Self.stateConfiguration(total: total, targets: states.samples.count)
    context.record("timetravel.state", stateConfiguration, "state(at:) p50", try states.requiredMilliseconds(0.5), "ms")
    context.record("timetravel.state", stateConfiguration, "state(at:) max", try states.requiredMilliseconds(1), "ms")

    let path = context.path("sqlite-corpus.db")
    if !FileManager.default.fileExists(atPath: path) { try SQLiteReadScenario.load(context.corpus, into: path) }
    let database = try SQLiteDatabase(path: path)
    let select = try database.prepare("SELECT seq, ts, payload FROM events WHERE seq >= ? ORDER BY seq LIMIT 1")
    var baseline = Latencies()
    for target in targets {
      let start = monotonicNanos()
      select.bind(Int64(target), at: 1)
      let found = try select.step()
      let payload = select.bytes(at: 2)
      let sequence = select.int64(at: 0)
      select.reset()
      baseline.add(monotonicNanos() - start)
      guard found, sequence == Int64(target), !payload.isEmpty else {
        throw BenchError("SQLite seek to \(target) failed")
      }
    }
    for (metric, fraction) in [("seek p50", 0.5), ("seek p99", 0.99)] {
      context.record(
        baseline: "sqlite", "sqlite.seek", configuration, metric, try baseline.requiredMilliseconds(fraction), "ms",
        comparedWith: (name, configuration, metric))
    }
  }

  /// The configuration of the seeks' figures.
  static func configuration(total: Int, seeks: Int) -> String { "\(total)-event journal, \(seeks) seeks" }

  /// Waits until `reader` keeps the index it loads, as a reader of a journal at rest does: it keeps
  /// a load only once every file it stamps last changed `JournalReader.settledNanoseconds` before
  /// (so that two changes within one tick of a coarse clock cannot pass for none). Scenarios just
  /// before this one hard-link the corpus's segments (`CompactionScenario.copyJournal`), which
  /// changes their inodes' change time: the seeks, half a second in all, then loaded and
  /// checksummed the whole index and stamped every segment at each cursor (0.315 ms at p50 in
  /// the run at 13ad2b3, against 0.105 ms at c98161a, before that rule). Throws if the reader
  /// still keeps nothing after 10 s.
  static func settle(_ reader: JournalReader) throws {
    let deadline = monotonicNanos() + 10_000_000_000
    while true {
      _ = try reader.records(from: 1)
      if reader.hasCachedIndex { return }
      guard monotonicNanos() < deadline else {
        throw BenchError("the corpus's reader kept no index after 10 s: its files keep changing")
      }
      usleep(250_000)
    }
  }

  /// How many states are rebuilt by replay from sequence 1 (each costs a replay of everything
  /// before it).
  static func stateTargets(_ options: BenchOptions) -> Int { min(options.seeks, options.mode == .full ? 5 : 3) }

  /// The configuration of the states' figures.
  static func stateConfiguration(total: Int, targets: Int) -> String {
    "\(total)-event journal, \(targets) targets, no snapshots"
  }
}
