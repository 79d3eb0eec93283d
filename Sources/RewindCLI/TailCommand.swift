import Dispatch
import Foundation
import Rewind
import RewindJournal

enum TailCommand: RewindCommand {
  static let name = "tail"
  static let summary = "the last events; with -f, each new one as it is committed"
  static let help = """
    Usage: rewind tail DIR [-n N] [-f] [--full] [--json]

    Shows the last N events (-n N or --lines N, one option given once; default 10) as
    `rewind log` does, oldest first, each event's fields cut at 160 characters unless --full is
    given; --json as `rewind log --json`. With -f (--follow), then waits and shows each new event
    as a writer commits it, one line at a time, until interrupted (Ctrl-C ends it with exit 0) or
    its output is closed. Takes no lock: a writer may be appending meanwhile.

    Examples:
      rewind tail /tmp/notes -n 3
      rewind tail /tmp/notes -f --json | jq -c .name

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let args = try Arguments(arguments, options: ["n", "lines"], flags: ["f", "follow", "json", "full"])
    if let count = args.positionals.first(where: Arguments.isNegativeNumber) {
      throw UsageError("the count is -n N (or --lines N): -n \(count.dropFirst()), not \(count)")
    }
    let directory = try args.directory()
    if let short = args.value("n"), let long = args.value("lines") {
      throw UsageError("-n and --lines are one option, given twice ('\(short)' and '\(long)'); give it once")
    }
    let count = try args.integer(args.value("lines") == nil ? "n" : "lines", default: 10, range: 0...Int.max)
    let follow = args.flag("f") || args.flag("follow")
    let json = args.flag("json")
    let width = args.flag("full") ? nil : 160
    let reader = try openJournal(directory)
    if follow {
      // Ctrl-C ends it cleanly: everything shown was written as it came, and a reader holds no
      // lock, so there is nothing to undo.
      signal(SIGINT) { _ in _exit(0) }
    }
    defer { if follow { signal(SIGINT, SIG_DFL) } }
    let last = try reader.lastSequence()
    let start = last >= UInt64(count) ? last - UInt64(count) + 1 : 1
    let render = { (record: JournalRecord) -> String in
      let event = AuditedEvent(record)
      return (json ? event.json : event.line(width: width)) + "\n"
    }
    if count > 0 {
      let cursor = try reader.records(from: start)
      let output = BufferedOutput(context.output)
      defer { output.flush() }
      while let record = try cursor.next(), record.sequence <= last { output.write(render(record)) }
    }
    guard follow else { return .success }

    for try await record in reader.follow(from: last + 1, pollInterval: .milliseconds(50)) {
      context.output.out(render(record))
    }
    return .success
  }
}
