internal import Foundation
internal import Glibc
internal import Notebook
internal import Rewind
internal import RewindJournal
internal import Synchronization

/// Runs a measurement in a fresh child process (`rewind-bench --child KIND DIR LIMIT OUT`), so
/// nothing of the parent is warm in it and its peak memory is its own.
///
/// The peak is the child's own VmHWM from /proc/self/status, not wait4's ru_maxrss: on Linux, a
/// child made by posix_spawn (vfork-like, sharing the parent's memory until exec) carries the
/// parent's peak RSS into its ru_maxrss.
enum ChildProcess {
  /// What a child measured.
  struct Result: Codable {
    var events: Int
    var seconds: Double
    var payloadBytes: Int
    /// VmHWM: the peak resident set of the child's own address space.
    var peakBytes: Int
    /// Replay: the records in the rebuilt state (notebooks, notes, reading items), which the
    /// peak includes.
    var liveRecords: Int?
    /// `jump`: percentiles of one jump's CPU time in seconds, by the calling thread's clock
    /// (`CLOCK_THREAD_CPUTIME_ID`) and by the whole process's (which counts any helper thread a
    /// jump starts), and of its wall-clock time.
    var jumpThreadCPU: Percentiles?
    var jumpProcessCPU: Percentiles?
    var jumpWall: Percentiles?
    /// `jump`: the keyframes' tree bytes after `prepare()` (`TimeMachine.keyframeFootprint`), and
    /// the records the jumps applied.
    var keyframeBytes: Int?
    var recordsApplied: Int?
  }

  /// p50 and p99 (nearest rank) and the total of a set of samples, in seconds.
  struct Percentiles: Codable {
    var p50: Double
    var p99: Double
    var total: Double

    init(_ latencies: Latencies) throws {
      var latencies = latencies
      p50 = try latencies.requiredMilliseconds(0.5) / 1e3
      p99 = try latencies.requiredMilliseconds(0.99) / 1e3
      total = Double(latencies.samples.reduce(0, +)) / 1e9
    }
  }

  /// Kinds of work a child does.
  enum Kind: String {
    /// Every record from sequence 1 through LIMIT with `JournalReader.records(from:)`.
    case read
    /// `Replay.rebuild` of the Notebook workspace through sequence LIMIT (the whole journal when
    /// LIMIT reaches its last record), from sequence 1: no snapshot is read, even where the
    /// directory holds one.
    case replay
    /// LIMIT `createNote` commands (1,000 inputs, cycled) through a new `NotebookManager` in DIR,
    /// durability `none`, one producer (for profiling the manager's per-command cost; not run by
    /// the scenarios).
    case manager
    /// As `manager`, from 64 concurrent producers (for profiling contended commands: the gate,
    /// group commit, suspensions and resumptions).
    case managerConcurrent = "manager-64"
    /// LIMIT commands of the corpus's mixed workload (`NotebookWorkload`, the seed `workloadSeed`,
    /// planned before the timed part) through a new `NotebookManager` in DIR, durability `none`,
    /// one producer (for profiling the mixed commands; `NotebookHistory.run`'s inclusive count is
    /// theirs alone).
    case history
    /// LIMIT notes (rounded down to whole pulls) in sync pulls of `ManagerAppendScenario.notesPerPull`
    /// (`applySyncedNotes`, the scenario's notes) through a new `NotebookManager` in DIR,
    /// durability `none` (for profiling the manager's bulk path per event).
    case pulls
    /// LIMIT records (the first 1,000 of the journal in DIR, made by `manager`, cycled) appended
    /// one per `Journal.append` to a new journal in DIR-append, durability `none` (or the fifth
    /// argument's), one producer (for profiling the journal's per-append cost; not run by the
    /// scenarios).
    case append
    /// As `append`, with the records in appends of 1,000 (a bulk import; for profiling the
    /// journal's per-record cost in large frames).
    case appendBulk = "append-bulk"
    /// As `append`, from 64 concurrent producers (for profiling contended appends: group commit,
    /// suspensions and resumptions).
    case appendConcurrent = "append-64"
    /// `TimeMachine.prepare()` on the Notebook workspace's journal, then LIMIT jumps to seeded
    /// random points of it (the same points for every LIMIT, in order), each timed by CPU and wall
    /// clock (for profiling a prepared jump; per jump = the difference between two LIMITs).
    case jump
    /// LIMIT seeks through one `JournalReader` of DIR: `records(from:)` to a seeded random
    /// sequence number of the journal and the first `next()`, as `journal.seek` times them (for
    /// profiling a seek; per seek = the difference between two LIMITs).
    case seek
    /// The newest snapshot of the Notebook workspace in DIR at or before LIMIT, read and checked
    /// as a seek or a replay starting from it does (`SnapshotStore.latest`; for profiling snapshot
    /// reading; `rewind snapshot DIR` writes one). Its events are the state's live records.
    case snapshot
  }

