internal import Foundation
internal import Glibc

// rewind-bench: throughput of append, replay and seek, side by side with SQLite, JSON lines and the
// lz4 tool, on one seeded Notebook history. See Benchmarks/RESULTS.md.

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--child" {
  exit(ChildProcess.main(Array(arguments.dropFirst())))
}
guard let options = BenchOptions.parse(arguments) else { exit(2) }
if options.help {
  print(BenchOptions.usage)
  exit(0)
}
if let results = options.markdown {
  // A results file as Markdown tables (Benchmarks/RESULTS.md quotes them); runs nothing.
  do {
    print(try Report.read(from: results).markdown(), terminator: "")
    exit(0)
  } catch {
    printError("rewind-bench: \(error)")
    exit(1)
  }
}

let work: String
if let given = options.workDirectory {
  work = given
  do { try ScratchDirectory.prepare(work) } catch {
    printError("\(error)")
    exit(2)
  }
} else {
  var template = Array("/tmp/rewind-bench.XXXXXX".utf8CString)
  guard let made = mkdtemp(&template) else {
    printError("mkdtemp: \(String(cString: strerror(errno)))")
    exit(1)
  }
  work = String(cString: made)
}

let context = BenchContext(options: options, work: work)
let started = monotonicNanos()
var failed = false
var ran: [String] = []
for scenario in ScenarioRegistry.all {
  let dependsOnly = scenario is CorpusScenario
  if !dependsOnly && !options.runs(scenario.name) { continue }
  printError("[\(Report.format(Double(monotonicNanos() - started) / 1e9))s] \(scenario.name): \(scenario.summary)")
  ran.append(scenario.name)
  do {
    try await scenario.run(in: context)
  } catch {
    printError("\(scenario.name) failed: \(error)")
    failed = true
  }
}

for problem in context.problems { printError("harness problem: \(problem)") }
failed = failed || !context.problems.isEmpty

let targets = Targets.check(context)
// Without --only, every target has its figures (Targets reports those that do not, unjudged).
for target in targets where target.met == nil {
  printError("harness problem: target \"\(target.target)\": \(target.measured)")
  failed = true
}
let report = Report(
  command: (["rewind-bench"] + arguments).joined(separator: " "), mode: options.mode.rawValue, seed: options.seed,
  machine: Report.machine(), totalSeconds: Double(monotonicNanos() - started) / 1e9, figures: context.figures,
  targets: targets)
print(report.table())
do {
  try report.write(to: options.jsonPath)
  // The smoke test's check: what was written reads back, and every scenario that ran left figures.
  let problems = try Report.problems(in: options.jsonPath, scenarios: ran)
  for problem in problems { printError("malformed results: \(problem)") }
  failed = failed || !problems.isEmpty
  printError(
    "results written to \(options.jsonPath) in \(Report.format(report.totalSeconds)) s; \(report.machine.summary)")
} catch {
  printError("cannot write \(options.jsonPath): \(error)")
  failed = true
}
// A scratch directory the caller named is kept for a look (or a profiler); a temporary one is not.
if options.workDirectory == nil { try? FileManager.default.removeItem(atPath: work) }
exit(failed ? 1 : 0)
