import Foundation
import RewindTestSupport
import Synchronization
import Testing

@testable import RewindJournal

/// A value shared with escaping closures.
private final class Shared<Value: Sendable>: Sendable {
  private let value: Mutex<Value>
  init(_ value: Value) { self.value = Mutex(value) }
  func withLock<R>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
}

/// The writer's append paths: the fast path (an append that finds nothing queued is written as a
/// group of one without the queue), the queue behind it, and buffers reused from frame to frame
/// without being cleared.
@Suite struct AppendPathTests {
  static func record(_ tag: Int, size: Int) -> NewRecord {
    var random = SeededGenerator(seed: UInt64(tag))
    return NewRecord(timestamp: Int64(tag), payload: random.eventLikePayload(size))
  }

  /// An append queued without being written (`enqueue` without `lead`) is written before a later
  /// `append`, which must not take the fast path past it; completions come in order. Every other
  /// round appends through `append(_:)` of one record, which must queue behind it the same way.
  @Test func anAppendDoesNotOvertakeOneQueuedBeforeIt() async throws {
    let dir = TemporaryDirectory("append-order")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    let order = Shared<[Int]>([])
    var expected: [NewRecord] = []
    for round in 0..<20 {
      let queued = [Self.record(2 * round, size: 30), Self.record(2 * round, size: 5)]
      let queuedRange = Shared<ClosedRange<UInt64>?>(nil)
      journal.enqueue(queued, expectedFirst: nil) { outcome in
        order.withLock { $0.append(2 * round) }
        queuedRange.withLock { $0 = try? outcome.get() }
      }
      let direct = [Self.record(2 * round + 1, size: 60)]
      let range: ClosedRange<UInt64>
      if round.isMultiple(of: 2) {
        range = try await journal.append(direct)
      } else {
        let sequence = try await journal.append(direct[0])
        range = sequence...sequence
      }
      order.withLock { $0.append(2 * round + 1) }
      let before = try #require(queuedRange.withLock { $0 }, "the queued append is written first")
      #expect(before.upperBound + 1 == range.lowerBound)
      expected += queued + direct
    }
    #expect(order.withLock { $0 } == Array(0..<40))
    #expect(journal.lastSequence == UInt64(expected.count))
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == expected.map(\.payload))
  }

  /// Under `none` an append from one task is written on its thread without suspending
  /// (`JournalWriter.appendAtOnce`); one the writer refuses still fails with what and why, and
  /// writes nothing: no records, a record or a batch over the limits, a closed journal.
  @Test func anAppendTheWriterRefusesSaysWhy() async throws {
    let dir = TemporaryDirectory("append-refused")
    var options = JournalFixtures.options()
    options.limits = JournalLimits(maxRecordBytes: 100, maxBatchBytes: 300)
    let journal = try Journal(directory: dir.path, options: options)
    func record(_ tag: UInt8, size: Int) -> NewRecord {
      NewRecord(timestamp: Int64(tag), payload: [UInt8](repeating: tag, count: size))
    }
    let fits = record(1, size: 100)
    try await journal.append([fits])
    func refusal(_ records: [NewRecord]) async -> JournalError? {
      do {
        try await journal.append(records)
        return nil
      } catch {
        return error as? JournalError
      }
    }
    #expect(await refusal([])?.code == .invalidArgument)
    let tooLarge = await refusal([record(2, size: 101)])
    #expect(tooLarge?.code == .limitExceeded)
    #expect(tooLarge?.message.contains("101 bytes") == true, "\(String(describing: tooLarge))")
    let tooMany = await refusal([record(3, size: 100), record(4, size: 100), record(5, size: 100)])
    #expect(tooMany?.code == .limitExceeded)
    #expect(tooMany?.message.contains("a batch of") == true, "\(String(describing: tooMany))")
    // The same refusals through `append(_:)` of one record, which has no array to check.
    func refusal(of record: NewRecord) async -> JournalError? {
      do {
        try await journal.append(record)
        return nil
      } catch {
        return error as? JournalError
      }
    }
    let oneTooLarge = await refusal(of: record(6, size: 101))
    #expect(oneTooLarge?.code == .limitExceeded)
    #expect(oneTooLarge?.message.contains("101 bytes") == true, "\(String(describing: oneTooLarge))")
    #expect(journal.lastSequence == 1)
    journal.close()
    #expect(await refusal([fits])?.code == .closed)
    #expect(await refusal(of: fits)?.code == .closed)
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == [fits.payload])
  }

  /// `append(_:)` of one record returns the sequence number `append([record])` would, on the
  /// fast path and under the durable policies (the writer thread's path), and its records read
  /// back in order among arrays of several.
  @Test func aOneRecordAppendIsABatchOfOne() async throws {
    for durability in [Durability.none, .always, .batched(maxDelay: .milliseconds(1))] {
      let dir = TemporaryDirectory("append-one")
      let journal = try Journal(directory: dir.path, options: JournalFixtures.options(durability))
      var expected: [NewRecord] = []
      for round in 0..<12 {
        let one = Self.record(round, size: 10 + round * 40)
        #expect(try await journal.append(one) == UInt64(expected.count + 1), "\(durability)")
        expected.append(one)
        let pair = [Self.record(100 + round, size: 7), Self.record(200 + round, size: 300)]
        let range = try await journal.append(pair)
        #expect(range == UInt64(expected.count + 1)...UInt64(expected.count + 2), "\(durability)")
        expected += pair
      }
      journal.close()
      let read = try JournalFixtures.readAll(dir.path)
      #expect(read.map(\.payload) == expected.map(\.payload), "\(durability)")
      #expect(read.map(\.timestamp) == expected.map(\.timestamp), "\(durability)")
    }
  }

  /// `append(_:)` of one record on the fast path (under `none`, from one task) at the limits'
  /// edge (a record of `maxRecordBytes` is a batch of exactly `maxBatchBytes`), through segment
  /// rolls, and through a seal that fails: it rolls like `append([record])`, the failed seal is
  /// `.durabilityLost` with nothing of it acknowledged, and every one-record append after it is
  /// refused as `.stopped`, by the fast path's check as by the queue's.
  @Test func aOneRecordAppendRollsAndStopsAfterAFailedSeal() async throws {
    let dir = TemporaryDirectory("append-one-roll")
    let faults = FaultInjectingFileIO()
    var options = JournalFixtures.options(segmentBytes: 4 << 10)
    options.io = faults
    let size = 1_000
    options.limits = JournalLimits(maxRecordBytes: size, maxBatchBytes: size + Layout.recordHeaderSize)
    let journal = try Journal(directory: dir.path, options: options)
    defer { journal.close() }
    func record(_ tag: Int) -> NewRecord { FaultInjectionTests.kilobyteRecords(tag)[0] }
    #expect(record(0).payload.count == size)
    var acknowledged: [NewRecord] = []
    for tag in 0..<12 {
      #expect(try await journal.append(record(tag)) == UInt64(tag + 1))
      acknowledged.append(record(tag))
    }
    let segments = JournalFixtures.segments(dir.path).count
    #expect(segments >= 3, "12 records of 1 KB in segments of 4 KiB: \(segments) segments")
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == acknowledged.map(\.payload))
    // The append that seals the active segment fails there: its seal cannot be synced.
    faults.arm(.syncError(EIO))
    var sealFailure: JournalError?
    for tag in 12..<20 where sealFailure == nil {
      do {
        try await journal.append(record(tag))
        acknowledged.append(record(tag))
      } catch let error as JournalError {
        sealFailure = error
      }
    }
    #expect(sealFailure?.code == .durabilityLost, "\(String(describing: sealFailure))")
    #expect(journal.failure?.code == .durabilityLost)
    #expect(journal.lastSequence == UInt64(acknowledged.count))
    faults.disarm()
    let next = await #expect(throws: JournalError.self) { try await journal.append(record(30)) }
    #expect(next?.code == .stopped, "\(String(describing: next))")
    #expect(journal.lastSequence == UInt64(acknowledged.count))
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == acknowledged.map(\.payload))
  }

  /// An append made after `close()` fails with `.closed`, as the close promises, also when a
  /// failure had stopped the journal before (it got `.stopped` then, as it did after the close
  /// too): on every path (`append` of an array and of one record, `appendAndWait`, `enqueue`).
  /// The message names the failure, which `failure` still holds.
  @Test func anAppendAfterCloseIsClosedAlsoOnAStoppedJournal() async throws {
    let dir = TemporaryDirectory("append-after-stop-and-close")
    let faults = FaultInjectingFileIO()
    var options = JournalFixtures.options(.always)
    options.io = faults
    let journal = try Journal(directory: dir.path, options: options)
    #expect(try await journal.append([Self.record(1, size: 20)]) == 1...1)
    faults.arm(.syncError(EIO))
    let lost = await #expect(throws: JournalError.self) { try await journal.append([Self.record(2, size: 20)]) }
    #expect(lost?.code == .durabilityLost, "\(String(describing: lost))")
    faults.disarm()
    func refusals() async -> [JournalError?] {
      var errors: [JournalError?] = []
      errors.append(await #expect(throws: JournalError.self) { try await journal.append([Self.record(3, size: 20)]) })
      errors.append(await #expect(throws: JournalError.self) { try await journal.append(Self.record(4, size: 20)) })
      errors.append(
        await #expect(throws: JournalError.self) {
          try await onOwnThread { try journal.appendAndWait([Self.record(5, size: 20)]) }
        })
      let enqueued = Locked<JournalError?>(nil)
      journal.enqueue([Self.record(6, size: 20)], expectedFirst: nil) { outcome in
        if case .failure(let error) = outcome { enqueued.withLock { $0 = error } }
      }
      journal.lead()
      errors.append(enqueued.withLock { $0 })
      return errors
    }
    let beforeClose = await refusals()
    #expect(beforeClose.map { $0?.code } == Array(repeating: .stopped, count: 4), "\(beforeClose)")
    journal.close()
    let afterClose = await refusals()
    #expect(afterClose.map { $0?.code } == Array(repeating: .closed, count: 4), "\(afterClose)")
    for error in afterClose {
      #expect(
        error?.message.contains("stopped accepting appends after durabilityLost") == true,
        "\(String(describing: error))")
    }
    #expect(journal.failure?.code == .durabilityLost)
    #expect(try JournalFixtures.readAll(dir.path).first?.payload == Self.record(1, size: 20).payload)
  }

  /// The writer rolls a segment when the next group's decoded bytes would take it past
  /// `segmentTargetBytes`, so content that does not compress (stored raw) takes a segment past
  /// its target by the group's framing, as `JournalOptions.segmentTargetBytes` and FORMAT.md say,
  /// and by no more: 75 bytes a frame (batch header 52, LZ4 frame header 15, end mark and content
  /// checksum 8) and 8 per 64 KiB block (its size and checksum). Appends that fill a segment's
  /// decoded count exactly end it past its target (the record headers compress a little, so by
  /// less than 83 bytes); appends of random sizes end none further.
  @Test func incompressibleContentTakesASegmentPastItsTargetByItsFramingAtMost() async throws {
    let framing = Layout.batchHeaderSize + 15 + 8 + 8
    #expect(framing == 83, "one frame of one block")
    let target = 16 << 10
    var random = SeededGenerator(seed: 0x5E6)
    func incompressible(_ payloadBytes: Int) -> [NewRecord] {
      [NewRecord(timestamp: 0, payload: random.bytes(payloadBytes))]
    }
    func sealedSizes(_ dir: TemporaryDirectory) throws -> [Int] {
      try JournalFixtures.segments(dir.path).sorted().map {
        try (FileManager.default.attributesOfItem(atPath: dir.appending($0))[.size] as? Int) ?? -1
      }
    }
    // Frames of about 1 KB (written with `pwrite` and nothing ahead, so that the segment's size
    // is its end), then one whose decoded bytes end the segment's decoded count at the target:
    // its frame, a little larger, takes the segment past it.
    let exact = TemporaryDirectory("segment-target-exact")
    var options = JournalFixtures.options(segmentBytes: target)
    options.mapsActiveSegment = false
    options.preallocationBytes = 0
    let journal = try Journal(directory: exact.path, options: options)
    var end = Layout.segmentHeaderSize
    while end + 2 * (1_000 + Layout.recordHeaderSize) <= target {
      try await journal.append(incompressible(1_000))
      end = try sealedSizes(exact)[0]
    }
    try await journal.append(incompressible(target - end - Layout.recordHeaderSize))
    let filled = try sealedSizes(exact)
    try await journal.append(incompressible(10))
    journal.close()
    let sizes = try sealedSizes(exact)
    #expect(sizes.count == 2 && filled == [sizes[0]], "\(filled), then \(sizes)")
    #expect(sizes[0] > target && sizes[0] <= target + framing, "\(sizes)")
    // Random sizes, one append a group: no segment ends further past its target than a frame's framing.
    let swept = TemporaryDirectory("segment-target-sweep")
    let sweep = try Journal(directory: swept.path, options: JournalFixtures.options(segmentBytes: target))
    for _ in 0..<400 { try await sweep.append(incompressible(Int.random(in: 0...3_000, using: &random))) }
    sweep.close()
    let sweptSizes = try sealedSizes(swept)
    #expect(sweptSizes.count > 20, "\(sweptSizes)")
    #expect(sweptSizes.allSatisfy { $0 <= target + framing }, "\(sweptSizes)")
  }

  /// `append(_:)` of one record writes the bytes `append([record])` writes: the same frames,
  /// stored raw and compressed (records of a few bytes to 70 KB), so FORMAT.md and the golden
  /// journals hold for it as they do for arrays.
  @Test func aOneRecordAppendWritesTheBytesOfAnArrayOfOne() async throws {
    let sizes = [5, 300, 2_048, 70_000, 1, 9_000, 40]
    var segmentBytes: [[[UInt8]]] = []
    for single in [false, true] {
      let dir = TemporaryDirectory("append-one-bytes")
      var options = JournalFixtures.options(frameBytes: 1 << 20)
      options.newJournalID = JournalID(bytes: (0..<16).map { UInt8($0) })
      let journal = try Journal(directory: dir.path, options: options)
      for (tag, size) in sizes.enumerated() {
        let record = Self.record(tag, size: size)
        if single { try await journal.append(record) } else { try await journal.append([record]) }
      }
      journal.close()
      segmentBytes.append(
        try JournalFixtures.segments(dir.path).sorted().map {
          try #require(FileManager.default.contents(atPath: dir.appending($0))).map { $0 }
        })
    }
    #expect(segmentBytes[0].count == 1)
    let (arrays, singles) = (segmentBytes[0].joined(), segmentBytes[1].joined())
    // Compared as a whole, and located where they differ (printing the segments would not help).
    let firstDifference = zip(arrays, singles).enumerated().first { $0.element.0 != $0.element.1 }?.offset
    #expect(
      arrays.count == singles.count && firstDifference == nil,
      "\(arrays.count) and \(singles.count) bytes, first differing at \(firstDifference.map(String.init) ?? "none")")
  }

  /// Frames of shrinking and growing sizes, one append each (small frames built by hand, large
  /// ones by liblz4, into the same reused buffers): each reads back exactly, and the segment
  /// holds the frames and nothing after them (no stale bytes of a longer earlier frame).
  @Test func framesOfChangingSizesLeaveNoStaleBytes() async throws {
    let dir = TemporaryDirectory("append-sizes")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(frameBytes: 1 << 20))
    let sizes = [5_000, 1_800, 40, 0, 2_020, 70_000, 1, 300, 2_048, 3]
    var expected: [NewRecord] = []
    for (tag, size) in sizes.enumerated() {
      let record = Self.record(tag, size: size)
      let range = try await journal.append([record])
      #expect(range == UInt64(expected.count + 1)...UInt64(expected.count + 1))
      expected.append(record)
    }
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == expected.map(\.payload))
    let segment = try #require(JournalFixtures.segments(dir.path).last)
    let bytes = try #require(FileManager.default.contents(atPath: dir.appending(segment))).map { $0 }
    let frames = try JournalFixtures.frames(of: bytes)
    #expect(frames.count == sizes.count)
    #expect(frames.last?.end == bytes.count)
    let reopened = try Journal(directory: dir.path, options: JournalFixtures.options())
    #expect(reopened.recovery.isClean)
    reopened.close()
  }

  /// A failed write on the fast path is undone and acknowledged as failed, and the queue behind
  /// it is still served: appends from many tasks while writes fail now and then all end either
  /// acknowledged (and then present, once, in order) or failed (and then absent). Both kinds of
  /// append see writes fail.
  @Test func failedWritesAmongConcurrentAppendsLeaveOnlyTheAcknowledged() async throws {
    let dir = TemporaryDirectory("append-faults")
    let faults = FaultInjectingFileIO()
    var options = JournalFixtures.options()
    options.io = faults
    // Written with `pwrite`: groups this small are otherwise stored through the mapping, where
    // no write fails and none of the faults below fires.
    options.mapsActiveSegment = false
    let journal = try Journal(directory: dir.path, options: options)
    let acknowledged = Shared<[UInt64: [UInt8]]>([:])
    /// Failed appends of arrays, and of one record.
    let failed = Shared<[Int]>([0, 0])
    try await withThrowingTaskGroup(of: Void.self) { group in
      for task in 0..<4 {
        group.addTask {
          for index in 0..<50 {
            let tag = task * 1_000 + index
            if index % 10 == 3 { faults.arm(.writeError(EIO), pathContains: ".lz4") }
            let record = Self.record(tag, size: 20 + index)
            // Half the tasks append through `append(_:)` of one record: its failures must be
            // undone and reported the same way.
            let first =
              task.isMultiple(of: 2)
              ? try? await journal.append([record]).lowerBound : try? await journal.append(record)
            if let first {
              acknowledged.withLock { $0[first] = record.payload }
            } else {
              failed.withLock { $0[task % 2] += 1 }
            }
          }
        }
      }
      try await group.waitForAll()
    }
    faults.disarm()
    #expect(journal.failure == nil)
    let failures = failed.withLock { $0 }
    #expect(failures[0] > 0 && failures[1] > 0, "appends of arrays and of one record failed: \(failures)")
    let written = acknowledged.withLock { $0 }
    #expect(journal.lastSequence == UInt64(written.count), "sequence numbers have no gaps")
    journal.close()
    let read = try JournalFixtures.readAll(dir.path)
    #expect(read.map(\.sequence) == Array(1...UInt64(written.count)))
    #expect(read.map(\.payload) == read.map { written[$0.sequence] ?? [] })
  }

  /// The encoder writing into a buffer at an offset, with other bytes before and after, makes
  /// the same frame as appending to an empty buffer, and leaves the bytes before it alone.
  @Test(arguments: [1, 200, 2_048, 2_049, 70_000])
  func compressingAtAnOffsetMakesTheSameFrame(size: Int) throws {
    let content = (0..<size).map { UInt8(truncatingIfNeeded: ($0 * 31) % 13) }
    let encoder = LZ4FrameEncoder()
    var fresh: [UInt8] = []
    let freshLength = try content.withUnsafeBytes { try encoder.compress($0, appendingTo: &fresh) }
    var reused = [UInt8](repeating: 0xAB, count: 7 + size + 500)
    let length = try content.withUnsafeBytes { try encoder.compress($0, into: &reused, at: 7) }
    #expect(length == freshLength)
    #expect(Array(reused[7..<(7 + length)]) == fresh)
    #expect(reused[..<7].allSatisfy { $0 == 0xAB })
  }

  /// A batch header written through a pointer is byte for byte the one `encode(into:)` writes.
  @Test func batchHeaderEncodingsAgree() throws {
    let header = BatchHeader(
      firstSequence: 0x0102_0304_0506_0708, recordCount: 17, contentLength: 4_321, frameLength: 987,
      minTimestamp: -5, maxTimestamp: 1_767_225_600_000_000_000, frameChecksum: 0xDEAD_BEEF)
    var writer = ByteWriter()
    header.encode(into: &writer)
    var direct = [UInt8](repeating: 0, count: Layout.batchHeaderSize)
    direct.withUnsafeMutableBytes { header.encode(to: $0.baseAddress!) }
    #expect(direct == writer.bytes)
    #expect(try BatchHeader.decode(direct[...], limits: JournalLimits()).get() == header)
  }

  /// `Journal.append` checks no cancellation (its documentation says so): an append from a task
  /// cancelled before it appends is made and acknowledged, whole, under every policy.
  @Test(arguments: [Durability.none, .batched, .always])
  func anAppendFromACancelledTaskIsMade(durability: Durability) async throws {
    let dir = TemporaryDirectory("cancelled-append")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(durability))
    let records = [NewRecord(timestamp: 1, payload: [1]), NewRecord(timestamp: 2, payload: [2])]
    let task = Task { () async throws -> (UInt64, ClosedRange<UInt64>) in
      withUnsafeCurrentTask { $0?.cancel() }
      let one = try await journal.append(NewRecord(timestamp: 0, payload: [0]))
      return (one, try await journal.append(records))
    }
    let (one, many) = try await task.value
    #expect(task.isCancelled)
    #expect(one == 1 && many == 2...3)
    journal.close()
    #expect(try JournalFixtures.readAll(dir.path).map(\.payload) == [[0], [1], [2]])
  }
}
