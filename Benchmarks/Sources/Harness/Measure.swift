import Glibc

/// Monotonic time in nanoseconds.
func monotonicNanos() -> UInt64 {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Seconds taken by `body`, with its result.
func timed<R>(_ body: () throws -> R) rethrows -> (seconds: Double, result: R) {
  let start = monotonicNanos()
  let result = try body()
  return (Double(monotonicNanos() - start) / 1e9, result)
}

/// Seconds taken by the asynchronous `body`, with its result.
func timedAsync<R>(_ body: () async throws -> R) async rethrows -> (seconds: Double, result: R) {
  let start = monotonicNanos()
  let result = try await body()
  return (Double(monotonicNanos() - start) / 1e9, result)
}

/// The fastest of `runs` timings of `body`, in seconds: for a figure whose runs are short and move
/// with the machine (a cold read, a decoder over bytes in memory), the run the least disturbed.
func fastest(of runs: Int, _ body: () throws -> Void) throws -> Double {
  var best = Double.infinity
  for _ in 0..<max(runs, 1) { best = min(best, try timed(body).seconds) }
  return best
}

/// One run of an append configuration: how many events in how long, each append's latency (none
/// in a run timed as a whole: `AppendTiming`), and the bytes it left on disk.
struct AppendRun: Sendable {
  var events: Int
  var seconds: Double
  var latencies: Latencies
  var bytesOnDisk: Int

  var eventsPerSecond: Double { Double(events) / seconds }
}

/// How a run of an append configuration is timed. Reading the clock around every append and
/// keeping the sample costs the producer about 90 ns an append on this machine, 13% of a
/// one-record append to the journal without fsync (`--child append`, 1M appends: 0.57–0.63 s
/// timed as a whole, 0.66–0.71 s timed each; Dec 4): the events/s of a run timed that way would
/// count the benchmark's clock as the journal's. So the runs that give events/s are timed as a
/// whole, and one more run gives the latencies.
enum AppendTiming: Sendable {
  /// Only the run: its events/s, MB/s and bytes on disk.
  case whole
  /// Each append, for the acknowledgement latencies.
  case eachAppend
}

/// An append configuration's runs: `rounds` timed as a whole, from slowest to fastest, so that
/// `median` is the middle one and the ends are the spread (`BenchContext.recordSpread`), and one
/// more timed append by append for the latencies.
struct AppendRuns {
  var runs: [AppendRun]
  var latencies: Latencies

  var median: AppendRun { runs[runs.count / 2] }
}

/// Runs an append configuration `rounds` times timed as a whole, then once timed append by append
/// (`run` gets the timing and starts afresh each time: a new journal or database). Before each
/// run every dirty page is written back (`sync`): an earlier run's hundreds of megabytes would
/// otherwise be written back during this one, on the same two cores and disk (a run right after
/// a 267 MB copy took twice as long as the next). A run's own writes stay in its time.
func appendRounds(_ rounds: Int, _ run: (AppendTiming) async throws -> AppendRun) async throws -> AppendRuns {
  var runs: [AppendRun] = []
  for _ in 0..<max(rounds, 1) {
    sync()
    runs.append(try await run(.whole))
  }
  sync()
  let timed = try await run(.eachAppend)
  guard !timed.latencies.samples.isEmpty else { throw BenchError("a run timed append by append took no samples") }
  return AppendRuns(runs: runs.sorted { $0.eventsPerSecond < $1.eventsPerSecond }, latencies: timed.latencies)
}

/// Latency samples in nanoseconds, summarized as nearest-rank percentiles.
struct Latencies: Sendable {
  private(set) var samples: [UInt64] = []
  private var sorted = true

  mutating func reserve(_ count: Int) { samples.reserveCapacity(count) }

  mutating func add(_ nanos: UInt64) {
    if let last = samples.last, last > nanos { sorted = false }
    samples.append(nanos)
  }

  mutating func add(contentsOf other: Latencies) {
    samples.append(contentsOf: other.samples)
    sorted = false
  }

  /// The `fraction` percentile (0.5, 0.99) in milliseconds; nil without samples.
  mutating func percentileMilliseconds(_ fraction: Double) -> Double? {
    guard !samples.isEmpty else { return nil }
    if !sorted {
      samples.sort()
      sorted = true
    }
    let rank = Int((fraction * Double(samples.count)).rounded(.up)) - 1
    return Double(samples[min(max(rank, 0), samples.count - 1)]) / 1e6
  }

  /// The `fraction` percentile in milliseconds, for a figure: a measurement that took no samples
  /// is an error of the scenario, not a latency of 0.
  mutating func requiredMilliseconds(_ fraction: Double) throws -> Double {
    guard let value = percentileMilliseconds(fraction) else {
      throw BenchError("no latency samples for the \(fraction) percentile")
    }
    return value
  }
}

/// The bytes of every regular file under `directory`.
func bytesOnDisk(_ directory: String) -> Int {
  guard let dir = opendir(directory) else { return 0 }
  defer { closedir(dir) }
  var total = 0
  while let entry = readdir(dir) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
      String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
    if name == "." || name == ".." { continue }
    let path = directory + "/" + name
    var info = stat()
    guard stat(path, &info) == 0 else { continue }
    if (info.st_mode & S_IFMT) == S_IFDIR {
      total += bytesOnDisk(path)
    } else {
      total += Int(info.st_size)
    }
  }
  return total
}

/// The size of the file at `path`, or 0 if there is none.
func fileBytes(_ path: String) -> Int {
  var info = stat()
  return stat(path, &info) == 0 ? Int(info.st_size) : 0
}

/// The bytes of the files in `directory` whose path starts with `prefix` (a file, and any beside
/// it whose name extends its own).
func bytesOnDisk(_ directory: String, prefix: String) -> Int {
  guard let dir = opendir(directory) else { return 0 }
  defer { closedir(dir) }
  var total = 0
  while let entry = readdir(dir) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
      String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
    let path = directory + "/" + name
    guard path.hasPrefix(prefix) else { continue }
    total += fileBytes(path)
  }
  return total
}

/// Asks the kernel to drop its cached pages of every file under `directory`, so the next read
/// comes from the device (or at least from outside this guest's page cache). First writes back
/// every dirty page (`sync`; Glibc's module does not export `syncfs`), not only those files':
/// earlier scenarios' journals and databases would otherwise be written back during the cold run
/// that follows.
func evictFromPageCache(_ directory: String, prefix: String = "") {
  sync()
  guard let dir = opendir(directory) else { return }
  defer { closedir(dir) }
  while let entry = readdir(dir) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
      String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
    if name == "." || name == ".." { continue }
    let path = directory + "/" + name
    guard path.hasPrefix(prefix) else { continue }
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { continue }
    fdatasync(fd)
    posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED))
    close(fd)
  }
}

/// Writes `message` and a newline to standard error.
func printError(_ message: String) {
  let line = Array((message + "\n").utf8)
  _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
