import Foundation
import RewindJournal
import RewindTestSupport
import Synchronization
import Testing

@testable import rewind_bench

/// The benchmark harness's own arithmetic: what turns measured runs into the figures RESULTS.md
/// quotes and the targets it judges. The smoke run in CI checks that every scenario records
/// finite figures; these check that the figures are the right ones.
@Suite struct HarnessTests {
  /// The repository's Benchmarks directory.
  static let benchmarks = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Benchmarks")

  /// Nearest-rank percentiles: the smallest sample with at least that fraction of samples at or
  /// below it, whatever order the samples came in. Without samples there is none, and a figure
  /// asked of none is an error (not a latency of 0).
  @Test func percentilesAreNearestRank() {
    var latencies = Latencies()
    #expect(latencies.percentileMilliseconds(0.5) == nil)
    #expect(throws: BenchError.self) { try latencies.requiredMilliseconds(0.5) }
    // 1 ms … 100 ms, added out of order and in two parts.
    var other = Latencies()
    for millisecond in (1...100).reversed() {
      if millisecond % 2 == 0 {
        latencies.add(UInt64(millisecond) * 1_000_000)
      } else {
        other.add(UInt64(millisecond) * 1_000_000)
      }
    }
    latencies.add(contentsOf: other)
    #expect(latencies.samples.count == 100)
    #expect(latencies.percentileMilliseconds(0.5) == 50)
    #expect(latencies.percentileMilliseconds(0.99) == 99)
    #expect(latencies.percentileMilliseconds(1) == 100)
    #expect(latencies.percentileMilliseconds(0) == 1)
    // A sample added after sorting is sorted in before the next percentile.
    latencies.add(500_000)
    #expect(latencies.percentileMilliseconds(0) == 0.5)
  }

