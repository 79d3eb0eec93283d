internal import Foundation

/// The ceiling: the `lz4` tool decompressing the corpus journal's own segments (every segment is
/// a sequence of standard LZ4 frames), and compressing their decoded bytes again. Best of three,
/// with the files in the page cache, so it measures the codec and not the disk.
struct LZ4ToolScenario: Scenario {
  let name = "lz4.tool"
  let summary = "lz4 -dc of the journal's segments (the decompression ceiling) and lz4 -1 of their content"

  func run(in context: BenchContext) async throws {
    let segments = try FileManager.default.contentsOfDirectory(atPath: context.corpusDirectory)
      .filter { $0.hasSuffix(".lz4") }.sorted().map { context.corpusDirectory + "/" + $0 }
    guard !segments.isEmpty else { throw BenchError("no segments in \(context.corpusDirectory)") }
    let decoded = context.path("segments.decoded")
    _ = FileManager.default.createFile(atPath: decoded, contents: nil)
    for segment in segments { try Self.lz4(["-dc", segment], output: decoded, append: true) }
    let decodedBytes = bytesOnDisk(context.work, prefix: decoded)
    let events = context.corpus.count

    let decompress = try Self.best(of: 3) {
      for segment in segments { try Self.lz4(["-dc", segment], output: "/dev/null") }
    }
    let compress = try Self.best(of: 3) { try Self.lz4(["-1", "-c", decoded], output: "/dev/null") }
    let configuration = "\(events) events"
    context.record(
      baseline: "lz4", name, configuration, "decompress events/s", Double(events) / decompress, "ev/s",
      comparedWith: ("journal.read", "\(events) events, cold", "events/s"))
    context.record(
      baseline: "lz4", name, configuration, "decompress MB/s (decoded)", Double(decodedBytes) / decompress / 1e6,
      "MB/s", comparedWith: ("journal.read", "\(events) events, cold", "payload MB/s"))
    context.record(
      baseline: "lz4", name, configuration, "compress events/s", Double(events) / compress, "ev/s",
      comparedWith: ("journal.append", JournalAppendScenario.configuration("none", 64), "events/s"))
    context.record(
      baseline: "lz4", name, configuration, "compress MB/s (decoded)", Double(decodedBytes) / compress / 1e6, "MB/s",
      comparedWith: ("journal.append", JournalAppendScenario.configuration("none", 64), "MB/s written"))
  }

  /// The fastest of `runs` timings of `body`, in seconds.
  static func best(of runs: Int, _ body: () throws -> Void) throws -> Double {
    var fastest = Double.infinity
    for _ in 0..<runs { fastest = min(fastest, try timed(body).seconds) }
    return fastest
  }

  /// Runs `lz4 arguments` with its standard output going to `output`.
  static func lz4(_ arguments: [String], output: String, append: Bool = false) throws {
    guard let handle = FileHandle(forWritingAtPath: output) else { throw BenchError("cannot write \(output)") }
    defer { try? handle.close() }
    if append { try handle.seekToEnd() }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["lz4", "-q"] + arguments
    process.standardOutput = handle
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw BenchError("lz4 \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
    }
  }
}
