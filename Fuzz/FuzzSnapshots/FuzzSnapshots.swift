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
    digest: StateDigest(bytes: SHA256.hash(input)), state: input)
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
    digest: StateDigest(bytes: SHA256.hash(state)), state: state)
  writeSeed(file.encoded(), named: "snapshot", in: directory)
  writeSeed(state, named: "state", in: directory)
}

/// The repository's Journal/golden folder, found from this file's path.
let goldenFolder: String = {
  var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
  parts.removeLast(3)
  return parts.joined(separator: "/") + "/Journal/golden"
}()

/// Writes one seed file.
func writeSeed(_ bytes: [UInt8], named name: String, in directory: String) {
  mkdir(directory, 0o700)
  let fd = open(directory + "/" + name, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
  guard fd >= 0 else { return }
  _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
  close(fd)
}

/// The bytes of a file, or nothing.
func readFile(_ path: String) -> [UInt8] {
  let fd = open(path, O_RDONLY)
  guard fd >= 0 else { return [] }
  defer { close(fd) }
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 1 << 16)
  while true {
    let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    if n <= 0 { break }
    bytes += chunk[0..<n]
  }
  return bytes
}