  /// Rounds timed as a whole come back slowest first, the median is the middle run, and the
  /// spread its ends; one more round, timed append by append, gives the latencies, and a timed
  /// round without samples is an error, not a latency.
  @Test func roundsAreOrderedAndTheMedianIsTheMiddleRun() async throws {
    let rates = [300.0, 100.0, 200.0]
    var timings: [AppendTiming] = []
    let runs = try await appendRounds(rates.count) { timing in
      timings.append(timing)
      var latencies = Latencies()
      if timing == .eachAppend { latencies.add(7_000_000) }
      let round = timings.count - 1
      let rate = round < rates.count ? rates[round] : 1
      return AppendRun(events: Int(rate), seconds: 1, latencies: latencies, bytesOnDisk: round)
    }
    #expect(timings == [.whole, .whole, .whole, .eachAppend])
    #expect(runs.runs.map(\.eventsPerSecond) == [100, 200, 300])
    #expect(runs.median.bytesOnDisk == 2)
    #expect(runs.latencies.samples == [7_000_000])
    // No rounds asked for is still one run, and the latencies' run.
    var calls = 0
    let one = try await appendRounds(0) { timing in
      calls += 1
      var latencies = Latencies()
      if timing == .eachAppend { latencies.add(1) }
      return AppendRun(events: 10, seconds: 2, latencies: latencies, bytesOnDisk: 0)
    }
    #expect(calls == 2)
    #expect(one.runs.map(\.eventsPerSecond) == [5])
    await #expect(throws: BenchError.self) {
      _ = try await appendRounds(1) { _ in AppendRun(events: 1, seconds: 1, latencies: Latencies(), bytesOnDisk: 0) }
    }
  }

  /// Events/s, MB/s and bytes on disk come from the median run timed as a whole, the latencies
  /// from the run timed append by append; the spread is recorded beside the median only when
  /// there was more than one run.
  @Test func appendRunsRecordTheMedianRunsFigures() throws {
    let context = BenchContext(options: BenchOptions(), work: "/nonexistent")
    func run(_ events: Int, seconds: Double, bytes: Int) -> AppendRun {
      AppendRun(events: events, seconds: seconds, latencies: Latencies(), bytesOnDisk: bytes)
    }
    var latencies = Latencies()
    for _ in 0..<100 { latencies.add(2_000_000) }
    latencies.add(9_000_000)
    let runs = AppendRuns(
      runs: [
        run(100, seconds: 2, bytes: 1_000), run(100, seconds: 1, bytes: 2_000_000),
        run(100, seconds: 0.5, bytes: 3_000),
      ],
      latencies: latencies)
    try context.recordAppendRuns("s", "c", runs, eventsOnDisk: 200)
    #expect(context.value("s", "c", "events/s") == 100)
    #expect(context.value("s", "c", "events/s, lowest of 3") == 50)
    #expect(context.value("s", "c", "events/s, highest of 3") == 200)
    #expect(context.value("s", "c", "MB/s written") == 2)
    #expect(context.value("s", "c", "bytes/event on disk") == 10_000)
    #expect(context.value("s", "c", "ack p50") == 2)
    #expect(context.value("s", "c", "ack p99") == 2)

    try context.recordAppendRuns("s", "single", AppendRuns(runs: [runs.runs[0]], latencies: latencies))
    #expect(context.value("s", "single", "events/s") == 50)
    #expect(context.value("s", "single", "bytes/event on disk") == 10)
    #expect(context.value("s", "single", "events/s, lowest of 1") == nil)
    #expect(!context.figures.contains { $0.configuration == "single" && $0.metric.contains("lowest") })
  }

  /// A baseline's ratio is baseline ÷ Rewind from the figure it names, and none when that figure
  /// is missing or zero.
  @Test func baselineRatiosDivideByTheNamedRewindFigure() throws {
    let context = BenchContext(options: BenchOptions(), work: "/nonexistent")
    context.record("append", "none", "events/s", 400, "ev/s")
    context.record("append", "zero", "events/s", 0, "ev/s")
    let reference = (scenario: "append", configuration: "none", metric: "events/s")
    context.record(baseline: "sqlite", "sqlite.append", "grouped", "events/s", 100, "ev/s", comparedWith: reference)
    context.record(
      baseline: "sqlite", "sqlite.append", "missing", "events/s", 100, "ev/s",
      comparedWith: (scenario: "append", configuration: "absent", metric: "events/s"))
    context.record(
      baseline: "sqlite", "sqlite.append", "against zero", "events/s", 100, "ev/s",
      comparedWith: (scenario: "append", configuration: "zero", metric: "events/s"))
    let figures = Dictionary(uniqueKeysWithValues: context.figures.map { ($0.configuration, $0) })
    #expect(figures["grouped"]?.ratio == 0.25)
    #expect(figures["grouped"]?.comparedWith == "append|rewind|none|events/s")
    // Recorded, without a ratio: a figure left out would pass a check through `?.`.
    let missing = try #require(figures["missing"])
    #expect(missing.ratio == nil)
    #expect(missing.comparedWith == nil)
    let againstZero = try #require(figures["against zero"])
    #expect(againstZero.ratio == nil)
    // With every scenario run, a reference that was not measured is a problem of the run; with
    // --only, its scenario may have been left out.
    #expect(
      context.problems == [
        "sqlite.append|sqlite|missing|events/s is compared with append|rewind|absent|events/s, which was not measured"
      ])
    let only = BenchContext(options: BenchOptions.parse(["--only", "sqlite"])!, work: "/nonexistent")
    only.record(
      baseline: "sqlite", "sqlite.append", "missing", "events/s", 100, "ev/s",
      comparedWith: (scenario: "append", configuration: "absent", metric: "events/s"))
    #expect(only.problems.isEmpty)
  }

  /// A baseline is only divided by a Rewind figure of the same metric in the same unit: decoded
  /// bytes per second are not payload bytes per second. A pair that differs gets no ratio and is
  /// reported as a problem of the run.
  @Test func baselinesComparedWithAnotherMetricGetNoRatio() throws {
    let context = BenchContext(options: BenchOptions(), work: "/nonexistent")
    context.record("read", "cold", "payload MB/s", 100, "MB/s")
    context.record("read", "cold", "events/s", 1_000, "ev/s")
    context.record(
      baseline: "lz4", "lz4.tool", "dc", "decoded MB/s", 400, "MB/s",
      comparedWith: (scenario: "read", configuration: "cold", metric: "payload MB/s"))
    context.record(
      baseline: "lz4", "lz4.tool", "dc", "events/s", 4_000, "MB/s",
      comparedWith: (scenario: "read", configuration: "cold", metric: "events/s"))
    context.record(
      baseline: "lz4", "lz4.tool", "dc", "payload MB/s", 200, "MB/s",
      comparedWith: (scenario: "read", configuration: "cold", metric: "payload MB/s"))
    let figures = Dictionary(uniqueKeysWithValues: context.figures.map { ($0.key, $0) })
    let decoded = try #require(figures["lz4.tool|lz4|dc|decoded MB/s"])
    #expect(decoded.ratio == nil)
    #expect(decoded.comparedWith == nil)
    let events = try #require(figures["lz4.tool|lz4|dc|events/s"])
    #expect(events.ratio == nil)
    #expect(figures["lz4.tool|lz4|dc|payload MB/s"]?.ratio == 2)
    #expect(context.problems.count == 2)
    #expect(context.problems.first?.contains("lz4.tool|lz4|dc|decoded MB/s") == true)
  }

  /// Every index is appended once, by one of the producers, and timed once when each append is
  /// timed, never when the run is timed as a whole.
  @Test(arguments: [1, 3, 64], [AppendTiming.whole, .eachAppend])
  func producersShareTheIndicesOnce(producers: Int, timing: AppendTiming) async throws {
    final class Seen: Sendable { let indices = Mutex<[Int]>([]) }
    let seen = Seen()
    let latencies = try await runProducers(producers, count: 1_000, timing: timing) { index in
      seen.indices.withLock { $0.append(index) }
    }
    #expect(seen.indices.withLock { $0.sorted() } == Array(0..<1_000))
    #expect(latencies.samples.count == (timing == .eachAppend ? 1_000 : 0))
  }

  /// SQLite's producers committing each append under a lock wait for it suspended, with their
  /// clocks running (as the journal's wait for their group commit): with the lock held, every
  /// producer gets to queue for it, however few threads the pool has, and the wait counts in
  /// each one's latency. Before, producers blocked the pool's threads on the lock (2 in flight
  /// of 64) and started their clocks only once they had it. No timing bound: load only makes the
  /// held lock's wait longer.
  @Test(.timeLimit(.minutes(10))) func sqliteProducersWaitForTheLockWithTheirClocksRunning() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-sqlite-\(UUID())").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let appender = try SQLiteAppender(path: directory + "/events.db", synchronous: "OFF", commit: .eachAppend)
    let record = NewRecord(timestamp: 1, payload: [UInt8](repeating: 7, count: 200))
    let producers = 16
    await appender.callers.lock()
    let run = Task {
      try await runProducers(producers, count: producers, timing: .eachAppend) { _ in
        try await appender.append([record])
      }
    }
    while appender.callers.waiting < producers { try await Task.sleep(for: .milliseconds(5)) }
    let held = ContinuousClock.now
    try await Task.sleep(for: .milliseconds(100))
    let heldFor = ContinuousClock.now - held
    appender.callers.unlock()
    let latencies = try await run.value
    appender.close()
    #expect(latencies.samples.count == producers)
    let heldNanos =
      UInt64(heldFor.components.seconds) * 1_000_000_000 + UInt64(heldFor.components.attoseconds / 1_000_000_000)
    #expect(latencies.samples.allSatisfy { $0 >= heldNanos }, "\(latencies.samples) against \(heldNanos)")
  }

  /// The allocator's bytes in use are read from `malloc_info`'s totals after the last heap (all
  /// arenas together), not from the first arena's.
  @Test func heapInUseIsReadFromTheTotals() {
    let info = """
      <malloc version="1">
      <heap nr="0">
      <sizes>
        <size from="33" to="33" total="99" count="3"/>
      </sizes>
      <total type="fast" count="1" size="11"/>
      <total type="rest" count="2" size="22"/>
      <system type="current" size="1000"/>
      <system type="max" size="1000"/>
      </heap>
      <heap nr="1">
      <sizes>
      </sizes>
      <total type="fast" count="0" size="0"/>
      <total type="rest" count="1" size="300"/>
      <system type="current" size="4000"/>
      <system type="max" size="9000"/>
      </heap>
      <total type="fast" count="1" size="11"/>
      <total type="rest" count="3" size="322"/>
      <total type="mmap" count="2" size="70000"/>
      <system type="current" size="5000"/>
      <system type="max" size="10000"/>
      <aspace type="total" size="5000"/>
      <aspace type="mprotect" size="5000"/>
      </malloc>
      """
    #expect(Heap.inUse(malloc: info) == 5_000 - 11 - 322 + 70_000)
    #expect(Heap.inUse(malloc: "<malloc version=\"1\"></malloc>") == nil)
    // A total missing after the last heap.
    let truncated = info.replacingOccurrences(of: "<total type=\"mmap\" count=\"2\" size=\"70000\"/>", with: "")
    #expect(Heap.inUse(malloc: truncated) == nil)
  }

  /// This process's glibc reports at least the block this test holds as in use (a block this
  /// large is mapped on its own: the `mmap` total).
  @Test func heapInUseCountsWhatIsHeld() throws {
    let size = 64 << 20
    let block = try #require(malloc(size))
    defer { free(block) }
    memset(block, 1, size)
    let inUse = try #require(Heap.inUseBytes())
    #expect(inUse >= size)
  }

  /// Three significant digits below 1,000, grouped thousands above.
  @Test func figuresAreFormattedForTheTable() {
    #expect(Report.format(1_234_567) == "1,234,567")
    #expect(Report.format(-1_234.4) == "-1,234")
    #expect(Report.format(999.4) == "999")
    #expect(Report.format(12.345) == "12.3")
    #expect(Report.format(0.012345) == "0.0123")
    #expect(Report.format(0) == "0")
    #expect(Report.format(.infinity) == "inf")
  }

  /// A results file as Markdown: a scenario of few metrics as a row per configuration and a
  /// column per metric, "–" where a row lacks one, a baseline's ratio beside its value and the
  /// Rewind figures it is compared with in a last column; one of more metrics, or whose table
  /// would be mostly empty, as a row per figure; no unit where a figure has none; a `|` in a
  /// name escaped; the targets with their verdicts; the whole text, blank lines included.
  @Test func resultsAreRenderedAsMarkdownTables() {
    func figure(
      _ scenario: String, _ system: String, _ configuration: String, _ metric: String, _ value: Double,
      unit: String = "u", against: (String, Double)? = nil
    ) -> Figure {
      Figure(
        scenario: scenario, system: system, configuration: configuration, metric: metric, value: value, unit: unit,
        comparedWith: against?.0, ratio: against?.1)
    }
    let wide = (1...(Report.markdownMetricColumns + 1)).map { figure("seek", "rewind", "a|b", "m\($0)", Double($0)) }
    let report = Report(
      command: "rewind-bench --full", mode: "full", seed: 0x5EED_2026,
      machine: Report.Machine(cpus: 2, memoryBytes: 1 << 30, cpuModel: "CPU", cpuMHz: 2000), totalSeconds: 61.5,
      figures: [
        figure("append", "rewind", "none, 1", "events/s", 2_000_000), figure("append", "rewind", "none, 1", "p99", 0.5),
        figure("append", "rewind", "none, 64", "events/s", 600_000),
        figure("append", "sq|lite", "none, 1", "events/s", 250_000, against: ("append|rewind|none, 1|events/s", 0.125)),
        figure("append", "sq|lite", "none, 1", "p99", 0.25, against: ("append|rewind|none, 1|ack p99", 0.5)),
      ] + wide + (1...3).map { figure("sparse", "rewind", "c\($0)", "m\($0)", 1, unit: "") },
      targets: [
        TargetCheck(target: "append ≥ 1.5M", measured: "2M", met: true),
        TargetCheck(target: "seek", measured: "x | y", met: false), TargetCheck(target: "n", measured: "-", met: nil),
      ])
    let append: [String] = [
      "| system | configuration | events/s | p99 | against |", "|---|---|---:|---:|---|",
      "| rewind | none, 1 | 2,000,000 u | 0.500 u | – |", "| rewind | none, 64 | 600,000 u | – | – |",
      "| sq\\|lite | none, 1 | 250,000 u (0.125×) | 0.250 u (0.500×) | append: none, 1; append: none, 1, ack p99 |",
    ]
    let byFigure: [String] = ["| system | configuration | metric | value |", "|---|---|---|---:|"]
    let seek: [String] = (1...(Report.markdownMetricColumns + 1)).map { (n: Int) -> String in
      "| rewind | a\\|b | m\(n) | \(Report.format(Double(n))) u |"
    }
    let sparse: [String] = (1...3).map { (n: Int) -> String in "| rewind | c\(n) | m\(n) | 1.00 |" }
    let targets: [String] = [
      "| target | measured | verdict |", "|---|---|---|", "| append ≥ 1.5M | 2M | met |",
      "| seek | x \\| y | **missed** |", "| n | - | not judged |",
    ]
    let first = "`rewind-bench --full`: full mode, seed 0x5EED2026, 61.5 s; machine: CPU at 2000 MHz, 2 CPUs, 1024 MiB."
    let sections: [[String]] = [
      [first], ["### append"], append, ["### seek"], byFigure + seek, ["### sparse"], byFigure + sparse,
      ["### targets"], targets,
    ]
    let expected = sections.map { $0.joined(separator: "\n") }.joined(separator: "\n\n") + "\n"
    #expect(report.markdown() == expected)
    #expect(Report.markdownTable([]).isEmpty)
  }

  /// RESULTS.md quotes the run in results/latest.json whole, as `rewind-bench --markdown` prints
  /// it: a results file replaced without the page, or a figure in the page's tables of it edited
  /// by hand, fails. (The summary written above those tables is not checked.)
  @Test func theResultsPageQuotesTheLatestRunAsItsJSONHoldsIt() throws {
    let benchmarks = Self.benchmarks
    let tables = try Report.read(from: benchmarks.appendingPathComponent("results/latest.json").path).markdown()
    let page = try String(contentsOf: benchmarks.appendingPathComponent("RESULTS.md"), encoding: .utf8)
    let quoted = page.contains(tables)  // not inside #expect, which would print both texts whole
    #expect(quoted, "Benchmarks/RESULTS.md does not hold `rewind-bench --markdown Benchmarks/results/latest.json`")
  }

  /// The machine a run names: its memory, and the first processor's model and clock, read from
  /// the texts of `/proc/meminfo` and `/proc/cpuinfo`; without a clock (a processor whose
  /// cpuinfo gives none) the clock is nil and the summary leaves it out.
  @Test func theMachineIsReadFromProcWithItsClock() {
    let cpuinfo = """
      processor\t: 0
      vendor_id\t: AuthenticAMD
      model name\t: AMD EPYC
      cpu MHz\t\t: 1996.248
      processor\t: 1
      model name\t: AMD EPYC
      cpu MHz\t\t: 2600.000
      """
    let meminfo = "MemTotal:       24684544 kB\nMemFree:        21328892 kB\n"
    let machine = Report.machine(cpus: 2, meminfo: meminfo, cpuinfo: cpuinfo)
    #expect(machine.cpuModel == "AMD EPYC")
    #expect(machine.cpuMHz == 1996.248)
    #expect(machine.memoryBytes == 24_684_544 * 1024)
    #expect(machine.summary == "machine: AMD EPYC at 1996 MHz, 2 CPUs, 24106 MiB")

    let bare = Report.machine(cpus: 1, meminfo: "", cpuinfo: "processor\t: 0\nCPU part\t: 0xd0c\n")
    #expect(bare.cpuModel == "unknown" && bare.cpuMHz == nil && bare.memoryBytes == 0)
    #expect(bare.summary == "machine: unknown, 1 CPUs, 0 MiB")
  }

  /// A results file is sound when every scenario that ran left a figure; one that ran and left
  /// none is named.
  @Test func resultsFilesNameTheScenariosThatRecordedNothing() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID()).json").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    let report = Report(
      command: "rewind-bench", mode: "small", seed: 1, machine: Report.machine(), totalSeconds: 1,
      figures: [Figure(scenario: "replay", system: "rewind", configuration: "c", metric: "m", value: 1, unit: "u")],
      targets: [])
    try report.write(to: path)
    #expect(try Report.problems(in: path, scenarios: ["replay"]).isEmpty)
    #expect(try Report.problems(in: path, scenarios: ["replay", "seek"]) == ["scenario seek recorded no figure"])
    #expect(try Report.read(from: path).figures.map(\.key) == report.figures.map(\.key))
  }

  /// A results file that is missing, or is not one `--json` wrote, is refused with its path named
  /// (`rewind-bench --markdown` prints the message and exits 1).
  @Test func aFileThatIsNotAResultsFileIsRefusedByName() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID()).json").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    #expect(throws: BenchError.self) { try Report.read(from: path) }
    try Data("{}".utf8).write(to: URL(fileURLWithPath: path))
    do {
      _ = try Report.read(from: path)
      Issue.record("{} read as a results file")
    } catch let error as BenchError {
      #expect(error.description.hasPrefix("\(path) is not a results file"), "\(error)")
    }
  }

  /// The first targets are judged on the journal's and SQLite's figures as the issue states them.
  @Test func appendTargetsAreJudgedOnTheirFigures() {
    let context = BenchContext(options: BenchOptions(), work: "/nonexistent")
    let one = JournalAppendScenario.configuration("none", 1)
    let many = JournalAppendScenario.configuration("none", 64)
    context.record("journal.append", one, "events/s", 1_600_000, "ev/s")
    context.record("journal.append", many, "events/s", 400_000, "ev/s")
    context.record(
      baseline: "sqlite", "sqlite.append", "grouped, synchronous=OFF, 64 producers", "events/s", 100_000, "ev/s",
      comparedWith: (scenario: "journal.append", configuration: many, metric: "events/s"))
    context.record(
      baseline: "sqlite", "sqlite.append", "commit per append under a lock, synchronous=OFF, 1 producer",
      "events/s", 400_000, "ev/s", comparedWith: (scenario: "journal.append", configuration: one, metric: "events/s"))
    let checks = Dictionary(uniqueKeysWithValues: Targets.check(context).map { ($0.target, $0) })
    // 1.6M with one producer, 400k with 64: the issue asks 1.5M of both, and the better of the two
    // passed it.
    let rate = "journal append without fsync ≥ 1.5M events/s (one record per append, 1 and 64 producers)"
    #expect(checks[rate]?.met == false)
    let grouped = checks["append without fsync ≥ 5× SQLite (grouped transactions, synchronous=OFF, 64 producers)"]
    #expect(grouped?.met == false)
    #expect(grouped?.measured == "4.00×")
    let single = checks["append without fsync ≥ 5× SQLite committing each append on the caller's thread, 1 producer"]
    #expect(single?.met == false)
    #expect(single?.measured == "4.00×")
    // Targets whose figures were not measured are reported unjudged (a run without --only fails
    // on them), or left out when --only left their scenarios out.
    let replay = checks.values.first { $0.target.hasPrefix("replay into the stores ≥ 4M events/s") }
    #expect(replay != nil && replay?.met == nil)
    #expect(replay?.measured == Targets.unmeasured)
    let only = BenchContext(options: BenchOptions.parse(["--only", "append"])!, work: "/nonexistent")
    only.record("journal.append", one, "events/s", 1_600_000, "ev/s")
    only.record("journal.append", many, "events/s", 1_500_000, "ev/s")
    #expect(Targets.check(only).map(\.target) == [rate])
    #expect(Targets.check(only).first?.met == true)
  }

  /// Replay is judged at both lengths the run replays (at 1M events only, 427k at 10M went
  /// unjudged), and the journal's size both as the manager writes it and at rest, compacted whole
  /// (judged at rest only, the one reading that passed).
  @Test func replayAndSizeAreJudgedOnEveryFigureTheIssueNames() {
    let context = BenchContext(options: BenchOptions(), work: "/nonexistent")
    context.corpus = Array(repeating: NewRecord(timestamp: 0, payload: []), count: 1_000)
    context.record("replay", "1000 events, cold", "events/s", 5_000_000, "ev/s")
    context.record("replay", ReplayScenario.longConfiguration(2_000), "events/s", 3_000_000, "ev/s")
    context.record("json.lines", "1000 events", "bytes/event on disk", 300, "B", system: "json")
    context.record("corpus", "1000 events", "journal bytes/event", 250, "B")
    let compacted = CompactionScenario.configuration(1_000)
    context.record("compaction", compacted, CompactionScenario.atRestBytesPerEvent, 90, "B")
    context.record("compaction", compacted, CompactionScenario.wholeBytesPerEvent, 130, "B")
    context.record("compaction", compacted, CompactionScenario.sealedBytesPerEvent, 80, "B")
    let checks = Dictionary(uniqueKeysWithValues: Targets.check(context).map { ($0.target, $0) })
    let replay = checks["replay into the stores ≥ 4M events/s (at 1000 and 2000 events)"]
    #expect(replay?.met == false, "\(String(describing: replay))")
    #expect(replay?.measured.contains("3,000,000 ev/s at 2000") == true, "\(String(describing: replay))")
    let written = checks["journal as the manager writes it ≤ 1/3 of the JSON lines' size (default options)"]
    #expect(written?.met == false, "\(String(describing: written))")
    #expect(written?.measured.contains("(1.20× smaller)") == true, "\(String(describing: written))")
    let atRest = checks["journal at rest ≤ 1/3 of the JSON lines' size (compacted whole, rewind compact --all)"]
    #expect(atRest?.met == true, "\(String(describing: atRest))")
  }

  /// A run of every scenario that left a target without its figures reports every such target
  /// unjudged, by name.
  @Test func targetsWithoutFiguresAreReportedInAFullRun() {
    let context = BenchContext(options: BenchOptions(), work: "/nonexistent")
    context.corpus = Array(repeating: NewRecord(timestamp: 0, payload: []), count: 1_000)
    let checks = Targets.check(context)
    #expect(checks.count == 14)  // the fourteen targets of issue 6 the harness judges
    #expect(checks.allSatisfy { $0.met == nil && $0.measured == Targets.unmeasured })
  }

  /// `--work DIR` empties DIR only when the benchmark made it (its marker is there) or it is
  /// empty; a directory of other files, or a file, is refused and left as it was.
  @Test func scratchDirectoriesAreEmptiedOnlyWhenTheBenchMadeThem() throws {
    let manager = FileManager.default
    let root = manager.temporaryDirectory.appendingPathComponent("bench-scratch-\(UUID())").path
    defer { try? manager.removeItem(atPath: root) }
    let fresh = root + "/fresh/nested"
    try ScratchDirectory.prepare(fresh)
    #expect(try manager.contentsOfDirectory(atPath: fresh) == [ScratchDirectory.marker])

    // An earlier run's directory is emptied, its marker kept.
    #expect(manager.createFile(atPath: fresh + "/journal", contents: Data([1])))
    try ScratchDirectory.prepare(fresh)
    #expect(try manager.contentsOfDirectory(atPath: fresh) == [ScratchDirectory.marker])

    // Someone's directory is refused, untouched.
    let theirs = root + "/theirs"
    try manager.createDirectory(atPath: theirs, withIntermediateDirectories: true)
    #expect(manager.createFile(atPath: theirs + "/thesis.tex", contents: Data([1])))
    #expect(throws: BenchError.self) { try ScratchDirectory.prepare(theirs) }
    #expect(try manager.contentsOfDirectory(atPath: theirs) == ["thesis.tex"])

    // So is a file.
    #expect(throws: BenchError.self) { try ScratchDirectory.prepare(theirs + "/thesis.tex") }
    #expect(manager.fileExists(atPath: theirs + "/thesis.tex"))

    // An empty directory is taken.
    let empty = root + "/empty"
    try manager.createDirectory(atPath: empty, withIntermediateDirectories: true)
    try ScratchDirectory.prepare(empty)
    #expect(try manager.contentsOfDirectory(atPath: empty) == [ScratchDirectory.marker])
  }

  /// Each SQLite append configuration makes as many appends as the journal configuration it is
  /// compared with, or says how many it makes; the targets find the figures under it.
  @Test(arguments: [BenchOptions.Mode.small, .full])
  func sqliteAppendCountsMatchTheJournalsOrAreNamed(mode: BenchOptions.Mode) {
    var options = BenchOptions()
    options.mode = mode
    for variant in SQLiteAppendScenario.Variant.all {
      for producers in [1, 64] {
        let count = SQLiteAppendScenario.appendCount(variant, producers: producers, options: options)
        let journal = SQLiteAppendScenario.journalAppendCount(variant, producers: producers, options: options)
        let configuration = SQLiteAppendScenario.configuration(variant, producers: producers, options: options)
        #expect(
          count == journal || configuration.contains("\(Report.format(Double(count))) appends"),
          "\(configuration): \(count) appends, the journal's \(journal)")
      }
    }
    let durable = SQLiteAppendScenario.configuration(.eachAppendFull, producers: 64, options: options)
    let context = BenchContext(options: options, work: "/nonexistent")
    let many = JournalAppendScenario.configuration("always", 64)
    context.record("journal.append", many, "events/s", 300_000, "ev/s")
    context.record(
      baseline: "sqlite", "sqlite.append", durable, "events/s", 1_000, "ev/s",
      comparedWith: (scenario: "journal.append", configuration: many, metric: "events/s"))
    let checks = Targets.check(context)
    #expect(checks.contains { $0.target.hasPrefix("durable append ≥ 10× SQLite") && $0.met == true })
  }

  /// "Seek p99 ≤ 20 ms" is the issue's scenario 3: judged on time travel with snapshots as the
  /// default policy keeps them, with the journal's cursor seek and the prepared jumps shown beside
  /// it and not judged.
  @Test func seekTargetIsJudgedOnTimeTravelWithTheDefaultSnapshots() {
    let options = BenchOptions()
    let context = BenchContext(options: options, work: "/nonexistent")
    context.corpus = Array(repeating: NewRecord(timestamp: 0, payload: []), count: 1_000)
    let jumps = TimeTravelScenario.jumpCounts(options.mode)
    let fromSnapshots = TimeTravelScenario.snapshotConfiguration(total: 1_000, jumps: jumps.fromSnapshots)
    #expect(fromSnapshots.contains("newest 4 kept"))
    context.record(
      "journal.seek", SeekScenario.configuration(total: 1_000, seeks: options.seeks), "seek p99", 0.5, "ms")
    context.record(
      "timetravel.seek", TimeTravelScenario.preparedConfiguration(total: 1_000, jumps: jumps.prepared), "jump p99", 3,
      "ms")
    context.record("timetravel.seek", fromSnapshots, "jump p99", 250, "ms")
    let seek = Targets.check(context).filter { $0.target.hasPrefix("seek p99") }
    #expect(seek.count == 1)
    #expect(seek.first?.met == false)
    #expect(seek.first?.measured == "250 ms; journal cursor seek p99 0.500 ms; after TimeMachine.prepare() p99 3.00 ms")
    #expect(!Targets.check(context).contains { $0.target.contains("prepare") })

    let fast = BenchContext(options: options, work: "/nonexistent")
    fast.corpus = context.corpus
    fast.record("timetravel.seek", fromSnapshots, "jump p99", 20, "ms")
    #expect(Targets.check(fast).first { $0.target.hasPrefix("seek p99") }?.met == true)
  }

  /// Replay's memory is judged per live record of the state it rebuilds, over what a reading
  /// child holds: at ten times the history, at most a tenth more per record.
  @Test func replayMemoryIsJudgedPerLiveRecord() {
    let options = BenchOptions()
    func check(longPeak: Double, base: Double? = 10) -> TargetCheck? {
      let context = BenchContext(options: options, work: "/nonexistent")
      context.corpus = Array(repeating: NewRecord(timestamp: 0, payload: []), count: 1_000)
      if let base { context.record("journal.read", "100 events, cold", "peak memory", base, "MB") }
      context.record("replay", "1000 events, cold", "peak memory", 20, "MB")
      context.record("replay", "1000 events, cold", "live records", 500, "")
      let long = ReplayScenario.longConfiguration(1_000 * options.readRepeats)
      context.record("replay", long, "peak memory", longPeak, "MB")
      context.record("replay", long, "live records", 1_000, "")
      return Targets.check(context).first { $0.target.hasPrefix("replay memory bounded") }
    }
    // Over the reader's 10 MB: 20,000 B per live record at 1,000 events (500 records); 20,000,
    // 22,000 and 23,000 in the long history (1,000 records).
    #expect(check(longPeak: 30)?.met == true)
    #expect(check(longPeak: 30)?.measured.hasPrefix("20,000 B per live record at 1000 events") == true)
    #expect(check(longPeak: 32)?.met == true)
    // Met when the reader's part was spread over the records too (33,000 B against 40,000).
    #expect(check(longPeak: 33)?.met == false)
    #expect(check(longPeak: 30, base: nil)?.met == nil)
  }

  /// The command line: sizes and seeds are checked, an unknown argument is refused.
  @Test func optionsAreParsedAndCheckedOnTheCommandLine() {
    let full = BenchOptions.parse(["--full", "--seed", "0x10", "--only", "replay", "--only", "seek"])
    #expect(full?.mode == .full)
    #expect(full?.seed == 16)
    #expect(full?.only == ["replay", "seek"])
    #expect(full?.corpusEvents == 1_000_000)
    #expect(full?.appendRounds == 3)
    #expect(BenchOptions.parse(["--events", "500"])?.corpusEvents == 500)
    #expect(BenchOptions.parse([])?.appendRounds == 1)
    #expect(BenchOptions.parse(["--events", "5"]) == nil)
    #expect(BenchOptions.parse(["--seed", "x"]) == nil)
    #expect(BenchOptions.parse(["--json"]) == nil)
    #expect(BenchOptions.parse(["--fast"]) == nil)
    #expect(BenchOptions.parse(["--markdown", "r.json"])?.markdown == "r.json")
    #expect(BenchOptions.parse(["--markdown"]) == nil)
    #expect(BenchOptions.parse(["--full", "--markdown", "r.json"]) == nil)
    #expect(BenchOptions.parse(["--markdown", "r.json", "--only", "seek"]) == nil)
    #expect(BenchOptions.parse(["--full", "-h"])?.help == true)
    #expect(BenchOptions.parse(["--full"])?.help == false)
  }

  /// The executable, as its usage says: `--markdown F` prints F's tables (exit 0), an unreadable
  /// F is exit 1; `--markdown` beside another argument, or an unknown argument, is a usage error
  /// (exit 2) that runs nothing; `-h` and `--help` print the usage (exit 0).
  @Test func theExecutableExitsAsItsUsageSays() async throws {
    let bench = try #require(
      RewindTestSupport.ChildProcess.builtProduct("rewind-bench"), "rewind-bench must be built with the tests")
    func run(_ arguments: [String]) async throws -> (status: Int32?, lines: [String]) {
      let child = try RewindTestSupport.ChildProcess(executable: bench, arguments: arguments)
      _ = try await child.waitForExit(timeout: 120)
      return (child.exitStatus, child.lines)
    }
    let latest = Self.benchmarks.appendingPathComponent("results/latest.json").path
    let printed = try await run(["--markdown", latest])
    #expect(printed.status == 0)
    let tables = try Report.read(from: latest).markdown()
    let same = printed.lines.map { $0 + "\n" }.joined() == tables  // not inside #expect: both are long
    #expect(same, "rewind-bench --markdown did not print the tables of \(latest)")

    let unreadable = try await run(["--markdown", "/nonexistent/results.json"])
    #expect(unreadable.status == 1 && unreadable.lines.isEmpty)
    for usageError in [
      ["--small", "--markdown", latest], ["--markdown", latest, "--seed", "1"], ["--markdown"], ["--fast"],
    ] {
      let refused = try await run(usageError)
      #expect(refused.status == 2 && refused.lines.isEmpty, "\(usageError)")
    }
    for help in [["-h"], ["--help"], ["--full", "--help"]] {
      let usage = try await run(help)
      #expect(usage.status == 0 && usage.lines.first?.hasPrefix("usage: rewind-bench") == true, "\(help)")
    }
  }

  /// The profiling children take their workload seed from REWIND_BENCH_SEED, as --seed takes it.
  @Test func profilingChildrenTakeTheSeedFromTheEnvironment() throws {
    #expect(try rewind_bench.ChildProcess.workloadSeed(nil) == BenchOptions().seed)
    #expect(try rewind_bench.ChildProcess.workloadSeed("0x10") == 16)
    #expect(try rewind_bench.ChildProcess.workloadSeed("12") == 12)
    #expect(throws: BenchError.self) { try rewind_bench.ChildProcess.workloadSeed("twelve") }
  }
}
