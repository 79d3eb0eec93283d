import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import RewindCLI

/// `rewind export DIR --jsonl -o FILE` interrupted, and FILE replaced by another user's process:
/// an interrupt (Ctrl-C, SIGTERM, SIGHUP) used to end the process with its temporary file left
/// beside FILE, and a replaced FILE took the process's user and group.
@Suite struct ExportInterruptTests {
  /// Whether process `pid` is stopped, from /proc/PID/stat (its state follows the command's name,
  /// in parentheses that the name itself may contain).
  static func isStopped(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = stat.lastIndex(of: ")")
    else { return false }
    return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("T")
  }

  /// A 20000-event journal: its export (about 6 MB) takes a debug build a few tenths of a second.
  static func largeJournal(in dir: TemporaryDirectory) async throws -> String {
    let journal = dir.appending("journal")
    let demo = try await ToolRun.run(
      "rewind", ["demo", journal, "--events", "20000", "--seed", "1", "--durability", "none"])
    try #require(demo.status == 0, "\(demo.err)")
    return journal
  }

  /// A new directory `name` holding FILE, events.jsonl, as "old\n": what an export with `-o`
  /// replaces, or must leave as it was.
  static func existingFile(in name: String) throws -> (out: TemporaryDirectory, file: String) {
    let out = TemporaryDirectory(name)
    let file = out.appending("events.jsonl")
    try Files.write(Array("old\n".utf8), to: file)
    return (out, file)
  }

