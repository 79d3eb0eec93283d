import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// What the damage tests share: writing a known journal, finding its frames, cutting and
/// flipping bytes, and reading everything back.
enum JournalFixtures {
  /// Options for tests: no fsync unless asked, small frames and segments.
  static func options(
    _ durability: Durability = .none, segmentBytes: Int = 64 << 20, frameBytes: Int = 4 << 10, indexBytes: Int = 2 << 10
  ) -> JournalOptions {
    var options = JournalOptions(durability: durability)
    options.segmentTargetBytes = segmentBytes
    options.frameTargetBytes = frameBytes
    options.indexIntervalBytes = indexBytes
    return options
  }

  /// A closed journal in segments of 2 KiB, of `batches` batches of `seed`'s records (`write`):
  /// its directory, the options it was written with, and the records.
  static func smallSegments(_ name: String, batches: Int, seed: UInt64) async throws -> (
    TemporaryDirectory, JournalOptions, [JournalRecord]
  ) {
    let dir = TemporaryDirectory(name)
    let options = Self.options(segmentBytes: 2 << 10)
    let journal = try Journal(directory: dir.path, options: options)
    let records = try await write(journal, batches: batches, seed: seed)
    journal.close()
    return (dir, options, records)
  }

  /// Appends `batches` batches of 1...`maxRecords` records with small payloads, one at a time
  /// (so each batch is its own frame). Returns the records as they must read back.
  static func write(
    _ journal: Journal, batches: Int, maxRecords: Int = 3, maxPayload: Int = 40, seed: UInt64,
    after: [JournalRecord] = []
  ) async throws -> [JournalRecord] {
    var random = SeededGenerator(seed: seed)
    var expected = after
    var clock: Int64 = (after.last?.timestamp ?? 1_700_000_000_000_000_000)
    for _ in 0..<batches {
      let count = Int.random(in: 1...maxRecords, using: &random)
      var batch: [NewRecord] = []
      for _ in 0..<count {
        clock += Int64.random(in: 0...3_000_000, using: &random)
        batch.append(
          NewRecord(timestamp: clock, payload: random.eventLikePayload(Int.random(in: 0...maxPayload, using: &random))))
      }
      let range = try await journal.append(batch)
      #expect(range.lowerBound == UInt64(expected.count + 1), "seed \(seed)")
      for (sequence, record) in zip(range, batch) {
        expected.append(JournalRecord(sequence: sequence, timestamp: record.timestamp, payload: record.payload))
      }
    }
    return expected
  }

  /// Segment file names of a journal directory, in order.
  static func segments(_ directory: String) -> [String] {
    Files.list(directory).filter { Layout.firstSequence(ofSegmentNamed: $0) != nil }
  }

  /// A batch found by walking a segment's bytes.
  struct Frame {
    var offset: Int
    var header: BatchHeader
    var end: Int { offset + Int(header.totalLength) }
  }

  /// The length of a segment's bytes up to the end of its last whole frame: without the zeros a
  /// live writer preallocates after it (`JournalOptions.preallocationBytes`).
  static func usedLength(_ bytes: [UInt8]) -> Int {
    var offset = Layout.segmentHeaderSize
    while offset < bytes.count,
      case .success(let header) = BatchHeader.decode(bytes[offset...], limits: JournalLimits()),
      offset + Int(header.totalLength) <= bytes.count
    {
      offset += Int(header.totalLength)
    }
    return min(offset, bytes.count)
  }

  /// Walks the batches of a whole, undamaged segment.
  static func frames(of bytes: [UInt8]) throws -> [Frame] {
    var frames: [Frame] = []
    var offset = Layout.segmentHeaderSize
    while offset < bytes.count {
      let header = try BatchHeader.decode(bytes[offset...], limits: JournalLimits()).get()
      frames.append(Frame(offset: offset, header: header))
      offset += Int(header.totalLength)
    }
    #expect(offset == bytes.count, "the segment should end on a frame boundary")
    return frames
  }

  static func readAll(_ cursor: JournalCursor) throws -> [JournalRecord] {
    var out: [JournalRecord] = []
    while let record = try cursor.next() { out.append(record) }
    return out
  }

  static func readAll(_ directory: String) throws -> [JournalRecord] {
    try readAll(JournalReader(directory: directory).records())
  }

  /// Cuts a file at `length` bytes.
  static func truncate(_ path: String, at length: Int) throws {
    guard Glibc.truncate(path, off_t(length)) == 0 else {
      throw SystemCallError("truncate", path: path, errno: errno)
    }
  }

  /// Inverts the bits of the byte at `offset`.
  static func flip(_ path: String, at offset: Int) throws {
    var bytes = try Files.read(path)
    bytes[offset] ^= 0xFF
    try Files.write(bytes, to: path)
  }

  /// The bytes a record takes in a decoded frame: sequence, timestamp, length (all LE), payload.
  static func encoded(_ record: JournalRecord) -> [UInt8] {
    var writer = ByteWriter()
    writer.write(record.sequence)
    writer.write(record.timestamp)
    writer.write(UInt32(record.payload.count))
    writer.write(record.payload)
    return writer.bytes
  }

  /// The file mode bits (permissions) of `path`.
  static func mode(_ path: String) -> mode_t {
    var info = stat()
    guard stat(path, &info) == 0 else { return 0o7777 }
    return info.st_mode & 0o7777
  }
}

/// `journalError(_:sourceLocation:_:)` for long work: `body` runs on a thread of its own
/// (`onOwnThread`), so no thread of Swift concurrency's cooperative pool waits for it, and the
/// issue, if any, is recorded here, by the awaiting test (an issue recorded on another thread
/// belongs to no test).
func journalErrorOnOwnThread(
  _ context: String = "", sourceLocation: SourceLocation = #_sourceLocation,
  _ body: @escaping @Sendable () throws -> Void
) async throws -> JournalError? {
  let outcome = try await onOwnThread { Result { try body() } }
  return journalError(context, sourceLocation: sourceLocation) { try outcome.get() }
}

/// Catches the error of `body` as a `JournalError`; records an issue when it throws something
/// else or nothing.
func journalError(
  _ context: String = "", sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> JournalError? {
  do {
    try body()
    Issue.record("expected a JournalError, nothing was thrown. \(context)", sourceLocation: sourceLocation)
    return nil
  } catch let error as JournalError {
    return error
  } catch {
    Issue.record("expected a JournalError, got \(error). \(context)", sourceLocation: sourceLocation)
    return nil
  }
}
