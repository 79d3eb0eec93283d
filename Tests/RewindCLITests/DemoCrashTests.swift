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
@Suite(.serialized, .enabled(if: demoSpeaksJSON(), "needs `rewind demo --events --json`"))
struct DemoCrashTests {
  static var trials: Int { Int(ProcessInfo.processInfo.environment["REWIND_DEMO_CRASH_TRIALS"] ?? "") ?? 4 }
  static let events = 600

  static var rewind: String? { ChildProcess.builtProduct("rewind") }

  static func demoArguments(_ dir: String, seed: UInt64, policy: String) -> [String] {
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
    var random = SeededGenerator(seed: UInt64(policy.count) &* 104_729)
    var acknowledgedTotal = 0
    var lost = 0
    for trial in 0..<Self.trials {
      let seed = UInt64(trial + 1) &* 7_919 &+ UInt64(policy.count)
      let context = "trial \(trial), seed \(seed), \(policy)"
      let dir = TemporaryDirectory("demo-crash")
      let child = try ChildProcess(
        executable: executable, arguments: Self.demoArguments(dir.path, seed: seed, policy: policy))
      #expect(child.waitForLine { $0.contains("\"seq\"") }, "\(context): the demo acknowledged nothing")
      usleep(UInt32.random(in: 0...60_000, using: &random))
      child.kill()
      let acks = Self.acknowledged(child.lines)
      acknowledgedTotal += acks.count
      #expect(acks == acks.sorted(), "\(context): acknowledgements out of order")
      let lastAck = acks.last ?? 0

      // Reopen (recovery moves a torn tail aside), then check.
      let journal = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
      let last = journal.lastSequence
      journal.close()
      if last < lastAck { lost += 1 }
      #expect(last >= lastAck, "\(context): acknowledged up to \(lastAck), the journal ends at \(last)")
      var expected: UInt64 = 1
      let cursor = try JournalReader(directory: dir.path).records()
      while let record = try cursor.next() {
        #expect(record.sequence == expected, "\(context): gap before \(record.sequence)")
        expected = record.sequence + 1
      }
      let verify = try RewindCommandTests.rewind(["verify", dir.path])
      #expect(verify.status == 0, "\(context): rewind verify: \(verify.out) \(verify.err)")

      // The acknowledged prefix replays to the state of an uninterrupted run with the same seed.
      let reference = TemporaryDirectory("demo-reference")
      let rerun = try RewindCommandTests.rewind(Self.demoArguments(reference.path, seed: seed, policy: "none"))
      #expect(rerun.status == 0, "\(context): reference run: \(rerun.err)")
      #expect(
        try Self.digest(dir.path, through: lastAck) == Self.digest(reference.path, through: lastAck),
        "\(context): the replayed prefix differs from the same prefix of an uninterrupted run")
    }
    print(
      "demo crash trials (\(policy)): \(Self.trials) trials, \(acknowledgedTotal) acknowledged commands, \(lost) trials with losses"
    )
    #expect(acknowledgedTotal > 0, "nothing was acknowledged: the test checked nothing")
  }
}

/// Whether the built demo takes `--events` and `--json`: the harness is written to that spec, and
/// runs only against a `rewind` that has it.
func demoSpeaksJSON() -> Bool {
  guard ChildProcess.builtProduct("rewind") != nil, let help = try? RewindCommandTests.rewind(["demo", "--help"]) else {
    return false
  }
  let text = help.out + help.err
  return text.contains("--events") && text.contains("--json")
}
