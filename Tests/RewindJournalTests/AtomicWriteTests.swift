import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// `writeFileAtomically` (snapshots, the manifest, the index's rewrite): a failed write, sync or
/// rename leaves the file as it was and no temporary file behind, which on a full disk would keep
/// the space it took.
@Suite struct AtomicWriteTests {
  static let faults: [(FaultInjectingFileIO.Fault, String)] = [
    (.writeError(ENOSPC), ".tmp"), (.shortWrite(bytes: 100, thenErrno: ENOSPC), ".tmp"),
    (.syncError(EIO), ".tmp"), (.renameError(EIO), "state"),
  ]

  @Test(arguments: 0..<faults.count)
  func aFailedWriteLeavesTheOldFileAndNoTemporary(fault index: Int) throws {
    try Self.failWrite(fault: index, temporaryName: nil)
  }

  /// A temporary file given by the caller (a snapshot write's own, `state.<pid>-<n>.tmp`) is the
  /// one written, and is removed as the default one is when the write fails.
  @Test(arguments: 0..<faults.count)
  func aFailedWriteLeavesNoTemporaryUnderTheNameGiven(fault index: Int) throws {
    try Self.failWrite(fault: index, temporaryName: "state.writer-7.tmp")
  }

  /// Writes "old" to `state`, then fails a second write with fault `index` (aimed at the
  /// temporary file, `temporaryName` when given, or at the rename) and checks that only the old
  /// file is left.
  static func failWrite(fault index: Int, temporaryName: String?) throws {
    let (fault, path) = faults[index]
    let dir = TemporaryDirectory("atomic-write")
    let io = FaultInjectingFileIO()
    let target = dir.appending("state")
    let temporary = temporaryName.map(dir.appending)
    try io.writeFileAtomically(Array("old".utf8), to: target, directory: dir.path, temporary: temporary)
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["state"])
    io.arm(fault, pathContains: path == ".tmp" ? temporaryName ?? path : path)
    #expect(throws: (any Error).self, "\(fault)") {
      try io.writeFileAtomically(
        [UInt8](repeating: 1, count: 4_096), to: target, directory: dir.path, temporary: temporary)
    }
    #expect(io.struck == 1, "\(fault)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["state"], "\(fault)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == Data("old".utf8), "\(fault)")
  }
}
