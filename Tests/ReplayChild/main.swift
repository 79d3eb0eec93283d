// A child process for the replay tests: replays a Notebook journal in a fresh process.
//
//   replay-child digest DIR SEQUENCE
//     Prints "digest HEX" for the state after SEQUENCE, replayed without snapshots.
//   replay-child memory DIR
//     Replays the whole journal and prints "records N maxrss KIB" (peak resident memory).
import Glibc
import Notebook
import Rewind

let arguments = CommandLine.arguments
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
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    print("records \(outcome.report.recordsApplied) maxrss \(usage.ru_maxrss)")
  default:
    fail("unknown command \(arguments[1])")
  }
} catch {
  fail("replay-child: \(error)")
}
