import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import RewindCLI

/// `rewind export DIR --jsonl --output FILE`: the export is written aside and renamed over FILE
/// only when it is whole. A redirect (`> FILE`) of an export that met damage, a full disk or a
/// kill left the part written, every line whole, telling it from a whole export only by the exit
/// status; `--output` leaves FILE as it was (absent, or its old content) and no temporary file.
@Suite struct ExportOutputTests {
  /// A seeded journal whose export is about 100 KB: more than one buffer (64 KiB) written.
  static func journal(in dir: TemporaryDirectory) async throws -> String {
    let path = dir.appending("journal")
    let demo = try await ToolRun.run(
      "rewind", ["demo", path, "--events", "300", "--seed", "1", "--durability", "none"])
    try #require(demo.status == 0, "\(demo.err)")
    return path
  }

  static func text(_ path: String) throws -> String { String(decoding: try Files.read(path), as: UTF8.self) }

  static func mode(_ path: String) -> UInt32 {
    var info = stat()
    return lstat(path, &info) == 0 ? UInt32(info.st_mode & 0o7777) : 0
  }

  /// A name of 235 to 255 bytes, valid for the file, made the hidden temporary name beside it
  /// too long (`.NAME.export-XXXXXXXX.tmp`, `.NAME.backup-X`): `export -o` and `backup` failed
  /// with ENAMETOOLONG (found by the review of the audit commands, Dec 6). The temporary names
  /// keep the name's first 200 bytes, whole characters.
  @Test func namesNearTheLimitAreWritten() async throws {
    let dir = TemporaryDirectory("cli-export-long-names")
    let journal = try await Self.journal(in: dir)
    let out = TemporaryDirectory("cli-export-long-files")
    let file = out.appending(String(repeating: "é", count: 100) + String(repeating: "b", count: 55))
    let export = try await ToolRun.run("rewind", ["export", journal, "--jsonl", "-o", file])
    #expect(export.status == 0, "\(export.err)")
    let standard = try await ToolRun.run("rewind", ["export", journal, "--jsonl"])
    #expect(try Self.text(file) == standard.out)
    let backup = out.appending(String(repeating: "c", count: 250))
    let copied = try await ToolRun.run("rewind", ["backup", journal, backup])
    #expect(copied.status == 0, "\(copied.err)")
    let verify = try await ToolRun.run("rewind", ["verify", backup])
    #expect(verify.status == 0, "\(verify.out)")
    #expect(
      Files.list(out.path).sorted()
        == [String(repeating: "c", count: 250), String(file.split(separator: "/").last!)].sorted())
    #expect(ResolvedPath.temporaryStem(String(repeating: "é", count: 101)) == String(repeating: "é", count: 100))
    #expect(ResolvedPath.temporaryStem("short") == "short")
  }

  /// FILE holds exactly what standard output gets, for a whole journal and a selection; a new
  /// FILE has a redirect's mode (0666 less the umask), a replaced one keeps its own; nothing
  /// else is left in the directory.
  @Test func theFileHoldsWhatStandardOutputWould() async throws {
    let dir = TemporaryDirectory("cli-export-output")
    let journal = try await Self.journal(in: dir)
    let out = TemporaryDirectory("cli-export-output-files")
    let rewind = try #require(ChildProcess.builtProduct("rewind"))
    for selection in [[], ["--from", "20", "--to", "200", "--type", "note.*"]] {
      let standard = try await ToolRun.run("rewind", ["export", journal, "--jsonl"] + selection)
      #expect(standard.status == 0, "\(standard.err)")
      #expect(standard.out.utf8.count > 65_536 || !selection.isEmpty)
      let file = out.appending("events.jsonl")
      try? FileManager.default.removeItem(atPath: file)
      // The umask set by the shell, so the mode expected does not depend on the test's.
      let script = #"umask 027; exec "$0" "$@""#
      let written = try await ToolRun.run(
        "/bin/sh", ["-c", script, rewind, "export", journal, "--jsonl", "-o", file] + selection)
      #expect(written.status == 0, "\(written.err)")
      #expect(written.out.isEmpty && written.err.isEmpty, "\(written.out)\(written.err)")
      #expect(try Self.text(file) == standard.out, "\(selection)")
      #expect(Self.mode(file) == 0o640, "0666 less the umask, as a redirect: \(String(Self.mode(file), radix: 8))")
      #expect(Files.list(out.path) == ["events.jsonl"])
      // Replaced: the new content, the old file's mode.
      try Files.write(Array("old\n".utf8), to: file)
      chmod(file, 0o604)
      let again = try await ToolRun.run("rewind", ["export", journal, "--jsonl", "--output", file] + selection)
      #expect(again.status == 0, "\(again.err)")
      #expect(try Self.text(file) == standard.out)
      #expect(Self.mode(file) == 0o604, "kept: \(String(Self.mode(file), radix: 8))")
      #expect(Files.list(out.path) == ["events.jsonl"])
    }
  }

  /// `-o -` is standard output, as for most tools that take an output file: it wrote a file
  /// named `-` in the working directory (found by the review of the audit commands, Dec 6).
  /// `-o ./-` still names that file.
  @Test func aDashIsStandardOutput() async throws {
    let dir = TemporaryDirectory("cli-export-dash")
    let journal = try await Self.journal(in: dir)
    let out = TemporaryDirectory("cli-export-dash-files")
    let rewind = try #require(ChildProcess.builtProduct("rewind"))
    let standard = try await ToolRun.run("rewind", ["export", journal, "--jsonl"])
    for option in ["-o", "--output"] {
      let dashed = try await ToolRun.run(
        "/bin/sh", ["-c", #"cd "$0" && exec "$@""#, out.path, rewind, "export", journal, "--jsonl", option, "-"])
      #expect(dashed.status == 0, "\(dashed.err)")
      #expect(dashed.out == standard.out, "\(option)")
      #expect(Files.list(out.path).isEmpty, "\(Files.list(out.path))")
    }
    let named = try await ToolRun.run(
      "/bin/sh", ["-c", #"cd "$0" && exec "$@""#, out.path, rewind, "export", journal, "--jsonl", "-o", "./-"])
    #expect(named.status == 0, "\(named.err)")
    #expect(named.out.isEmpty)
    #expect(try Self.text(out.appending("-")) == standard.out)
  }

  /// Damage met, even read past, makes the export partial: FILE is not made (or keeps its old
  /// content), no temporary file is left, and the message says so (exit 3). The damage is still
  /// located on standard error as it is met.
  @Test(arguments: DamagedJournalCommandTests.Damage.allCases)
  func aDamagedJournalLeavesTheFileAsItWas(damage: DamagedJournalCommandTests.Damage) async throws {
    let (journal, intact, _) = try await DamagedJournalCommandTests.damaged(damage)
    let out = TemporaryDirectory("cli-export-output-damaged")
    let file = out.appending("events.jsonl")
    let absent = try await ToolRun.run("rewind", ["export", journal.path, "--jsonl", "-o", file])
    #expect(absent.status == 3, "\(absent.err)")
    #expect(absent.out.isEmpty)
    #expect(absent.err.contains("byte offset"), "located: \(absent.err)")
    #expect(
      absent.err.hasSuffix(
        "\(file) was not made: --output writes a whole export or none, and this one would "
          + "miss the records the damage holds (without --output, every event the damage does not hold is written out)\n"
      ),
      "\(absent.err)")
    #expect(Files.list(out.path).isEmpty, "no FILE, no temporary file: \(Files.list(out.path))")
    try Files.write(Array("old\n".utf8), to: file)
    let existing = try await ToolRun.run("rewind", ["export", journal.path, "--jsonl", "--output", file])
    #expect(existing.status == 3, "\(existing.err)")
    #expect(existing.err.contains("\(file) was left as it was: "), "\(existing.err)")
    #expect(try Self.text(file) == "old\n")
    #expect(Files.list(out.path) == ["events.jsonl"])
    // A selection that ends before the damage is whole, and written.
    let before = try await ToolRun.run(
      "rewind", ["export", journal.path, "--jsonl", "-o", file, "--to", String(intact - 1)])
    #expect(before.status == 0, "\(before.err)")
    #expect(try Self.text(file).split(separator: "\n").count == Int(intact - 1))
  }

  /// A write, the sync or the rename that fails (ENOSPC, EIO), at the first buffer or after one
  /// was written: FILE as it was, no temporary file (on a full disk it would hold its space).
  @Test(arguments: [
    FaultInjectingFileIO.Fault.writeError(ENOSPC), .shortWrite(bytes: 100, thenErrno: ENOSPC), .syncError(EIO),
    .renameError(EIO),
  ])
  func aFailedWriteLeavesNoFile(fault: FaultInjectingFileIO.Fault) async throws {
    let dir = TemporaryDirectory("cli-export-output-fault")
    let journal = try await Self.journal(in: dir)
    let out = TemporaryDirectory("cli-export-output-fault-files")
    let file = out.appending("events.jsonl")
    for (skip, old) in [(0, nil), (1, "old\n")] as [(Int, String?)] {
      if let old { try Files.write(Array(old.utf8), to: file) }
      let io = FaultInjectingFileIO()
      // The temporary file is `.events.jsonl.export-XXXXXXXX.tmp`, renamed to `events.jsonl`;
      // only a write can come after one that succeeded.
      let rename = fault == .renameError(EIO)
      let skipped = fault == .syncError(EIO) || rename ? 0 : skip
      io.arm(fault, pathContains: rename ? "/events.jsonl" : "/.events.jsonl.export-", skip: skipped)
      var tool = RewindTool()
      tool.fileIO = io
      let captured = Captured()
      let status = await tool.run(["export", journal, "--jsonl", "-o", file], output: captured.output)
      #expect(status == 3, "\(fault): \(captured.err)")
      #expect(captured.out.isEmpty)
      let said = old == nil ? "\(file) was not made\n" : "\(file) was left as it was\n"
      #expect(captured.err.hasPrefix("rewind export: cannot write the export to \(file): "), "\(captured.err)")
      #expect(captured.err.hasSuffix(said), "\(captured.err)")
      #expect(Files.list(out.path) == (old == nil ? [] : ["events.jsonl"]), "\(fault): \(Files.list(out.path))")
      if let old { #expect(try Self.text(file) == old) }
    }
  }

  /// FILE that cannot be written as a file is a usage error (exit 2) before anything is read or
  /// written: a missing directory, a directory, a symbolic link, a device, an empty name, the
  /// option given twice.
  @Test func badPathsAreUsageErrors() async throws {
    let dir = TemporaryDirectory("cli-export-output-bad")
    let journal = try await Self.journal(in: dir)
    let out = TemporaryDirectory("cli-export-output-bad-files")
    try Files.write(Array("a file\n".utf8), to: out.appending("plain"))
    try FileManager.default.createDirectory(atPath: out.appending("sub"), withIntermediateDirectories: false)
    try FileManager.default.createSymbolicLink(atPath: out.appending("link"), withDestinationPath: "plain")
    let before = Files.list(out.path)
    let cases: [(arguments: [String], message: String)] = [
      (["-o", out.appending("missing/events.jsonl")], "its directory \(out.path)/missing does not exist"),
      (["-o", out.appending("plain/events.jsonl")], "its directory \(out.path)/plain is not a directory"),
      (["-o", out.appending("sub")], "is a directory"),
      (["--output", out.appending("sub/")], "names a directory"),
      (["-o", out.appending("sub/..")], "names a directory"),
      (["-o", out.appending("link")], "is a symbolic link"),
      (["-o", "/dev/null"], "is not a regular file"),
      (["--output", ""], "--output needs a file name"),
      (["-o", out.appending("a"), "--output", out.appending("b")], "-o and --output are one option, given twice"),
      (["-o", out.appending("a"), "-o", out.appending("b")], "-o given twice"),
      (["-o"], "-o needs a value"),
    ]
    for (arguments, message) in cases {
      let captured = Captured()
      let status = await RewindTool().run(["export", journal, "--jsonl"] + arguments, output: captured.output)
      #expect(status == 2, "\(arguments): \(captured.err)")
      #expect(captured.err.hasPrefix("rewind export: "), "\(arguments): \(captured.err)")
      #expect(captured.err.contains(message), "\(arguments): \(captured.err)")
      #expect(captured.out.isEmpty)
      #expect(Files.list(out.path) == before, "\(arguments): nothing written")
    }
    #expect(try Self.text(out.appending("plain")) == "a file\n")
  }

  /// FILE inside the journal's own directory is a usage error (exit 2) with nothing written:
  /// renamed over a segment or the manifest, an export replaced the journal's records (`verify`
  /// then found a segment with no header, and every record gone), with exit 0. Reached through a
  /// symbolic link or `..` too, and for a name no file of the journal has yet.
  @Test func aFileInsideTheJournalIsAUsageError() async throws {
    let dir = TemporaryDirectory("cli-export-output-inside")
    let journal = try await Self.journal(in: dir)
    try FileManager.default.createSymbolicLink(atPath: dir.appending("link"), withDestinationPath: "journal")
    let files = Files.list(journal)
    let segment = try #require(files.first { Layout.firstSequence(ofSegmentNamed: $0) != nil })
    let before = try files.map { try Files.read(journal + "/" + $0) }
    for path in [
      journal + "/" + segment, journal + "/manifest.json", journal + "/events.jsonl",
      dir.appending("link/") + segment, journal + "/../journal/index",
    ] {
      let captured = Captured()
      let status = await RewindTool().run(["export", journal, "--jsonl", "-o", path], output: captured.output)
      #expect(status == 2, "\(path): \(captured.err)")
      #expect(captured.err.contains("lies inside the journal's own directory"), "\(path): \(captured.err)")
      #expect(captured.out.isEmpty)
    }
    #expect(Files.list(journal) == files, "nothing written in the journal's directory")
    #expect(try files.map { try Files.read(journal + "/" + $0) } == before, "the journal's files unchanged")
    let verify = Captured()
    #expect(await RewindTool().run(["verify", journal], output: verify.output) == 0, "\(verify.err)")
  }

  /// Through a bind mount of the journal's directory (a container's volume, say), FILE's path
  /// is outside it, and `export -o` replaced the journal's manifest and segments with exit 0;
  /// `backup` wrote its copy inside the journal (helper-222, Dec 7). Both are refused now, by the
  /// directory's identity, and through a bind mount of a folder inside it too, which the first
  /// mends missed (the reviews of the day's change). Needs `mount --bind` (root, and a
  /// container that allows mounts).
  @Test(.enabled(if: BindMount.permitted, "mount --bind is not permitted here"))
  func aFileInsideTheJournalThroughABindMountIsRefused() async throws {
    let dir = TemporaryDirectory("cli-export-output-bind")
    let journal = try await Self.journal(in: dir)
    // A folder two levels down (helper-224: the first mends compared only the folders directly
    // in the journal's directory).
    let quarantine = journal + "/quarantine/sub"
    try FileManager.default.createDirectory(atPath: quarantine, withIntermediateDirectories: true)
    try Files.write(Array("kept bytes".utf8), to: quarantine + "/kept.tail")
    let (alias, kept) = (dir.appending("alias"), dir.appending("kept"))
    for folder in [alias, kept] {
      try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
    }
    try #require(BindMount.run(["--bind", journal, alias]), "mount --bind")
    defer {
      // Unmounted before the directory is removed, which would otherwise reach through the mount.
      _ = BindMount.run([alias], command: "/bin/umount")
      _ = BindMount.run([kept], command: "/bin/umount")
      withExtendedLifetime(dir) {}
    }
    try #require(BindMount.run(["--bind", quarantine, kept]), "mount --bind of quarantine/sub")
    let captured = Captured()
    let status = await RewindTool().run(
      ["export", journal, "--jsonl", "-o", kept + "/kept.tail"], output: captured.output)
    #expect(status == 2, "\(captured.err)")
    #expect(try Files.read(quarantine + "/kept.tail") == Array("kept bytes".utf8))
    let files = Files.list(journal).filter { $0 != "quarantine" }
    let segment = try #require(files.first { Layout.firstSequence(ofSegmentNamed: $0) != nil })
    let before = try files.map { try Files.read(journal + "/" + $0) }
    for path in [alias + "/manifest.json", alias + "/" + segment, alias + "/events.jsonl"] {
      let captured = Captured()
      let status = await RewindTool().run(["export", journal, "--jsonl", "-o", path], output: captured.output)
      #expect(status == 2, "\(path): \(captured.err)")
      #expect(captured.err.contains("lies inside the journal's own directory"), "\(path): \(captured.err)")
    }
    let backup = Captured()
    #expect(await RewindTool().run(["backup", journal, alias + "/copy"], output: backup.output) == 2, "\(backup.err)")
    #expect(backup.err.contains("lies inside the journal's own directory"), "\(backup.err)")
    #expect(Files.list(journal).filter { $0 != "quarantine" } == files, "nothing written in the journal's directory")
    #expect(try files.map { try Files.read(journal + "/" + $0) } == before, "the journal's files unchanged")
  }
}

/// `mount --bind`, where this process may use it: as root, in a container that allows mounts.
enum BindMount {
  static let permitted: Bool = {
    guard geteuid() == 0 else { return false }
    let probe = TemporaryDirectory("bind-probe")
    defer { withExtendedLifetime(probe) {} }
    let (from, to) = (probe.appending("from"), probe.appending("to"))
    guard (try? FileManager.default.createDirectory(atPath: from, withIntermediateDirectories: false)) != nil,
      (try? FileManager.default.createDirectory(atPath: to, withIntermediateDirectories: false)) != nil,
      run(["--bind", from, to])
    else { return false }
    return run([to], command: "/bin/umount")
  }()

  /// Runs `command` (mount by default) with `arguments`; whether it exited 0.
  static func run(_ arguments: [String], command: String = "/bin/mount") -> Bool {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: command)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return false }
    process.waitUntilExit()
    return process.terminationStatus == 0
  }
}
