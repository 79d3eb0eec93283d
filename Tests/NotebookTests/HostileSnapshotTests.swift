import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

/// Snapshots of a journal from an untrusted source: a file cannot make a reader allocate without
/// bound, and a `snapshots` folder that is a link to elsewhere is neither read nor written.
@Suite struct HostileSnapshotTests {
  static func journal(_ dir: TemporaryDirectory) async throws -> StateDigest {
    let manager = try await writeWorkload(dir.path, seed: 12, commands: 40)
    let digest = try StateDigest.of(manager.state)
    manager.close()
    return digest
  }

  @Test func aSnapshotFileOfAnySizeIsSkippedWithoutReadingIt() async throws {
    let dir = TemporaryDirectory("huge-snapshot")
    let digest = try await Self.journal(dir)
    try FileManager.default.createDirectory(atPath: dir.appending("snapshots"), withIntermediateDirectories: true)
    // A sparse file claiming a terabyte: no disk space, but reading it whole would need a terabyte.
    let name = "00000000000000000010.snapshot"
    let fd = open(dir.appending("snapshots/" + name), O_WRONLY | O_CREAT, 0o600)
    try #require(fd >= 0)
    #expect(ftruncate(fd, 1 << 40) == 0)
    close(fd)
    let outcome = try Replay.run(Workspace.self, directory: dir.path)
    #expect(try StateDigest.of(outcome.state) == digest)
    #expect(outcome.report.skippedSnapshots.map(\.file) == [name])
    if case .unreadable(let why)? = outcome.report.skippedSnapshots.first?.reason {
      #expect(why.contains("more than"), "\(why)")
    } else {
      Issue.record("expected an unreadable snapshot: \(outcome.report.skippedSnapshots)")
    }
  }

  @Test func aSnapshotsFolderThatIsALinkIsNeitherReadNorWritten() async throws {
    let dir = TemporaryDirectory("linked-snapshots")
    let digest = try await Self.journal(dir)
    // A valid snapshot of this very journal, placed outside it and linked in.
    try Snapshots.take(Workspace.self, directory: dir.path)
    let outside = dir.appending("outside")
    try FileManager.default.moveItem(atPath: dir.appending("snapshots"), toPath: outside)
    try FileManager.default.createSymbolicLink(atPath: dir.appending("snapshots"), withDestinationPath: outside)
    let before = Files.list(outside)

    let outcome = try Replay.run(Workspace.self, directory: dir.path)
    #expect(outcome.report.snapshotSequence == nil, "a snapshot was read through the link")
    #expect(try StateDigest.of(outcome.state) == digest)
    #expect(throws: (any Error).self) { try Snapshots.take(Workspace.self, directory: dir.path) }
    #expect(Files.list(outside) == before, "nothing may be written outside the journal")
  }
}
