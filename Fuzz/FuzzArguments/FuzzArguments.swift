import FuzzSupport
import Glibc

@testable import RewindCLI

// libFuzzer target: the CLI's argument parsing. The input is split at NUL bytes into arguments
// and parsed with every command's option and flag names, then read back as every command reads
// it. Any outcome but a parsed value or a UsageError is a finding. (The commands themselves are
// not run: a fuzzed command line must not write journals into arbitrary directories.)
// Build and run: `make fuzz` (see docs/RELIABILITY.md).

// Also exported under libFuzzer's name, which its (unused) main in the same archive refers to.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzArguments(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let bytes = UnsafeBufferPointer(start: data, count: size)
  let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map {
    String(decoding: $0, as: UTF8.self)
  }
  let options: Set<String> = ["records", "producers", "durability", "seed", "from", "limit", "events"]
  let flags: Set<String> = ["json", "yes", "help"]
  do {
    let parsed = try Arguments(arguments, options: options, flags: flags)
    _ = parsed.flag("json")
    _ = parsed.value("durability")
    for name in options { _ = try? parsed.integer(name, default: 0, range: 0...1_000_000) }
    _ = try? parsed.directory()
    _ = try? parsed.directory(default: "rewind-demo")
  } catch {
    _ = error.description
  }
  return 0
}

/// Seeds: the README's command lines, arguments separated by NUL bytes.
func writeSeeds(to directory: String) {
  let lines = [
    ["demo", "/tmp/j", "--records", "100000", "--durability", "batched"], ["verify", "/tmp/j"],
    ["log", "/tmp/j", "--from=10", "--limit", "5", "--json"], ["repair", "--yes", "--", "-dir"],
  ]
  for (number, line) in lines.enumerated() {
    writeSeed(Array(line.joined(separator: "\u{0}").utf8), named: "line-\(number)", in: directory)
  }
}
