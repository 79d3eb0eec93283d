internal import Foundation

/// The ceiling: liblz4's frame decoder, in process, over the corpus journal's own segments read
/// into memory (every segment is a sequence of standard LZ4 frames; `LZ4LibraryCeiling`), without
/// checking the frames' checksums, which replay is judged against, and with them, shown beside
/// it; and the `lz4` tool decompressing the same segments, and those of the
/// same records as the bulk appends wrote them (1,000 per frame), and compressing the corpus
/// segments' decoded bytes again. Best of three, with the files in the page cache, so it measures
/// the codec and not the disk. The tool reads a journal as written several times slower than its
/// library decodes it (a system call to skip each record's batch header), so its rows are shown
/// beside the reads but judge nothing. Only events/s are compared with Rewind's (the same count
/// of events in both): MB/s count decoded frame bytes, which are neither the payload bytes a
/// reader reports nor the compressed bytes an append writes, so they are shown without a ratio.
struct LZ4ToolScenario: Scenario {
  let name = "lz4.tool"
  let summary = "liblz4 and lz4 -dc decoding the journal's segments (the ceiling), and lz4 -1 of their content"

  /// The configuration of `lz4 -dc` of the corpus journal as written.
  static func decompressConfiguration(_ events: Int) -> String { "\(events) events, lz4 -dc" }
  /// The configuration of liblz4's frame decoder over the corpus journal's segments, in memory,
  /// skipping the frames' checksums (raw decompression: the ceiling replay is judged against).
  static func libraryConfiguration(_ events: Int) -> String { "\(events) events, liblz4 in process, checksums skipped" }
  /// The same, checking every block and content checksum (liblz4's default), shown unjudged.
  static func checkedLibraryConfiguration(_ events: Int) -> String {
    "\(events) events, liblz4 in process, checksums checked"
  }

  func run(in context: BenchContext) async throws {
    let segments = try Self.segments(in: context.corpusDirectory)
    let decoded = context.path("segments.decoded")
    _ = FileManager.default.createFile(atPath: decoded, contents: nil)
    for segment in segments { try Self.lz4(["-dc", segment], output: decoded, append: true) }
    let decodedBytes = bytesOnDisk(context.work, prefix: decoded)
    let events = context.corpus.count

    let decompress = try fastest(of: 3) {
      for segment in segments { try Self.lz4(["-dc", segment], output: "/dev/null") }
    }
    let compress = try fastest(of: 3) { try Self.lz4(["-1", "-c", decoded], output: "/dev/null") }
    let configuration = Self.decompressConfiguration(events)
    context.record(
      baseline: "lz4", name, configuration, "events/s", Double(events) / decompress, "ev/s",
      comparedWith: ("journal.read", "\(events) events, cold", "events/s"))
    context.record(name, configuration, "decoded MB/s", Double(decodedBytes) / decompress / 1e6, "MB/s", system: "lz4")
    let inMemory = try LZ4LibraryCeiling.load(segments)
    for checking in [false, true] {
      var libraryBytes = 0
      let library = try fastest(of: 3) {
        libraryBytes = try LZ4LibraryCeiling.decode(inMemory, checkingChecksums: checking)
      }
      guard libraryBytes == decodedBytes else {
        throw BenchError("liblz4 decoded \(libraryBytes) bytes of the segments, lz4 -dc \(decodedBytes)")
      }
      let libraryConfiguration =
        checking ? Self.checkedLibraryConfiguration(events) : Self.libraryConfiguration(events)
      context.record(
        baseline: "lz4", name, libraryConfiguration, "events/s", Double(events) / library, "ev/s",
        comparedWith: ("replay", "\(events) events, cold", "events/s"))
      context.record(
        name, libraryConfiguration, "decoded MB/s", Double(libraryBytes) / library / 1e6, "MB/s", system: "lz4")
    }
    let compressed = "\(events) events, lz4 -1 of the decoded segments"
    context.record(
      baseline: "lz4", name, compressed, "events/s", Double(events) / compress, "ev/s",
      comparedWith: ("journal.append", JournalAppendScenario.configuration("none", 64), "events/s"))
    context.record(name, compressed, "decoded MB/s", Double(decodedBytes) / compress / 1e6, "MB/s", system: "lz4")

    // The bulk appends' journal: the same records, 1,000 per frame.
    let bulk = context.path("journal-none-bulk")
    guard FileManager.default.fileExists(atPath: bulk) else {
      if context.ran("journal.append") {
        throw BenchError("no bulk appends' journal at \(bulk): journal.append ran and did not leave one")
      }
      return
    }
    let bulkSegments = try Self.segments(in: bulk)
    let bulkDecompress = try fastest(of: 3) {
      for segment in bulkSegments { try Self.lz4(["-dc", segment], output: "/dev/null") }
    }
    context.record(
      baseline: "lz4", name, "\(events) events, \(JournalAppendScenario.bulkSize) per frame, lz4 -dc", "events/s",
      Double(events) / bulkDecompress, "ev/s",
      comparedWith: (
        "journal.read", "\(events) events, \(JournalAppendScenario.bulkSize) per frame, cold", "events/s"
      ))
  }

  /// The segment files of the journal in `directory`, in order.
  static func segments(in directory: String) throws -> [String] {
    let segments = try FileManager.default.contentsOfDirectory(atPath: directory)
      .filter { $0.hasSuffix(".lz4") }.sorted().map { directory + "/" + $0 }
    guard !segments.isEmpty else { throw BenchError("no segments in \(directory)") }
    return segments
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
