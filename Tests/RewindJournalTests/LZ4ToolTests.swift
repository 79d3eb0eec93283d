import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Contract 8: every segment is a valid stream of LZ4 frames that the standard `lz4` tool checks
/// and decodes, and what it decodes is exactly the records' content.
@Suite struct LZ4ToolTests {
  static let tool = "/usr/bin/lz4"

  /// Runs the `lz4` tool; returns its exit status and standard output.
  static func lz4(_ arguments: [String]) async throws -> (status: Int32, output: [UInt8], errors: String) {
    guard FileManager.default.isExecutableFile(atPath: tool) else {
      Issue.record("the lz4 tool is missing at \(tool): install it (apt-get install lz4); CI does")
      return (-1, [], "")
    }
    // On a thread of its own: no thread of the cooperative pool waits for the tool.
    return try await onOwnThread {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: tool)
      process.arguments = arguments
      let output = Pipe()
      let errors = Pipe()
      process.standardOutput = output
      process.standardError = errors
      try process.run()
      let watchdog = ChildWatchdog(process)
      // Read the output before waiting, so a large output cannot block the tool (its messages are short).
      let data = PipeReads.toEnd(output.fileHandleForReading)
      process.waitUntilExit()
      try watchdog.end(waitingFor: "lz4 \(arguments.joined(separator: " ")) to exit")
      let errorText = PipeReads.toEnd(errors.fileHandleForReading)
      return (process.terminationStatus, Array(data), String(decoding: errorText, as: UTF8.self))
    }
  }

  /// Checks every segment of `directory` with the tool against `records` (all the journal holds).
  static func checkSegments(_ directory: String, records: [JournalRecord]) async throws {
    let names = JournalFixtures.segments(directory)
    #expect(!names.isEmpty)
    for (position, name) in names.enumerated() {
      let path = directory + "/" + name
      let first = try #require(Layout.firstSequence(ofSegmentNamed: name))
      let end = position + 1 < names.count ? Layout.firstSequence(ofSegmentNamed: names[position + 1])! : UInt64.max
      let inSegment = records.filter { $0.sequence >= first && $0.sequence < end }

      let test = try await lz4(["-t", path])
      #expect(test.status == 0, "lz4 -t \(name): \(test.errors)")
      let decoded = try await lz4(["-dc", path])
      #expect(decoded.status == 0, "lz4 -dc \(name): \(decoded.errors)")
      #expect(decoded.output.count == inSegment.reduce(0) { $0 + 20 + $1.payload.count }, "\(name)")
      // Payloads appear in order, each behind its 20-byte record header.
      var position = 0
      for record in inSegment {
        let header = JournalFixtures.encoded(record).prefix(20)
        let endOfRecord = position + 20 + record.payload.count
        guard endOfRecord <= decoded.output.count else {
          Issue.record("\(name): decoded output ends before record \(record.sequence)")
          break
        }
        #expect(Array(decoded.output[position..<(position + 20)]) == Array(header), "\(name) record \(record.sequence)")
        #expect(
          Array(decoded.output[(position + 20)..<endOfRecord]) == record.payload, "\(name) record \(record.sequence)")
        position = endOfRecord
      }
      #expect(decoded.output == inSegment.flatMap(JournalFixtures.encoded), "\(name)")
    }
  }

  @Test func segmentsAcrossRollsDecodeWithTheTool() async throws {
    let dir = TemporaryDirectory()
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(segmentBytes: 8 << 10))
    let records = try await JournalFixtures.write(journal, batches: 200, maxRecords: 8, maxPayload: 200, seed: 11)
    journal.close()
    #expect(JournalFixtures.segments(dir.path).count > 3, "the test should cross segment rolls")
    try await Self.checkSegments(dir.path, records: records)
  }

  @Test func framesLargerThanOneLZ4BlockDecodeWithTheTool() async throws {
    // Frames over 64 KiB hold several independent blocks; random payloads do not compress.
    let dir = TemporaryDirectory()
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(frameBytes: 1 << 20))
    var random = SeededGenerator(seed: 12)
    var records: [JournalRecord] = []
    for size in [70_000, 200_000, 1, 0, 150_000] {
      let batch = [
        NewRecord(timestamp: Int64(size), payload: random.bytes(size)),
        NewRecord(timestamp: Int64(size) + 1, payload: random.eventLikePayload(size / 2)),
      ]
      let range = try await journal.append(batch)
      for (sequence, record) in zip(range, batch) {
        records.append(JournalRecord(sequence: sequence, timestamp: record.timestamp, payload: record.payload))
      }
    }
    journal.close()
    try await Self.checkSegments(dir.path, records: records)
  }

  /// Frames of several independent blocks (FLG 0x7C), compressed by one thread or several,
  /// back to back in one file as in a segment: the tool checks them and decodes their contents.
  @Test func framesOfIndependentBlocksDecodeWithTheTool() async throws {
    let dir = TemporaryDirectory()
    var random = SeededGenerator(seed: 14)
    var text: [UInt8] = []
    while text.count < 400_000 { text += random.eventLikePayload(300) }
    let contents = [Array(text.prefix(65_537)), Array(text.prefix(270_000)), random.bytes(200_000), text]
    for participants in [1, 2, 4] {
      let encoder = LZ4FrameEncoder(compressionLevel: 0, participants: participants)
      var file: [UInt8] = []
      for content in contents {
        let start = file.count
        _ = try content.withUnsafeBytes { try encoder.compress($0, appendingTo: &file) }
        #expect(file[start + 4] == 0x7C, "FLG: independent blocks, block and content checksums, content size")
      }
      let path = dir.appending("frames-\(participants).lz4")
      try Data(file).write(to: URL(fileURLWithPath: path))
      let test = try await Self.lz4(["-t", path])
      #expect(test.status == 0, "lz4 -t: \(test.errors)")
      let decoded = try await Self.lz4(["-dc", path])
      #expect(decoded.status == 0, "lz4 -dc: \(decoded.errors)")
      #expect(decoded.output == contents.flatMap { $0 }, "\(participants) participants")
    }
  }

  @Test func framesOfOneFullBlockDecodeWithTheTool() async throws {
    // Content up to 64 KiB is framed by the encoder itself as one block (compressed, or stored
    // raw when it would not shrink); one byte more goes through liblz4's frame API. Each append
    // is one record of 20 header bytes, so these payloads put the content on both sides of it.
    let dir = TemporaryDirectory()
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(frameBytes: 1 << 20))
    var random = SeededGenerator(seed: 13)
    var records: [JournalRecord] = []
    func compressible(_ count: Int) -> [UInt8] {
      var payload: [UInt8] = []
      while payload.count < count { payload += random.eventLikePayload(200) }
      return Array(payload.prefix(count))
    }
    let block = 64 << 10
    let payloads: [[UInt8]] = [
      compressible(10_000), random.bytes(40_000), compressible(block - 20), random.bytes(block - 20),
      compressible(block - 19), random.bytes(block - 19), compressible(2_100),
    ]
    for (index, payload) in payloads.enumerated() {
      let record = NewRecord(timestamp: Int64(index), payload: payload)
      let range = try await journal.append([record])
      records.append(JournalRecord(sequence: range.lowerBound, timestamp: record.timestamp, payload: payload))
    }
    journal.close()
    try await Self.checkSegments(dir.path, records: records)
    #expect(try JournalFixtures.readAll(dir.path) == records)
  }

  @Test func anEmptyJournalsSegmentIsValidForTheTool() async throws {
    let dir = TemporaryDirectory()
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    journal.close()
    try await Self.checkSegments(dir.path, records: [])
  }

  @Test func segmentsWrittenByConcurrentGroupCommitDecodeWithTheTool() async throws {
    let dir = TemporaryDirectory()
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(.batched, segmentBytes: 16 << 10))
    try await withThrowingTaskGroup(of: Void.self) { group in
      for task in 0..<16 {
        group.addTask {
          for index in 0..<20 {
            let payload = Array("task \(task) batch \(index)".utf8)
            try await journal.append([NewRecord(timestamp: Int64(index), payload: payload)])
          }
        }
      }
      try await group.waitForAll()
    }
    journal.close()
    let records = try JournalFixtures.readAll(dir.path)
    #expect(records.count == 16 * 20)
    try await Self.checkSegments(dir.path, records: records)
  }
}
