import Foundation
import RewindJournal
import RewindTestSupport
import Testing

/// A batch header whose checksum holds but whose sequence number does not follow on (no torn
/// write leaves one: a bug or crafted bytes), as helper-217 made them (Dec 7). `tail` took the
/// sequences such a header names for where the damage starts, and `log` stopped at one in the
/// middle of a segment, though the index names intact batches after it.
@Suite struct SequenceBreakCommandTests {
  /// A seeded journal of one segment, several index entries, and its only segment's path.
  static func journal() async throws -> (TemporaryDirectory, String, String) {
    let dir = TemporaryDirectory("cli-sequence-break")
    let path = dir.appending("journal")
    let demo = try await ToolRun.run(
      "rewind", ["demo", path, "--events", "3000", "--seed", "3", "--durability", "none"])
    try #require(demo.status == 0, "\(demo.err)")
    let segments = Files.list(path).filter { $0.hasSuffix(".lz4") }
    try #require(segments.count == 1)
    return (dir, path, path + "/" + segments[0])
  }

  static func sequences(_ jsonLines: String) -> [UInt64] {
    jsonLines.split(separator: "\n").compactMap { line in
      line.firstMatch(of: /^\{"seq":([0-9]+),/).flatMap { UInt64($0.1) }
    }
  }

  /// The first batch written again at the end: `tail` named "sequences 1-3001" and showed no event.
  @Test func aBatchWrittenAgainAtTheEndLeavesTheLastEventsShown() async throws {
    let (dir, path, segment) = try await Self.journal()
    defer { withExtendedLifetime(dir) {} }
    var bytes = try Files.read(segment)
    let frames = segmentFrames(in: bytes)
    let first = try #require(frames.first)
    let end = try #require(frames.last).end
    bytes += bytes[first.offset..<first.end]
    try Files.write(bytes, to: segment)
    let tail = try await ToolRun.run("rewind", ["tail", path, "-n", "3", "--json"])
    #expect(tail.status == 3, "\(tail.err)")
    #expect(Self.sequences(tail.out) == [2998, 2999, 3000], "\(tail.out)")
    let name = URL(fileURLWithPath: segment).lastPathComponent
    #expect(
      tail.err.contains(
        "sequence break: expected a batch starting at 3001 (\(name), byte offset \(end), sequence 3001)"),
      "\(tail.err)")
    let log = try await ToolRun.run("rewind", ["log", path, "--json"])
    #expect(log.status == 3 && Self.sequences(log.out) == Array(1...3000), "\(log.err)")
  }

  /// A batch in the middle renumbered (its header's checksum made to hold): `log` stopped there
  /// (exit 3) though the index names intact batches after it, which `tail` and `show` read.
  @Test func aRenumberedBatchInTheMiddleIsReadPast() async throws {
    let (dir, path, segment) = try await Self.journal()
    defer { withExtendedLifetime(dir) {} }
    var bytes = try Files.read(segment)
    let frames = segmentFrames(in: bytes)
    // A batch of several records: the damage names them all (helper-220).
    let broken = try #require(frames[(frames.count / 2)...].first { $0.header.recordCount > 1 })
    var header = broken.header
    header.firstSequence += 3
    bytes.withUnsafeMutableBytes { header.encode(to: $0.baseAddress! + broken.offset) }
    try Files.write(bytes, to: segment)
    let log = try await ToolRun.run("rewind", ["log", path, "--json"])
    #expect(log.status == 3, "\(log.err)")
    let read = Self.sequences(log.out)
    let resume = try #require(read.first { $0 > broken.header.firstSequence }, "nothing read past the break")
    #expect(read == Array(1..<broken.header.firstSequence) + Array(resume...3000), "\(log.err)")
    #expect(
      log.err.contains(
        "sequence break: expected a batch starting at \(broken.header.firstSequence) (\(URL(fileURLWithPath: segment).lastPathComponent), "
          + "byte offset \(broken.offset)")
        && log.err.contains("not read, reading on from sequence \(resume)"), "\(log.err)")
    // The header's own numbers are not the records': the damage names as many as it counts,
    // from the record expected (it named three past them, helper-219; the first alone, helper-220).
    let verify = try await ToolRun.run("rewind", ["verify", path])
    let sequences = broken.sequences
    let named =
      sequences.count == 1
      ? "sequence \(sequences.lowerBound)" : "sequences \(sequences.lowerBound)-\(sequences.upperBound)"
    #expect(
      verify.status == 1 && verify.out.contains("byte offset \(broken.offset), \(named): sequence break"),
      "\(verify.out)")
    let export = try await ToolRun.run("rewind", ["export", path, "--jsonl"])
    #expect(export.status == 3 && export.out == log.out, "\(export.err)")
  }
}
