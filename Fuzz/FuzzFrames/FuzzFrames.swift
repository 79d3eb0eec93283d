import FuzzSupport
import Glibc

@testable import RewindJournal

// libFuzzer target: the segment reader. The input becomes a journal's only segment (after a valid
// segment header unless it starts with the segment magic itself, so the fuzzer spends its time on
// batch headers and LZ4 frames), then is read to the end and verified. Any outcome but records or a
// JournalError (a trap, a sanitizer report, a hang, a huge allocation) is a finding.
// Build and run: `make fuzz` (see docs/RELIABILITY.md).

private let directory: String = {
  var template = Array("/tmp/rewind-fuzz-frames-XXXXXX".utf8CString)
  guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed") }
  let path = String(cString: made)
  let io = PosixFileIO()
  let id = JournalID(bytes: Array(repeating: 0x5A, count: 16))
  try! io.writeFileAtomically(Manifest(journalID: id).encoded(), to: path + "/manifest.json", directory: path)
  return path
}()

private let header = SegmentHeader(journalID: JournalID(bytes: Array(repeating: 0x5A, count: 16)), firstSequence: 1)
  .encoded()

// Also exported under libFuzzer's name, which its (unused) main in the same archive refers to.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzFrames(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let input = Array(UnsafeBufferPointer(start: data, count: size))
  let bytes = input.starts(with: header.prefix(4)) ? input : header + input
  let path = directory + "/" + Layout.segmentName(firstSequence: 1)
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
  _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
  close(fd)
  let limits = JournalLimits(maxRecordBytes: 16 << 10, maxBatchBytes: 64 << 10)
  do {
    let reader = try JournalReader(directory: directory, limits: limits)
    let cursor = try reader.records()
    while try cursor.next() != nil {}
    _ = try reader.verify()
    _ = try reader.records(since: 0).next()
  } catch is JournalError {
  } catch {
    fatalError("the reader threw something other than a JournalError: \(error)")
  }
  return 0
}

/// Seeds: every segment of the golden journals.
func writeSeeds(to directory: String) {
  for journal in ["v1", "notebook-v1"] {
    let folder = goldenFolder + "/" + journal + "/journal"
    for name in (try? PosixFileIO().contentsOfDirectory(folder)) ?? [] where name.hasSuffix(".lz4") {
      writeSeed(readFile(folder + "/" + name), named: journal + "-" + name, in: directory)
    }
  }
}
