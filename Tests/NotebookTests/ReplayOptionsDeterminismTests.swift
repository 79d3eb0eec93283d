import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

/// Replay's options change only its speed: on the Notebook's seeded corpus, every batch size and
/// number of batches in flight, with records observed (checkpoints verified), applied one by one
/// (a progress callback) or applied batch by batch (a rebuild), reaches the live state, its
/// digest and its records.
@Suite struct ReplayOptionsDeterminismTests {
  @Test(.timeLimit(.minutes(10))) func everyOptionReachesTheLiveState() async throws {
    let (temporary, _, live) = try await WorkloadTests.run(seed: 47, events: 3_000, durability: .none)
    let directory = temporary.appending("journal")
    let digest = try StateDigest.of(live)
    // A checkpoint after the workload's commands (a mark and its digest), for the observed way to
    // verify: the workload records none.
    let manager = try Manager<Workspace>(directory: directory, options: JournalOptions(durability: .none))
    try await manager.recordCheckpoint()
    manager.close()
    let records = Int(try JournalReader(directory: directory).lastSequence())
    try await offThePool {
      for recordsPerBatch in [1, 3, 256, 1 << 40, Int.max] {
        for batchesInFlight in [-1, 0, 1, 2, 8, Int.max] {
          for way in ["observed", "one by one", "batch by batch"] {
            var options = ReplayOptions()
            options.recordsPerBatch = recordsPerBatch
            options.batchesInFlight = batchesInFlight
            options.useSnapshots = false
            options.verifyCheckpoints = way == "observed"
            options.progressInterval = 500
            var calls = 0
            let progress: ((ReplayProgress) -> Void)? = way == "one by one" ? { _ in calls += 1 } : nil
            let outcome = try Replay.run(Workspace.self, directory: directory, options: options, progress: progress)
            let what = "\(recordsPerBatch) per batch, \(batchesInFlight) in flight, \(way)"
            #expect(outcome.report.lastSequence == UInt64(records), "\(what)")
            #expect(outcome.report.recordsApplied == records, "\(what)")
            #expect(outcome.report.checkpointsVerified == (way == "observed" ? 1 : 0), "\(what)")
            #expect(outcome.report.firstDivergence == nil, "\(what)")
            #expect(try StateDigest.of(outcome.state) == digest, "\(what)")
            #expect(outcome.state == live, "\(what)")
            #expect(Note.all(in: outcome.state) == Note.all(in: live), "\(what)")
            #expect(ReadingItem.all(in: outcome.state) == ReadingItem.all(in: live), "\(what)")
            if way == "one by one" { #expect(calls == records / 500 + 1, "\(what)") }
          }
        }
      }
    }
  }

  /// Time travel that stops reading early (a search that finds its event in the first batch, a
  /// blame of a record the first events touch) drops its read-ahead part way: it returns, and a
  /// full pass after it reads the same.
  @Test(.timeLimit(.minutes(10))) func timeTravelThatStopsEarlyReturns() async throws {
    let (temporary, summary, _) = try await WorkloadTests.run(seed: 48, events: 3_000, durability: .none)
    let directory = temporary.appending("journal")
    try await offThePool {
      let machine = try TimeMachine<Workspace>(directory: directory, useSnapshots: false)
      let first = try #require(try machine.firstEvent(after: 0) { _ in true })
      #expect(first.envelope.sequence == 1)
      let last = try machine.firstEvent(after: UInt64(summary.events) - 1) { _ in true }
      #expect(last?.envelope.sequence == UInt64(summary.events))
      #expect(try machine.firstEvent(after: 0) { _ in false } == nil)
    }
  }
}
