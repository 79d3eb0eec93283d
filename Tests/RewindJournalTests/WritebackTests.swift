import Foundation
import RewindTestSupport
import Synchronization
import Testing

@testable import RewindJournal

/// Write-back ahead under `none` (`JournalWriter.writebackStepBytes`): the writer hands whole
/// pages of written frames to the device in steps, off the appending thread, and never after the
/// segment's descriptor is closed. Other policies sync every group and start none.
@Suite struct WritebackTests {
  /// What the writer asked of the file system, in order: write-backs and closes, by descriptor.
  final class RecordingIO: ForwardingFileIO {
    enum Call: Equatable {
      case open(fd: Int32)
      case writeback(fd: Int32, offset: Int64, length: Int64)
      case close(fd: Int32)
    }
    let base: any FileIO = PosixFileIO()
    let calls = Mutex<[Call]>([])

    func open(_ path: String, flags: Int32, mode: UInt32) throws -> Int32 {
      let fd = try base.open(path, flags: flags, mode: mode)
      calls.withLock { $0.append(.open(fd: fd)) }
      return fd
    }

    /// Each write-back is recorded when it ends, 10 ms after it starts (a slow device's queue):
    /// a writer that closed the segment meanwhile shows as a write-back after the close.
    func startWriteback(_ fd: Int32, at offset: Int64, length: Int64) {
      base.startWriteback(fd, at: offset, length: length)
      usleep(10_000)
      calls.withLock { $0.append(.writeback(fd: fd, offset: offset, length: length)) }
    }

    func close(_ fd: Int32) {
      calls.withLock { $0.append(.close(fd: fd)) }
      base.close(fd)
    }
  }

  /// Appends one-record batches of about 300 bytes until `bytes` of records are in, in two
  /// segments of `segmentBytes`; returns what must read back.
  static func fill(_ journal: Journal, bytes: Int) async throws -> [JournalRecord] {
    var random = SeededGenerator(seed: 77)
    var expected: [JournalRecord] = []
    var written = 0
    while written < bytes {
      let payload = random.eventLikePayload(300)
      written += payload.count
      let range = try await journal.append([NewRecord(timestamp: Int64(expected.count), payload: payload)])
      expected.append(JournalRecord(sequence: range.lowerBound, timestamp: Int64(expected.count), payload: payload))
    }
    return expected
  }

  @Test(arguments: [true, false])
  func writebackCoversWrittenPagesInStepsBeforeTheSegmentCloses(mapped: Bool) async throws {
    let dir = TemporaryDirectory("writeback")
    let io = RecordingIO()
    var options = JournalFixtures.options(.none, segmentBytes: 6 << 20)
    options.io = io
    options.mapsActiveSegment = mapped
    options.preallocationBytes = 1 << 20
    let journal = try Journal(directory: dir.path, options: options)
    let expected = try await Self.fill(journal, bytes: 10 << 20)
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path) == expected)

    // Each descriptor's life, from its open to its close (numbers are reused): the write-backs
    // made while it was open, in order. None may come while it is closed (the writer drains its
    // queue before closing a segment).
    var open: [Int32: [(offset: Int64, length: Int64)]] = [:]
    var lives: [[(offset: Int64, length: Int64)]] = []
    for call in io.calls.withLock({ $0 }) {
      switch call {
      case .open(let fd): open[fd] = []
      case .close(let fd): if let steps = open.removeValue(forKey: fd), !steps.isEmpty { lives.append(steps) }
      case .writeback(let fd, let offset, let length):
        #expect(open[fd] != nil, "a write-back on a closed descriptor")
        open[fd, default: []].append((offset, length))
      }
    }
    #expect(open.values.allSatisfy { $0.isEmpty }, "every descriptor written back is closed by close()")
    let segments = JournalFixtures.segments(dir.path)
    try #require(segments.count == 2, "the records fill more than one segment")
    #expect(lives.count == 2, "write-back ahead in both segments")
    for steps in lives {
      // Whole pages, in steps of at least writebackStepBytes, each starting where the last ended.
      for (index, step) in steps.enumerated() {
        #expect(step.offset % Int64(pageSize) == 0 && step.length % Int64(pageSize) == 0)
        #expect(step.length >= JournalWriter.writebackStepBytes)
        if index > 0 { #expect(step.offset == steps[index - 1].offset + steps[index - 1].length) }
      }
    }
    // Never past what was written: the sealed segment's size bounds its steps.
    let sealed = try Files.read(dir.appending(segments[0])).count
    #expect(lives[0].map { $0.offset + $0.length }.max()! <= Int64(sealed))
  }

  @Test(arguments: [Durability.always, .batched])
  func syncedPoliciesStartNoWriteback(durability: Durability) async throws {
    let dir = TemporaryDirectory("writeback-synced")
    let io = RecordingIO()
    var options = JournalFixtures.options(durability, segmentBytes: 6 << 20, frameBytes: 256 << 10)
    options.io = io
    let journal = try Journal(directory: dir.path, options: options)
    // Large appends, so a few syncs cover more than one step.
    var random = SeededGenerator(seed: 78)
    for index in 0..<12 {
      let batch = (0..<1_000).map { _ in NewRecord(timestamp: Int64(index), payload: random.eventLikePayload(200)) }
      try await journal.append(batch)
    }
    journal.close()
    let writebacks = io.calls.withLock { $0 }.filter { if case .writeback = $0 { true } else { false } }
    #expect(writebacks.isEmpty)
  }
}
