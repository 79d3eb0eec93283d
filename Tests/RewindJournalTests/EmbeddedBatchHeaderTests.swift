import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// A record whose payload holds journal bytes (an application that journals an exported chunk of
/// a journal as an event), in a frame stored raw, shows a whole, checksum-valid batch header
/// inside its frame. When that frame was the last one and torn, readers, `verify` and opening
/// took the header for a batch written after the damage, so for damage in the middle of
/// committed data: readers failed and opening refused until `rewind repair`. The frame's own
/// header, whose checksum holds, declares its extent; only bytes after it can be later writes.
@Suite struct EmbeddedBatchHeaderTests {
  /// A closed journal whose batch `carrier` is one record embedding a whole batch of another
  /// journal (header and frame, at `embedded` in the segment, `chunk` long), stored as it is.
  struct Embedding {
    let dir = TemporaryDirectory("embedded")
    var records: [JournalRecord] = []
    var segment = ""
    var bytes: [UInt8] = []
    var carrier = JournalFixtures.Frame(offset: 0, header: BatchHeader.placeholder)
    var embedded = 0
    var chunk = 0

    var segmentPath: String { dir.appending(segment) }
    /// The records of the batches before the carrier.
    var before: [JournalRecord] { Array(records.prefix(Int(carrier.header.firstSequence) - 1)) }
  }

