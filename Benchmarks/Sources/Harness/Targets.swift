/// The targets of issue 6, judged on this run's figures. A target whose figures were not measured
/// (a scenario left out with `--only`) is reported as not applicable.
enum Targets {
  static func check(_ context: BenchContext) -> [TargetCheck] {
    let n = context.corpus.count
    func value(_ scenario: String, _ configuration: String, _ metric: String, _ system: String = "rewind") -> Double? {
      context.value(scenario, configuration, metric, system: system)
    }
    func journal(_ durability: String, _ producers: Int) -> String {
      JournalAppendScenario.configuration(durability, producers)
    }
    func sqlite(_ variant: SQLiteAppendScenario.Variant, _ producers: Int) -> String {
      SQLiteAppendScenario.configuration(variant, producers: producers, options: context.options)
    }
    func rate(_ value: Double) -> String { Report.format(value) + " ev/s" }
    var checks: [TargetCheck] = []

    if let one = value("journal.append", journal("none", 1), "events/s"),
      let many = value("journal.append", journal("none", 64), "events/s")
    {
      let bulk = value("journal.append", JournalAppendScenario.bulkConfiguration("none"), "events/s") ?? 0
      checks.append(
        TargetCheck(
          target: "journal append without fsync ≥ 1.5M events/s (one record per append)",
          measured: "\(rate(one)) (1 producer), \(rate(many)) (64 producers); \(rate(bulk)) with 1,000 per append",
          met: max(one, many) >= 1_500_000))
    }
    if let rewind = value("journal.append", journal("none", 64), "events/s"),
      let base = value("sqlite.append", sqlite(.groupedOff, 64), "events/s", "sqlite")
    {
      checks.append(
        TargetCheck(
          target: "append without fsync ≥ 5× SQLite (grouped transactions, synchronous=OFF, 64 producers)",
          measured: Report.format(rewind / base) + "×", met: rewind / base >= 5))
    }
    if let rewind = value("journal.append", journal("none", 1), "events/s"),
      let base = value(
        "sqlite.append", sqlite(.eachAppendOff, 1), "events/s", "sqlite")
    {
      checks.append(
        TargetCheck(
          target: "append without fsync ≥ 5× SQLite committing each append on the caller's thread, 1 producer",
          measured: Report.format(rewind / base) + "×", met: rewind / base >= 5))
    }
    if let rewind = value("journal.append", JournalAppendScenario.bulkConfiguration("none"), "events/s"),
      let base = value(
        "sqlite.append", SQLiteAppendScenario.bulkConfiguration(synchronous: "OFF"), "events/s", "sqlite")
    {
      checks.append(
        TargetCheck(
          target: "append without fsync ≥ 5× SQLite, both 1,000 records per append/transaction",
          measured: Report.format(rewind / base) + "×", met: rewind / base >= 5))
    }
    if let rewind = value("journal.append", journal("always", 64), "events/s") {
      checks.append(
        TargetCheck(
          target: "durable append (always), 64 producers ≥ 200k events/s", measured: rate(rewind),
          met: rewind >= 200_000))
      if let base = value(
        "sqlite.append", sqlite(.eachAppendFull, 64), "events/s", "sqlite")
      {
        checks.append(
          TargetCheck(
            target: "durable append ≥ 10× SQLite committing each append under a lock (WAL, FULL), 64 producers",
            measured: Report.format(rewind / base) + "×", met: rewind / base >= 10))
      }
    }
    if let manager = value("manager.append", journal("none", 64), "events/s"),
      let durable = value("manager.append", journal("always", 64), "events/s")
    {
      // Not judged, as the journal's bulk appends are not: the manager's bulk path beside it.
      let pulls = value("manager.append", ManagerAppendScenario.pullConfiguration("none"), "events/s").map {
        "; \(rate($0)) in sync pulls of \(ManagerAppendScenario.notesPerPull) notes (none)"
      }
      checks.append(
        TargetCheck(
          target: "the same through the managers (issue scenario 1): ≥ 1.5M without fsync, ≥ 200k durable",
          measured: "\(rate(manager)) (none, 64), \(rate(durable)) (always, 64)" + (pulls ?? ""),
          met: manager >= 1_500_000 && durable >= 200_000))
    }
    if let replay = value("replay", "\(n) events, cold", "events/s") {
      checks.append(
        TargetCheck(target: "replay into the stores ≥ 4M events/s", measured: rate(replay), met: replay >= 4_000_000))
      if let lz4 = value("lz4.tool", LZ4ToolScenario.decompressConfiguration(n), "events/s", "lz4") {
        checks.append(
          TargetCheck(
            target: "replay ≥ 25% of lz4 -dc of the same segments",
            measured: Report.format(replay / lz4 * 100) + "%", met: replay / lz4 >= 0.25))
      }
    }
    let jumps = TimeTravelScenario.jumpCounts(context.options.mode)
    if let p99 = value(
      "timetravel.seek", TimeTravelScenario.snapshotConfiguration(total: UInt64(n), jumps: jumps.fromSnapshots),
      "jump p99")
    {
      // The scenario 3: time travel with the default snapshot policy. The journal's cursor
      // seek and the jumps of a prepared time machine are shown beside it, not judged.
      var measured = Report.format(p99) + " ms"
      if let seek = value(
        "journal.seek", SeekScenario.configuration(total: n, seeks: context.options.seeks), "seek p99")
      {
        measured += "; journal cursor seek p99 \(Report.format(seek)) ms"
      }
      if let prepared = value(
        "timetravel.seek", TimeTravelScenario.preparedConfiguration(total: UInt64(n), jumps: jumps.prepared), "jump p99"
      ) {
        measured += "; after TimeMachine.prepare() p99 \(Report.format(prepared)) ms"
      }
      checks.append(
        TargetCheck(
          target:
            "seek p99 ≤ 20 ms (time travel, TimeMachine.jump, snapshots every "
            + "\(TimeTravelScenario.snapshotInterval(total: UInt64(n))), the newest \(TimeTravelScenario.keep) kept"
            + " as by default)",
          measured: measured, met: p99 <= 20))
    }
    let stateTargets = min(context.options.seeks, context.options.mode == .full ? 5 : 3)
    if let state = value(
      "timetravel.state", "\(n)-event journal, \(stateTargets) targets, no snapshots", "state(at:) max")
    {
      checks.append(
        TargetCheck(
          target: "state by replay from sequence 1, no snapshots (for comparison) ≤ 20 ms",
          measured: Report.format(state) + " ms (max of \(stateTargets))", met: state <= 20))
    }
    if let json = value("json.lines", "\(n) events", "bytes/event on disk", "json"),
      let single = value("corpus", "\(n) events", "journal bytes/event")
    {
      // Judged on the journal as it rests on disk once sealed: its sealed segments compacted
      // (the `compaction` scenario). The sizes as written are reported next to it.
      let grouped = value("journal.append", journal("none", 64), "bytes/event on disk")
      let compacted = value(
        "compaction", CompactionScenario.configuration(n), CompactionScenario.sealedBytesPerEvent)
      var measured = "JSON \(Report.format(json)) B/event; "
      if let compacted {
        measured +=
          "sealed segments compacted \(Report.format(compacted)) (\(Report.format(json / compacted))× smaller); "
      }
      measured +=
        "as written \(Report.format(single)) (one command per frame, \(Report.format(json / single))× smaller)"
      if let grouped {
        measured += ", \(Report.format(grouped)) (64 producers' groups, \(Report.format(json / grouped))× smaller)"
      }
      checks.append(
        TargetCheck(
          target: "journal ≤ 1/3 of the JSON lines' size (sealed segments, compacted)", measured: measured,
          met: compacted.map { $0 * 3 <= json }))
    }
    if let small = value("journal.read", "\(max(n / 10, 1)) events, cold", "peak memory"),
      let large = value("journal.read", "\(n) events, cold", "peak memory")
    {
      let repeats = context.options.readRepeats
      let long = value(
        "journal.read", "\(n * repeats) events (corpus ×\(repeats)), \(JournalAppendScenario.bulkSize) per frame, cold",
        "peak memory")
      let longText = long.map { " → \(Report.format($0)) MB at \(n * repeats) events" } ?? ""
      let replaySmall = value("replay", "\(max(n / 10, 1)) events, cold", "peak memory")
      let replayLarge = value("replay", "\(n) events, cold", "peak memory")
      let replayLong = value("replay", ReplayScenario.longConfiguration(n * repeats), "peak memory")
      let replayText =
        replaySmall.flatMap { a in replayLarge.map { b in "; replay \(Report.format(a)) → \(Report.format(b)) MB" } }
        .map { $0 + (replayLong.map { " → \(Report.format($0)) MB at \(n * repeats) events" } ?? "") } ?? ""
      checks.append(
        TargetCheck(
          target: "reading memory bounded whatever the length (peak RSS at n/10 vs n events)",
          measured:
            "read \(Report.format(small)) → \(Report.format(large)) MB\(longText)\(replayText) (replay includes the state)",
          met: max(large, long ?? 0) <= small * 1.5 + 8))
    }
    let repeats = context.options.readRepeats
    let long = ReplayScenario.longConfiguration(n * repeats)
    if let peak = value("replay", "\(n) events, cold", "peak memory"),
      let live = value("replay", "\(n) events, cold", "live records"), live > 0,
      let longPeak = value("replay", long, "peak memory"),
      let longLive = value("replay", long, "live records"), longLive > 0
    {
      // Replay's peak holds the rebuilt state, which grows with the live records: per live record,
      // a history ten times as long may cost no more than half as much again.
      let perRecord = peak * 1e6 / live
      let longPerRecord = longPeak * 1e6 / longLive
      checks.append(
        TargetCheck(
          target: "replay memory bounded by the state (peak per live record at \(n * repeats) vs \(n) events ≤ 1.5×)",
          measured:
            "\(Report.format(perRecord)) B per live record at \(n) events (\(Report.format(peak)) MB,"
            + " \(Report.format(live)) records) → \(Report.format(longPerRecord)) B at \(n * repeats)"
            + " (\(Report.format(longPeak)) MB, \(Report.format(longLive)) records)",
          met: longPerRecord <= perRecord * 1.5))
    }
    return checks
  }
}
