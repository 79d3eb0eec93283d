import Foundation
import RewindCLI
import RewindJournal
import RewindTestSupport
import Testing

/// Reading on after damage: where the read goes on, and what a selection by time makes of it.
extension DamagedJournalCommandTests {
  /// `tail --since T` of a journal with a segment missing before the records stamped from T on
  /// printed nothing but the missing segment: it looked for the first record stamped at or after
  /// T with a cursor that stopped at the missing segment. It reads around it now, as `log` does.
  @Test func tailSinceReadsAroundAMissingSegment() async throws {
    let (journal, segments) = try await Self.segmented()
    let name = segments[2]
    let firstLost = try #require(UInt64(name.prefix(20)))
    let lastLost = try #require(UInt64(segments[3].prefix(20))) - 1
    // A time after every record of the missing segment: that of the record after it.
    let reader = try JournalReader(directory: journal.path)
    let after = try #require(try reader.records(from: lastLost + 1).next())
    let before = try #require(try reader.records(from: firstLost).next())
    try #require(after.timestamp > before.timestamp)
    try FileManager.default.removeItem(atPath: journal.directory.appending(name))
    let since = isoTime(after.timestamp)
    let last = try await ToolRun.run("rewind", ["tail", journal.path, "-n", "3", "--since", since])
    #expect(last.status == 0, "\(last.err)")
    #expect(Self.sequences(last) == Array((journal.lastSequence - 2)...journal.lastSequence), "\(last.err)")
    // Every event from T on: the records of the missing segment, not read, may be stamped from
    // T on too (clocks are set back), so the windows reach back over it and say so.
    let all = try await ToolRun.run("rewind", ["tail", journal.path, "-n", "100000", "--since", since])
    #expect(all.status == 3, "\(all.err)")
    let shown = Self.sequences(all)
    #expect(shown.last == journal.lastSequence, "\(all.err)")
    #expect(shown.allSatisfy { $0 > lastLost || $0 < firstLost }, "\(shown)")
    #expect(all.err.contains("segment \(name) is missing"), "\(all.err)")
    let log = try await ToolRun.run("rewind", ["log", journal.path, "--since", since])
    #expect(log.status == 3, "\(log.err)")
    #expect(Self.sequences(log).suffix(shown.count) == shown[...], "log and tail agree: \(log.err)")
  }

