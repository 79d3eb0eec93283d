import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind
@testable import RewindCLI

/// Runs the built `rewind` binary and checks its output and exit codes.
@Suite struct RewindCommandTests {
  typealias Run = ToolRun

  /// The built `rewind`, run through `ToolRun` (on a thread of its own, no standard input).
  static func rewind(_ arguments: [String]) async throws -> Run {
    try await ToolRun.run("rewind", arguments)
  }

  /// A small journal with a few segments, written through the library.
  static func journal(records: Int = 300) throws -> TemporaryDirectory {
    let dir = TemporaryDirectory("cli")
    var options = JournalOptions(durability: .none)
    options.segmentTargetBytes = 4096
    let journal = try Journal(directory: dir.path, options: options)
    for i in 0..<records {
      try journal.appendAndWait([NewRecord(timestamp: Int64(i) * 1_000_000_000, payload: Array("record \(i)".utf8))])
    }
    journal.close()
    return dir
  }

  @Test func demoThenVerifyStatsAndLog() async throws {
    let dir = TemporaryDirectory("cli-demo")
    let demo = try await Self.rewind(["demo", dir.path, "--events", "2000", "--seed", "1", "--durability", "none"])
    #expect(demo.status == 0, "\(demo.err)")
    let written = try #require(
      demo.out.split(separator: "\n").first { $0.hasPrefix("  events") }?.split(whereSeparator: {
        $0 == " " || $0 == ","
      }).dropFirst().first
        .flatMap { Int($0) })
    #expect(written >= 2000)
    let verify = try await Self.rewind(["verify", dir.path])
    #expect(verify.status == 0)
    #expect(verify.out.contains("sound: \(written) records"))
    let log = try await Self.rewind(["log", dir.path, "--from", "\(written - 1)", "--json"])
    let lines = log.out.split(separator: "\n")
    #expect(lines.count == 2)
    let first = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any]
    #expect(first?["seq"] as? Int == written - 1)
  }

  @Test func logShowsTimesInISO8601() async throws {
    let dir = try Self.journal(records: 3)
    let log = try await Self.rewind(["log", dir.path])
    #expect(log.status == 0)
    #expect(
      log.out.split(separator: "\n") == [
        #"1  1970-01-01T00:00:00.000000000Z  (not a Rewind event, 8 B)  "record 0""#,
        #"2  1970-01-01T00:00:01.000000000Z  (not a Rewind event, 8 B)  "record 1""#,
        #"3  1970-01-01T00:00:02.000000000Z  (not a Rewind event, 8 B)  "record 2""#,
      ])
  }

  /// The journal takes any Int64 timestamp; log shows the extremes rather than trapping on them.
  @Test func logShowsTheExtremeTimestamps() async throws {
    let dir = TemporaryDirectory("cli-extreme-times")
    let journal = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    for timestamp in [Int64.min, -1, Int64.max] {
      try journal.appendAndWait([NewRecord(timestamp: timestamp, payload: Array("x".utf8))])
    }
    journal.close()
    let log = try await Self.rewind(["log", dir.path])
    #expect(log.status == 0, "\(log.err)")
    #expect(
      log.out.split(separator: "\n").map { $0.split(separator: " ")[1] } == [
        "1677-09-21T00:12:43.145224192Z", "1969-12-31T23:59:59.999999999Z", "2262-04-11T23:47:16.854775807Z",
      ])
  }

  @Test func verifyLocatesDamageAndRepairMovesItAside() async throws {
    let dir = try Self.journal()
    let segments = Files.list(dir.path).filter { $0.hasSuffix(".lz4") }
    try #require(segments.count >= 3)
    // Flip a byte inside the first data frame of the second segment.
    let victim = dir.appending(segments[1])
    var bytes = try Files.read(victim)
    let offset = 44 + 52 + 10
    bytes[offset] ^= 0xFF
    try Files.write(bytes, to: victim)

    // Snapshot files (their contents do not matter here) before and past the damage.
    let first = UInt64(SegmentName.firstSequence(segments[1]))
    let before = String(format: "%020d.snapshot", first - 1)
    let past = String(format: "%020d.snapshot", first + 5)
    try FileManager.default.createDirectory(atPath: dir.appending("snapshots"), withIntermediateDirectories: false)
    for name in [before, past] { try Files.write([1, 2, 3], to: dir.appending("snapshots/" + name)) }

    let verify = try await Self.rewind(["verify", dir.path])
    #expect(verify.status == 1)
    #expect(verify.out.contains("problem: \(segments[1]) at byte offset 44"), "\(verify.out)")

    let plan = try await Self.rewind(["repair", dir.path])
    #expect(plan.status == 1, "without --yes, repair only shows its plan")
    #expect(plan.out.contains("will move"))
    #expect(plan.out.contains("will move snapshots/\(past)"), "\(plan.out)")
    #expect(!plan.out.contains(before), "\(plan.out)")
    #expect(Files.list(dir.path).filter { $0.hasSuffix(".lz4") } == segments, "a plan moves nothing")
    #expect(Files.list(dir.appending("snapshots")) == [before, past], "a plan moves nothing")

    let repair = try await Self.rewind(["repair", dir.path, "--yes"])
    #expect(repair.status == 0, "\(repair.err)")
    #expect(Files.list(dir.appending("quarantine")).count == segments.count - 1 + 1)
    #expect(Files.list(dir.appending("quarantine")).contains(past))
    #expect(Files.list(dir.appending("snapshots")) == [before], "the snapshot past the cut went with it")
    #expect(try await Self.rewind(["verify", dir.path]).status == 0)
    // The intact prefix reopens and continues.
    let journal = try Journal(directory: dir.path)
    #expect(journal.lastSequence == first - 1)
  }

  /// A repair that moved the damaged part aside but could not remove the index (`.staleIndex`)
  /// sets the snapshots past the new end aside all the same: they used to wait for the second
  /// run, and a writer opening meanwhile would number new records over them.
  @Test func aRepairStoppedByTheIndexStillSetsSnapshotsPastTheEndAside() async throws {
    let dir = try Self.journal()
    let segments = Files.list(dir.path).filter { $0.hasSuffix(".lz4") }
    try #require(segments.count >= 3)
    let first = UInt64(SegmentName.firstSequence(segments[1]))
    // A damaged header over a damaged first batch: the segment and the ones after it move aside.
    // (A deleted one would not: repair refuses records missing before intact segments; nor would
    // a damaged header alone, which repair writes again.)
    var bytes = try Files.read(dir.appending(segments[1]))
    bytes[10] ^= 0xFF
    bytes[Layout.segmentHeaderSize + 10] ^= 0xFF
    try Files.write(bytes, to: dir.appending(segments[1]))
    let before = String(format: "%020d.snapshot", first - 1)
    let past = String(format: "%020d.snapshot", first + 5)
    try FileManager.default.createDirectory(atPath: dir.appending("snapshots"), withIntermediateDirectories: false)
    for name in [before, past] { try Files.write([1, 2, 3], to: dir.appending("snapshots/" + name)) }

    let io = FaultInjectingFileIO()
    io.arm(.removeError(EACCES), pathContains: "/" + Layout.indexName)
    var options = JournalOptions()
    options.io = io
    let captured = Captured()
    var error: JournalError?
    do {
      _ = try RepairCommand.carryOut(dir.path, options: options, output: captured.output)
    } catch let thrown as JournalError {
      error = thrown
    }
    #expect(error?.code == .staleIndex, "\(String(describing: error))")
    #expect(FileManager.default.fileExists(atPath: dir.appending(Layout.indexName)), "the index stayed")
    #expect(Files.list(dir.appending("snapshots")) == [before], "the snapshot past the new end is aside")
    #expect(Files.list(dir.appending("quarantine")).contains(past))
    #expect(captured.out.contains("snapshots/\(past)"), "\(captured.out)")

    // The second run removes the index; the journal ends where the snapshot left behind is.
    let repair = try await Self.rewind(["repair", dir.path, "--yes"])
    #expect(repair.status == 0, "\(repair.out)\(repair.err)")
    #expect(repair.out.hasSuffix("repaired: the journal ends at sequence \(first - 1)\n"), "\(repair.out)")
    #expect(Files.list(dir.appending("snapshots")) == [before])
    #expect(try await Self.rewind(["verify", dir.path]).status == 0)
  }

  @Test func verifyChecksSnapshotFilesAndAProblemOnePastTheEnd() async throws {
    let dir = try Self.journal()
    let last = try JournalReader(directory: dir.path).lastSequence()
    let id = try JournalReader(directory: dir.path).id.bytes
    let folder = dir.appending("snapshots")
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
    func snapshot(_ sequence: UInt64, journal: [UInt8] = id, digest: [UInt8]? = nil) throws {
      let state: [UInt8] = [1, 2, 3]
      // Its last record is the journal's: a file that differs from a written one only where it says.
      let record = try #require(try JournalReader(directory: dir.path).record(sequence))
      let file = SnapshotFile(
        sequence: sequence, journalID: journal, fingerprint: StateDigest(bytes: Array(repeating: 7, count: 32)),
        digest: StateDigest(bytes: digest ?? SHA256.hash(state)), lastRecord: SnapshotFile.recordDigest(of: record),
        state: state)
      try Files.write(file.encoded(), to: folder + "/" + SnapshotStore.fileName(sequence))
    }
    try snapshot(100)
    try snapshot(150, journal: Array(repeating: 9, count: 16))
    try Files.write(Array("not a snapshot".utf8), to: folder + "/" + SnapshotStore.fileName(200))
    try snapshot(250, digest: Array(repeating: 0, count: 32))
    // A bad snapshot costs replay time, not data: notes, and the journal is sound.
    let notes = try await Self.rewind(["verify", dir.path])
    #expect(notes.status == 0, "\(notes.out)\(notes.err)")
    let lines = notes.out.split(separator: "\n").filter { $0.contains("snapshots/") }
    #expect(lines.count == 3, "\(notes.out)")
    #expect(lines.allSatisfy { $0.hasPrefix("note: snapshots/") }, "\(notes.out)")
    #expect(lines.first?.contains("\(SnapshotStore.fileName(150)) belongs to another journal") == true)
    #expect(lines.dropFirst().first?.contains("\(SnapshotStore.fileName(200)) corrupt: not a snapshot file") == true)
    #expect(lines.last?.contains("\(SnapshotStore.fileName(250)) inconsistent: ") == true)
    #expect(notes.out.contains("sound: "))

    // One past the end: records made durable before it was written are gone.
    let past = SnapshotStore.fileName(last + 114)
    try Files.write([1, 2, 3], to: folder + "/" + past)
    let verify = try await Self.rewind(["verify", dir.path])
    #expect(verify.status == 1, "\(verify.out)\(verify.err)")
    #expect(
      verify.out.contains(
        "problem: snapshots/\(past): records up to \(last + 114) were made durable before this snapshot was "
          + "written; the journal ends at \(last)\n"), "\(verify.out)")
    #expect(
      verify.out.contains(
        "damaged: 1 problem; intact up to sequence \(last). Records after sequence \(last) were lost"))
    #expect(Files.list(folder).contains(past), "verify moves nothing")
    let stats = try await Self.rewind(["stats", dir.path])
    #expect(stats.status == 1)
    #expect(
      stats.out.contains(
        "\n             1 of them lies past the journal's end (sequence \(last)): records \(last + 1) to \(last + 114) "
          + "were on disk when it was written, and are lost. Restore the journal from a backup if there is one; the "
          + "next writer moves the snapshot aside. `rewind verify \(dir.path)` reports the loss.\n"), "\(stats.out)")
    let json = try await Self.rewind(["stats", dir.path, "--json"])
    #expect(json.status == 1)
    #expect(json.out.contains("\"snapshotsPastTheEnd\":[\(last + 114)]") && json.out.contains("\"sound\":false"))
    // Two past the end: the newest says through where records were lost.
    try Files.write([1, 2, 3], to: folder + "/" + SnapshotStore.fileName(last + 200))
    let two = try await Self.rewind(["stats", dir.path])
    #expect(two.status == 1)
    #expect(
      two.out.contains(
        "\n             2 of them lie past the journal's end (sequence \(last)): records \(last + 1) to \(last + 200) "
          + "were on disk when the newest was written, and are lost. Restore the journal from a backup if there is "
          + "one; the next writer moves these snapshots aside."), "\(two.out)")
    // In a damaged journal, past the intact part's end: lost, or behind the damage.
    let segment = try #require(Files.list(dir.path).filter { $0.hasSuffix(".lz4") }.sorted().last)
    try Files.flipMiddleByte(of: dir.appending(segment), with: 0xFF)
    let damaged = try await Self.rewind(["stats", dir.path])
    #expect(damaged.status == 1)
    #expect(
      damaged.out.contains(
        /\n {13}2 of them lie past the intact part's end \(sequence \d+\): records \d+ to \d+ were on disk when the newest was written, and are lost or lie past the damage \(below\)\.\n/
      ), "\(damaged.out)")
  }

  @Test func aMissingOrInvalidManifestBesideSegmentsGetsAdvice() async throws {
    let dir = try Self.journal()
    let id = try JournalReader(directory: dir.path).id
    let segments = Files.list(dir.path).filter { $0.hasSuffix(".lz4") }.count
    let manifest = dir.appending(Layout.manifestName)
    try FileManager.default.removeItem(atPath: manifest)
    for command in ["verify", "log", "stats", "repair", "compact"] {
      let run = try await Self.rewind([command, dir.path])
      #expect(run.status == 3, "\(command): \(run.err)")
      #expect(
        run.err.contains(
          "no manifest.json in journal \(dir.path), which holds \(segments) segment\(segments == 1 ? "" : "s"):"),
        "\(command): \(run.err)")
      #expect(run.err.contains(#"{"format": 1, "journalID": "\#(id)"}"#), "\(command): \(run.err)")
      #expect(!run.err.contains("create the journal by opening it for writing"), "\(command): \(run.err)")
    }
    // The library's own advice no longer sends a writer round in a circle.
    #expect(throws: JournalError.self) { try Journal(directory: dir.path, options: JournalOptions()) }
    do {
      _ = try Journal(directory: dir.path, options: JournalOptions())
    } catch {
      #expect(!"\(error)".contains("create the journal by opening it for writing"), "\(error)")
    }
    try Files.write(Array("{garbage".utf8), to: manifest)
    let garbage = try await Self.rewind(["log", dir.path])
    #expect(garbage.status == 3)
    #expect(
      garbage.err.contains("manifest.json is not a manifest (JSON with a format and a journalID)"), "\(garbage.err)")
    #expect(garbage.err.contains("Restore manifest.json from a backup"), "\(garbage.err)")
    // A manifest the journal reads, of a format it does not know, has its own message, not this advice.
    try Files.write(Array(#"{"format": 9, "journalID": "\#(id)"}"#.utf8), to: manifest)
    let unknown = try await Self.rewind(["log", dir.path])
    #expect(unknown.status == 3)
    #expect(unknown.err.contains("journal format 9 is not supported"), "\(unknown.err)")
    #expect(!unknown.err.contains("is not a manifest"), "\(unknown.err)")
    // Put back as advised, the journal reads again.
    try Files.write(Array(#"{"format": 1, "journalID": "\#(id)"}"#.utf8), to: manifest)
    #expect(try await Self.rewind(["verify", dir.path]).status == 0)
  }

  /// Without segments there are no records to lose: the advice is to restore the manifest or to
  /// remove it, so that a writer creates a journal there.
  @Test func anInvalidManifestBesideNoSegmentsGetsAdvice() async throws {
    let dir = TemporaryDirectory("cli-manifest-alone")
    try Files.write(Array("{garbage".utf8), to: dir.appending(Layout.manifestName))
    for command in ["verify", "log", "stats"] {
      let run = try await Self.rewind([command, dir.path])
      #expect(run.status == 3, "\(command): \(run.err)")
      #expect(
        run.err.contains(
          "manifest.json is not a manifest (JSON with a format and a journalID) in journal \(dir.path), which holds "
            + "no segments, so no records. Restore manifest.json from a backup, or remove it"), "\(command): \(run.err)"
      )
    }
    // Removed as advised, a writer creates a journal there.
    try FileManager.default.removeItem(atPath: dir.appending(Layout.manifestName))
    try Journal(directory: dir.path, options: JournalOptions(durability: .none)).close()
    #expect(try await Self.rewind(["verify", dir.path]).status == 0)
  }

  @Test func statsCountsOneInTheSingular() async throws {
    let dir = TemporaryDirectory("cli-stats-one")
    let demo = try await Self.rewind(["demo", dir.appending("j"), "--events", "1", "--durability", "none"])
    try #require(demo.status == 0, "\(demo.err)")
    let stats = try await Self.rewind(["stats", dir.appending("j")])
    #expect(stats.out.contains("(sequences 1-1), recorded by 1 command\n"), "\(stats.out)")
    #expect(stats.out.contains("1, 1 frame (1 record per frame on average)\n"), "\(stats.out)")
  }

  /// The figure per frame divides every record of the frames by the frames, Rewind events or
  /// not, and its label says records; not cut to a whole number.
  @Test func statsCountsTheRecordsPerFrame() async throws {
    let dir = TemporaryDirectory("cli-stats-per-frame")
    let journal = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    let foreign = NewRecord(timestamp: 1, payload: Array("not a Rewind event".utf8))
    try journal.appendAndWait(Array(repeating: foreign, count: 3))
    try journal.appendAndWait(Array(repeating: foreign, count: 2))
    journal.close()
    let stats = try await Self.rewind(["stats", dir.path])
    #expect(stats.status == 0, "\(stats.err)")
    #expect(stats.out.contains(", 5 records that are not Rewind events\n"), "\(stats.out)")
    #expect(stats.out.contains("1, 2 frames (2.5 records per frame on average)\n"), "\(stats.out)")
  }

  /// Counts of one are singular: one record that is not a Rewind event, one file in quarantine
  /// (stats printed "1 records that are not Rewind events" and "1 files").
  @Test func statsCountsOneOfAThingInTheSingular() async throws {
    let dir = TemporaryDirectory("cli-stats-one")
    let journal = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    try journal.appendAndWait([NewRecord(timestamp: 1, payload: Array("not a Rewind event".utf8))])
    journal.close()
    try FileManager.default.createDirectory(atPath: dir.appending("quarantine"), withIntermediateDirectories: false)
    #expect(FileManager.default.createFile(atPath: dir.appending("quarantine/moved"), contents: Data([1])))
    let stats = try await Self.rewind(["stats", dir.path])
    #expect(stats.status == 0, "\(stats.err)")
    #expect(stats.out.contains(", 1 record that is not a Rewind event\n"), "\(stats.out)")
    #expect(stats.out.contains("quarantined  1 file in "), "\(stats.out)")
  }

  /// A journal written with limits larger than the default (64 MiB batches) whose last batch is
  /// larger than the default allows: the tool reads with the largest limits, so it is sound, and
  /// repair leaves it alone. Read with the default limits, it was a torn tail to verify and repair.
  @Test func aJournalWrittenWithLargerLimitsIsSound() async throws {
    let dir = TemporaryDirectory("cli-larger-limits")
    var options = JournalOptions(durability: .none)
    options.limits = JournalLimits(maxRecordBytes: 8 << 20, maxBatchBytes: 64 << 20)
    // Compressing 21 MiB takes seconds of a debug build: on a thread of its own, not one of the
    // cooperative pool's, where it held up every other test's awaits.
    try await onOwnThread { [options] in
      let journal = try Journal(directory: dir.path, options: options)
      try journal.appendAndWait([NewRecord(timestamp: 1, payload: Array("small".utf8))])
      try journal.appendAndWait(
        (0..<3).map { _ in NewRecord(timestamp: 2, payload: [UInt8](repeating: UInt8(ascii: "z"), count: 7 << 20)) })
      journal.close()
    }
    let verify = try await Self.rewind(["verify", dir.path])
    #expect(verify.status == 0, "\(verify.out)\(verify.err)")
    #expect(verify.out.contains("sound: 4 records"), "\(verify.out)")
    let repair = try await Self.rewind(["repair", dir.path, "--yes"])
    #expect(repair.status == 0, "\(repair.out)\(repair.err)")
    #expect(repair.out.contains("nothing to repair"), "\(repair.out)")
    let stats = try await Self.rewind(["stats", dir.path])
    #expect(stats.status == 0, "\(stats.out)\(stats.err)")
    #expect(!Files.list(dir.path).contains("quarantine"))
  }

  @Test func verifyNotesSegmentsTheIndexNamesNowhere() async throws {
    // An index that stops after the first segment's entry (derived data a writer gave up on):
    // verify says which segments and records it leaves out, as a note, and exits 0.
    let dir = try Self.journal()
    let segments = Files.list(dir.path).filter { $0.hasSuffix(".lz4") }
    try #require(segments.count >= 3)
    let index = try Files.read(dir.appending("index"))
    try #require(index.count == 32 + 40 * segments.count, "one entry per segment")
    try Files.write(Array(index.prefix(32 + 40)), to: dir.appending("index"))

    let verify = try await Self.rewind(["verify", dir.path])
    #expect(verify.status == 0, "\(verify.out)\(verify.err)")
    #expect(verify.out.contains("sound: 300 records"), "\(verify.out)")
    let firsts = segments.map { UInt64(SegmentName.firstSequence($0)) } + [301]
    for position in 1..<segments.count {
      let line =
        "note: the index names no batch of \(segments[position]) "
        + "(sequences \(firsts[position])-\(firsts[position + 1] - 1))"
      #expect(verify.out.contains(line), "\(verify.out)")
    }
    #expect(!verify.out.contains(segments[0]), "\(verify.out)")
  }

  /// A journal whose last segment lost its last frames with its length (a file cut short at a
  /// frame boundary) or to zeros, while the index (an entry every 256 bytes) still names them.
  static func journalWithLostFrames(zeros: Bool) throws -> (dir: TemporaryDirectory, segment: String, cut: Int) {
    let dir = TemporaryDirectory("cli-lost")
    var options = JournalOptions(durability: .none)
    options.indexIntervalBytes = 256
    options.mapsActiveSegment = false
    let journal = try Journal(directory: dir.path, options: options)
    for i in 0..<100 {
      try journal.appendAndWait([NewRecord(timestamp: Int64(i) * 1_000_000_000, payload: Array("record \(i)".utf8))])
    }
    journal.close()
    let segment = try #require(Files.list(dir.path).filter { $0.hasSuffix(".lz4") }.last)
    var bytes = try Files.read(dir.appending(segment))
    let frames = segmentFrames(in: bytes).map(\.offset)
    try #require(frames.count == 100)
    let cut = frames[50]
    if zeros {
      for i in cut..<bytes.count { bytes[i] = 0 }
    } else {
      bytes.removeSubrange(cut...)
    }
    try Files.write(bytes, to: dir.appending(segment))
    return (dir, segment, cut)
  }

  @Test(arguments: [false, true])
  func repairOfALossThatLeftNoBytesQuarantinesNothing(zeros: Bool) async throws {
    // Nothing is left of the lost frames to set aside: an empty file in quarantine/ would claim
    // bytes were kept that were not. The plan and the repair say what happened instead.
    let (dir, segment, cut) = try Self.journalWithLostFrames(zeros: zeros)
    let plan = try await Self.rewind(["repair", dir.path])
    #expect(plan.status == 1, "\(plan.out)")
    #expect(!plan.out.contains("will move 0 bytes"), "\(plan.out)")
    #expect(plan.out.contains("nothing to move of \(segment) from byte offset \(cut)"), "\(plan.out)")
    #expect(plan.out.contains("run again with --yes to carry out the repair"), "\(plan.out)")
    #expect(!plan.out.contains("move them"), "there is nothing to move: \(plan.out)")

    let repair = try await Self.rewind(["repair", dir.path, "--yes"])
    #expect(repair.status == 0, "\(repair.err)")
    #expect(!repair.out.contains("moved 0 bytes"), "\(repair.out)")
    #expect(repair.out.contains("nothing to move of \(segment) from byte offset \(cut)"), "\(repair.out)")
    let quarantined = Files.list(dir.appending("quarantine"))
    #expect(quarantined.isEmpty, "\(quarantined)")
    #expect(Files.size(dir.appending(segment)) == cut, "the zeros after the last frame are cut")
    #expect(try await Self.rewind(["verify", dir.path]).status == 0)
    let journal = try Journal(directory: dir.path)
    defer { journal.close() }
    #expect(journal.recovery.isClean, "\(journal.recovery)")
    #expect(journal.lastSequence == 50)
  }

  @Test func badInputGetsClearErrorsAndExitCodes() async throws {
    let missing = try await Self.rewind(["verify", "/nonexistent/journal"])
    #expect(missing.status == 3)
    #expect(missing.err.contains("/nonexistent/journal does not exist: check the path"))
    // A name longer than a file system takes is no missing journal: the system's reason is given.
    let long = try await Self.rewind(["verify", "/tmp/" + String(repeating: "x", count: 300)])
    #expect(long.status == 3)
    #expect(long.err.contains("cannot be looked at: File name too long"), "\(long.err)")
    #expect(!long.err.contains("does not exist"), "\(long.err)")

    let dir = TemporaryDirectory("cli-bad")
    try Files.write(Array(repeating: 7, count: 100), to: dir.appending("manifest.json"))
    let garbage = try await Self.rewind(["log", dir.path])
    #expect(garbage.status == 3)
    #expect(garbage.err.contains("manifest"))

    let flag = try await Self.rewind(["log", dir.path, "--frobnicate"])
    #expect(flag.status == 2)
    #expect(flag.err.contains("unknown option --frobnicate"))

    let command = try await Self.rewind(["explode"])
    #expect(command.status == 2)

    let number = try await Self.rewind(["log", dir.path, "--limit", "many"])
    #expect(number.status == 2)
  }
}

enum SegmentName {
  static func firstSequence(_ name: String) -> Int { Int(name.prefix(20)) ?? 0 }
}