  /// The durability of the `append` kinds' journal: `none` unless a fifth argument names another.
  static func durability(_ arguments: [String]) -> Durability? {
    guard arguments.count == 5 else { return Durability.none }
    return durabilities.first { $0.0 == arguments[4] }?.1
  }

  /// The fastest of `runs` runs of `kind` over `directory`, each in a fresh child and, when
  /// `cold`, after the directory's pages are dropped from the page cache; its peak memory is the
  /// highest of the runs' (the figure a memory bound is judged on). One run's time moves with the
  /// virtual disk and the host by up to 2× (the same child reading the same snapshot: 0.38–0.82 s
  /// in five runs on Dec 4), so a single run says little. Every run must report `events`, when
  /// given.
  static func fastest(
    of runs: Int, _ kind: Kind, directory: String, limit: Int, events: Int?, resultPath: String, cold: Bool
  ) throws -> Result {
    func once() throws -> Result {
      if cold { evictFromPageCache(directory) }
      let result = try run(kind, directory: directory, limit: limit, resultPath: resultPath)
      if let events, result.events != events {
        throw BenchError("the \(kind.rawValue) child reported \(result.events) events, expected \(events)")
      }
      return result
    }
    var best = try once()
    var peak = best.peakBytes
    for _ in 1..<max(runs, 1) {
      let result = try once()
      peak = max(peak, result.peakBytes)
      if result.seconds < best.seconds { best = result }
    }
    best.peakBytes = peak
    return best
  }

