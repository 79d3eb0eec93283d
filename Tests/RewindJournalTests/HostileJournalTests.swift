import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// A journal from an untrusted source (say, sent from a device for audit): decompression bombs
/// are refused without decoding them, declared sizes never drive allocation, and no file or folder
/// inside the journal can make Rewind read or write outside it (symbolic links are not followed),
/// or wait on it (FIFOs are refused).
@Suite struct HostileJournalTests {
  /// A one-segment journal whose only batch is `header` followed by `frame`, with both
  /// checksums right, so that only the sizes and the frame's content can be wrong.
  static func journal(
    _ dir: TemporaryDirectory, records: UInt32, contentLength: UInt32, frame: [UInt8]
  ) throws -> String {
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    journal.close()
    let segment = dir.appending(Layout.segmentName(firstSequence: 1))
    var bytes = Array(try Files.read(segment).prefix(Layout.segmentHeaderSize))
    let header = BatchHeader(
      firstSequence: 1, recordCount: records, contentLength: contentLength, frameLength: UInt32(frame.count),
      minTimestamp: 0, maxTimestamp: 0, frameChecksum: CRC32C.checksum(frame))
    var writer = ByteWriter()
    header.encode(into: &writer)
    bytes += writer.bytes + frame
    try Files.write(bytes, to: segment)
    return segment
  }

  /// An LZ4 frame of `count` zero bytes: a few hundred bytes that decode to `count`.
  static func bomb(_ count: Int) throws -> [UInt8] {
    var frame: [UInt8] = []
    let content = [UInt8](repeating: 0, count: count)
    _ = try content.withUnsafeBytes { try LZ4FrameEncoder().compress($0, appendingTo: &frame) }
    return frame
  }

  @Test func aFrameThatDecodesToMoreThanItsHeaderDeclaresIsRefused() async throws {
    try await offThePool {
      let dir = TemporaryDirectory("bomb")
      let frame = try Self.bomb(8 << 20)
      #expect(frame.count < 64 << 10, "the bomb should be small on disk")
      // The header declares one 100-byte record; the frame would decode to 8 MiB.
      _ = try Self.journal(dir, records: 1, contentLength: 100, frame: frame)
      let error = journalError { _ = try JournalFixtures.readAll(dir.path) }
      #expect(error?.code == .corrupt, "\(String(describing: error))")
      #expect(error?.file == Layout.segmentName(firstSequence: 1), "\(String(describing: error))")
      #expect(error?.offset == Int64(Layout.segmentHeaderSize), "\(String(describing: error))")
      #expect(error?.message.contains("more than") == true, "\(String(describing: error))")
      let report = try JournalReader(directory: dir.path).verify()
      #expect(report.problems.count == 1 && report.records == 0, "\(report)")
    }
  }

  @Test func aHeaderDeclaringMoreThanTheLimitIsRefusedBeforeDecoding() async throws {
    try await offThePool {
      let dir = TemporaryDirectory("bomb-declared")
      let limits = JournalLimits(maxRecordBytes: 1 << 20, maxBatchBytes: 2 << 20)
      let frame = try Self.bomb(8 << 20)
      _ = try Self.journal(dir, records: 1, contentLength: 8 << 20, frame: frame)
      let reader = try JournalReader(directory: dir.path, limits: limits)
      // Its checksum holds, so it is no frame being written, even at the very end of the journal:
      // reading and verification fail before decoding, saying why and where.
      for error in [
        journalError { _ = try JournalFixtures.readAll(reader.records()) }, journalError { _ = try reader.verify() },
      ] {
        #expect(error?.code == .limitExceeded, "\(String(describing: error))")
        #expect(error?.message.contains("exceeds the limit") == true, "\(String(describing: error))")
        #expect(error?.file == Layout.segmentName(firstSequence: 1), "\(String(describing: error))")
        #expect(error?.offset == Int64(Layout.segmentHeaderSize), "\(String(describing: error))")
      }
    }
  }

  @Test func aRecordDeclaringMoreThanItsFrameHoldsIsRefused() throws {
    // A record whose length field claims 4 GiB inside a small, valid frame.
    let dir = TemporaryDirectory("record-size")
    var content = ByteWriter()
    content.write(UInt64(1))
    content.write(Int64(0))
    content.write(UInt32.max)
    content.write([UInt8](repeating: 1, count: 16))
    var frame: [UInt8] = []
    _ = try content.bytes.withUnsafeBytes { try LZ4FrameEncoder().compress($0, appendingTo: &frame) }
    _ = try Self.journal(dir, records: 1, contentLength: UInt32(content.bytes.count), frame: frame)
    let error = journalError { _ = try JournalFixtures.readAll(dir.path) }
    #expect(error?.code == .corrupt || error?.code == .limitExceeded, "\(String(describing: error))")
    #expect(error?.file == Layout.segmentName(firstSequence: 1), "\(String(describing: error))")
  }

  // MARK: Nothing inside a journal points outside it

  /// A journal with a few batches, and a folder outside it that must stay untouched.
  static func journalAndOutside() async throws -> (TemporaryDirectory, journal: String, outside: String) {
    let base = TemporaryDirectory("links")
    let journal = base.appending("journal")
    let outside = base.appending("outside")
    try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
    let writer = try Journal(directory: journal, options: JournalFixtures.options())
    _ = try await JournalFixtures.write(writer, batches: 5, seed: 90)
    writer.close()
    return (base, journal, outside)
  }

