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
  // Each argument as an ISO 8601 time (--since, --until, --at, goto): a lower bound rounds a time
  // finer than a nanosecond up, by one nanosecond at most, and never across the edge it stands on.
  for text in arguments {
    _ = ISO8601.leapSecondHint(text)
    let down = ISO8601.parseWithin(text)
    let up = ISO8601.parseWithin(text, roundingUp: true)
    guard let down, let up else {
      if (down == nil) != (up == nil) { fatalError("'\(text)' parsed one way only") }
      continue
    }
    let next =
      down.outside == 0 && down.time == .max ? (Int64.max, 1) : (down.time + (down.outside == 0 ? 1 : 0), down.outside)
    guard (up.time, up.outside) == (down.time, down.outside) || (up.time, up.outside) == next else {
      fatalError("'\(text)': \(down) rounded up to \(up)")
    }
  }
  return 0
}

/// Seeds: the README's command lines, and times at the edges of what a timestamp holds, arguments
/// separated by NUL bytes.
func writeSeeds(to directory: String) {
  let lines = [
    ["demo", "/tmp/j", "--records", "100000", "--durability", "batched"], ["verify", "/tmp/j"],
    ["log", "/tmp/j", "--from=10", "--limit", "5", "--json"], ["repair", "--yes", "--", "-dir"],
    ["log", "/tmp/j", "--since", "2026-01-01T09:30:00.5+02:00", "--until", "2262-04-11T23:47:16.8547758071Z"],
    ["replay", "/tmp/j", "--at", "1677-09-21T00:12:43.1452241921Z"],
  ]
  for (number, line) in lines.enumerated() {
    writeSeed(Array(line.joined(separator: "\u{0}").utf8), named: "line-\(number)", in: directory)
  }
}