  /// Runs `executable` with `arguments` (an export to `out`/events.jsonl), stops it (SIGSTOP)
  /// once its temporary file has appeared, checks that the file is still there once it is
  /// stopped (the export still writing it), sends `signal` and continues it: the signal reaches
  /// it mid-export however fast the machine is, with no sleep that races. Returns how it ended
  /// and its standard error (written to `errPath`, or to `standardError` when one is given: then
  /// `err` is empty). A child still running 30 s after the signal is killed (SIGKILL).
  /// `temporaryPrefix` and `watched`: the temporary a file name starts with, and the directory
  /// it appears in (`out` when nil), for a command other than export (`backup`'s hidden copy).
  static func signalled(
    _ executable: String, _ arguments: [String], out: TemporaryDirectory, signal: Int32, errPath: String,
    standardError: FileHandle? = nil, temporaryPrefix: String = ".events.jsonl.export-", watched: String? = nil
  ) async throws -> (status: Int32, reason: Process.TerminationReason, err: String) {
    let watched = watched ?? out.path
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    let (status, reason, temporary, stillWriting) = try await onOwnThread {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: executable)
      process.arguments = arguments
      process.standardInput = FileHandle.nullDevice
      process.standardOutput = FileHandle.nullDevice
      process.standardError = try standardError ?? FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
      try process.run()
      let watchdog = ChildWatchdog(process)
      let pid = process.processIdentifier
      var temporary: String?
      while temporary == nil, process.isRunning {
        temporary = Files.list(watched).first { $0.hasPrefix(temporaryPrefix) }
        if temporary == nil { usleep(200) }
      }
      var stillWriting = false
      if temporary != nil {
        kill(pid, SIGSTOP)
        while process.isRunning, !Self.isStopped(pid) { usleep(200) }
        stillWriting = Files.list(watched).contains { $0.hasPrefix(temporaryPrefix) }
        kill(pid, signal)
        kill(pid, SIGCONT)
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning, Date() < deadline { usleep(1000) }
        if process.isRunning { kill(pid, SIGKILL) }
      }
      process.waitUntilExit()
      try watchdog.end(waitingFor: "\(arguments) to end")
      return (process.terminationStatus, process.terminationReason, temporary, stillWriting)
    }
    try #require(temporary != nil, "\(signal): no temporary file appeared")
    try #require(stillWriting, "\(signal): the export was done before it was stopped; export a larger journal")
    return (status, reason, String(decoding: try Files.read(errPath), as: UTF8.self))
  }

  /// Interrupted while it writes, the export removes its temporary file, leaves FILE as it was,
  /// says so in one line and ends by the signal (a shell's status 128 + its number). It used to
  /// exit 128 + the number: a shell running a script takes that for a command that handled the
  /// interrupt and runs the script on after a Ctrl-C.
  @Test func anInterruptedExportLeavesNoTemporaryFile() async throws {
    let dir = TemporaryDirectory("cli-export-interrupt")
    let journal = try await Self.largeJournal(in: dir)
    let rewind = try #require(ChildProcess.builtProduct("rewind"))
    for (signal, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM"), (SIGHUP, "SIGHUP")] {
      let (out, file) = try Self.existingFile(in: "cli-export-interrupt-files")
      let run = try await Self.signalled(
        rewind, ["export", journal, "--jsonl", "-o", file], out: out, signal: signal,
        errPath: dir.appending("err-\(name)"))
      #expect(
        run.reason == .uncaughtSignal && run.status == signal, "\(name): \(run.reason) \(run.status) \(run.err)")
      #expect(
        run.err == "rewind export: interrupted (\(name)); \(file) was left as it was, its temporary file removed\n",
        "\(name): \(run.err)")
      #expect(Files.list(out.path) == ["events.jsonl"], "\(name): \(Files.list(out.path))")
      #expect(try ExportOutputTests.text(file) == "old\n", "\(name)")
    }
  }

  /// Interrupted with standard error a full pipe that no one reads, the export still ends by the
  /// signal, its temporary file removed. The handler wrote its line to standard error holding the
  /// lock and waited for the write for ever: the process never ended, and a second Ctrl-C waited
  /// behind the first.
  @Test func anInterruptEndsTheExportThoughStandardErrorBlocks() async throws {
    let dir = TemporaryDirectory("cli-export-interrupt-blocked")
    let journal = try await Self.largeJournal(in: dir)
    let rewind = try #require(ChildProcess.builtProduct("rewind"))
    let (out, file) = try Self.existingFile(in: "cli-export-interrupt-blocked-files")
    // A pipe filled to the brim, its read end kept open and never read.
    var ends: [Int32] = [0, 0]
    try #require(pipe(&ends) == 0)
    defer { for end in ends { close(end) } }
    let flags = fcntl(ends[1], F_GETFL)
    try #require(fcntl(ends[1], F_SETFL, flags | O_NONBLOCK) == 0)
    let filler = [UInt8](repeating: 0x2E, count: 4096)
    while filler.withUnsafeBytes({ write(ends[1], $0.baseAddress, $0.count) }) > 0 {}
    try #require(errno == EAGAIN)
    // The child's write blocks: its descriptor shares this one's flags.
    try #require(fcntl(ends[1], F_SETFL, flags) == 0)
    let run = try await Self.signalled(
      rewind, ["export", journal, "--jsonl", "-o", file], out: out, signal: SIGINT,
      errPath: dir.appending("err"), standardError: FileHandle(fileDescriptor: ends[1], closeOnDealloc: false))
    // Ended by the interrupt itself: an export that waited for its standard error is killed
    // (SIGKILL) 30 seconds after the signal, and reads so here.
    #expect(
      run.reason == .uncaughtSignal && run.status == SIGINT,
      "\(run.reason) \(run.status): the export waited for its standard error")
    #expect(Files.list(out.path) == ["events.jsonl"], "\(Files.list(out.path))")
    #expect(try ExportOutputTests.text(file) == "old\n")
  }

  /// A signal ignored when the tool started (`nohup` ignores SIGHUP; a shell, SIGINT for a job
  /// in the background) stays ignored: the export goes on and replaces FILE.
  @Test func anIgnoredSignalStaysIgnored() async throws {
    let dir = TemporaryDirectory("cli-export-ignored")
    let journal = try await Self.largeJournal(in: dir)
    let rewind = try #require(ChildProcess.builtProduct("rewind"))
    let (out, file) = try Self.existingFile(in: "cli-export-ignored-files")
    let script = #"trap '' HUP; exec "$0" "$@""#
    let run = try await Self.signalled(
      "/bin/sh", ["-c", script, rewind, "export", journal, "--jsonl", "-o", file], out: out, signal: SIGHUP,
      errPath: dir.appending("err"))
    #expect(run.reason == .exit && run.status == 0, "\(run.reason) \(run.status) \(run.err)")
    #expect(run.err.isEmpty, "\(run.err)")
    #expect(Files.list(out.path) == ["events.jsonl"], "\(Files.list(out.path))")
    #expect(try ExportOutputTests.text(file).hasPrefix("{\"seq\":1,"))
  }

  /// A replaced FILE keeps its user and group (and mode), as the user who replaced it may give
  /// them: only root can give a file another user.
  @Test(.enabled(if: getuid() == 0, "only root can give a file another user"))
  func aReplacedFileKeepsItsOwner() async throws {
    let dir = TemporaryDirectory("cli-export-owner")
    let journal = try await ExportOutputTests.journal(in: dir)
    let (out, file) = try Self.existingFile(in: "cli-export-owner-files")
    try #require(chown(file, 4321, 8765) == 0 && chmod(file, 0o640) == 0)
    let captured = Captured()
    let status = await RewindTool().run(["export", journal, "--jsonl", "-o", file], output: captured.output)
    #expect(status == 0, "\(captured.err)")
    var info = stat()
    try #require(lstat(file, &info) == 0)
    #expect(info.st_uid == 4321 && info.st_gid == 8765, "kept: \(info.st_uid):\(info.st_gid)")
    #expect(info.st_mode & 0o7777 == 0o640, "kept: \(String(info.st_mode & 0o7777, radix: 8))")
    #expect(try ExportOutputTests.text(file) != "old\n")
    #expect(Files.list(out.path) == ["events.jsonl"])
  }

  /// A user who replaces another user's FILE keeps its group when the group is one of the user's
  /// own (README: "another user keeps a group of its own"). `fchown` to the file's user and group
  /// failed with EPERM as a whole, and the file took the user's own group.
  @Test(
    .enabled(
      if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
      "runs the tool as another user"))
  func anotherUserKeepsAGroupOfItsOwn() async throws {
    let dir = TemporaryDirectory("cli-export-group")
    let journal = try await ExportOutputTests.journal(in: dir)
    let (out, file) = try Self.existingFile(in: "cli-export-group-files")
    try #require(chown(file, 1111, 8765) == 0 && chmod(file, 0o666) == 0)
    // The user 4321 reads the journal and writes in FILE's directory.
    for path in [dir.path, out.path] + (FileManager.default.subpaths(atPath: dir.path) ?? []).map(dir.appending) {
      try #require(chmod(path, 0o777) == 0, "\(path)")
    }
    let rewind = try #require(ChildProcess.builtProduct("rewind"))
    let (status, err) = try await onOwnThread {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
      process.arguments =
        ["--reuid", "4321", "--regid", "4321", "--groups", "8765", rewind, "export", journal, "--jsonl", "-o", file]
      let errPipe = Pipe()
      process.standardOutput = FileHandle.nullDevice
      process.standardError = errPipe
      try process.run()
      let err = String(decoding: PipeReads.toEnd(errPipe.fileHandleForReading), as: UTF8.self)
      process.waitUntilExit()
      return (process.terminationStatus, err)
    }
    #expect(status == 0, "\(err)")
    var info = stat()
    try #require(lstat(file, &info) == 0)
    #expect(info.st_uid == 4321 && info.st_gid == 8765, "the user's, the group kept: \(info.st_uid):\(info.st_gid)")
    #expect(try ExportOutputTests.text(file).hasPrefix("{\"seq\":1,"))
  }

  /// `rewind --help`'s exit codes and `export --help` say that an export -o that cannot write
  /// its file exits 3, and what an interrupt does (the overview named only the journal, a repair
  /// and standard output for 3).
  @Test func theHelpSaysHowAnExportToAFileEnds() async throws {
    func words(_ arguments: [String]) async -> String {
      let captured = Captured()
      _ = await RewindTool().run(arguments, output: captured.output)
      return captured.out.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }
    let overview = await words(["--help"])
    #expect(overview.contains("3 the journal cannot be opened or read,"), "\(overview)")
    #expect(overview.contains("export -o cannot write its file (FILE is left as it was)"), "\(overview)")
    #expect(overview.contains("ends by the signal (status 128 + its number: 130 for Ctrl-C)"), "\(overview)")
    let export = await words(["export", "--help"])
    #expect(export.contains("3 when the journal cannot be read, or -o's FILE cannot be written"), "\(export)")
    #expect(export.contains("Interrupted (Ctrl-C, SIGTERM, SIGHUP), it removes its temporary file"), "\(export)")
    #expect(export.contains(".NAME.export-*.tmp"), "\(export)")
  }

  /// What the handler removes at each stage the export can be in when the signal comes: the
  /// temporary file while it is written, nothing once it was renamed over FILE (the signal
  /// handler cannot run between the rename and its noting: both run under its lock).
  @Test func anInterruptRemovesOnlyTheTemporaryFile() throws {
    let out = TemporaryDirectory("cli-export-interrupt-stages")
    let file = out.appending("events.jsonl")
    let temporary = out.appending(".events.jsonl.export-0000abcd.tmp")
    try Files.write(Array("old\n".utf8), to: file)
    let export = try ExportFile(file)
    #expect(ExportInterrupts.cleanUp(export, at: .starting) == "\(file) was left as it was")
    try Files.write(Array("partial\n".utf8), to: temporary)
    #expect(
      ExportInterrupts.cleanUp(export, at: .writing(temporary: temporary))
        == "\(file) was left as it was, its temporary file removed")
    #expect(Files.list(out.path) == ["events.jsonl"])
    // Renamed: the temporary file's name is gone, and FILE holds the whole export.
    #expect(
      ExportInterrupts.cleanUp(export, at: .replaced)
        == "the export was written to \(file), but its directory was not synced")
    #expect(try ExportOutputTests.text(file) == "old\n")
    let new = try ExportFile(out.appending("new.jsonl"))
    #expect(ExportInterrupts.cleanUp(new, at: .starting) == "\(out.appending("new.jsonl")) was not made")
  }
}
