import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// A child process appends under a durable policy and is killed with SIGKILL at a random moment;
/// every append it had acknowledged (printed after acknowledgement) must be there on reopening.
///
/// `REWIND_CRASH_TRIALS` sets the number of trials per policy (default 8; try 200 on demand).
@Suite(.serialized) struct CrashTests {
  static var trials: Int { Int(ProcessInfo.processInfo.environment["REWIND_CRASH_TRIALS"] ?? "") ?? 8 }

  static func child() throws -> String {
    try #require(ChildProcess.builtProduct("journal-crash-child"), "journal-crash-child must be built with the tests")
  }

  @Test(arguments: ["always", "batched", "none"])
  func acknowledgedAppendsSurviveSIGKILL(policy: String) async throws {
    try await Self.acknowledgedAppendsSurviveSIGKILL(policy: policy, childArguments: [])
  }

  /// The writer compacting its sealed segments in the background when it is killed: each
  /// segment is the original or its checked copy, and no acknowledged record is lost.
  @Test(arguments: ["always", "none"])
  func acknowledgedAppendsSurviveSIGKILLWhileTheWriterCompacts(policy: String) async throws {
    // The child compacts on a thread of lowered priority: on a loaded machine (the tests beside
    // this one busy on their own threads) a whole trial can pass before it compacts anything, so
    // the trials go on until it has (at most four times as many).
    let compacted = { (directory: String) in
      try JournalFixtures.segments(directory).filter { try CompactionTests.header(directory + "/" + $0).isCompacted }
    }
    try await Self.acknowledgedAppendsSurviveSIGKILL(
      policy: policy, childArguments: ["compact"], delay: 10_000...200_000,
      inspect: { directory in
        let segments = try compacted(directory)
        #expect(!segments.isEmpty, "no segment was compacted: the test checked no kill during compaction")
      },
      until: { try !compacted($0).isEmpty })
  }

  /// `trials` times: a child appends with `policy` (and `childArguments` after its thread count)
  /// and is killed after `delay` microseconds (at random); every acknowledged record reads back,
  /// the journal is sound. Then more trials, up to `4 * trials` in all, while `until` is false of
  /// the journal's directory. `inspect` is given the directory at the end.
  static func acknowledgedAppendsSurviveSIGKILL(
    policy: String, childArguments: [String], delay: ClosedRange<UInt32> = 1_000...80_000,
    inspect: (String) throws -> Void = { _ in }, until: (String) throws -> Bool = { _ in true }
  ) async throws {
    let executable = try Self.child()
    var random = SeededGenerator(seed: UInt64(policy.count) &* 7919 &+ 1)
    var totalAcknowledged = 0
    let dir = TemporaryDirectory("crash")
    var trial = 0
    while try trial < trials || (trial < 4 * trials && !until(dir.path)) {
      defer { trial += 1 }
      // Each trial continues the same journal: recovery after one crash is the start of the next.
      let process = try ChildProcess(
        executable: executable, arguments: ["append", dir.path, policy, "4"] + childArguments)
      #expect(try await process.waitForLine { $0.hasPrefix("open") }, "child did not open the journal")
      try await Task.sleep(for: .microseconds(UInt32.random(in: delay, using: &random)))
      try await process.kill()
      let acks = process.lines.compactMap(Ack.init)
      totalAcknowledged += acks.count

      // Recovery, reading every record back, checking each and verify take seconds of a debug
      // build once the trials have grown the journal: off the cooperative pool (two threads on
      // two cores), where they held up every other test's awaits.
      let trialNumber = trial
      try await offThePool {
        let journal = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
        let last = journal.lastSequence
        journal.close()
        let reader = try JournalReader(directory: dir.path)
        var bySequence: [UInt64: JournalRecord] = [:]
        let cursor = try reader.records()
        var expected: UInt64 = 1
        while let record = try cursor.next() {
          #expect(record.sequence == expected, "gap in trial \(trialNumber) (\(policy))")
          expected = record.sequence + 1
          bySequence[record.sequence] = record
        }
        #expect(expected - 1 == last)
        for ack in acks {
          for (i, sequence) in (ack.first...ack.last).enumerated() {
            let payload = bySequence[sequence].map {
              String(decoding: $0.payload.prefix(while: { $0 != 0x2E }), as: UTF8.self)
            }
            #expect(
              payload == "\(ack.tag)/\(i)",
              "acknowledged record \(sequence) lost or wrong in trial \(trialNumber) (\(policy))")
          }
        }
        #expect(try reader.verify().isSound)
      }
    }
    print(
      "crash trials (\(([policy] + childArguments).joined(separator: " "))): \(trial), acknowledged appends checked: \(totalAcknowledged), lost: 0 unless reported above"
    )
    #expect(totalAcknowledged > 0, "the child never acknowledged anything: the test checked nothing")
    try inspect(dir.path)
  }

  @Test func secondWriterInAnotherProcessIsRefused() async throws {
    let dir = TemporaryDirectory("lock")
    let holder = try ChildProcess(executable: try Self.child(), arguments: ["hold", dir.path])
    #expect(try await holder.waitForLine { $0 == "locked" })
    #expect {
      try Journal(directory: dir.path)
    } throws: {
      ($0 as? JournalError)?.code == .locked
        && "\($0)".hasPrefix("another writer holds the journal's lock (LOCK) in journal \(dir.path). Another process")
    }
    // Readers are never refused.
    #expect(try JournalReader(directory: dir.path).lastSequence() == 0)
    try await holder.kill()
    // The OS releases the lock when its holder dies.
    let journal = try Journal(directory: dir.path)
    #expect(journal.lastSequence == 0)
  }
}

private struct Ack {
  var first: UInt64
  var last: UInt64
  var tag: String

  init?(_ line: String) {
    let parts = line.split(separator: " ")
    guard parts.count == 4, parts[0] == "ack", let first = UInt64(parts[1]), let last = UInt64(parts[2]) else {
      return nil
    }
    self.first = first
    self.last = last
    self.tag = String(parts[3])
  }
}
