import Foundation
import Notebook
import RewindJournal
import Testing

@testable import Rewind

/// A Notebook journal with two `rewind.checkpoint` v1 records (sequences 6 and 10), written by the
/// code from before checkpoint marks existed (main at 58750a0: `Manager.recordCheckpoint()`
/// computed the digest inside the funnel) and kept as its bytes (Journal/golden/checkpoints-v1;
/// `log.txt` beside it is `rewind log` of it). Marks and digests came without changing any
/// model's fingerprint, so that checkpoints like these are still compared: if the fingerprint or
/// the reading of v1 records changes, they are skipped or fail to decode, and this fails.
@Suite struct CheckpointGoldenTests {
  static let journalPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Journal/golden/checkpoints-v1/journal").path

  @Test func checkpointsWrittenBeforeMarksStillVerify() throws {
    let report = try Replay.verify(Workspace.self, directory: Self.journalPath)
    #expect(report.lastSequence == 10)
    #expect(
      report.checkpointsVerified == 2, "skipped \(report.checkpointsSkipped): is the fingerprint still the old one?")
    #expect(report.checkpointsSkipped == 0)
    #expect(report.firstDivergence == nil)
    #expect(report.unfinishedCheckpoints.isEmpty && report.strayCheckpointDigests.isEmpty)
  }

  @Test func theyAreVersionOneCheckpointRecords() throws {
    let registry = Workspace.makeRegistry()
    let cursor = try JournalReader(directory: Self.journalPath).records(from: 1)
    var checkpoints: [UInt64] = []
    while let record = try cursor.next() {
      switch try DecodedRecords.decode(record, registry: registry) {
      case .checkpoint(let sequence, let checkpoint):
        #expect(checkpoint.fingerprint == Workspace.fingerprint.description)
        checkpoints.append(sequence)
      case .checkpointMark, .checkpointDigest:
        Issue.record("record \(record.sequence) is a mark or a digest: this journal predates them")
      case .event:
        break
      }
    }
    #expect(checkpoints == [6, 10])
  }
}

extension CheckpointGoldenTests {
  /// Journal/SNAPSHOTS.md's worked example, for a reader in another language: Workspace's
  /// fingerprint, its 15 lines and its empty state as the document shows them. The bytes built
  /// from the document's lines and the code's empty state hash to the fingerprint the document
  /// names (the code's), and the empty state renders as the document writes it.
  @Test func snapshotsMdShowsWorkspacesFingerprintLinesAndEmptyState() throws {
    let document = try String(
      contentsOfFile: URL(fileURLWithPath: Self.journalPath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("SNAPSHOTS.md").path, encoding: .utf8)
    let fingerprint = try #require(document.firstMatch(of: /fingerprint\n`([0-9a-f]{64})`/)?.1)
    #expect(String(fingerprint) == Workspace.fingerprint.description)
    let block = try #require(document.firstMatch(of: /these\n15 lines:\n\n```\n([^`]*)```/)?.1)
    let lines = block.split(whereSeparator: \.isWhitespace).map(String.init)
    #expect(lines.count == 15 && lines == lines.sorted(), "\(lines)")
    var writer = FieldBytesWriter()
    writer.appendString("rewind.fingerprint.v1")
    writer.appendString(String(reflecting: Workspace.self))
    writer.appendVarint(1)
    writer.appendVarint(UInt64(lines.count))
    for line in lines { writer.appendString(line) }
    writer.bytes += try CanonicalEncoding.encode(Workspace())
    #expect(StateDigest(bytes: SHA256.hash(writer.bytes)) == Workspace.fingerprint)
    let empty = try #require(document.firstMatch(of: /as empty state `([^`]*)`/)?.1)
    let shown = empty.replacing(/\s+/, with: "")
    #expect(shown == (try CanonicalJSON.render(Workspace())).replacing(/\s+/, with: ""), "\(shown)")
  }
}