  /// A damaged frame whose batch header holds, in the last segment: its records are exactly
  /// known, so the read goes on right after it, as in a sealed segment.
  @Test func aDamagedFrameInTheLastSegmentIsReadPastRightAfterIt() async throws {
    let (journal, _, _, frame) = try await Self.lastSegmentDamaged { $0.middleOfData }
    let lost = frame.sequences
    let expected = Array(1...journal.lastSequence).filter { !lost.contains($0) }
    for arguments in Self.readers(journal.path) {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 3, "\(arguments): \(run.err)")
      #expect(Self.sequences(run) == expected, "\(arguments): \(run.err)")
      let named = lost.count == 1 ? "sequence \(lost.lowerBound)" : "sequences \(lost.lowerBound)-\(lost.upperBound)"
      #expect(run.err.contains("\(named) not read, reading on from sequence \(lost.upperBound + 1)\n"), "\(run.err)")
    }
  }

  /// The index entries that name batches of the segment file `name`, in order (read from the
  /// index file as it is, whatever segment is missing).
  static func indexEntries(_ journal: NotebookJournal, segment name: String) throws -> [IndexEntry] {
    let segment = try #require(UInt64(name.prefix(20)))
    let index = try Files.read(journal.directory.appending("index"))
    return stride(from: 32, to: index.count - 39, by: 40).compactMap { place in
      IndexEntry.decode(index[place..<(place + 40)])
    }.filter { $0.segment == segment }
  }

  /// Segment file `name` read to be damaged: its index entries (at least `minimum` of them),
  /// its path, its bytes and its frames.
  static func segmentToDamage(_ journal: NotebookJournal, _ name: String, entries minimum: Int) throws -> (
    entries: [IndexEntry], path: String, bytes: [UInt8], frames: [SegmentFrame]
  ) {
    let entries = try indexEntries(journal, segment: name)
    try #require(entries.count >= minimum, "\(entries.count) index entries in \(name)")
    let path = journal.directory.appending(name)
    let bytes = try Files.read(path)
    return (entries, path, bytes, segmentFrames(in: bytes))
  }

  /// Sequence numbers as a read-on message names them.
  static func named(_ sequences: ClosedRange<UInt64>) -> String {
    sequences.count == 1
      ? "sequence \(sequences.lowerBound)" : "sequences \(sequences.lowerBound)-\(sequences.upperBound)"
  }

  /// How the batch the first index entry past a damaged batch header names is damaged too.
  enum NextIndexedBatch: CaseIterable, Sendable {
    /// Its batch header's checksum fails: no read goes on there.
    case headerDamaged
    /// Its frame fails its checksum, its header holds: its records are known.
    case frameDamaged
  }

  /// A damaged batch header, then damage to the batch the first index entry past it names: the
  /// read went on only from that first entry; meeting the damage there, it stopped (in the last
  /// segment) or went on at the next segment, leaving out the intact batches that later entries
  /// of the segment name. Each later entry is tried in order now (its header checked against it).
  @Test(arguments: [false, true], NextIndexedBatch.allCases)
  func laterIndexEntriesAreTriedInTurn(lastSegment: Bool, next: NextIndexedBatch) async throws {
    let (journal, segments) = try await Self.segmented()
    let name = lastSegment ? try #require(segments.last) : segments[1]
    let (entries, path, read, frames) = try Self.segmentToDamage(journal, name, entries: 4)
    var bytes = read
    let (first, second) = (entries[1], entries[2])
    // The batch an entry names, not right before the next entry: its first record alone is
    // named by its damaged header, and the read goes on from an entry, not after it.
    let damaged = try #require(frames.first { $0.offset == Int(entries[0].offset) })
    try #require(damaged.end < Int(first.offset), "one batch between two index entries")
    let named = try #require(frames.first { $0.offset == Int(first.offset) })
    try #require(named.header.firstSequence == first.firstSequence)
    bytes[damaged.offset + 8] ^= 0x5A  // its batch header's checksum fails: its extent is unknown
    switch next {
    case .headerDamaged: bytes[named.offset + 8] ^= 0x5A
    case .frameDamaged: bytes[named.middleOfData] ^= 0x5A
    }
    try Files.write(bytes, to: path)
    let from = damaged.header.firstSequence
    let (resumed, lost): (UInt64, ClosedRange<UInt64>) =
      switch next {
      case .headerDamaged: (second.firstSequence, from...(second.firstSequence - 1))
      case .frameDamaged: (first.firstSequence, from...named.sequences.upperBound)
      }
    let expected = Array(1...journal.lastSequence).filter { !lost.contains($0) }
    for arguments in Self.readers(journal.path) {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 3, "\(arguments): \(run.err)")
      #expect(Self.sequences(run) == expected, "\(arguments): \(run.err)")
      #expect(run.err.contains("\(name), byte offset \(damaged.offset)"), "\(run.err)")
      #expect(
        run.err.contains("\(Self.named(from...(resumed - 1))) not read, reading on from sequence \(resumed)\n"),
        "\(arguments): \(run.err)")
      if next == .frameDamaged {
        // The damaged frame the entry names is a place of its own, read past right after it.
        let sequences = named.sequences
        #expect(run.err.contains("\(name), byte offset \(named.offset)"), "\(run.err)")
        #expect(
          run.err.contains(
            "\(Self.named(sequences)) not read, reading on from sequence \(sequences.upperBound + 1)\n"),
          "\(arguments): \(run.err)")
      }
    }
  }

  /// A damaged batch header in a segment after one missing in the middle: the index as cursors
  /// load it stops at the missing segment, so no entry named a place past the damage, and the read
  /// went on only at the next segment (or stopped, in the last one). The index file's entries
  /// after the missing segment are used now, each checked against the header at its place.
  @Test(arguments: [false, true])
  func aDamagedBatchHeaderAfterAMissingSegmentIsReadPastAtTheNextIndexedBatch(lastSegment: Bool) async throws {
    let (journal, segments) = try await Self.segmented()
    try #require(segments.count > 4, "\(segments.count) segments")
    let missing = segments[1]
    let name = lastSegment ? try #require(segments.last) : segments[3]
    let (entries, path, read, frames) = try Self.segmentToDamage(journal, name, entries: 3)
    var bytes = read
    let entry = entries[1]
    let damaged = try #require(frames.first { $0.offset == Int(entries[0].offset) })
    try #require(damaged.end < Int(entry.offset), "one batch between two index entries")
    bytes[damaged.offset + 8] ^= 0x5A  // its batch header's checksum fails: its extent is unknown
    try Files.write(bytes, to: path)
    try FileManager.default.removeItem(atPath: journal.directory.appending(missing))
    let gone = try #require(UInt64(missing.prefix(20)))...(try #require(UInt64(segments[2].prefix(20))) - 1)
    let from = damaged.header.firstSequence
    let lost = from...(entry.firstSequence - 1)
    let expected = Array(1...journal.lastSequence).filter { !gone.contains($0) && !lost.contains($0) }
    for arguments in Self.readers(journal.path) {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 3, "\(arguments): \(run.err)")
      #expect(Self.sequences(run) == expected, "\(arguments): \(run.err)")
      #expect(run.err.contains("segment \(missing) is missing"), "\(run.err)")
      #expect(
        run.err.contains(
          "\(Self.named(lost)) not read, reading on from sequence \(entry.firstSequence)\n"),
        "\(arguments): \(run.err)")
    }
  }
}