  /// Batches of random bytes, the carrier, then `batchesAfter` more. The index names only the
  /// first batch (as after a crash before the writer's next entry) unless `indexBytes` is small.
  static func make(batchesAfter: Int = 0, indexBytes: Int = 1 << 20, seed: UInt64) async throws -> Embedding {
    var made = Embedding()
    var random = SeededGenerator(seed: seed)
    // The chunk an application exports: the first batch of another journal, header and frame.
    let other = TemporaryDirectory("embedded-other")
    let exporter = try Journal(directory: other.path, options: JournalFixtures.options())
    _ = try await exporter.append([NewRecord(timestamp: 1, payload: random.bytes(40))])
    exporter.close()
    let otherBytes = try Files.read(other.appending(Layout.segmentName(firstSequence: 1)))
    let chunk = Array(otherBytes[Layout.segmentHeaderSize...])
    try #require(try JournalFixtures.frames(of: otherBytes).count == 1)

    // Payloads of random bytes, which LZ4 shortens by less than 1% (only the zeros of a record's
    // fixed fields): after some 35 such frames the writer stops trying to compress small content
    // (`SmallContentSampler`) and stores it raw, the carrier's too, so the embedded batch shows
    // in its frame as it is.
    let options = JournalFixtures.options(indexBytes: indexBytes)
    let journal = try Journal(directory: made.dir.path, options: options)
    var clock: Int64 = 1_700_000_000_000_000_000
    func append(_ payload: [UInt8]) async throws -> UInt64 {
      clock += 1_000
      let range = try await journal.append([NewRecord(timestamp: clock, payload: payload)])
      made.records.append(JournalRecord(sequence: range.lowerBound, timestamp: clock, payload: payload))
      return range.lowerBound
    }
    for _ in 0..<60 { _ = try await append(random.bytes(Int.random(in: 300...450, using: &random))) }
    let carrier = try await append(random.bytes(64) + chunk + random.bytes(64))
    for _ in 0..<batchesAfter { _ = try await append(random.bytes(Int.random(in: 300...450, using: &random))) }
    journal.close()

    made.segment = try #require(JournalFixtures.segments(made.dir.path).last)
    made.bytes = try Files.read(made.segmentPath)
    let frames = try JournalFixtures.frames(of: made.bytes)
    made.carrier = try #require(frames.first { $0.header.firstSequence == carrier })
    made.chunk = chunk.count
    let frameBytes = made.bytes[(made.carrier.offset + Layout.batchHeaderSize)..<made.carrier.end]
    let at = try #require(
      frameBytes.indices.first { Array(frameBytes[$0..<min($0 + chunk.count, frameBytes.endIndex)]) == chunk },
      "the payload is stored raw: the embedded batch shows in the frame as it is")
    made.embedded = at
    try #require(
      (try? BatchHeader.decode(made.bytes[at...], limits: JournalLimits()).get()) != nil,
      "a whole, checksum-valid batch header inside the carrier's frame")
    return made
  }

  /// The ways a crash leaves the carrier, last, torn with its header whole: cut short by the end
  /// of the file (its declared extent reaches past it), right after the embedded batch or one
  /// byte short of its end; or written over preallocated zeros and only in part (its extent
  /// inside the file, zeros after the embedded batch and after the frame).
  enum Tear: CaseIterable, CustomStringConvertible {
    case cutAfterTheEmbeddedBatch, cutOneByteShort, partlyWrittenOverZeros

    var description: String {
      switch self {
      case .cutAfterTheEmbeddedBatch: "cut after the embedded batch"
      case .cutOneByteShort: "cut one byte short"
      case .partlyWrittenOverZeros: "partly written over zeros"
      }
    }

    /// The segment's bytes after the tear, and how many of them from the carrier on are its.
    func apply(to made: Embedding) -> (bytes: [UInt8], torn: Int) {
      let afterChunk = made.embedded + made.chunk
      switch self {
      case .cutAfterTheEmbeddedBatch:
        return (Array(made.bytes[..<afterChunk]), afterChunk - made.carrier.offset)
      case .cutOneByteShort:
        return (Array(made.bytes[..<(made.carrier.end - 1)]), Int(made.carrier.header.totalLength) - 1)
      case .partlyWrittenOverZeros:
        var bytes = made.bytes
        for i in afterChunk..<made.carrier.end { bytes[i] = 0 }
        return (bytes + [UInt8](repeating: 0, count: 8192), Int(made.carrier.header.totalLength))
      }
    }
  }

  @Test(arguments: Tear.allCases)
  func aTornLastFrameEmbeddingABatchHeaderIsAnUnfinishedTail(tear: Tear) async throws {
    let made = try await Self.make(seed: 61)
    try #require(made.carrier.end == made.bytes.count, "the carrier is the last frame")
    let copy = TemporaryDirectory("embedded-torn")
    let path = copy.appending("j")
    try Files.copyDirectory(made.dir.path, to: path)
    let (bytes, torn) = tear.apply(to: made)
    try Files.write(bytes, to: path + "/" + made.segment)
    let context = "\(tear)"

    // Readers read every committed record and stop there, without an error.
    // (Caught here, so that `verify` and opening are judged too when a reader fails.)
    do {
      #expect(try JournalFixtures.readAll(path) == made.before, "\(context)")
      #expect(try JournalReader(directory: path).lastSequence() == UInt64(made.before.count), "\(context)")
    } catch {
      Issue.record(error, "\(context): a reader failed")
    }

    // `verify` calls it an unfinished tail, not damage.
    let verification = try JournalReader(directory: path).verify()
    #expect(verification.isSound && verification.problems.isEmpty, "\(context): \(verification.problems)")
    #expect(verification.unfinishedTail?.offset == Int64(made.carrier.offset), "\(context)")
    #expect(verification.records == UInt64(made.before.count), "\(context)")

    // Opening for writing moves the torn frame aside (its bytes, not the zeros after it) and
    // appends after the committed records.
    let journal = try Journal(directory: path, options: JournalFixtures.options(indexBytes: 1 << 20))
    let moved = journal.recovery.movedAside
    #expect(moved.map(\.offset) == [Int64(made.carrier.offset)], "\(context): \(journal.recovery)")
    #expect(moved.map(\.length) == [Int64(torn)], "\(context)")
    if let entry = moved.first {
      #expect(
        try Files.read(path + "/" + entry.movedTo) == Array(bytes[made.carrier.offset..<(made.carrier.offset + torn)]),
        "\(context): quarantine holds the torn frame")
    }
    #expect(journal.recovery.missingRecords == nil, "\(context)")
    #expect(journal.lastSequence == UInt64(made.before.count), "\(context)")
    let record = NewRecord(timestamp: 9, payload: Array("after \(context)".utf8))
    let range = try await journal.append([record])
    #expect(range == UInt64(made.before.count + 1)...UInt64(made.before.count + 1), "\(context)")
    journal.close()
    let appended = JournalRecord(sequence: range.lowerBound, timestamp: 9, payload: record.payload)
    #expect(try JournalFixtures.readAll(path) == made.before + [appended], "\(context)")
    #expect(try JournalReader(directory: path).verify().isSound, "\(context)")
  }

  /// Whole, the carrier reads as any batch: its payload is the application's, whatever it holds.
  @Test func aWholeFrameEmbeddingABatchReadsBack() async throws {
    let made = try await Self.make(batchesAfter: 2, seed: 62)
    #expect(try JournalFixtures.readAll(made.dir.path) == made.records)
    let verification = try JournalReader(directory: made.dir.path).verify()
    #expect(verification.isSound && verification.unfinishedTail == nil, "\(verification.problems)")
    #expect(verification.records == UInt64(made.records.count))
  }

  /// A damaged frame in the middle of committed data is damage, located, also when its header
  /// holds and its frame embeds a batch: the batches after its extent are committed. `verify`
  /// goes on from the end of its extent, so it reports the one damaged batch and reads every
  /// batch after it; before, it went on from the embedded batch, read it as the journal's, and
  /// reported the carrier's own bytes after it as more damage.
  @Test func aDamagedFrameEmbeddingABatchBeforeCommittedBatchesIsDamage() async throws {
    let made = try await Self.make(batchesAfter: 3, seed: 63)
    try #require(made.carrier.end < made.bytes.count, "committed batches follow the carrier")
    var damaged = made.bytes
    damaged[made.embedded - 5] ^= 0x5A  // in the payload, before the embedded batch
    try Files.write(damaged, to: made.segmentPath)
    let sequence = made.carrier.header.firstSequence

    let read = journalError("read") { _ = try JournalFixtures.readAll(made.dir.path) }
    #expect(read?.code == .corrupt, "\(String(describing: read))")
    #expect(read?.file == made.segment && read?.offset == Int64(made.carrier.offset), "\(String(describing: read))")
    #expect(read?.sequences?.contains(sequence) == true, "\(String(describing: read))")

    let opened = journalError("open") {
      _ = try Journal(directory: made.dir.path, options: JournalFixtures.options(indexBytes: 1 << 20))
    }
    #expect(opened?.code == .corrupt, "\(String(describing: opened))")
    #expect(
      opened?.file == made.segment && opened?.offset == Int64(made.carrier.offset), "\(String(describing: opened))")
    #expect(try Files.read(made.segmentPath) == damaged, "nothing moved or cut")

    let verification = try JournalReader(directory: made.dir.path).verify()
    #expect(verification.unfinishedTail == nil)
    #expect(verification.problems.count == 1, "\(verification.problems)")
    let problem = try #require(verification.problems.first)
    #expect(problem.file == made.segment && problem.offset == Int64(made.carrier.offset), "\(problem)")
    #expect(problem.sequences?.contains(sequence) == true, "\(problem)")
    #expect(verification.records == UInt64(made.records.count - 1), "every record but the damaged batch's")

    // Repair moves the damaged batch and everything after it, as for any damage.
    let repair = try Journal.repair(directory: made.dir.path)
    #expect(repair.moved.map(\.offset) == [Int64(made.carrier.offset)], "\(repair)")
    #expect(try JournalFixtures.readAll(made.dir.path) == made.before)
  }

  /// A last batch header whose checksum holds is believed about its extent: one declaring a frame
  /// far past the end of the file (8 MiB, within the limits) leaves nothing after it to look at,
  /// whatever the bytes there. No writer writes such a header before batches it wrote (this one
  /// is crafted): batches the index names there are committed records gone, and every reader
  /// says so: readers fail, `verify` reports them, opening reports them missing, and their bytes
  /// move into quarantine, not away (docs/RELIABILITY.md, "Known limits").
  @Test func aHeaderDeclaringAFrameFarPastTheEndOfTheFile() async throws {
    let made = try await Self.make(batchesAfter: 2, indexBytes: 1, seed: 64)
    var header = made.carrier.header
    header.frameLength = 8 << 20
    var writer = ByteWriter()
    header.encode(into: &writer)
    var bytes = made.bytes
    bytes.replaceSubrange(made.carrier.offset..<(made.carrier.offset + Layout.batchHeaderSize), with: writer.bytes)
    try Files.write(bytes, to: made.segmentPath)
    let file = try SegmentFile(directory: made.dir.path, firstSequence: 1, io: PosixFileIO())
    let damage = BatchDamage(offset: Int64(made.carrier.offset), kind: .truncatedFrame, header: header)
    #expect(SegmentFile.scanStart(after: damage) > file.size)
    #expect(try !file.hasValidBatchHeader(after: damage), "nothing follows an extent past the end of the file")
    #expect(try file.hasValidBatchHeader(after: damage.offset), "though valid headers stand after its offset")

    let last = made.records.last!.sequence
    let read = journalError("read") { _ = try JournalFixtures.readAll(made.dir.path) }
    #expect(read?.code == .sequenceBreak, "\(String(describing: read))")
    let verification = try JournalReader(directory: made.dir.path).verify()
    #expect(!verification.isSound, "\(verification)")
    #expect(verification.problems.first?.offset == Int64(made.carrier.offset), "\(verification.problems)")
    let journal = try Journal(directory: made.dir.path, options: JournalFixtures.options(indexBytes: 1))
    let missing = try #require(journal.recovery.missingRecords, "\(journal.recovery)")
    #expect(missing.sequences.lowerBound == header.firstSequence && missing.sequences.contains(last), "\(missing)")
    let moved = try #require(journal.recovery.movedAside.first)
    #expect(
      try Files.read(made.dir.appending(moved.movedTo)) == Array(bytes[made.carrier.offset...]),
      "the batches after it are in quarantine")
    journal.close()
  }
}

extension BatchHeader {
  /// A header for a value to be replaced.
  fileprivate static let placeholder = BatchHeader(
    firstSequence: 1, recordCount: 1, contentLength: 0, frameLength: 0, minTimestamp: 0, maxTimestamp: 0,
    frameChecksum: 0)
}
