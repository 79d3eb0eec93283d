import Foundation
import RewindJournal
import RewindTestSupport
import Testing

/// What the reviewer left questionable in reading past damage (`PastDamage`, `tail`'s windows).
extension DamagedJournalCommandTests {
  /// The events of `log --json` of `journal`, by sequence number: name and time as printed.
  static func events(_ journal: NotebookJournal) async throws -> [UInt64: (name: String, time: String)] {
    let run = try await ToolRun.run("rewind", ["log", journal.path, "--json"])
    try #require(run.status == 0, "\(run.err)")
    var events: [UInt64: (name: String, time: String)] = [:]
    for line in run.out.split(separator: "\n") {
      let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
      let sequence = try #require((object["seq"] as? NSNumber)?.uint64Value)
      events[sequence] = (try #require(object["name"] as? String), try #require(object["time"] as? String))
    }
    return events
  }

  /// Damage whose records reach past `--to` said "reading on from sequence N" with N past the
  /// selection's end: no read went on. Now it says the selection ends among them.
  @Test(arguments: [Damage.flipped, .truncatedSealed])
  func damageReachingPastTheSelectionsEndPromisesNoRead(damage: Damage) async throws {
    let (journal, _, lost) = try await Self.damaged(damage)
    let lostRecords = try #require(lost)
    let to = lostRecords.upperBound
    let before = Array(1..<lostRecords.lowerBound)
    for arguments in [
      ["log", journal.path, "--to", String(to)], ["export", journal.path, "--jsonl", "--to", String(to)],
      ["tail", journal.path, "-n", "5", "--to", String(to)],
    ] {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 3, "\(arguments): \(run.err)")
      #expect(Self.sequences(run) == (arguments[0] == "tail" ? Array(before.suffix(5)) : before), "\(arguments)")
      #expect(!run.err.contains("reading on from"), "\(arguments): \(run.err)")
      #expect(
        run.err.contains("not read, and the selection ends at sequence \(to): nothing after it is read\n"),
        "\(arguments): \(run.err)")
      let written =
        arguments[0] == "tail"
        ? "the last other events of the selection were" : "every other event of the selection was"
      #expect(run.err.contains(written + " written out"), "\(arguments): \(run.err)")
    }
  }

  /// `--since` with the first segment missing: `tail` met the missing segment finding the first
  /// record since then, outside the windows that read past damage, and showed nothing ("No
  /// record of the selection was read before the damage"). `log` and `export` read on at the next
  /// segment; now `tail` does too.
  @Test func sinceWithTheFirstSegmentMissing() async throws {
    let (journal, segments) = try await Self.segmented()
    let events = try await Self.events(journal)
    let next = try #require(UInt64(segments[1].prefix(20)))
    try FileManager.default.removeItem(atPath: journal.directory.appending(segments[0]))
    // Before every record, the time of a record of the missing segment, and one near the end:
    // the missing segment's records may be stamped at any time (clocks are set back), so every
    // --since meets it, unlike a --from after it.
    let times = ["2000-01-01", try #require(events[3]?.time), try #require(events[journal.lastSequence - 20]?.time)]
    for since in times {
      let expected = Array(next...journal.lastSequence).filter { events[$0]!.time >= since }
      try #require(expected.count > 10)
      for arguments in Self.readers(journal.path) {
        let run = try await ToolRun.run("rewind", arguments + ["--since", since])
        #expect(run.status == 3, "\(arguments) --since \(since): \(run.err)")
        #expect(Self.sequences(run) == expected, "\(arguments) --since \(since): \(run.err)")
        #expect(run.err.contains("segment \(segments[0]) is missing"), "\(run.err)")
        #expect(run.err.contains("sequences 1-\(next - 1) not read, reading on from sequence \(next)\n"), "\(run.err)")
      }
    }
  }

  /// A damaged batch header in the last segment, the index entry after it not at a batch header
  /// (as only a damaged or crafted index is), then a good entry before the last events. Once,
  /// only the first entry past the damage was tried, so the damage could not be read past:
  /// `tail` whose windows reached it dropped the events the later windows had read and said "No
  /// record of the selection was read before the damage", printing nothing, until a window before
  /// a later one was made to read on where that one began. Now each later entry is tried in turn
  /// (its header checked against it): the stale one is passed over and the read goes on at the
  /// good one, in every window.
  @Test func tailReadsPastAStaleIndexEntryAtTheNextOne() async throws {
    let (journal, segments) = try await Self.segmented()
    let events = try await Self.events(journal)
    let name = try #require(segments.last)
    let segment = try #require(UInt64(name.prefix(20)))
    let indexPath = journal.directory.appending("index")
    var index = try Files.read(indexPath)
    let places = stride(from: 32, to: index.count - 39, by: 40).filter { place in
      IndexEntry.decode(index[place..<(place + 40)])?.segment == segment
    }
    try #require(places.count >= 3, "\(places.count) index entries in the last segment")
    let entries = try places.map { try #require(IndexEntry.decode(index[$0..<($0 + 40)])) }
    let (before, stale, good) = (entries[entries.count - 3], entries[entries.count - 2], entries[entries.count - 1])
    let path = journal.directory.appending(name)
    var bytes = try Files.read(path)
    let frame = try #require(
      segmentFrames(in: bytes).last { $0.offset >= Int(before.offset) && $0.offset < Int(stale.offset) })
    bytes[frame.offset + 8] ^= 0x5A  // the batch header's checksum fails: its extent is unknown
    try Files.write(bytes, to: path)
    // The entry after it one byte past its batch header: a stale entry, read from the segment's start.
    let place = places[places.count - 2]
    withUnsafeBytes(of: (stale.offset + 1).littleEndian) {
      index.replaceSubrange((place + 16)..<(place + 24), with: $0)
    }
    withUnsafeBytes(of: CRC32C.checksum(index[place..<(place + 36)]).littleEndian) {
      index.replaceSubrange((place + 36)..<(place + 40), with: $0)
    }
    try Files.write(index, to: indexPath)
    let damaged = frame.header.firstSequence
    let last = journal.lastSequence
    let count = Int(last - good.firstSequence + 1)

    // The last events after the damage, read from the last entry: whole.
    let few = try await ToolRun.run("rewind", ["tail", journal.path, "-n", String(count)])
    #expect(few.status == 0, "\(few.err)")
    #expect(Self.sequences(few) == Array(good.firstSequence...last))
    // A window that holds the last events and the damage: read on at the good entry.
    let all = try await ToolRun.run("rewind", ["tail", journal.path, "-n", "1000"])
    #expect(all.status == 3, "\(all.err)")
    #expect(Self.sequences(all) == Array(1..<damaged) + Array(good.firstSequence...last), "\(all.err)")
    #expect(all.err.contains("byte offset \(frame.offset)"), "\(all.err)")
    #expect(
      all.err.contains(
        "sequences \(damaged)-\(good.firstSequence - 1) not read, reading on from sequence \(good.firstSequence)\n"),
      "\(all.err)")
    #expect(all.err.contains("the last other events of the selection were written out"), "\(all.err)")
    // A narrowed selection whose first window lies after the damage and an earlier one across it.
    let type = try #require(events[damaged - 1]?.name)
    try #require(events.filter { $0.key >= good.firstSequence && $0.value.name == type }.count < count)
    let run = try await ToolRun.run("rewind", ["tail", journal.path, "-n", String(count), "--type", type])
    #expect(run.status == 3, "\(run.err)")
    let message = try #require(run.err.split(separator: "\n").first, "\(run.err)")
    let resumed = try #require(message.split(separator: " ").last.flatMap { UInt64($0) }, "\(message)")
    #expect(message.contains("sequences \(damaged)-\(resumed - 1) not read, reading on from sequence"), "\(message)")
    #expect(resumed == good.firstSequence)
    let readable = Array(1...last).filter { ($0 < damaged || $0 >= resumed) && events[$0]?.name == type }
    #expect(Self.sequences(run) == Array(readable.suffix(count)), "\(run.err)")
    #expect(run.err.contains("the last other events of the selection were written out"), "\(run.err)")
  }
}
