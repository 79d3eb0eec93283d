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

  /// The handler running right after the manifest moved into an empty DEST, as a signal there
  /// makes it (helper-227, 1 trial in 163): it removes the emptied hidden directory, and the
  /// library's own removal of it then failed (ENOENT) and took every moved file back out of DEST,
  /// while the line said the backup was made. Now the library finds it gone and DEST stays whole.
  @Test func theHandlerAfterTheManifestMovedLeavesTheBackupWhole() async throws {
    let dir = TemporaryDirectory("cli-backup-handler-manifest")
    let journal = try await NotebookJournal.write(commands: 40, seed: 21)
    let destination = dir.appending("mount")
    try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: false)
    var staging: String?
    var moved: [String] = []
    let report = try JournalReader(directory: journal.path).backUp(to: destination) { step, run in
      try run()
      switch step {
      case .staging(let path): staging = path
      case .moved(let name): moved.append(name)
      case .renamed: break
      }
      guard step == .moved("manifest.json") else { return }
      let said = BackupCommand.cleanUp(destination, after: step, staging: staging, moved: moved)
      #expect(said == "the backup to \(destination) was made and verified, but its directory was not synced")
    }
    #expect(report.lastSequence == journal.lastSequence)
    #expect(moved.last == "manifest.json")
    #expect(!Files.list(destination).contains { $0.hasPrefix(".backup-") })
    #expect(try JournalReader(directory: destination).verify().isSound)
    #expect(try JournalReader(directory: destination).lastSequence() == journal.lastSequence)
  }

  /// The handler running right after the hidden directory was made: the copy's journal is open
  /// there by then (made in the step), so once the handler removes the directory nothing makes it
  /// again; the copy fails, and leaves nothing (helper-227's reading: a signal before the copy's
  /// `mkdir` would have been followed by it).
  @Test func theHandlerAfterTheStagingStepLeavesNothing() async throws {
    let dir = TemporaryDirectory("cli-backup-handler-staging")
    let journal = try await NotebookJournal.write(commands: 40, seed: 22)
    let destination = dir.appending("copy")
    var said: String?
    #expect(throws: JournalError.self) {
      try JournalReader(directory: journal.path).backUp(to: destination) { step, run in
        try run()
        guard case .staging(let path) = step else { return }
        #expect(Files.list(path).contains("manifest.json"), "the step opened the copy")
        said = BackupCommand.cleanUp(destination, after: step, staging: path, moved: [])
      }
    }
    #expect(said == "\(destination) was not made, its partial copy removed")
    #expect(Files.list(dir.path).isEmpty, "\(Files.list(dir.path))")
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
    #expect(whole == "the backup to \(destination) was made and verified, but its directory was not synced")
    #expect(Files.list(destination) == ["manifest.json"], "the copy stays; only the emptied hidden directory goes")

    let renamed = BackupCommand.cleanUp(out.appending("new"), after: .renamed, staging: nil, moved: [])
    #expect(renamed.hasPrefix("the backup to \(out.appending("new")) was made"), "\(renamed)")
    let before = BackupCommand.cleanUp(
      out.appending("new"), after: .staging(out.appending(".new.backup-1")), staging: out.appending(".new.backup-1"),
      moved: [])
    #expect(before == "\(out.appending("new")) was not made, its partial copy removed")
  }
}
