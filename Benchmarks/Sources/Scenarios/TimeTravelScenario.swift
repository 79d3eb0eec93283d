internal import Notebook
internal import Rewind
internal import RewindJournal

/// Time travel to random points of the corpus journal through `TimeMachine.jump(to:)`, with
/// snapshots written by `Snapshots.update` every twentieth of the journal (50,000 records at 1M)
/// and all of them kept, and the time machine's default keyframes. One time machine serves every
/// seek, as a debugging session would: its keyframes accumulate as it goes. Before that (and
/// before the snapshots exist), the same jumps on a time machine that first lays keyframes over
/// the whole journal (`prepare()`).
///
/// Runs last: the snapshots go into the corpus journal's directory.
struct TimeTravelScenario: Scenario {
  let name = "timetravel.seek"
  let summary = "TimeMachine.jump(to:) to random points, snapshots every 1/20 of the journal"

  func run(in context: BenchContext) async throws {
    let total = UInt64(context.corpus.count)
    let interval = max(1, total / 20)
    var random = SeededRandom(seed: context.options.seed ^ 0x7143)
    let seeks = context.options.mode == .full ? 200 : 20
    let targets = (0..<seeks).map { _ in 1 + random.next() % total }
    try prepared(targets: targets, total: total, context: context)
    let (writeSeconds, written) = try timed {
      try Snapshots.update(Workspace.self, directory: context.corpusDirectory, every: interval, keep: .max)
    }
    var latencies = try jumps(TimeMachine<Workspace>(directory: context.corpusDirectory), to: targets)
    let configuration = "\(total)-event journal, snapshot every \(interval) (\(written.count)), \(seeks) jumps"
    context.record(name, configuration, "jump p50", latencies.percentileMilliseconds(0.5), "ms")
    context.record(name, configuration, "jump p99", latencies.percentileMilliseconds(0.99), "ms")
    context.record(name, configuration, "snapshot writing", writeSeconds, "s")
  }

  /// The same jumps after `TimeMachine.prepare()`: the preparing replay's time and the growth of
  /// the resident set while it ran (what the keyframes hold, less any freed memory the allocator
  /// reused: it runs first, before the other time machine's states come and go), then each
  /// jump's latency.
  private func prepared(targets: [UInt64], total: UInt64, context: BenchContext) throws {
    let machine = try TimeMachine<Workspace>(directory: context.corpusDirectory)
    let residentBefore = ChildProcess.memoryStatus("VmRSS:")
    let (prepareSeconds, _) = try timed { try machine.prepare() }
    let keyframeBytes = ChildProcess.memoryStatus("VmRSS:") - residentBefore
    var latencies = try jumps(machine, to: targets)
    let configuration = Self.preparedConfiguration(total: total, jumps: targets.count)
    context.record(name, configuration, "jump p50", latencies.percentileMilliseconds(0.5), "ms")
    context.record(name, configuration, "jump p99", latencies.percentileMilliseconds(0.99), "ms")
    context.record(name, configuration, "prepare", prepareSeconds, "s")
    context.record(name, configuration, "resident growth while preparing", Double(keyframeBytes) / 1_048_576, "MB")
    context.record(name, configuration, "keyframe spacing", Double(machine.keyframeSpacing), "records")
  }

  /// Each jump's latency, checking that it landed where it was sent.
  private func jumps(_ machine: TimeMachine<Workspace>, to targets: [UInt64]) throws -> Latencies {
    var latencies = Latencies()
    for target in targets {
      let start = monotonicNanos()
      try machine.jump(to: target)
      latencies.add(monotonicNanos() - start)
      guard machine.position == target else { throw BenchError("jump to \(target) stopped at \(machine.position)") }
    }
    return latencies
  }

  static func preparedConfiguration(total: UInt64, jumps: Int) -> String {
    "\(total)-event journal, prepared, \(jumps) jumps"
  }
}
