import RewindTestSupport
import Testing

@testable import RewindJournal

/// How much a segment file's read-ahead window reads: a cursor positioned by the index reads about
/// one index interval, not a whole window of 1 MiB (and another for the segment header), and a
/// scan reads the segment in few system calls, its window doubling from `firstReadAhead` to 1 MiB.
@Suite struct ReadAheadTests {
  /// Counts the reads of segment files (not of the index or the manifest), and their bytes.
  final class SegmentReadCounter: ForwardingFileIO {
    let base: any FileIO = PosixFileIO()
    private let counts = Locked((reads: 0, bytes: 0))
    var reads: Int { counts.withLock { $0.reads } }
    var bytes: Int { counts.withLock { $0.bytes } }

    func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws -> Int {
      let n = try base.pread(fd, into: buffer, at: offset, path: path)
      if path.hasSuffix(Layout.segmentSuffix) { counts.withLock { $0 = ($0.reads + 1, $0.bytes + n) } }
      return n
    }
  }

  /// One segment of about 4 MiB of incompressible records (1,000 of 4,000 bytes, one a frame),
  /// indexed every 64 KiB (the default).
  static func write(_ directory: String) async throws -> [JournalRecord] {
    var options = JournalFixtures.options(.none, segmentBytes: 64 << 20, frameBytes: 1 << 10, indexBytes: 64 << 10)
    options.preallocationBytes = 0
    let journal = try Journal(directory: directory, options: options)
    var random = SeededGenerator(seed: 236)
    var records: [JournalRecord] = []
    for i in 0..<1_000 {
      let payload = (0..<4_000).map { _ in UInt8.random(in: 0...255, using: &random) }
      let sequence = try await journal.append(NewRecord(timestamp: Int64(i), payload: payload))
      records.append(JournalRecord(sequence: sequence, timestamp: Int64(i), payload: payload))
    }
    journal.close()
    try #require(JournalFixtures.segments(directory).count == 1)
    return records
  }

  @Test func aCursorPositionedByTheIndexReadsAboutOneInterval() async throws {
    let dir = TemporaryDirectory("read-ahead-seek")
    let records = try await Self.write(dir.path)
    let io = SegmentReadCounter()
    let reader = try JournalReader(directory: dir.path, io: io)
    var random = SeededGenerator(seed: 237)
    for _ in 0..<20 {
      let target = UInt64.random(in: 1...UInt64(records.count), using: &random)
      let before = io.bytes
      #expect(try reader.records(from: target).next() == records[Int(target - 1)])
      // The segment header's window and the one at the entry (64 KiB each), and perhaps one more
      // refill of twice that; 2 MiB when every window read 1 MiB.
      let read = io.bytes - before
      #expect(read <= 256 << 10, "from \(target): \(read) bytes read")
    }
  }

  @Test func aScanReadsTheSegmentInWindowsThatGrow() async throws {
    let dir = TemporaryDirectory("read-ahead-scan")
    let records = try await Self.write(dir.path)
    let size = Files.size(dir.appending(try #require(JournalFixtures.segments(dir.path).first)))
    let io = SegmentReadCounter()
    #expect(try JournalFixtures.readAll(JournalReader(directory: dir.path, io: io).records(from: 1)) == records)
    // 64 KiB, 128, 256 and 512, then 1 MiB a read: about a dozen reads for 4 MiB (64 with a
    // window that stayed at its first size), each byte read about once.
    #expect(io.reads <= 12, "\(io.reads) reads of a segment of \(size) bytes")
    #expect(io.bytes <= size + (1 << 20), "\(io.bytes) bytes read of a segment of \(size)")
  }
}
