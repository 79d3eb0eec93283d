/// The targets of issue 6, judged on this run's figures. A target whose figures were not measured
/// is left out when `--only` left scenarios out, and otherwise reported with no verdict (`met`
/// nil), which fails the run: a scenario that stopped recording a figure, or a figure renamed on
/// one side only, must not make a target disappear.
enum Targets {
  static func check(_ context: BenchContext) -> [TargetCheck] {
    let n = context.corpus.count
    let repeats = context.options.readRepeats
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
    /// Judges `target` by `verdict` (what was measured, and whether it meets the target), which
    /// returns nil when the figures it needs are missing.
    func judge(_ target: String, _ verdict: () -> (measured: String, met: Bool?)?) {
      if let (measured, met) = verdict() {
        checks.append(TargetCheck(target: target, measured: measured, met: met))
      } else if context.options.only.isEmpty {
        checks.append(TargetCheck(target: target, measured: Self.unmeasured, met: nil))
      }
    }

    judge("journal append without fsync ≥ 1.5M events/s (one record per append, 1 and 64 producers)") {
      guard let one = value("journal.append", journal("none", 1), "events/s"),
        let many = value("journal.append", journal("none", 64), "events/s")
      else { return nil }
      let bulk = value("journal.append", JournalAppendScenario.bulkConfiguration("none"), "events/s") ?? 0
      return (
        "\(rate(one)) (1 producer), \(rate(many)) (64 producers); \(rate(bulk)) with 1,000 per append",
        // The issue asks it with 1 and 64 producers: both, not the better of the two.
        min(one, many) >= 1_500_000
      )
    }
    judge("append without fsync ≥ 5× SQLite (grouped transactions, synchronous=OFF, 64 producers)") {
      guard let rewind = value("journal.append", journal("none", 64), "events/s"),
        let base = value("sqlite.append", sqlite(.groupedOff, 64), "events/s", "sqlite")
      else { return nil }
      return (Report.format(rewind / base) + "×", rewind / base >= 5)
    }
    judge("append without fsync ≥ 5× SQLite committing each append on the caller's thread, 1 producer") {
      guard let rewind = value("journal.append", journal("none", 1), "events/s"),
        let base = value("sqlite.append", sqlite(.eachAppendOff, 1), "events/s", "sqlite")
      else { return nil }
      return (Report.format(rewind / base) + "×", rewind / base >= 5)
    }
    judge("append without fsync ≥ 5× SQLite, both 1,000 records per append/transaction") {
      guard let rewind = value("journal.append", JournalAppendScenario.bulkConfiguration("none"), "events/s"),
        let base = value(
          "sqlite.append", SQLiteAppendScenario.bulkConfiguration(synchronous: "OFF"), "events/s", "sqlite")
      else { return nil }
      return (Report.format(rewind / base) + "×", rewind / base >= 5)
    }
    judge("durable append (always), 64 producers ≥ 200k events/s") {
      guard let rewind = value("journal.append", journal("always", 64), "events/s") else { return nil }
      return (rate(rewind), rewind >= 200_000)
    }
    judge("durable append ≥ 10× SQLite committing each append under a lock (WAL, FULL), 64 producers") {
      guard let rewind = value("journal.append", journal("always", 64), "events/s"),
        let base = value("sqlite.append", sqlite(.eachAppendFull, 64), "events/s", "sqlite")
      else { return nil }
      return (Report.format(rewind / base) + "×", rewind / base >= 10)
    }
    judge("the same through the managers (issue scenario 1): ≥ 1.5M without fsync, ≥ 200k durable") {
      guard let one = value("manager.append", journal("none", 1), "events/s"),
        let many = value("manager.append", journal("none", 64), "events/s"),
        let durable = value("manager.append", journal("always", 64), "events/s")
      else { return nil }
      // Not judged, as the journal's bulk appends are not: the manager's bulk path beside it.
      let pulls = value("manager.append", ManagerAppendScenario.pullConfiguration("none"), "events/s").map {
        "; \(rate($0)) in sync pulls of \(ManagerAppendScenario.notesPerPull) notes (none)"
      }
      // Without fsync, with 1 and with 64 producers, as for the journal's appends.
      return (
        "\(rate(one)) (none, 1), \(rate(many)) (none, 64), \(rate(durable)) (always, 64)" + (pulls ?? ""),
        min(one, many) >= 1_500_000 && durable >= 200_000
      )
    }
    let replay = value("replay", "\(n) events, cold", "events/s")
    let longReplay = value("replay", ReplayScenario.longConfiguration(n * repeats), "events/s")
    judge("replay into the stores ≥ 4M events/s (at \(n) and \(n * repeats) events)") {
      guard let replay, let longReplay else { return nil }
      return (
        "\(rate(replay)) at \(n) events, \(rate(longReplay)) at \(n * repeats)",
        min(replay, longReplay) >= 4_000_000
      )
    }
    judge("replay ≥ 25% of raw LZ4 decompression of the same segments (liblz4 in process, checksums skipped)") {
      guard let replay, let lz4 = value("lz4.tool", LZ4ToolScenario.libraryConfiguration(n), "events/s", "lz4")
      else { return nil }
      // liblz4 checking the frames' checksums, and the `lz4` tool, slower on a journal as written
      // (a system call per batch header), are shown beside it, not judged.
      let checked = value("lz4.tool", LZ4ToolScenario.checkedLibraryConfiguration(n), "events/s", "lz4").map {
        "; \(Report.format(replay / $0 * 100))% of liblz4 checking checksums"
      }
      let tool = value("lz4.tool", LZ4ToolScenario.decompressConfiguration(n), "events/s", "lz4").map {
        "; \(Report.format(replay / $0 * 100))% of lz4 -dc"
      }
      return (Report.format(replay / lz4 * 100) + "%" + (checked ?? "") + (tool ?? ""), replay / lz4 >= 0.25)
    }
    let jumps = TimeTravelScenario.jumpCounts(context.options.mode)
    judge(
      "seek p99 ≤ 20 ms (time travel, TimeMachine.jump, snapshots every "
        + "\(TimeTravelScenario.snapshotInterval(total: UInt64(n))) (the benchmark's choice), the newest "
        + "\(TimeTravelScenario.keep) kept as by default)"
    ) {
      guard
        let p99 = value(
          "timetravel.seek", TimeTravelScenario.snapshotConfiguration(total: UInt64(n), jumps: jumps.fromSnapshots),
          "jump p99")
      else { return nil }
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
      return (measured, p99 <= 20)
    }
    // The journal's size, judged twice: as the manager writes it (the default options: a frame per
    // command under `none`, group frames under a durable policy with many producers), and at rest
    // once compacted whole (`rewind compact --all`). A journal a writer keeps open lies between:
    // its active segment as written, its sealed ones compacted when `compactsSealedSegments` is
    // on (off by default); that live figure and the sealed segments alone are shown beside.
    let json = value("json.lines", "\(n) events", "bytes/event on disk", "json")
    let asWritten = value("corpus", "\(n) events", "journal bytes/event")
    let grouped = value("journal.append", journal("none", 64), "bytes/event on disk")
    func compaction(_ metric: String) -> Double? {
      value("compaction", CompactionScenario.configuration(n), metric)
        ?? value("compaction", CompactionScenario.reappendedConfiguration(n), metric)
    }
    judge("journal as the manager writes it ≤ 1/3 of the JSON lines' size (default options)") {
      guard let json, let asWritten else { return nil }
      var measured =
        "JSON \(Report.format(json)) B/event; one command per frame \(Report.format(asWritten)) "
        + "(\(Report.format(json / asWritten))× smaller)"
      if let grouped {
        measured += ", 64 producers' groups \(Report.format(grouped)) (\(Report.format(json / grouped))×)"
      }
      return (measured, asWritten * 3 <= json)
    }
    judge("journal at rest ≤ 1/3 of the JSON lines' size (compacted whole, rewind compact --all)") {
      guard let json, let atRest = compaction(CompactionScenario.atRestBytesPerEvent),
        let live = compaction(CompactionScenario.wholeBytesPerEvent),
        let sealed = compaction(CompactionScenario.sealedBytesPerEvent)
      else { return nil }
      // Every byte of the journal at rest: its segments, the index and the manifest.
      var measured = "JSON \(Report.format(json)) B/event; "
      measured += "at rest \(Report.format(atRest)) (\(Report.format(json / atRest))× smaller); "
      measured += "live, sealed segments compacted \(Report.format(live)) (\(Report.format(json / live))×); "
      measured += "its sealed segments \(Report.format(sealed)) (\(Report.format(json / sealed))×)"
      return (measured, atRest * 3 <= json)
    }
    judge("reading memory bounded whatever the length (peak RSS at n/10 vs n events)") {
      guard let small = value("journal.read", "\(max(n / 10, 1)) events, cold", "peak memory"),
        let large = value("journal.read", "\(n) events, cold", "peak memory")
      else { return nil }
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
      return (
        "read \(Report.format(small)) → \(Report.format(large)) MB\(longText)\(replayText) (replay includes the state)",
        max(large, long ?? 0) <= small * 1.5 + 8
      )
    }
    judge(
      "replay memory bounded by the state (peak over a reader's, per live record, at \(n * repeats) vs \(n) events"
        + " ≤ 1.1×)"
    ) {
      let long = ReplayScenario.longConfiguration(n * repeats)
      guard let peak = value("replay", "\(n) events, cold", "peak memory"),
        let live = value("replay", "\(n) events, cold", "live records"), live > 0,
        let longPeak = value("replay", long, "peak memory"),
        let longLive = value("replay", long, "live records"), longLive > 0,
        let base = value("journal.read", "\(max(n / 10, 1)) events, cold", "peak memory"), base < peak
      else { return nil }
      // Replay's peak holds the rebuilt state, which grows with the live records, over what any
      // reading child holds (the runtime and the read buffers: the reader's peak at n/10 events).
      // Spread over the live records as it was, that fixed part fell per record as they grew and
      // hid up to about 89 B per event of history under the 1.5× this target allowed before. Per
      // live record, what is over it may cost a tenth more in a history ten times as long.
      let perRecord = (peak - base) * 1e6 / live
      let longPerRecord = (longPeak - base) * 1e6 / longLive
      return (
        "\(Report.format(perRecord)) B per live record at \(n) events (\(Report.format(peak)) MB,"
          + " \(Report.format(live)) records) → \(Report.format(longPerRecord)) B at \(n * repeats)"
          + " (\(Report.format(longPeak)) MB, \(Report.format(longLive)) records), over a reader's"
          + " \(Report.format(base)) MB",
        longPerRecord <= perRecord * 1.1
      )
    }
    return checks
  }

  /// What a target whose figures are missing reports as measured.
  static let unmeasured = "not measured: its figures are missing"
}