extension DamagedJournalCommandTests {
  /// Bytes that are no batch (garbage, or a batch header cut off after its magic) after the last
  /// frame of a sealed segment whose successor starts right after its last record (found by the
  /// review of the format, Dec 6): they hold no record, yet `log`, `export` and `tail` read on after
  /// "sequence N", the record expected there, and left out record N, intact as the successor's
  /// first. They read on at the successor and say that nothing was skipped; `verify` says the bytes
  /// hold no record, and `repair` moves them aside, keeping every segment (it moved every segment
  /// from there on aside, the intact ones too).
  /// The third tail: the successor's first batch header, which holds, and part of its frame (a
  /// segment restored from a copy taken while a writer was writing; found by the review of the
  /// day's change).
  @Test(arguments: 0..<3)
  func bytesThatAreNoBatchEndingASealedSegmentHoldNoRecord(kind: Int) async throws {
    let (journal, segments) = try await Self.segmented()
    let path = journal.directory.appending(segments[1])
    let original = try Files.read(path)
    let successor = try Files.read(journal.directory.appending(segments[2]))
    let tail =
      switch kind {
      case 0: [UInt8](repeating: 0xFF, count: 10)
      case 1: [0x51, 0x2A, 0x4D, 0x18] + [UInt8](repeating: 0, count: 60)
      default: Array(successor[Layout.segmentHeaderSize..<(Layout.segmentHeaderSize + Layout.batchHeaderSize + 20)])
      }
    try Files.write(original + tail, to: path)
    let next = try #require(UInt64(segments[2].prefix(20)))
    for arguments in Self.readers(journal.path) {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 3, "\(arguments): \(run.err)")
      #expect(Self.sequences(run) == Array(1...journal.lastSequence), "\(arguments): \(run.err)")
      #expect(
        run.err.contains(
          "the next segment starts at sequence \(next), so no record was skipped, reading on from there"),
        "\(arguments): \(run.err)")
      // And the last message says no record was left out, with the advice for bytes that hold
      // none (it said "the records named there were not read", and for a batch header that
      // declares no payload, "Committed data is damaged": the review of the maintenance
      // commands, Dec 7, entry 331's "Left").
      #expect(
        run.err.contains(
          "Nothing committed is damaged: these bytes hold no record. `rewind repair` takes them out (zeros cut, other "
            + "bytes moved to quarantine/), keeping every segment. The journal holds bytes that are no record in 1 "
            + "place, each located above where it was met: no record was left out, and "),
        "\(arguments): \(run.err)")
      #expect(!run.err.contains("Committed data is damaged"), "\(arguments): \(run.err)")
    }
    let verify = try await ToolRun.run("rewind", ["verify", journal.path])
    #expect(verify.status == 1, "\(verify.out)\(verify.err)")
    #expect(
      verify.out.contains("the next segment starts at sequence \(next), so no records are missing"), "\(verify.out)")
    #expect(verify.out.contains("moves the bytes that are no batch aside, which hold no record, keeping every segment"))
    let repair = try await ToolRun.run("rewind", ["repair", journal.path, "--yes"])
    #expect(repair.status == 0, "\(repair.out)\(repair.err)")
    #expect(Files.list(journal.path).filter { $0.hasSuffix(".lz4") }.sorted() == segments, "every segment stays")
    #expect(try Files.read(path) == original)
    let after = try await ToolRun.run("rewind", ["verify", journal.path])
    #expect(after.status == 0 && after.out.contains("last sequence \(journal.lastSequence)"), "\(after.out)")
  }

  /// A damaged last frame of a sealed segment, followed by bytes that are no batch: reading past
  /// the frame met the bytes, and reading past them went on after the next segment's first
  /// record, which was left out and called not read (the review of the latest commits, Dec 7).
  /// The next segment's first record is tried again after the bytes: only the frame's records
  /// are missing, and the bytes are said to hold none.
  @Test func aDamagedFrameThenBytesThatAreNoBatchLeaveOutOnlyTheFrame() async throws {
    let (journal, segments) = try await Self.segmented()
    let path = journal.directory.appending(segments[1])
    var bytes = try Files.read(path)
    let frame = try #require(segmentFrames(in: bytes).last)
    bytes[frame.middleOfData] ^= 0x5A
    try Files.write(bytes + [UInt8](repeating: 0xAB, count: 100), to: path)
    let next = try #require(UInt64(segments[2].prefix(20)))
    try #require(frame.header.lastSequence + 1 == next)
    let expected = Array(1...journal.lastSequence).filter { !frame.sequences.contains($0) }
    for arguments in Self.readers(journal.path) {
      let run = try await ToolRun.run("rewind", arguments)
      #expect(run.status == 3, "\(arguments): \(run.err)")
      #expect(Self.sequences(run) == expected, "\(arguments): \(run.err)")
      #expect(
        run.err.contains(
          "the next segment starts at sequence \(next), so no record was skipped, reading on from there"),
        "\(arguments): \(run.err)")
    }
  }
}
