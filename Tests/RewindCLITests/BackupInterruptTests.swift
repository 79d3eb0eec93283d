import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import RewindCLI

/// `rewind backup DIR DEST` interrupted (Ctrl-C, SIGTERM, SIGHUP) used to end with its hidden copy
/// left behind, as big as the journal and out of sight (RELIABILITY 371's Left). It now removes
/// the copy, and what it had moved into an empty DEST, says so and ends by the signal.
@Suite struct BackupInterruptTests {
  /// Interrupted while it copies into a new DEST: the hidden `.NAME.backup-…` beside it is
  /// removed, DEST is not made, one line says so, and the process ends by the signal.
  @Test func anInterruptedBackupLeavesNoHiddenCopy() async throws {
    let dir = TemporaryDirectory("cli-backup-interrupt")
    let journal = try await ExportInterruptTests.largeJournal(in: dir)
    let rewind = try #require(ChildProcess.builtProduct("rewind"))
    for (signal, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM"), (SIGHUP, "SIGHUP")] {
      let out = TemporaryDirectory("cli-backup-interrupt-out")
      let destination = out.appending("copy")
      let run = try await ExportInterruptTests.signalled(
        rewind, ["backup", journal, destination], out: out, signal: signal, errPath: dir.appending("err-\(name)"),
        temporaryPrefix: ".copy.backup-")
      #expect(
        run.reason == .uncaughtSignal && run.status == signal, "\(name): \(run.reason) \(run.status) \(run.err)")
      #expect(
        run.err == "rewind backup: interrupted (\(name)); \(destination) was not made, its partial copy removed\n",
        "\(name): \(run.err)")
      #expect(Files.list(out.path).isEmpty, "\(name): \(Files.list(out.path))")
    }
  }

  /// Into an empty DEST (a mount point, say), the copy is made in DEST/.backup-…: interrupted,
  /// DEST is left empty, as it was.
  @Test func anInterruptedBackupLeavesAnEmptyDestinationEmpty() async throws {
    let dir = TemporaryDirectory("cli-backup-interrupt-empty")
    let journal = try await ExportInterruptTests.largeJournal(in: dir)
    let rewind = try #require(ChildProcess.builtProduct("rewind"))
    let out = TemporaryDirectory("cli-backup-interrupt-empty-out")
    let destination = out.appending("mount")
    try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: false)
    let run = try await ExportInterruptTests.signalled(
      rewind, ["backup", journal, destination], out: out, signal: SIGINT, errPath: dir.appending("err"),
      temporaryPrefix: ".backup-", watched: destination)
    #expect(run.reason == .uncaughtSignal && run.status == SIGINT, "\(run.reason) \(run.status) \(run.err)")
    #expect(
      run.err == "rewind backup: interrupted (SIGINT); \(destination) was left as it was, its partial copy removed\n",
      "\(run.err)")
    #expect(Files.list(destination).isEmpty, "\(Files.list(destination))")
    #expect(Files.list(out.path) == ["mount"])
  }

  /// What the handler does at each step, in process: files moved into an empty DEST before the
  /// manifest are removed with the hidden copy; once the manifest (or the whole copy) is DEST's,
  /// the backup is whole and stays.
  @Test func theCleanUpFollowsTheSteps() throws {
    let out = TemporaryDirectory("cli-backup-cleanup")
    let destination = out.appending("mount")
    let staging = destination + "/.backup-1234abcd"
    try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
    for name in ["00000000000000000001.lz4", "index"] { try Files.write([1], to: destination + "/" + name) }
    for name in ["LOCK", "manifest.json"] { try Files.write([2], to: staging + "/" + name) }
    let partly = BackupCommand.cleanUp(
      destination, after: .moved("index"), staging: staging, moved: ["00000000000000000001.lz4", "index"])
    #expect(partly == "\(destination) was left as it was, its partial copy removed")
    #expect(Files.list(destination).isEmpty, "\(Files.list(destination))")

    try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
    try Files.write([2], to: destination + "/manifest.json")
    let whole = BackupCommand.cleanUp(destination, after: .moved("manifest.json"), staging: staging, moved: [])
    #expect(whole.hasPrefix("the backup to \(destination) was made, but its directory was not synced"), "\(whole)")
    #expect(Files.list(destination) == ["manifest.json"], "the copy stays; only the emptied hidden directory goes")

    let renamed = BackupCommand.cleanUp(out.appending("new"), after: .renamed, staging: nil, moved: [])
    #expect(renamed.hasPrefix("the backup to \(out.appending("new")) was made"), "\(renamed)")
    let before = BackupCommand.cleanUp(
      out.appending("new"), after: .staging(out.appending(".new.backup-1")), staging: out.appending(".new.backup-1"),
      moved: [])
    #expect(before == "\(out.appending("new")) was not made, its partial copy removed")
  }
}
