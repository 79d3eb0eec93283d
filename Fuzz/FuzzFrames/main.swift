import CFuzzer
import Glibc

// `FuzzFrames --write-seeds DIR` writes the seed corpus (made from Journal/golden) and exits;
// anything else goes to libFuzzer's driver (-max_total_time=, corpus folders, ...).
if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--write-seeds" {
  writeSeeds(to: CommandLine.arguments[2])
  exit(0)
}
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in data.map { fuzzFrames($0, size) } ?? 0 })
