import Foundation
import Rewind
import RewindJournal

enum BackupCommand: RewindCommand {
  static let name = "backup"
  static let summary = "copy a journal, also while it is written, into a new directory; verified"
  static let help = """
    Usage: rewind backup DIR DEST

    Copies the journal in DIR into DEST, a directory outside DIR that does not exist yet (its
    parent must) or is empty. Takes no lock and runs while a writer appends: it reads the records
    as every reader does, so the copy is the journal as it stood when the backup began, with the
    same journal id and every record from the first on (sequence numbers, timestamps and payloads;
    each frame's records again in one frame); records appended meanwhile are left out. A
    file-by-file copy (cp -r) of a journal being written can miss records when the writer starts a
    new segment while it runs; this cannot. The copy is made in a hidden directory
    (.NAME.backup-XXXXXXXX beside a new DEST, .backup-XXXXXXXX inside an empty one), fsynced, read
    back and verified there, and only then becomes DEST (renamed to it; or its files moved into the
    empty DEST, the manifest last), so that no partial copy passes for one. Interrupted (Ctrl-C,
    SIGTERM, SIGHUP), it removes the hidden directory and what it moved into an empty DEST, leaves
    DEST as it was, says so in one line and ends by the signal (status 130 for Ctrl-C); one that
    comes once DEST holds the whole copy leaves it there. Killed (kill -9), or when the machine
    stops, it leaves the hidden directory (and in an empty DEST files with no manifest, which no
    command reads as a journal), which no later backup removes; remove it yourself. Snapshots
    are not copied (they are derived: an app opening the copy replays from the start or writes
    new ones), nor quarantine/ (what repair moved aside; copy it yourself if you keep it); the
    index is written anew.

    Exit 0 when the copy is made and verified; 1 when it is, but DIR shows records lost before
    the backup (a snapshot past its end, written once records that are gone were durable: the
    copy, which takes no snapshot, would hide it), said on standard error (`rewind verify DIR`
    reports it); 2 when DEST holds anything, is not a directory,
    has no parent directory or lies inside DIR (nothing there is touched); 3 when DIR cannot be
    read (damage, located) or DEST cannot be written: a failed backup removes what it wrote and
    leaves DEST as it was, and says so. (Standard output that cannot take the last line, once the
    copy is made, is exit 3 too, saying "cannot write to standard output": `rewind verify DEST`.)

    Examples:
      rewind backup /tmp/notes /backups/notes-2026-12-05

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let args = try Arguments(arguments, options: [], flags: [])
    let paths = try args.positionals(exactly: 2, needs: "DIR and DEST")
    let (directory, destination) = (paths[0], paths[1])
    guard !destination.isEmpty else { throw UsageError("DEST is empty: name a new or empty directory") }
    let reader = try openJournal(directory)
    let report: BackupReport
    // Only the tool's own process handles the signals (not a test's or an app's sinks).
    let interrupts = context.output.ownsProcess ? context.output : nil
    if let interrupts {
      let untouched = Self.untouched(destination)
      Interrupts.watch(name, output: interrupts) { untouched }
    }
    defer { if interrupts != nil { Interrupts.end() } }
    do {
      var staging: String?
      var moved: [String] = []
      report = try reader.backUp(to: destination) { step, run in
        guard interrupts != nil else { return try run() }
        switch step {
        case .staging(let path): staging = path
        case .moved(let name): moved.append(name)
        case .renamed: break
        }
        let (copy, names) = (staging, moved)
        try Interrupts.step(run) { Self.cleanUp(destination, after: step, staging: copy, moved: names) }
      }
      // Made, synced and verified: a signal from now on only ends the process, saying nothing of
      // a sync cut short that was not (helper-227).
      if interrupts != nil { Interrupts.end() }
    } catch let error as JournalError where error.code == .invalidArgument {
      throw UsageError("DEST \(destination): \(error.message)")
    } catch let error as JournalError where error.directory != directory {
      // Writing the copy failed: its error names the hidden directory it was written in, which
      // is removed by now, as the journal. Said for DEST instead.
      throw BackupNotMade(destination: destination, error: error, whileReading: false)
    } catch let error as JournalError {
      // Reading DIR failed (damage, located): said as it is, then what became of DEST.
      throw BackupNotMade(destination: destination, error: error, whileReading: true)
    }
    context.output.out(
      visible(
        "backed up \(counted(report.records, "record")) (through sequence \(report.lastSequence)) in "
          + "\(counted(report.frames, "frame")) to \(destination): \(report.bytes) bytes, verified") + "\n")
    // A snapshot past the end is the one sign of records lost at the journal's end once a writer
    // has numbered new ones (`rewind verify`); the copy carries no snapshot, so it is said here.
    // Against the end read after the listing: a live writer's snapshot of records appended since
    // the backup began is none (`SnapshotStore.pastTheEnd`).
    let (_, end, past) = SnapshotStore(journal: directory).pastTheEnd(lastSequence: report.lastSequence)
    guard past.isEmpty else {
      context.output.err(
        visible(
          "rewind backup: \(directory) has lost records: snapshots/\(SnapshotStore.fileName(past[0])) "
            + (past.count > 1 ? "(and \(past.count - 1) more) " : "")
            + "is past its last record, \(end), and was written once the records through it were durable. "
            + "The copy holds every record \(directory) still has, and no snapshot; `rewind verify \(shellWord(directory))` "
            + "reports the loss") + "\n")
      return .findings
    }
    return .success
  }
}

extension BackupCommand {
  /// How many times the handler lists the hidden copy again while the copy's writer, running
  /// on until the process ends, makes files in it (`FileIO.removeDirectoryAndFiles`).
  static let removalAttempts = 100

  /// What an interrupt before any change leaves: DEST as it was (empty), or not made.
  static func untouched(_ destination: String) -> String {
    var status = stat()
    return lstat(destination, &status) == 0 ? "\(destination) was left as it was" : "\(destination) was not made"
  }

  /// Removes what an interrupted backup to `destination` has made by its last step, `step`
  /// (`staging`: the hidden copy; `moved`: the files moved into an empty DEST, in order), and
  /// says what is left. Runs in `Interrupts`' handler, holding its lock: the copy's writer may
  /// still make a file in the hidden directory meanwhile, so its listing is taken again until
  /// the directory goes.
  static func cleanUp(_ destination: String, after step: JournalReader.BackupStep, staging: String?, moved: [String])
    -> String
  {
    // Verified before it became DEST's; only the directory's sync (and the hidden directory's
    // removal, inside an empty DEST) was left.
    let whole = "the backup to \(destination) was made and verified, but its directory was not synced"
    switch step {
    case .renamed:
      return whole
    case .moved(let name) where name == Layout.manifestName:
      // The library removes the hidden directory, empty now; removed here too, its removal
      // there finds it gone and takes nothing back (helper-227: it undid the moves).
      if let staging { _ = PosixFileIO().removeDirectoryAndFiles(staging, attempts: Self.removalAttempts) }
      return whole
    case .staging, .moved:
      // The manifest moves last and did not: DEST is no journal yet. What moved goes first.
      var status = stat()
      let existed = staging.map { $0.hasPrefix(destination + "/") } ?? (lstat(destination, &status) == 0)
      for name in moved.reversed() { unlink(destination + "/" + name) }
      let left = existed ? "\(destination) was left as it was" : "\(destination) was not made"
      guard let staging else { return left }
      return PosixFileIO().removeDirectoryAndFiles(staging, attempts: Self.removalAttempts)
        ? left + ", its partial copy removed"
        : left + "; its partial copy \(staging) could not be removed: remove it yourself"
    }
  }
}

/// A backup that failed: the journal's error, and what became of DEST. Failing to write the
/// copy, the copy's error is said without its directory (the hidden one the copy was written in,
/// removed by now); failing to read DIR, its error is said whole.
struct BackupNotMade: Error, CustomStringConvertible {
  var destination: String
  var error: JournalError
  /// Whether reading the journal failed, not writing the copy.
  var whileReading: Bool

  var description: String {
    let left = "What it wrote was removed: \(destination) was left as it was (absent, or empty)"
    if whileReading { return errorSentence(error) + "The backup to \(destination) was not made. " + left }
    var cause = error
    cause.directory = nil
    return "the backup to \(destination) failed: \(cause). " + left
  }
}