  static func link(_ path: String, to target: String) throws {
    try? FileManager.default.removeItem(atPath: path)
    try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
  }

  @Test func aSegmentThatIsASymbolicLinkIsNotRead() async throws {
    let (base, journal, outside) = try await Self.journalAndOutside()
    _ = base
    let name = Layout.segmentName(firstSequence: 1)
    try FileManager.default.moveItem(atPath: journal + "/" + name, toPath: outside + "/" + name)
    try Self.link(journal + "/" + name, to: outside + "/" + name)
    for (who, error) in [
      ("reader", journalError { _ = try JournalFixtures.readAll(journal) }),
      ("writer", journalError { _ = try Journal(directory: journal, options: JournalFixtures.options()) }),
    ] {
      #expect(error?.errno == ELOOP, "\(who): \(String(describing: error))")
      #expect(error?.file == name, "\(who): \(String(describing: error))")
    }
  }

  @Test func aLockFileThatIsASymbolicLinkIsRefused() async throws {
    let (base, journal, outside) = try await Self.journalAndOutside()
    _ = base
    try Self.link(journal + "/LOCK", to: outside + "/planted")
    let error = journalError { _ = try Journal(directory: journal, options: JournalFixtures.options()) }
    #expect(error?.errno == ELOOP, "\(String(describing: error))")
    #expect(error?.file == "LOCK", "\(String(describing: error))")
    #expect(Files.list(outside).isEmpty, "opening must not create a file outside the journal")
  }

  @Test func anIndexThatIsASymbolicLinkIsReplacedNotWrittenThrough() async throws {
    let (base, journal, outside) = try await Self.journalAndOutside()
    _ = base
    let victim = outside + "/victim"
    try Files.write(Array("keep me".utf8), to: victim)
    try Self.link(journal + "/index", to: victim)
    let writer = try Journal(directory: journal, options: JournalFixtures.options())
    try writer.appendAndWait([NewRecord(timestamp: 1, payload: [1, 2, 3])])
    writer.close()
    #expect(try Files.read(victim) == Array("keep me".utf8))
    #expect(try JournalFixtures.readAll(journal).count > 5)
  }

  @Test func aQuarantineThatIsASymbolicLinkIsNotWrittenThrough() async throws {
    let (base, journal, outside) = try await Self.journalAndOutside()
    _ = base
    // A torn tail that opening would move into quarantine/, which points outside.
    let segment = journal + "/" + Layout.segmentName(firstSequence: 1)
    try JournalFixtures.truncate(segment, at: Files.size(segment) - 5)
    try? FileManager.default.removeItem(atPath: journal + "/quarantine")
    try Self.link(journal + "/quarantine", to: outside)
    let error = journalError { _ = try Journal(directory: journal, options: JournalFixtures.options()) }
    #expect(error?.errno == ENOTDIR, "\(String(describing: error))")
    #expect(
      error?.description.contains("must be a directory of its own (a symbolic link or a file stands there") == true,
      "\(String(describing: error))")
    #expect(Files.list(outside).isEmpty, "nothing may be moved outside the journal")
    let repair = journalError { _ = try Journal.repair(directory: journal) }
    #expect(repair?.errno == ENOTDIR, "\(String(describing: repair))")
    #expect(Files.list(outside).isEmpty, "nothing may be moved outside the journal")
  }

  /// A FIFO planted where a journal file belongs (a segment after the last, the manifest) is
  /// refused at once: opening it to read would wait, for ever, for something to write to it.
  @Test(arguments: [Layout.segmentName(firstSequence: 2), "manifest.json"])
  func aFIFOInAJournalIsRefusedNotWaitedOn(name: String) async throws {
    let dir = TemporaryDirectory("fifo")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options())
    try journal.appendAndWait([NewRecord(timestamp: 1, payload: [1, 2, 3])])
    journal.close()
    let fifo = dir.appending(name)
    try? FileManager.default.removeItem(atPath: fifo)
    try #require(mkfifo(fifo, 0o600) == 0)
    let outcome = Locked<String?>(nil)
    let path = dir.path
    Thread.detachNewThread {
      let error = journalError { _ = try JournalFixtures.readAll(path) }
      outcome.withLock { $0 = error.map { "\($0)" } ?? "no error" }
    }
    for _ in 0..<500 where outcome.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(10)) }
    var releases = 0
    while outcome.withLock({ $0 }) == nil && releases < 500 {
      // A reader stuck in open(2): a writer's open lets it go, so the test fails rather than hangs.
      let fd = open(fifo, O_WRONLY | O_NONBLOCK)
      if fd >= 0 { close(fd) }
      releases += 1
      try await Task.sleep(for: .milliseconds(10))
    }
    #expect(releases == 0, "reading a journal whose \(name) is a FIFO waited on it")
    let message = try #require(outcome.withLock { $0 }, "still reading the FIFO")
    #expect(message.contains("\(name) (a FIFO, not a regular file)"), "\(message)")
  }
}
