import FuzzSupport
import Glibc
import Notebook
import RewindJournal

@testable import Rewind

// libFuzzer target: the snapshot decoder. The input is a snapshot file (SnapshotFile.decode) and,
// with its header and checksum repaired so the fuzzer reaches it, the canonically encoded
// Workspace state inside (FieldDecoder). Any outcome but a value or a thrown error is a finding.
// Build and run: `make fuzz` (see docs/RELIABILITY.md).

// Also exported under libFuzzer's name, which its (unused) main in the same archive refers to.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzSnapshots(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let input = Array(UnsafeBufferPointer(start: data, count: size))
  _ = try? SnapshotFile.decode(input)
  // The same bytes as the state of a well-formed file.
  let file = SnapshotFile(
    sequence: 1, journalID: Array(repeating: 0, count: 16), fingerprint: Workspace.fingerprint,
    digest: StateDigest(bytes: SHA256.hash(input)), lastRecord: SnapshotFile.noRecord, state: input)
  if let decoded = try? SnapshotFile.decode(file.encoded()),
    let state = try? FieldDecoder().decode(Workspace.self, from: decoded.state)
  {
    _ = try? StateDigest.of(state)
  }
  return 0
}

/// Seeds: a snapshot file of the golden Notebook journal's state, and that state alone.
func writeSeeds(to directory: String) {
  guard let replayed = try? Replay.rebuild(Workspace.self, directory: goldenFolder + "/notebook-v1/journal"),
    let state = try? CanonicalEncoding.encode(replayed.state)
  else { return }
  let file = SnapshotFile(
    sequence: replayed.lastSequence, journalID: Array(repeating: 0, count: 16), fingerprint: Workspace.fingerprint,
    digest: StateDigest(bytes: SHA256.hash(state)), lastRecord: SnapshotFile.noRecord, state: state)
  writeSeed(file.encoded(), named: "snapshot", in: directory)
  writeSeed(state, named: "state", in: directory)
}
