internal import Notebook
internal import Rewind
internal import RewindJournal

/// Time travel to random points of the corpus journal through `TimeMachine.jump(to:)`, with
/// snapshots as the default `SnapshotPolicy` keeps them: written every twentieth of the journal
/// (50,000 records at 1M) by `Snapshots.update`, the newest `SnapshotPolicy`'s default `keep` (4)
/// kept; and the time machine's default keyframes. This is the scenario 3 (time travel
/// over a 1M-event journal with the default snapshot policy), on which its "seek p99 ≤ 20 ms" is
/// judged: keeping every snapshot instead would measure a configuration a manager does not have
/// unless told to keep them all (jumps before the oldest kept snapshot replay from further back).
/// One time machine serves every seek, as a debugging session would: its keyframes accumulate as
/// it goes. Before that (and before the snapshots exist), the same jumps and more (`jumpCounts`)
/// on a time machine that first lays keyframes over the whole journal (`prepare()`).
///
/// The snapshots go into the corpus journal's directory: the scenarios that replay it cold run
/// before this one; `checkpoint`, after it, works on a copy (snapshots included).
struct TimeTravelScenario: Scenario {
  let name = "timetravel.seek"
  let summary = "TimeMachine.jump(to:) to random points, snapshots every 1/20 of the journal"

  func run(in context: BenchContext) async throws {
    let total = UInt64(context.corpus.count)
    let interval = Self.snapshotInterval(total: total)
    var random = SeededRandom(seed: context.options.seed ^ 0x7143)
    let counts = Self.jumpCounts(context.options.mode)
    let allTargets = (0..<max(counts.prepared, counts.fromSnapshots)).map { _ in 1 + random.next() % total }
    try prepared(targets: Array(allTargets.prefix(counts.prepared)), total: total, context: context)
    let targets = Array(allTargets.prefix(counts.fromSnapshots))
    let seeks = targets.count
    let (writeSeconds, written) = try timed {
      try Snapshots.update(Workspace.self, directory: context.corpusDirectory, every: interval, keep: Self.keep)
    }
    // What a jump that starts from a snapshot pays first: reading and checking the newest one (the
    // whole state at the end of the journal), alone in a child, the fastest of three (the file is
    // cached: it was just written).
    let read = try ChildProcess.fastest(
      of: 3, .snapshot, directory: context.corpusDirectory, limit: Int(total), events: nil,
      resultPath: context.path("snapshot-read.json"), cold: false)
    var latencies = try jumps(TimeMachine<Workspace>(directory: context.corpusDirectory), to: targets)
    let configuration = Self.snapshotConfiguration(total: total, jumps: seeks)
    context.record(name, configuration, "jump p50", try latencies.requiredMilliseconds(0.5), "ms")
    context.record(name, configuration, "jump p99", try latencies.requiredMilliseconds(0.99), "ms")
    context.record(name, configuration, "snapshot writing", writeSeconds, "s")
    context.record(name, configuration, "snapshots written", Double(written.count), "")
    context.record(name, configuration, "newest snapshot read", read.seconds, "s")
    context.record(name, configuration, "newest snapshot records", Double(read.events), "records")
  }

  /// The same jumps after `TimeMachine.prepare()`: the preparing replay's time, each jump's
  /// latency, and what the keyframes cost, three ways:
  /// - the keyframes' tree nodes, each counted once however many keyframes share it, as the
  ///   library computes them (`TimeMachine.keyframeFootprint`): the same on every run;
  /// - the growth of the allocator's bytes in use while preparing (`Heap`): those nodes, the
  ///   strings and arrays the records they copied point to, and the allocator's chunk headers;
  /// - the growth of the resident set while preparing, which is that less whatever memory freed
  ///   by earlier scenarios the allocator kept and handed out again: it depends on what ran
  ///   before (and, it seems, on which thread's malloc arena the preparing replay allocates
  ///   from), so it is smaller in a full run than when the scenario runs alone, and varies
  ///   between full runs.
  private func prepared(targets: [UInt64], total: UInt64, context: BenchContext) throws {
    let machine = try TimeMachine<Workspace>(directory: context.corpusDirectory)
    let residentBefore = ChildProcess.memoryStatus("VmRSS:")
    let heapBefore = Heap.inUseBytes()
    let (prepareSeconds, _) = try timed { try machine.prepare() }
    let residentGrowth = ChildProcess.memoryStatus("VmRSS:") - residentBefore
    let heapGrowth = Heap.inUseBytes().flatMap { after in heapBefore.map { after - $0 } }
    var latencies = try jumps(machine, to: targets)
    let footprint = machine.keyframeFootprint
    let configuration = Self.preparedConfiguration(total: total, jumps: targets.count)
    context.record(name, configuration, "jump p50", try latencies.requiredMilliseconds(0.5), "ms")
    context.record(name, configuration, "jump p99", try latencies.requiredMilliseconds(0.99), "ms")
    context.record(name, configuration, "prepare", prepareSeconds, "s")
    context.record(name, configuration, "keyframe tree nodes", Double(footprint.nodes), "nodes")
    context.record(name, configuration, "keyframe tree bytes", Double(footprint.bytes) / 1e6, "MB")
    if let heapGrowth {
      context.record(name, configuration, "heap in use growth while preparing", Double(heapGrowth) / 1e6, "MB")
    }
    context.record(name, configuration, "resident growth while preparing", Double(residentGrowth) / 1e6, "MB")
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

  /// How many jumps each part makes. A p99 needs many samples to be more than the few slowest
  /// jumps: prepared jumps take milliseconds, so they get 1,000 (the p99 is the 990th fastest, the
  /// 11th slowest); jumps from snapshots can take seconds, so they keep 200.
  static func jumpCounts(_ mode: BenchOptions.Mode) -> (prepared: Int, fromSnapshots: Int) {
    mode == .full ? (1_000, 200) : (20, 20)
  }

  /// The snapshots kept: as many as the default `SnapshotPolicy` keeps.
  static let keep = SnapshotPolicy(directory: "", every: 1).keep

  /// The interval between snapshots in a journal of `total` records: a twentieth of it.
  static func snapshotInterval(total: UInt64) -> UInt64 { max(1, total / 20) }

  /// The configuration of the jumps from snapshots (the scenario 3).
  static func snapshotConfiguration(total: UInt64, jumps: Int) -> String {
    "\(total)-event journal, snapshot every \(snapshotInterval(total: total)), newest \(keep) kept, \(jumps) jumps"
  }

  static func preparedConfiguration(total: UInt64, jumps: Int) -> String {
    "\(total)-event journal, prepared, \(jumps) jumps"
  }
}
