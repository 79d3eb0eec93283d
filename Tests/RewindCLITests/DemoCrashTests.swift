import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

/// The whole stack under SIGKILL: the built `rewind demo DIR --events N --seed S --durability P
/// --json` (a Notebook workload through the manager, printing one JSON line per acknowledged
/// command with `"seq"`, its last sequence number) is killed at a random moment. On reopening,
/// every acknowledged command must be there, sequence numbers gapless, `rewind verify` clean, and
/// the state replayed to the last acknowledged sequence number must equal the same prefix of an
/// uninterrupted run with the same seed (a shorter run with the same seed is a prefix).
///
/// `REWIND_DEMO_CRASH_TRIALS` sets the trials per policy (default 4; try 100 on demand).
@Suite(.serialized)
struct DemoCrashTests {
  static var trials: Int { Int(ProcessInfo.processInfo.environment["REWIND_DEMO_CRASH_TRIALS"] ?? "") ?? 4 }
  static let events = 20_000

  /// The `rewind` whose demo is crashed: the one built with the tests, or `REWIND_DEMO_BINARY`
  /// (to run the harness against another build).
  static var rewind: String? { demoBinary() }

  static func demoArguments(_ dir: String, seed: UInt64, policy: String, events: Int = events) -> [String] {
    ["demo", dir, "--events", "\(events)", "--seed", "\(seed)", "--durability", policy, "--json"]
  }

  /// The `"seq"` of each acknowledged command, in the order printed.
  static func acknowledged(_ lines: [String]) -> [UInt64] {
    lines.compactMap { line in
      guard let data = line.data(using: .utf8),
        let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
        let seq = object["seq"] as? NSNumber
      else { return nil }
      return seq.uint64Value
    }
  }

  static func digest(_ directory: String, through sequence: UInt64) throws -> StateDigest {
    try StateDigest.of(Replay.rebuild(Workspace.self, directory: directory, through: sequence).state)
  }

  @Test(arguments: ["always", "batched"])
  func acknowledgedCommandsSurviveSIGKILL(policy: String) async throws {
    let executable = try #require(Self.rewind, "the rewind product must be built with the tests")
    // Required, not a condition of the suite: a demo that lost the flags would have switched the
    // whole-stack crash test off in silence.
    try #require(await demoSpeaksJSON(), "the harness needs `rewind demo --events N --json`")
    var random = SeededGenerator(seed: UInt64(policy.count) &* 104_729)
    var acknowledgedTotal = 0
    var lost = 0
    var killedMidRun = 0
    for trial in 0..<Self.trials {
      let seed = UInt64(trial + 1) &* 7_919 &+ UInt64(policy.count)
      let context = "trial \(trial), seed \(seed), \(policy)"
      let dir = TemporaryDirectory("demo-crash")
      let child = try ChildProcess(
        executable: executable, arguments: Self.demoArguments(dir.path, seed: seed, policy: policy))
      #expect(try await child.waitForLine { $0.contains("\"seq\"") }, "\(context): the demo acknowledged nothing")
      // A whole run takes a few seconds: most kills land in the middle of it.
      try await Task.sleep(for: .microseconds(UInt32.random(in: 0...1_500_000, using: &random)))
      if child.isRunning { killedMidRun += 1 }
      try await child.kill()
      let acks = Self.acknowledged(child.lines)
      acknowledgedTotal += acks.count
      let lastAck = acks.max() ?? 0

      // Reopen (recovery moves a torn tail aside), then check. Recovery and reading the journal
      // through run on a thread of their own (seconds of a debug build): on one of the
      // cooperative pool's two, they held up every other test's awaits.
      let (last, sequences) = try await onOwnThread {
        let journal = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
        let last = journal.lastSequence
        journal.close()
        var sequences: [UInt64] = []
        let cursor = try JournalReader(directory: dir.path).records()
        while let record = try cursor.next() { sequences.append(record.sequence) }
        return (last, sequences)
      }
      if last < lastAck { lost += 1 }
      #expect(last >= lastAck, "\(context): acknowledged up to \(lastAck), the journal ends at \(last)")
      var expected: UInt64 = 1
      for sequence in sequences {
        #expect(sequence == expected, "\(context): gap before \(sequence)")
        expected = sequence + 1
      }
      let verify = try await RewindCommandTests.rewind(["verify", dir.path])
      #expect(verify.status == 0, "\(context): rewind verify: \(verify.out) \(verify.err)")

      // The acknowledged prefix replays to the state of an uninterrupted run with the same seed.
      let reference = TemporaryDirectory("demo-reference")
      // A shorter run with the same seed is a prefix: run just past the acknowledged prefix.
      let rerun = try ChildProcess(
        executable: executable,
        arguments: Self.demoArguments(
          reference.path, seed: seed, policy: "none", events: min(Self.events, Int(lastAck) + 1_000)))
      #expect(try await rerun.waitForExit(), "\(context): the reference run did not finish")
      let referenceLast = try JournalReader(directory: reference.path).lastSequence()
      try #require(referenceLast >= lastAck, "\(context): the reference run ended at \(referenceLast)")
      let (replayed, referenced) = try await onOwnThread {
        (try Self.digest(dir.path, through: lastAck), try Self.digest(reference.path, through: lastAck))
      }
      #expect(
        replayed == referenced, "\(context): the replayed prefix differs from the same prefix of an uninterrupted run")
    }
    print(
      "demo crash trials (\(policy)): \(Self.trials) trials (\(killedMidRun) killed mid-run), \(acknowledgedTotal) acknowledged commands, \(lost) trials with losses"
    )
    #expect(acknowledgedTotal > 0, "nothing was acknowledged: the test checked nothing")
    #expect(killedMidRun > 0, "every run had ended before its kill: the test checked no crash")
  }
}

/// Whether the built demo takes `--events` and `--json`: the harness is written to that spec, and
/// runs only against a `rewind` that has it.
func demoSpeaksJSON() async -> Bool {
  guard let binary = demoBinary() else { return false }
  let help = try? await onOwnThread {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = ["demo", "--help"]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    guard (try? process.run()) != nil else { return "" }
    let watchdog = ChildWatchdog(process)
    let help = String(decoding: PipeReads.toEnd(pipe.fileHandleForReading), as: UTF8.self)
    process.waitUntilExit()
    try watchdog.end(waitingFor: "rewind demo --help to exit")
    return help
  }
  guard let help else { return false }
  return help.contains("--events") && help.contains("--json")
}

func demoBinary() -> String? {
  ProcessInfo.processInfo.environment["REWIND_DEMO_BINARY"] ?? ChildProcess.builtProduct("rewind")
}
