import RewindTestSupport
import Testing

@testable import RewindJournal

/// A journal of many small segments is read in time linear in their number: a cursor lists the
/// journal directory once when it is made and again only when the segment it reads on to is not
/// in the listing it holds (a writer made it since), not at every segment it reaches.
@Suite struct ManySegmentsTests {
  /// Counts the directory listings (`contentsOfDirectory`) made through it.
  final class ListingCountingIO: ForwardingFileIO {
    let base: any FileIO = PosixFileIO()
    private let count = Locked(0)

    var listings: Int { count.withLock { $0 } }

    func contentsOfDirectory(_ path: String) throws -> [String] {
      count.withLock { $0 += 1 }
      return try base.contentsOfDirectory(path)
    }
  }

  /// Segments of the smallest target size, one or two batches each: some hundreds of them.
  static func write(_ directory: String) async throws -> [JournalRecord] {
    var options = JournalFixtures.options(.none, segmentBytes: JournalOptions.minimumSegmentTargetBytes)
    options.preallocationBytes = 0
    let journal = try Journal(directory: directory, options: options)
    let expected = try await JournalFixtures.write(journal, batches: 400, maxRecords: 2, maxPayload: 400, seed: 235)
    journal.close()
    return expected
  }

  /// Reading start to end, from the middle, by time, and following from the start lists the
  /// directory a few times at the end of the journal, whatever the number of segments. (Listing
  /// again at each segment reached, a read of N segments listed it N times and more: quadratic
  /// in N, the listing being N names long.)
  @Test func aReadListsTheDirectoryAFewTimesNotOncePerSegment() async throws {
    let dir = TemporaryDirectory("many-segments")
    let expected = try await Self.write(dir.path)
    let segments = JournalFixtures.segments(dir.path).count
    try #require(segments >= 150, "\(segments) segments")
    let io = ListingCountingIO()
    let reader = try JournalReader(directory: dir.path, io: io)

    func listings(_ what: String, _ read: () throws -> [JournalRecord], expecting: ArraySlice<JournalRecord>) rethrows {
      let before = io.listings
      #expect(try read() == Array(expecting), "\(what)")
      let made = io.listings - before
      #expect(made <= 4, "\(what): \(made) listings of the directory for \(segments) segments")
    }
    try listings("from the start", { try JournalFixtures.readAll(reader.records(from: 1)) }, expecting: expected[...])
    let middle = expected.count / 2
    try listings(
      "from the middle", { try JournalFixtures.readAll(reader.records(from: UInt64(middle + 1))) },
      expecting: expected[middle...])
    try listings(
      "by time", { try JournalFixtures.readAll(reader.records(since: expected[middle].timestamp)) },
      expecting: expected[expected.firstIndex { $0.timestamp >= expected[middle].timestamp }!...])
    #expect(try reader.verify().isSound)

    // A follower catching up reads through the same cursor: one poll reads every segment.
    let before = io.listings
    let follower = Task {
      var read: [JournalRecord] = []
      for try await record in reader.follow(from: 1, pollInterval: .milliseconds(1)) {
        read.append(record)
        if read.count == expected.count { break }
      }
      return read
    }
    #expect(try await follower.value == expected)
    let made = io.listings - before
    #expect(made <= 4, "following: \(made) listings of the directory for \(segments) segments")
  }
}
