import Foundation
import RewindJournal
import RewindTestSupport
import Testing

/// `rewind compact`, run as the built binary: it shrinks the sealed segments without changing a
/// record, does nothing twice, and refuses what it must refuse with the documented exit codes.
@Suite struct CompactCommandTests {
  static func segments(_ directory: String) -> [String] {
    Files.list(directory).filter { $0.hasSuffix(".lz4") }
  }

  @Test func compactsSealedSegmentsAndEveryEventReadsTheSame() async throws {
    let dir = try RewindCommandTests.journal(records: 600)
    let names = Self.segments(dir.path)
    #expect(names.count > 3)
    let before = try Dictionary(uniqueKeysWithValues: names.map { ($0, try Files.read(dir.appending($0))) })
    let logBefore = try await ToolRun.run("rewind", ["log", dir.path, "--json"])
    try #require(logBefore.status == 0)

    let run = try await ToolRun.run("rewind", ["compact", dir.path])
    #expect(run.status == 0, "\(run.out)\(run.err)")
    #expect(run.err.isEmpty)
    for name in names.dropLast() { #expect(run.out.contains("compacted \(name): "), "\(run.out)") }
    #expect(run.out.contains("compacted \(names.count - 1) segments: "), "\(run.out)")
    // A count of one is singular: "-> 1 frame", not "1 frames".
    #expect(run.out.contains(" -> 1 frame, "), "\(run.out)")
    #expect(!run.out.contains(" 1 frames") && !run.out.contains(" 1 records"), "\(run.out)")
    for name in names.dropLast() { #expect(Files.size(dir.appending(name)) < before[name]!.count, "\(name)") }
    #expect(try Files.read(dir.appending(names.last!)) == before[names.last!], "the last segment is left as it is")

    let logAfter = try await ToolRun.run("rewind", ["log", dir.path, "--json"])
    #expect(logAfter.out == logBefore.out)
    let verify = try await ToolRun.run("rewind", ["verify", dir.path])
    #expect(verify.status == 0, "\(verify.out)\(verify.err)")

    let again = try await ToolRun.run("rewind", ["compact", dir.path])
    #expect(again.status == 0)
    #expect(again.out.hasPrefix("nothing to compact; \(names.count - 1) compacted before"), "\(again.out)")
  }

  /// `--all` seals the last segment first and compacts it with the others: every segment
  /// compacted, every event read the same, a new empty segment for the next writer, which appends
  /// to it; a second `--all` before any append has nothing to seal or compact.
  @Test func allCompactsTheLastSegmentToo() async throws {
    let dir = try RewindCommandTests.journal(records: 600)
    let names = Self.segments(dir.path)
    let logBefore = try await ToolRun.run("rewind", ["log", dir.path, "--json"])
    try #require(logBefore.status == 0)
    let last = try JournalReader(directory: dir.path).lastSequence()

    let run = try await ToolRun.run("rewind", ["compact", dir.path, "--all"])
    #expect(run.status == 0, "\(run.out)\(run.err)")
    for name in names { #expect(run.out.contains("compacted \(name): "), "\(run.out)") }
    #expect(run.out.contains("compacted \(names.count) segments: "), "\(run.out)")
    #expect(
      run.out.hasSuffix("; the last segment holds no record yet, for the next writer to append to\n"), "\(run.out)")
    let next = Layout.segmentName(firstSequence: last + 1)
    #expect(Self.segments(dir.path) == names + [next])
    #expect(Files.size(dir.appending(next)) == Layout.segmentHeaderSize)
    let logAfter = try await ToolRun.run("rewind", ["log", dir.path, "--json"])
    #expect(logAfter.out == logBefore.out)

    let again = try await ToolRun.run("rewind", ["compact", dir.path, "--all"])
    #expect(again.status == 0, "\(again.out)\(again.err)")
    #expect(again.out.hasPrefix("nothing to compact; \(names.count) compacted before"), "\(again.out)")
    #expect(Self.segments(dir.path) == names + [next])

    let journal = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    let added = try journal.appendAndWait([NewRecord(timestamp: 1, payload: Array("after".utf8))])
    journal.close()
    #expect(added == (last + 1)...(last + 1))
    #expect(Files.size(dir.appending(next)) > Layout.segmentHeaderSize)
    let verify = try await ToolRun.run("rewind", ["verify", dir.path])
    #expect(verify.status == 0, "\(verify.out)\(verify.err)")
  }

  /// `rewind compact` killed with SIGKILL after its Nth segment, at whatever point of the next
  /// one it has reached: every segment is whole (the original or its compacted copy), every record
  /// reads back, and a second run finishes the work.
  @Test(arguments: [1, 4, 9])
  func killedWhileCompactingLeavesEverySegmentWhole(after lines: Int) async throws {
    let dir = try RewindCommandTests.journal(records: 1_500)
    let names = Self.segments(dir.path)
    #expect(names.count > lines + 2)
    let before = try Dictionary(uniqueKeysWithValues: names.map { ($0, try Files.read(dir.appending($0))) })
    let expected = try JournalReader(directory: dir.path).records().readAll()
    let rewind = try #require(ChildProcess.builtProduct("rewind"))
    let child = try ChildProcess(executable: rewind, arguments: ["compact", dir.path])
    _ = try await child.waitForLine { _ in child.lines.count >= lines }
    try await child.kill()

    var compacted = 0
    for name in names {
      let bytes = try Files.read(dir.appending(name))
      if bytes != before[name] {
        compacted += 1
        #expect(bytes[14] & 1 == 1, "\(name) changed but is not flagged compacted")
      }
    }
    #expect(compacted >= lines)
    #expect(try JournalReader(directory: dir.path).records().readAll() == expected)
    let verify = try await ToolRun.run("rewind", ["verify", dir.path])
    #expect(verify.status == 0, "\(verify.out)\(verify.err)")
    let again = try await ToolRun.run("rewind", ["compact", dir.path])
    #expect(again.status == 0, "\(again.out)\(again.err)")
    #expect(again.out.contains("\(compacted) compacted before") || compacted == 0, "\(again.out)")
    #expect(!Files.list(dir.path).contains { $0.hasSuffix(".tmp") })
    #expect(try JournalReader(directory: dir.path).records().readAll() == expected)
  }

  @Test func aDamagedSealedSegmentIsNamedAndLeftAlone() async throws {
    try await damaged(at: { _ in 44 + 52 + 3 }, offset: 44)
    // A batch header in the middle: found already by opening, which walks the sealed segments' headers.
    try await damaged(at: { $0 / 2 }, offset: nil)
  }

  func damaged(at position: (Int) -> Int, offset: Int?) async throws {
    let dir = try RewindCommandTests.journal(records: 600)
    let names = Self.segments(dir.path)
    var bytes = try Files.read(dir.appending(names[1]))
    bytes[position(bytes.count)] ^= 0x5A
    try Files.write(bytes, to: dir.appending(names[1]))
    let run = try await ToolRun.run("rewind", ["compact", dir.path])
    #expect(run.status == 1, "\(run.out)\(run.err)")
    #expect(run.err.hasPrefix("rewind compact: "), "\(run.err)")
    #expect(run.err.contains("\(names[1]), byte offset \(offset.map(String.init) ?? "")"), "\(run.err)")
    #expect(run.err.contains("rewind repair"), "\(run.err)")
    #expect(try Files.read(dir.appending(names[1])) == bytes)
    if offset != nil {
      // Compaction itself found it: the segment before was compacted, and said so.
      #expect(run.out.hasPrefix("compacted \(names[0]): "), "\(run.out)")
    }
    #expect(!Files.list(dir.path).contains { $0.hasSuffix(".tmp") })
  }

  /// `--all` on a journal damaged in a sealed segment, where opening does not look (a frame's
  /// bytes, which opening does not read in a sealed segment): compaction stops at the damage as
  /// without `--all`, exit 1, before anything is sealed: no segment added, the damaged segment and
  /// every one after it as they were. (It sealed the last segment at opening, first.)
  @Test func allOnADamagedJournalSealsNothing() async throws {
    let dir = try RewindCommandTests.journal(records: 600)
    let names = Self.segments(dir.path)
    try #require(names.count >= 3)
    var bytes = try Files.read(dir.appending(names[1]))
    bytes[44 + 52 + 3] ^= 0x5A
    try Files.write(bytes, to: dir.appending(names[1]))
    let later = try names.dropFirst().map { try Files.read(dir.appending($0)) }
    let run = try await ToolRun.run("rewind", ["compact", dir.path, "--all"])
    #expect(run.status == 1, "\(run.out)\(run.err)")
    #expect(run.err.contains("\(names[1]), byte offset 44"), "\(run.err)")
    #expect(Self.segments(dir.path) == names)
    #expect(try names.dropFirst().map { try Files.read(dir.appending($0)) } == later)
  }

  /// `--all` on a journal damaged in a segment compacted before (its frames are passed over
  /// unread): it sealed the last segment over the damage and exited 0. Every frame is read before
  /// sealing now: exit 1, the damage located, no segment added.
  @Test func allOnDamageInASegmentCompactedBeforeSealsNothing() async throws {
    let dir = try RewindCommandTests.journal(records: 600)
    let first = try await ToolRun.run("rewind", ["compact", dir.path])
    #expect(first.status == 0, "\(first.out)\(first.err)")
    let names = Self.segments(dir.path)
    try #require(names.count >= 3)
    let path = dir.appending(names[0])
    var bytes = try Files.read(path)
    bytes[bytes.count - 5] ^= 0x5A  // in the last frame of the compacted segment
    try Files.write(bytes, to: path)
    let last = try Files.read(dir.appending(try #require(names.last)))
    let run = try await ToolRun.run("rewind", ["compact", dir.path, "--all"])
    #expect(run.status == 1, "\(run.out)\(run.err)")
    #expect(run.err.contains(names[0]), "\(run.err)")
    #expect(run.err.contains("the last segment was not sealed"), "\(run.err)")
    #expect(Self.segments(dir.path) == names, "no segment added")
    #expect(try Files.read(dir.appending(try #require(names.last))) == last)
  }

  /// Compaction on a journal whose last segment lost committed records (cut short before a batch
  /// the index names) opened it as a writer does: opening moved the tail aside and rewrote the
  /// index without the entries that named the lost records, compaction exited 0, and `verify`
  /// then called the journal sound: a repair made without asking, its evidence gone. It refuses
  /// now, exit 1, the loss located, every file as it was.
  @Test(arguments: [[], ["--all"]])
  func lostRecordsAtTheEndStopItBeforeAnythingChanges(all: [String]) async throws {
    let (journal, file, _) = try await IndexedLossCommandTests.damaged(.cutShort)
    let before = try Files.list(journal.path).map { ($0, try Files.read(journal.directory.appending($0))) }
    let run = try await ToolRun.run("rewind", ["compact", journal.path] + all)
    #expect(run.status == 1, "\(run.out)\(run.err)")
    #expect(run.err.hasPrefix("rewind compact: ") && run.err.contains(file), "\(run.err)")
    #expect(run.err.contains("committed records are gone") && run.err.contains("nothing was compacted"), "\(run.err)")
    #expect(run.out.isEmpty, "\(run.out)")
    let after = try Files.list(journal.path).map { ($0, try Files.read(journal.directory.appending($0))) }
    #expect(after.map(\.0) == before.map(\.0))
    #expect(after.map(\.1) == before.map(\.1), "every file as it was")
    let verify = try await ToolRun.run("rewind", ["verify", journal.path])
    #expect(verify.status == 1 && verify.out.contains(file), "the loss is still there to see: \(verify.out)")
  }

  /// A stray file named like a segment past the end is no damage to committed records: compaction
  /// goes on, the writer's opening moving the file aside, as before the refusal above.
  @Test func aStrayFileAtTheEndIsMovedAsideAndCompactionGoesOn() async throws {
    let dir = try RewindCommandTests.journal(records: 600)
    let names = Self.segments(dir.path).sorted()
    let name = try #require(names.last)
    let last = try #require(UInt64(name.prefix(20)))
    let stray = Layout.segmentName(firstSequence: last + 1_000)
    try Files.write(Array("junk\n".utf8), to: dir.appending(stray))
    let run = try await ToolRun.run("rewind", ["compact", dir.path])
    #expect(run.status == 0, "\(run.out)\(run.err)")
    #expect(run.out.contains("opening moved aside: moved 5 bytes of \(stray)"), "\(run.out)")
    #expect(run.out.contains("compacted \(names[0]): "), "\(run.out)")
    #expect(!Self.segments(dir.path).contains(stray))
    #expect(try JournalReader(directory: dir.path).verify().isSound)
  }

  /// `--all --frame BYTES`: the segment sealed last is merged within the size given too, as the
  /// others; on a journal without records `--all` seals nothing and compacts nothing.
  @Test func allKeepsToTheFrameSizeAndLeavesAnEmptyJournalAsItIs() async throws {
    let dir = try RewindCommandTests.journal(records: 600)
    let names = Self.segments(dir.path)
    let expected = try JournalReader(directory: dir.path).records(from: 1).readAll()
    let run = try await ToolRun.run("rewind", ["compact", dir.path, "--all", "--frame", "1024"])
    #expect(run.status == 0, "\(run.out)\(run.err)")
    #expect(run.out.contains("compacted \(names.count) segments: "), "\(run.out)")
    for name in names {
      let frames = segmentFrames(in: try Files.read(dir.appending(name)))
      let records = frames.reduce(0) { $0 + Int($1.header.recordCount) }
      #expect(frames.allSatisfy { $0.header.contentLength <= 1024 }, "\(name)")
      #expect(
        records > 0 && (frames.count < records || records == 1), "\(name): \(frames.count) frames of \(records) records"
      )
    }
    #expect(try JournalReader(directory: dir.path).records(from: 1).readAll() == expected)

    let empty = TemporaryDirectory("cli-compact-all-empty")
    try Journal(directory: empty.path, options: JournalOptions(durability: .none)).close()
    let segments = Self.segments(empty.path)
    let nothing = try await ToolRun.run("rewind", ["compact", empty.path, "--all"])
    #expect(nothing.status == 0, "\(nothing.out)\(nothing.err)")
    #expect(
      nothing.out == "nothing to compact; the last segment holds no record yet, for the next writer to append to\n",
      "\(nothing.out)")
    #expect(Self.segments(empty.path) == segments)
  }

  /// A journal written with larger limits than the default (a 5 MiB record in a sealed segment):
  /// every other command reads it (with the largest limits), so `rewind compact` compacts it too
  /// rather than failing to open it.
  @Test func compactsAJournalWrittenWithLargerLimits() async throws {
    let dir = TemporaryDirectory("cli-compact-limits")
    var options = JournalOptions(durability: .none)
    options.limits = JournalLimits(maxRecordBytes: 6 << 20, maxBatchBytes: 8 << 20)
    options.segmentTargetBytes = 1 << 20
    let journal = try Journal(directory: dir.path, options: options)
    var random = SeededGenerator(seed: 3)
    let large = (0..<(5 << 20)).map { _ in UInt8.random(in: 0...255, using: &random) }
    var expected: [JournalRecord] = []
    for (i, payload) in [Array("before".utf8), large, Array("after".utf8), Array("last".utf8)].enumerated() {
      let range = try journal.appendAndWait([NewRecord(timestamp: Int64(i), payload: payload)])
      expected.append(JournalRecord(sequence: range.lowerBound, timestamp: Int64(i), payload: payload))
    }
    journal.close()
    let names = Self.segments(dir.path)
    try #require(names.count >= 2, "\(names)")
    let verifyBefore = try await ToolRun.run("rewind", ["verify", dir.path])
    try #require(verifyBefore.status == 0, "\(verifyBefore.out)\(verifyBefore.err)")

    let run = try await ToolRun.run("rewind", ["compact", dir.path])
    #expect(run.status == 0, "\(run.out)\(run.err)")
    for name in names.dropLast() { #expect(run.out.contains("compacted \(name): "), "\(run.out)") }
    let verify = try await ToolRun.run("rewind", ["verify", dir.path])
    #expect(verify.status == 0, "\(verify.out)\(verify.err)")
    #expect(try JournalReader(directory: dir.path, limits: .largest).records(from: 1).readAll() == expected)
  }

  /// An app that reads with small limits (64 KiB batches): `rewind compact --frame 65536` keeps
  /// the merged frames within them, so the app still opens its journal; `--frame` out of range
  /// is a usage error.
  @Test func framesStayWithinTheSizeGiven() async throws {
    let dir = TemporaryDirectory("cli-compact-frame")
    var options = JournalOptions(durability: .none)
    options.limits = JournalLimits(maxRecordBytes: 1 << 10, maxBatchBytes: 64 << 10)
    options.segmentTargetBytes = 256 << 10
    let journal = try Journal(directory: dir.path, options: options)
    var expected: [JournalRecord] = []
    for i in 0..<4000 {
      let payload = Array("record \(i) \(String(repeating: "x", count: i % 200))".utf8)
      let range = try journal.appendAndWait([NewRecord(timestamp: Int64(i), payload: payload)])
      expected.append(JournalRecord(sequence: range.lowerBound, timestamp: Int64(i), payload: payload))
    }
    journal.close()
    try #require(Self.segments(dir.path).count >= 2)
    // Past 1 MiB too: compacted frames never gather more, so a larger value would be ignored.
    for bad in ["0", "-1", "lots", "1048577", "16777216"] {
      let run = try await ToolRun.run("rewind", ["compact", dir.path, "--frame", bad])
      #expect(run.status == 2 && run.err.contains("--frame"), "\(run.err)")
    }
    let run = try await ToolRun.run("rewind", ["compact", dir.path, "--frame", "65536"])
    #expect(run.status == 0, "\(run.out)\(run.err)")
    let reopened = try Journal(directory: dir.path, options: options)
    reopened.close()
    #expect(try JournalReader(directory: dir.path, limits: options.limits).records(from: 1).readAll() == expected)
  }

  /// With `--all` too: nothing sealed, no segment added.
  @Test(arguments: [[], ["--all"]])
  func refusedWhileAWriterHoldsTheJournal(flags: [String]) async throws {
    let dir = try RewindCommandTests.journal(records: 300)
    let names = Self.segments(dir.path)
    let before = try names.map { try Files.read(dir.appending($0)) }
    let writer = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    let run = try await ToolRun.run("rewind", ["compact", dir.path] + flags)
    writer.close()
    #expect(run.status == 3, "\(run.out)\(run.err)")
    #expect(run.err.contains("another writer holds the journal's lock"), "\(run.err)")
    #expect(Self.segments(dir.path) == names)
    #expect(try names.map { try Files.read(dir.appending($0)) } == before)
  }

  @Test func badInputAndHelp() async throws {
    for flags in [[], ["--all"]] {
      let missing = try await ToolRun.run("rewind", ["compact", "/nonexistent/journal"] + flags)
      #expect(missing.status == 3)
      #expect(missing.err.hasPrefix("rewind compact: /nonexistent/journal does not exist"), "\(missing.err)")
    }

    let dir = TemporaryDirectory("cli-compact-notajournal")
    try Files.write(Array("shopping list".utf8), to: dir.appending("notes.txt"))
    let notAJournal = try await ToolRun.run("rewind", ["compact", dir.path])
    #expect(notAJournal.status == 3)
    #expect(notAJournal.err.contains("not a Rewind journal"), "\(notAJournal.err)")
    #expect(Files.list(dir.path) == ["notes.txt"], "nothing is created in a directory that is not a journal")

    let unknown = try await ToolRun.run("rewind", ["compact", dir.path, "--level", "12"])
    #expect(unknown.status == 2)
    #expect(unknown.err.hasPrefix("rewind compact: "), "\(unknown.err)")

    let help = try await ToolRun.run("rewind", ["compact", "--help"])
    #expect(help.status == 0)
    #expect(help.out.hasPrefix("Usage: rewind compact DIR"))
    #expect(help.out.contains("\nExamples:\n  rewind compact"))
    let overview = try await ToolRun.run("rewind", ["--help"])
    #expect(overview.out.contains("\n  compact  rewrite sealed segments"))
  }
}

extension JournalCursor {
  func readAll() throws -> [JournalRecord] {
    var records: [JournalRecord] = []
    while let record = try next() { records.append(record) }
    return records
  }
}
