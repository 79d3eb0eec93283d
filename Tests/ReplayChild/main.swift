// A child process for the replay tests: replays a Notebook journal in a fresh process.
//
//   replay-child digest DIR SEQUENCE
//     Prints "digest HEX" for the state after SEQUENCE, replayed without snapshots.
//   replay-child memory DIR
//     Replays the whole journal and prints "records N peak KIB": the peak resident set of this
//     process's own address space (VmHWM). Not getrusage's ru_maxrss: Linux carries the spawning
//     process's peak into it across execve, so it would measure the test runner instead.
import Foundation
import Glibc
import Notebook
import Rewind

let arguments = CommandLine.arguments

/// VmHWM from /proc/self/status, in KiB.
func peakResidentKiB() -> Int? {
  guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
    let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
  else { return nil }
  return line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
}
func fail(_ message: String) -> Never {
  print(message)
  exit(2)
}
guard arguments.count >= 3 else { fail("usage: replay-child digest DIR SEQUENCE | memory DIR") }
do {
  var options = ReplayOptions()
  options.useSnapshots = false
  switch arguments[1] {
  case "digest":
    guard arguments.count == 4, let sequence = UInt64(arguments[3]) else { fail("digest needs a sequence number") }
    let outcome = try Replay.run(Workspace.self, directory: arguments[2], to: .sequence(sequence), options: options)
    print("digest \(try StateDigest.of(outcome.state))")
  case "memory":
    let outcome = try Replay.run(Workspace.self, directory: arguments[2], options: options)
    guard let peak = peakResidentKiB() else { fail("no VmHWM in /proc/self/status") }
    print("records \(outcome.report.recordsApplied) peak \(peak)")
  default:
    fail("unknown command \(arguments[1])")
  }
} catch {
  fail("replay-child: \(error)")
}
