import Foundation
import Notebook
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// Golden snapshot files (Journal/golden/snapshots-v1 and snapshots-v2): the Notebook golden
/// journal's records (a copy of Journal/golden/notebook-v1/journal, 21 records) with a snapshot
/// file for each verdict of Journal/SNAPSHOTS.md that needs neither model code (`stale` needs the
/// model's fingerprint) nor a journal whose own id cannot be read (`unverifiable`), written by the
/// code of their format and then damaged by `record`, never by hand; one of them is a symbolic
/// link (`unreadable`). `snapshots.txt` beside each is its expected reading, in the words of
/// `scripts/journal-reader.py --verify` (its lines naming `snapshots/`: notes, then problems),
/// made from the Swift checks (`SnapshotStore.fileProblems`, what `rewind verify` runs);
/// `make format-check` compares the second reader's reading with it, and the tests below compare
/// the Swift checks, `rewind verify`, and (where python3 is installed) the second reader.
///
/// The files of the format written today (`Golden.current`) are what `record` writes, byte for
/// byte; those of an older format are read as they are, as a journal's own older files are. Re-record only
/// when the snapshot format changes, beside the older versions, never over them:
/// `REWIND_RECORD_GOLDEN=1 swift test --filter SnapshotGoldenTests`.
@Suite struct SnapshotGoldenTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

  /// One golden folder: its snapshot files and what each is. A file is a snapshot written at
  /// `sequence` of the golden journal (21 records), then damaged by `damage` (given the file's
  /// bytes) and stored under `name`.
  struct Golden: Sendable, CustomTestStringConvertible {
    var format: Int
    var files: [(name: UInt64, sequence: UInt64, verdict: String, damage: @Sendable ([UInt8]) -> [UInt8])]

    var folder: String { root.appendingPathComponent("Journal/golden/snapshots-v\(format)").path }
    var journalPath: String { folder + "/journal" }
    var testDescription: String { "snapshots-v\(format)" }

    /// Snapshot names that are symbolic links to another golden file (`to`, by a relative
    /// path): `unreadable`, since a reader opens no link (SNAPSHOTS.md: one planted in a journal
    /// could name any file), whatever the file it names holds.
    var links: [(name: UInt64, to: UInt64)] { [(20, 4)] }

    /// Every golden file's name in order, links included.
    var names: [String] { (files.map(\.name) + links.map(\.name)).sorted().map(SnapshotStore.fileName) }

    /// Each golden file's name and the verdict it should get, links included.
    var verdicts: [(name: UInt64, verdict: String)] {
      files.map { ($0.name, $0.verdict) } + links.map { ($0.name, "unreadable") }
    }

    /// Format 1, written before snapshots named their last record (recorded at c26ebde). Its
    /// file 16, made format 2 by flipping the version, was `unknownFormat` while no
    /// code read format 2; read as format 2 now, its header is 32 bytes longer than the file's
    /// and its length field lies in the state: `corrupt`.
    static let formatOne = Golden(
      format: 1,
      files: [
        (4, 4, "ok", { $0 }),
        (8, 8, "corrupt", { $0 }),
        (10, 10, "corrupt", { $0 }),
        (12, 4, "corrupt", { $0 }),
        (14, 14, "foreign", { $0 }),
        (16, 16, "corrupt", { $0 }),
        (18, 18, "inconsistent", { $0 }),
        (21, 21, "ok", { $0 }),
        (25, 21, "beyondJournal", { $0 }),
        (30, 21, "beyondJournal", { $0 }),
      ])

    /// The format written today.
    static let current = Golden(
      format: 2,
      files: [
        (4, 4, "ok", { $0 }),
        // A byte of the state changed: the checksum no longer matches.
        (8, 8, "corrupt", { flipped($0, at: SnapshotFile.headerSize) }),
        // Cut short, inside the header.
        (10, 10, "corrupt", { Array($0.prefix(60)) }),
        // Whole, but holding sequence 4 under the name of 12.
        (12, 4, "corrupt", { $0 }),
        // Another journal's id, its checksum made to match.
        (14, 14, "foreign", { rewritten($0) { $0.journalID[0] ^= 0xFF } }),
        // Format version 3, its checksum made to match: checked before the length and checksum.
        (16, 16, "unknownFormat", { resealed(flipped($0, at: 8, with: 0x01)) }),
        // A byte of the state changed, the checksum made to match, the digest not.
        (18, 18, "inconsistent", { rewritten($0) { $0.state[$0.state.count / 2] ^= 0x01 } }),
        // The last record's digest changed, the checksum made to match: the journal holds another
        // record 19 than the one the state includes.
        (19, 19, "otherHistory", { rewritten($0) { $0.lastRecord?[0] ^= 0x01 } }),
        (21, 21, "ok", { $0 }),
        // Named past the journal's end: `beyondJournal` by the name alone, before the bytes are
        // read, whole but holding another sequence number, or cut short (RELIABILITY 230: a
        // reader that checks the bytes first calls them `corrupt`).
        (25, 21, "beyondJournal", { $0 }),
        (30, 21, "beyondJournal", { Array($0.prefix(60)) }),
      ])

    static let all = [formatOne, current]
  }

  static func flipped(_ bytes: [UInt8], at offset: Int, with mask: UInt8 = 0x01) -> [UInt8] {
    var bytes = bytes
    bytes[offset] ^= mask
    return bytes
  }

  /// `bytes` with their last 4 bytes the CRC-32C of the rest again.
  static func resealed(_ bytes: [UInt8]) -> [UInt8] {
    var body = Array(bytes.dropLast(4))
    let crc = CRC32C.checksum(body)
    for shift in stride(from: 0, to: 32, by: 8) { body.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
    return body
  }

  /// The file `bytes` with `change` made to its fields, encoded again (with a checksum to match).
  static func rewritten(_ bytes: [UInt8], _ change: (inout SnapshotFile) -> Void) -> [UInt8] {
    guard var file = try? SnapshotFile.decode(bytes) else { return bytes }
    change(&file)
    return file.encoded()
  }

  /// Writes the golden folder of the current format into `folder`: the journal, its snapshot
  /// files and `snapshots.txt`.
  static func record(into folder: String) throws {
    let golden = Golden.current
    let journal = folder + "/journal"
    try Files.copyDirectory(root.appendingPathComponent("Journal/golden/notebook-v1/journal").path, to: journal)
    // The snapshots are written into a copy of the journal (`SnapshotStore.write`, as replay
    // rebuilds each state), and the golden files made from their bytes.
    let staging = folder + "/staging"
    try Files.copyDirectory(journal, to: staging)
    defer { try? FileManager.default.removeItem(atPath: staging) }
    var bytes: [UInt64: [UInt8]] = [:]
    for sequence in Set(golden.files.map(\.sequence)).sorted() {
      let state = try Replay.rebuild(Workspace.self, directory: journal, through: sequence).state
      _ = try SnapshotStore(journal: staging).write(state, at: sequence)
      bytes[sequence] = try Files.read(staging + "/snapshots/" + SnapshotStore.fileName(sequence))
    }
    try FileManager.default.createDirectory(atPath: journal + "/snapshots", withIntermediateDirectories: true)
    for file in golden.files {
      let written = try #require(bytes[file.sequence])
      try Files.write(file.damage(written), to: journal + "/snapshots/" + SnapshotStore.fileName(file.name))
    }
    for link in golden.links {
      try FileManager.default.createSymbolicLink(
        atPath: journal + "/snapshots/" + SnapshotStore.fileName(link.name),
        withDestinationPath: SnapshotStore.fileName(link.to))
    }
    try reading(journal).write(toFile: folder + "/snapshots.txt", atomically: true, encoding: .utf8)
  }

  /// The reading of the journal's snapshot files by the Swift checks `rewind verify` runs, in
  /// the words of `journal-reader.py --verify`: a note per file in name order (`ok` with its
  /// fingerprint and digest, or the reason it is skipped), then a problem per file past the end.
  static func reading(_ journal: String) throws -> String {
    let store = SnapshotStore(journal: journal)
    let last = try JournalReader(directory: journal).lastSequence()
    let problems = Dictionary(
      uniqueKeysWithValues: store.fileProblems(lastSequence: last).map { ($0.sequence, $0.reason) })
    var notes: [String] = []
    var lost: [String] = []
    for sequence in store.sequences() {
      let name = "snapshots/" + SnapshotStore.fileName(sequence)
      guard let reason = problems[sequence] else {
        let file = try SnapshotFile.decode(try Files.read(journal + "/" + name))
        notes.append("note: \(name): ok, fingerprint \(file.fingerprint), digest \(file.digest)")
        continue
      }
      if case .beyondJournal = reason {
        lost.append("problem: \(name): beyondJournal")
      } else {
        notes.append("note: \(name): \(verdict(reason))")
      }
    }
    return (notes + lost).joined(separator: "\n") + "\n"
  }

  /// A reason's name, as SNAPSHOTS.md gives it.
  static func verdict(_ reason: SnapshotProblem.Reason) -> String {
    switch reason {
    case .unreadable: "unreadable"
    case .corrupt: "corrupt"
    case .unknownFormat: "unknownFormat"
    case .foreign: "foreign"
    case .stale: "stale"
    case .beyondJournal: "beyondJournal"
    case .otherHistory: "otherHistory"
    case .inconsistent: "inconsistent"
    case .unverifiable: "unverifiable"
    }
  }

  @Test(
    .enabled(
      if: ProcessInfo.processInfo.environment["REWIND_RECORD_GOLDEN"] == "1", "records the golden files when asked"))
  func recordGoldenSnapshotsWhenAsked() throws {
    let folder = Golden.current.folder
    try? FileManager.default.removeItem(atPath: folder)
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    try Self.record(into: folder)
  }

  /// The golden files of the current format are what `record` writes today, byte for byte (the
  /// links, link for link). If the bytes differ, the snapshot format or the canonical encoding
  /// changed: record a new version beside this one.
  @Test func goldenSnapshotsAreAsRecorded() throws {
    let golden = Golden.current
    let scratch = TemporaryDirectory("snapshot-golden")
    try Self.record(into: scratch.path)
    let folder = golden.journalPath + "/snapshots/"
    let names = Files.list(folder).filter { $0.hasSuffix(".snapshot") }
    #expect(names == golden.names)
    let linked = Set(golden.links.map { SnapshotStore.fileName($0.name) })
    for name in names {
      let recorded = scratch.appending("journal/snapshots/") + name
      if linked.contains(name) {
        // A checkout without symbolic links (core.symlinks off) holds a file here instead.
        #expect(
          try FileManager.default.destinationOfSymbolicLink(atPath: folder + name)
            == FileManager.default.destinationOfSymbolicLink(atPath: recorded),
          "\(name) should be a symbolic link, as recorded")
        continue
      }
      #expect(
        try Files.read(folder + name) == Files.read(recorded),
        "\(name) is written differently today: record a new golden version")
    }
    let expected = try String(contentsOfFile: golden.folder + "/snapshots.txt", encoding: .utf8)
    #expect(try String(contentsOfFile: scratch.appending("snapshots.txt"), encoding: .utf8) == expected)
  }

  /// Each golden folder's reading by the Swift checks is its `snapshots.txt`, each file with the
  /// verdict `files` gives it, each link `unreadable`.
  @Test(arguments: Golden.all) func goldenSnapshotsAreReadAsExpected(_ golden: Golden) throws {
    let folder = golden.journalPath + "/snapshots/"
    #expect(Files.list(folder).filter { $0.hasSuffix(".snapshot") } == golden.names)
    let expected = try String(contentsOfFile: golden.folder + "/snapshots.txt", encoding: .utf8)
    #expect(try Self.reading(golden.journalPath) == expected)
    for (sequence, verdict) in golden.verdicts {
      let name = "snapshots/" + SnapshotStore.fileName(sequence)
      #expect(expected.contains("\(name): \(verdict)"), "\(name) should be \(verdict):\n\(expected)")
    }
  }

  /// `rewind verify` reads the golden files as `snapshots.txt` says: exit 1, a problem for each
  /// file past the end, a note naming the reason of each other file skipped, nothing of the two
  /// that are whole.
  @Test(arguments: Golden.all) func rewindVerifyReadsThemAsExpected(_ golden: Golden) async throws {
    let copy = TemporaryDirectory("snapshot-golden-verify")
    try Files.copyDirectory(golden.journalPath, to: copy.appending("journal"))
    let run = try await ToolRun.run("notebook-rewind", ["verify", copy.appending("journal")])
    #expect(run.status == 1, "\(run.out)\(run.err)")
    let lines = run.out.split(separator: "\n")
    for file in golden.verdicts {
      let name = "snapshots/" + SnapshotStore.fileName(file.name)
      let said = lines.filter { $0.contains(name) }
      switch file.verdict {
      case "ok": #expect(said.isEmpty, "\(said)")
      case "beyondJournal": #expect(said.count == 1 && said[0].hasPrefix("problem: \(name): records up to"), "\(said)")
      case let verdict:
        let reason =
          [
            "unknownFormat": "snapshot format 3 is unknown", "foreign": "belongs to another journal",
            "otherHistory": "of another history",
          ][verdict] ?? verdict
        #expect(said.count == 1 && said[0].hasPrefix("note: \(name) \(reason)"), "\(said)")
      }
    }
  }

  /// The second reader, `scripts/journal-reader.py --verify`, reads them as `snapshots.txt` says,
  /// and exits 1 for the files past the end (`make format-check` runs the same comparison). It
  /// needs python3 and liblz4.so.1, which `scripts/install-deps` installs (CI does).
  @Test(arguments: Golden.all) func theSecondReaderReadsThemAsExpected(_ golden: Golden) async throws {
    guard
      let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first(where: FileManager.default.isExecutableFile)
    else {
      Issue.record("python3 is missing: install it (scripts/install-deps); CI does")
      return
    }
    let run = try await ToolRun.run(
      python, [Self.root.appendingPathComponent("scripts/journal-reader.py").path, golden.journalPath, "--verify"])
    #expect(run.status == 1, "\(run.out)\(run.err)")
    let said = (run.out + run.err).split(separator: "\n").filter { $0.contains(" snapshots/") }.map { $0 + "\n" }
    let expected = try String(contentsOfFile: golden.folder + "/snapshots.txt", encoding: .utf8)
    #expect(said.joined() == expected)
  }
}