  /// Runs `kind` over `directory` in a child; returns its figures and peak resident bytes.
  static func run(_ kind: Kind, directory: String, limit: Int, resultPath: String) throws -> Result {
    let executable = try selfExecutable()
    let arguments = [executable, "--child", kind.rawValue, directory, String(limit), resultPath]
    var argv = arguments.map { strdup($0) }
    argv.append(nil)
    defer { for argument in argv { free(argument) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, executable, nil, nil, argv, environ)
    guard spawned == 0 else { throw BenchError("posix_spawn \(executable): \(String(cString: strerror(spawned)))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
      guard errno == EINTR else { throw BenchError("wait4: \(String(cString: strerror(errno)))") }
    }
    guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
      throw BenchError(
        "the \(kind) child failed (wait status \(status)); run it alone: \(arguments.joined(separator: " "))")
    }
    let data = try Data(contentsOf: URL(fileURLWithPath: resultPath))
    return try JSONDecoder().decode(Result.self, from: data)
  }

  /// The child's side: measures and writes its `Result` as JSON. Returns the exit status.
  static func main(_ arguments: [String]) -> Int32 {
    guard arguments.count == 4 || arguments.count == 5, let kind = Kind(rawValue: arguments[0]),
      let limit = Int(arguments[2]), limit >= 0, let durability = durability(arguments),
      arguments.count == 4 || [.append, .appendBulk, .appendConcurrent].contains(kind)
    else {
      printError(
        "usage: rewind-bench --child read|replay|manager|manager-64|history|pulls|append|append-bulk|append-64|jump|seek|snapshot"
          + " DIR LIMIT OUT"
          + " [none|batched|always (append kinds)]"
          + "\n  (manager, manager-64, history and pulls use the seed in REWIND_BENCH_SEED, as --seed takes it;"
          + " the default seed without it)")
      return 2
    }
    let directory = arguments[1]
    do {
      let result: Result
      switch kind {
      case .read:
        var events = 0
        var bytes = 0
        let (seconds, _) = try timed {
          let cursor = try JournalReader(directory: directory).records(from: 1)
          while events < limit, let record = try cursor.next() {
            events += 1
            bytes += record.payload.count
          }
        }
        result = Result(events: events, seconds: seconds, payloadBytes: bytes, peakBytes: peakResidentBytes())
      case .replay:
        // Finding the last sequence reads the index and the newest segment: timed with the
        // replay, so that the cold run finds nothing of the journal cached by it.
        let (seconds, rebuilt) = try timed {
          let last = try JournalReader(directory: directory).lastSequence()
          let through = UInt64(limit) >= last ? .max : UInt64(limit)
          return try Replay.rebuild(Workspace.self, directory: directory, through: through)
        }
        let state = rebuilt.state
        result = Result(
          events: Int(rebuilt.lastSequence), seconds: seconds, payloadBytes: 0, peakBytes: peakResidentBytes(),
          liveRecords: state.notebooks.count + state.notes.count + state.readingList.count)
      case .manager:
        result = try blocking { try await manager(directory: directory, limit: limit) }
      case .managerConcurrent:
        result = try blocking { try await manager(directory: directory, limit: limit, producers: 64) }
      case .history:
        result = try blocking { try await history(directory: directory, limit: limit) }
      case .pulls:
        result = try blocking { try await pulls(directory: directory, limit: limit) }
      case .append:
        result = try blocking { try await append(directory: directory, limit: limit, durability: durability) }
      case .appendBulk:
        result = try blocking {
          try await append(directory: directory, limit: limit, durability: durability, perAppend: 1_000)
        }
      case .appendConcurrent:
        result = try blocking {
          try await append(directory: directory, limit: limit, durability: durability, producers: 64)
        }
      case .jump:
        result = try jumps(directory: directory, limit: limit)
      case .seek:
        let reader = try JournalReader(directory: directory)
        let last = try reader.lastSequence()
        guard last > 0 else { throw BenchError("\(directory) holds no records") }
        var random = SeededRandom(seed: 0x5EE4_2026)
        var found = 0
        let (seconds, _) = try timed {
          for _ in 0..<limit {
            let target = 1 + random.next() % last
            guard try reader.records(from: target).next()?.sequence == target else {
              throw BenchError("seek to \(target) in \(directory) did not read it")
            }
            found += 1
          }
        }
        result = Result(events: found, seconds: seconds, payloadBytes: 0, peakBytes: peakResidentBytes())
      case .snapshot:
        let store = SnapshotStore(journal: directory)
        let last = try JournalReader(directory: directory).lastSequence()
        let (seconds, found) = timed { store.latest(Workspace.self, atOrBefore: UInt64(limit), lastSequence: last) }
        guard let (state, _) = found.snapshot else {
          throw BenchError("no usable snapshot at or before \(limit) in \(directory): \(found.problems)")
        }
        result = Result(
          events: state.notebooks.count + state.notes.count + state.readingList.count, seconds: seconds,
          payloadBytes: 0, peakBytes: peakResidentBytes())
      }
      let encoder = JSONEncoder()
      encoder.outputFormatting = .sortedKeys  // the same bytes for the same result, run after run
      try encoder.encode(result).write(to: URL(fileURLWithPath: arguments[3]))
      return 0
    } catch {
      printError("child \(kind): \(error)")
      return 1
    }
  }

  /// The workload seed of the profiling kinds: `REWIND_BENCH_SEED` from the environment (as
  /// `--seed` takes it, which a child's command line has no room for), else the default seed.
  static func workloadSeed(_ value: String? = getenv("REWIND_BENCH_SEED").map { String(cString: $0) }) throws
    -> UInt64
  {
    guard let value else { return BenchOptions().seed }
    guard let seed = BenchOptions.seed(value) else { throw BenchError("REWIND_BENCH_SEED: not a number: \(value)") }
    return seed
  }

  /// Runs `body` on the cooperative pool while this thread waits. (An `await` in top-level code
  /// would park the main thread in `dispatch_main`, which valgrind does not survive.)
  private static func blocking(_ body: @escaping @Sendable () async throws -> Result) throws -> Result {
    let done = DispatchSemaphore(value: 0)
    let outcome = Mutex<Swift.Result<Result, any Error>?>(nil)
    Task.detached {
      let value: Swift.Result<Result, any Error>
      do { value = .success(try await body()) } catch { value = .failure(error) }
      outcome.withLock { $0 = value }
      done.signal()
    }
    done.wait()
    return try outcome.withLock { $0! }.get()
  }

  private static func manager(directory: String, limit: Int, producers: Int = 1) async throws -> Result {
    let seed = try workloadSeed()
    let manager = try NotebookManager(
      directory: directory, options: benchJournalOptions(.none),
      ids: NotebookWorkload.identifiers(seed: seed))
    let notebook = try await manager.createNotebook(title: "Benchmark")
    var texts = NotebookWorkload(seed: seed)
    // A fixed set of inputs, cycled: the set-up costs the same whatever LIMIT, so profiles of
    // two LIMITs differ by the commands alone.
    let inputs = (0..<1_000).map { _ in (texts.words(2...7), texts.words(8...30)) }
    let (seconds, _) = try await timedAsync {
      if producers > 1 {
        _ = try await runProducers(producers, count: limit, timing: .whole) { index in
          let (title, body) = inputs[index % inputs.count]
          _ = try await manager.createNote(in: notebook, title: title, body: body)
        }
      } else {
        for index in 0..<limit {
          let (title, body) = inputs[index % inputs.count]
          _ = try await manager.createNote(in: notebook, title: title, body: body)
        }
      }
    }
    manager.close()
    return Result(events: limit, seconds: seconds, payloadBytes: 0, peakBytes: peakResidentBytes())
  }

  private static func history(directory: String, limit: Int) async throws -> Result {
    let seed = try workloadSeed()
    let manager = try NotebookManager(
      directory: directory, options: benchJournalOptions(.none), clock: NotebookWorkload.clock(seed: seed),
      ids: NotebookWorkload.identifiers(seed: seed))
    var workload = NotebookWorkload(seed: seed)
    let planned = (0..<limit).map { _ in workload.next() }
    var history = NotebookHistory()
    let (seconds, _) = try await timedAsync {
      for command in planned { try await history.run(command, on: manager) }
    }
    let events = Int(manager.lastSequence)
    manager.close()
    return Result(events: events, seconds: seconds, payloadBytes: 0, peakBytes: peakResidentBytes())
  }

  private static func pulls(directory: String, limit: Int) async throws -> Result {
    guard limit >= ManagerAppendScenario.notesPerPull else {
      throw BenchError("LIMIT \(limit) is less than one pull of \(ManagerAppendScenario.notesPerPull) notes")
    }
    let seed = try workloadSeed()
    let manager = try NotebookManager(
      directory: directory, options: benchJournalOptions(.none), ids: NotebookWorkload.identifiers(seed: seed))
    let notebook = try await manager.createNotebook(title: "Benchmark")
    let pulls = ManagerAppendScenario.syncPulls(limit / ManagerAppendScenario.notesPerPull, seed: seed)
    let (seconds, events) = try await timedAsync {
      var events = 0
      for pull in pulls { events += try await manager.applySyncedNotes(pull, into: notebook) }
      return events
    }
    manager.close()
    return Result(events: events, seconds: seconds, payloadBytes: 0, peakBytes: peakResidentBytes())
  }

  private static func append(
    directory: String, limit: Int, durability: Durability, perAppend: Int = 1, producers: Int = 1
  ) async throws -> Result {
    // The first 1,000 records, cycled (as `manager`'s inputs).
    var records: [NewRecord] = []
    let cursor = try JournalReader(directory: directory).records(from: 1)
    while records.count < 1_000, let record = try cursor.next() {
      records.append(NewRecord(timestamp: record.timestamp, payload: record.payload))
    }
    guard !records.isEmpty else {
      throw BenchError("\(directory) holds no records to append (make it with --child manager)")
    }
    let target = directory + "-append"
    try? FileManager.default.removeItem(atPath: target)
    let journal = try Journal(directory: target, options: benchJournalOptions(durability))
    let cycled = records
    let (seconds, _) = try await timedAsync {
      if producers > 1 {
        _ = try await runProducers(producers, count: limit, timing: .whole) { index in
          try await journal.append(cycled[index % cycled.count])
        }
      } else if perAppend == 1 {
        for index in 0..<limit { try await journal.append(records[index % records.count]) }
      } else {
        let batch = (0..<perAppend).map { records[$0 % records.count] }
        for _ in 0..<(limit / perAppend) { try await journal.append(batch) }
      }
    }
    journal.close()
    // In appends of `perAppend`, the records past the last whole append are not appended.
    let appended = limit / perAppend * perAppend
    return Result(events: appended, seconds: seconds, payloadBytes: 0, peakBytes: peakResidentBytes())
  }

  private static func jumps(directory: String, limit: Int) throws -> Result {
    let machine = try TimeMachine<Workspace>(directory: directory)
    try machine.prepare()
    let prepared = machine.keyframeFootprint.bytes
    let appliedBefore = machine.recordsApplied
    var random = SeededRandom(seed: 0x7143_2026)
    let last = machine.lastSequence
    guard last > 0 else { throw BenchError("\(directory) holds no records") }
    var thread = Latencies()
    var process = Latencies()
    var wall = Latencies()
    for _ in 0..<limit {
      let target = 1 + random.next() % last
      let (threadStart, processStart, wallStart) = (
        cpuNanos(CLOCK_THREAD_CPUTIME_ID), cpuNanos(CLOCK_PROCESS_CPUTIME_ID), monotonicNanos()
      )
      try machine.jump(to: target)
      wall.add(monotonicNanos() - wallStart)
      process.add(cpuNanos(CLOCK_PROCESS_CPUTIME_ID) - processStart)
      thread.add(cpuNanos(CLOCK_THREAD_CPUTIME_ID) - threadStart)
      guard machine.position == target else { throw BenchError("jump to \(target) stopped at \(machine.position)") }
    }
    var result = Result(
      events: limit, seconds: Double(wall.samples.reduce(0, +)) / 1e9, payloadBytes: 0, peakBytes: peakResidentBytes())
    result.jumpThreadCPU = try Percentiles(thread)
    result.jumpProcessCPU = try Percentiles(process)
    result.jumpWall = try Percentiles(wall)
    result.keyframeBytes = prepared
    result.recordsApplied = machine.recordsApplied - appliedBefore
    return result
  }

  /// CPU time of `clock` (a thread's or the process's) in nanoseconds.
  private static func cpuNanos(_ clock: clockid_t) -> UInt64 {
    var now = timespec()
    clock_gettime(clock, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
  }

  /// VmHWM of this process, in bytes; 0 if /proc does not say.
  private static func peakResidentBytes() -> Int { memoryStatus("VmHWM:") }

  /// A memory figure of this process from /proc/self/status (`VmHWM:`, `VmRSS:`), in bytes; 0 if
  /// /proc does not say.
  static func memoryStatus(_ field: String) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
      let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }),
      let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Int($0) })
    else { return 0 }
    return kilobytes * 1024
  }

  private static func selfExecutable() throws -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard count > 0 else { throw BenchError("readlink /proc/self/exe: \(String(cString: strerror(errno)))") }
    return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
