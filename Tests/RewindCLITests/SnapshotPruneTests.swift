import Foundation
import Notebook
import Rewind
import RewindTestSupport
import Testing

/// `rewind snapshot --keep K` beside a snapshot past the journal's end (records lost after it
/// was written; `verify` reports it as a problem).
@Suite struct SnapshotPruneTests {
  /// `--keep` counted such a snapshot among the newest and removed the one it had just written
  /// ("snapshot of workspace at sequence N", then "pruned snapshots at ..., N"): the snapshot it
  /// reported was gone. It keeps the newest K at or before the state it wrote, and leaves the one
  /// past the end, saying so, for `verify` to report and the next writer to move aside.
  /// `rewind snapshot` when the newest usable snapshot already holds the last state writes
  /// nothing (`Snapshots.take`, RELIABILITY 361), and said it wrote one, in the same words as a
  /// write (the stress of snapshots beside live writers, helper-212). It says so now.
  @Test func aSnapshotAlreadyOnDiskIsSaidSo() async throws {
    let journal = try await NotebookJournal.write(commands: 30, seed: 5)
    let first = try await ToolRun.run("notebook-rewind", ["snapshot", journal.path])
    #expect(first.status == 0, "\(first.err)")
    let said = "snapshot of workspace at sequence \(journal.lastSequence), digest "
    #expect(first.out.hasPrefix(said) && !first.out.contains("nothing written"), "\(first.out)")
    let file = journal.directory.appending("snapshots/" + SnapshotStore.fileName(journal.lastSequence))
    let inode = try FileManager.default.attributesOfItem(atPath: file)[.systemFileNumber] as? Int
    let again = try await ToolRun.run("notebook-rewind", ["snapshot", journal.path])
    #expect(again.status == 0, "\(again.err)")
    #expect(
      again.out == first.out.dropLast() + ": already on disk, nothing written\n", "\(first.out)\(again.out)")
    #expect(try FileManager.default.attributesOfItem(atPath: file)[.systemFileNumber] as? Int == inode)
  }

  @Test func keepNeverRemovesTheSnapshotJustWritten() async throws {
    let journal = try await NotebookJournal.write(commands: 60, seed: 21)
    let last = journal.lastSequence
    let store = SnapshotStore(journal: journal.path)
    for sequence: UInt64 in [20, 40] { _ = try store.write(journal.states[Int(sequence)], at: sequence) }
    // A snapshot past the end: written at the last record, then named for a later one.
    _ = try store.write(journal.states[Int(last)], at: last)
    let folder = journal.directory.appending("snapshots/")
    try FileManager.default.moveItem(
      atPath: folder + SnapshotStore.fileName(last), toPath: folder + SnapshotStore.fileName(last + 50))
    let run = try await ToolRun.run("notebook-rewind", ["snapshot", journal.path, "--keep", "1"])
    #expect(run.status == 0, "\(run.err)")
    #expect(run.out.hasPrefix("snapshot of workspace at sequence \(last), digest "), "\(run.out)")
    #expect(run.out.hasSuffix("pruned snapshots at 20, 40\n"), "\(run.out)")
    #expect(store.sequences() == [last, last + 50])
    #expect(
      run.err.contains("snapshots/\(SnapshotStore.fileName(last + 50)) is past the journal's end, \(last)"),
      "\(run.err)")
    // Without one past the end, --keep keeps the newest K as before.
    try FileManager.default.removeItem(atPath: folder + SnapshotStore.fileName(last + 50))
    _ = try store.write(journal.states[20], at: 20)
    let plain = try await ToolRun.run("notebook-rewind", ["snapshot", journal.path, "--keep", "1"])
    #expect(plain.status == 0, "\(plain.err)")
    #expect(plain.out.hasSuffix("pruned snapshots at 20\n"), "\(plain.out)")
    #expect(plain.err.isEmpty, "\(plain.err)")
    #expect(store.sequences() == [last])
  }

  /// `--keep 0` (or a negative count) is bad input, exit 2, refused before the replay: no
  /// snapshot is written and none removed, as `SnapshotStore.prune` refuses such a count too.
  @Test func keepBelowOneIsRefusedWithNothingWrittenOrRemoved() async throws {
    let journal = try await NotebookJournal.write(commands: 20, seed: 22)
    let store = SnapshotStore(journal: journal.path)
    for sequence: UInt64 in [5, 10] { _ = try store.write(journal.states[Int(sequence)], at: sequence) }
    for keep in ["0", "-1", "-0"] {
      let run = try await ToolRun.run("notebook-rewind", ["snapshot", journal.path, "--keep", keep])
      #expect(run.status == 2, "--keep \(keep): \(run.out)\(run.err)")
      #expect(run.out.isEmpty, "--keep \(keep): \(run.out)")
      #expect(
        run.err == "rewind snapshot: --keep needs a whole number in 1...1000000, not '\(keep)'\n", "\(run.err)")
      #expect(store.sequences() == [5, 10], "--keep \(keep)")
    }
  }

  /// A `snapshots` that is a symbolic link is not followed: `rewind snapshot` failed with
  /// "mkdir …/snapshots: Not a directory" and `verify` said nothing (a review of the snapshots,
  /// Dec 7). The error says what stands there, and `verify` notes it.
  @Test func aSnapshotsFolderThatIsALinkIsSaidSo() async throws {
    let journal = try await NotebookJournal.write(commands: 10, seed: 9)
    let elsewhere = TemporaryDirectory("cli-snapshots-elsewhere")
    try FileManager.default.createSymbolicLink(
      atPath: journal.directory.appending("snapshots"), withDestinationPath: elsewhere.path)
    let snapshot = try await ToolRun.run("rewind", ["snapshot", journal.path])
    #expect(snapshot.status == 3, "\(snapshot.out)\(snapshot.err)")
    #expect(
      snapshot.err.contains("must be a directory of its own (a symbolic link or a file stands there"), "\(snapshot.err)"
    )
    #expect(Files.list(elsewhere.path).isEmpty, "nothing written through the link")
    let verify = try await ToolRun.run("rewind", ["verify", journal.path])
    #expect(
      verify.out.contains("note: snapshots is a symbolic link or a file, not a directory of the journal's own"),
      "\(verify.out)")
  }
}
