public import CFuzzer
import Glibc

// What every libFuzzer target shares: the command line (`TARGET --write-seeds DIR` writes the seed
// corpus and exits; anything else goes to libFuzzer's driver: -max_total_time=, corpus folders, …)
// and the files it reads and writes. Build and run: `make fuzz` (see docs/RELIABILITY.md).

/// One fuzz input: the bytes; returns 0 (libFuzzer's "keep going").
public typealias FuzzTarget = (UnsafePointer<UInt8>, Int) -> Int32

// libFuzzer's driver takes a C function pointer, which cannot capture; it calls the target set here.
nonisolated(unsafe) private var target: FuzzTarget?

/// Runs a fuzz target's command line and exits.
public func runFuzzer(writeSeeds: (String) -> Void, target fuzz: @escaping FuzzTarget) -> Never {
  if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--write-seeds" {
    writeSeeds(CommandLine.arguments[2])
    exit(0)
  }
  target = fuzz
  var argc = CommandLine.argc
  var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
  exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in data.map { target?($0, size) ?? 0 } ?? 0 })
}

/// The repository's Journal/golden folder, found from this file's path.
public let goldenFolder: String = {
  var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
  parts.removeLast(3)
  return parts.joined(separator: "/") + "/Journal/golden"
}()

/// Writes one seed file.
public func writeSeed(_ bytes: [UInt8], named name: String, in directory: String) {
  mkdir(directory, 0o700)
  let fd = open(directory + "/" + name, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
  guard fd >= 0 else { return }
  _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
  close(fd)
}

/// The bytes of a file, or nothing.
public func readFile(_ path: String) -> [UInt8] {
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
