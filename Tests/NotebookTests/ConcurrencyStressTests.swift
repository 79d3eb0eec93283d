import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Synchronization
import Testing

/// Everything at once on one journal: producers sending commands through the manager, an
/// observer of its changes, readers following the journal's tail, snapshots being written and
/// pruned, and a time machine travelling, all while the journal grows. Checks consistency, never
/// timing: gapless sequences everywhere, every reader sees the same records, and every state
/// anyone computed along the way equals a from-scratch replay to the same point.
/// ThreadSanitizer runs this suite in `make test` (see docs/RELIABILITY.md).
@Suite struct ConcurrencyStressTests {
  static let producers = Int(ProcessInfo.processInfo.environment["REWIND_STRESS_PRODUCERS"] ?? "") ?? 8
  static let commandsPerProducer = Int(ProcessInfo.processInfo.environment["REWIND_STRESS_COMMANDS"] ?? "") ?? 40

  @Test(arguments: [Durability.none, .batched])
  func producersFollowersSnapshotsAndTimeTravelAtOnce(durability: Durability) async throws {
    let dir = TemporaryDirectory("stress")
    var options = JournalOptions(durability: durability)
    options.segmentTargetBytes = 8 << 10
    options.indexIntervalBytes = 1 << 10
    let manager = try NotebookManager(
      directory: dir.path, options: options, clock: .stepping(from: 1_700_000_000_000_000_000), ids: .sequential())
    let total = Self.producers * (Self.commandsPerProducer + 1)

    // An observer of the manager: one change per command, in commit order, gapless.
    let changes = manager.changes()
    let observer = Task {
      var next: UInt64 = 1
      var count = 0
      for await change in changes {
        #expect(change.sequences.lowerBound == next, "changes arrive in order, gapless")
        next = change.sequences.upperBound + 1
        count += 1
        if count == total { break }
      }
      return count
    }

    // Readers following the tail, each to the last record of the workload.
    let reader = try JournalReader(directory: dir.path)
    let followers = (0..<3).map { number in
      Task {
        var records: [JournalRecord] = []
        for try await record in reader.follow(from: 1, pollInterval: .milliseconds(1 + number)) {
          records.append(record)
          if records.count == total { break }
        }
        return records
      }
    }

    // Snapshots and time travel while the journal grows; what they computed is checked at the end.
    let stop = StopFlag()
    defer { stop.set() }  // a test that throws stops them too
    let snapshotter = Task.detached {
      var rounds = 0
      repeat {  // at least once, however late this task starts
        try Snapshots.update(Workspace.self, directory: dir.path, every: 25, keep: 3)
        if rounds % 4 == 0 { try Snapshots.take(Workspace.self, directory: dir.path) }
        rounds += 1
        try await Task.sleep(for: .milliseconds(2))
      } while !stop.isSet
      return rounds
    }
    let traveller = Task.detached {
      let machine = try TimeMachine<Workspace>(directory: dir.path, keyframeInterval: 16)
      var seen: [(sequence: UInt64, digest: StateDigest)] = []
      var random = SeededGenerator(seed: 42)
      repeat {
        try machine.refresh()
        if machine.lastSequence > 0 {
          let target = UInt64.random(in: 0...machine.lastSequence, using: &random)
          seen.append((target, try StateDigest.of(machine.jump(to: target))))
          if Bool.random(using: &random) {
            let state = try machine.step(by: -3)
            seen.append((machine.position, try StateDigest.of(state)))
          }
        }
        try await Task.sleep(for: .milliseconds(1))
      } while !stop.isSet || seen.isEmpty  // travels at least once after the first write, however late
      return seen
    }

    // The producers: each its own notebook and notes, so every command is valid whatever the order.
    try await withThrowingTaskGroup(of: Void.self) { group in
      for producer in 0..<Self.producers {
        group.addTask {
          let book = try await manager.createNotebook(title: "producer \(producer)")
          var notes: [NoteID] = []
          for step in 0..<Self.commandsPerProducer {
            if notes.isEmpty || step % 3 == 0 {
              notes.append(try await manager.createNote(in: book, title: "p\(producer) s\(step)", tags: ["stress"]))
            } else if step % 3 == 1 {
              try await manager.retitleNote(notes[step % notes.count], to: "p\(producer) retitled \(step)")
            } else {
              try await manager.tagNote(notes[step % notes.count], with: NoteTag("t\(step % 4)"))
            }
          }
        }
      }
      try await group.waitForAll()
    }
    #expect(manager.lastSequence == UInt64(total))
    // Bounded: a change or record that never comes fails the counts below instead of hanging.
    #expect(await boundedValue(of: observer) == total)
    var followed: [[JournalRecord]] = []
    for follower in followers { followed.append(try await boundedValue(of: follower)) }
    stop.set()
    let rounds = try await snapshotter.value
    let travels = try await traveller.value
    let finalDigest = try StateDigest.of(manager.state)
    manager.close()

    // Every follower saw exactly the journal's records, in order.
    var journal: [JournalRecord] = []
    let cursor = try reader.records()
    while let record = try cursor.next() { journal.append(record) }
    #expect(journal.map(\.sequence) == Array(1...UInt64(total)))
    for records in followed { #expect(records == journal, "a follower saw other records than the journal holds") }

    // The live state, the snapshots and every state the time machine produced equal replays.
    let rebuilt = try Replay.rebuild(Workspace.self, directory: dir.path)
    #expect(try StateDigest.of(rebuilt.state) == finalDigest)
    let fromSnapshots = try Replay.run(Workspace.self, directory: dir.path)
    #expect(fromSnapshots.report.skippedSnapshots.isEmpty, "\(fromSnapshots.report.skippedSnapshots)")
    #expect(try StateDigest.of(fromSnapshots.state) == finalDigest)
    #expect(rounds > 0)
    // The reference states come from one forward replay (no snapshots, no keyframes to go back
    // to), visiting the travelled-to points in ascending order.
    let replay = try TimeMachine<Workspace>(directory: dir.path, keyframeInterval: 1 << 40, useSnapshots: false)
    var expected: [UInt64: StateDigest] = [:]
    for sequence in Set(travels.map(\.sequence)).sorted() {
      expected[sequence] = try StateDigest.of(replay.jump(to: sequence))
    }
    for (sequence, digest) in travels { #expect(digest == expected[sequence], "time travel to \(sequence)") }
    #expect(travels.count > 0, "the time machine never travelled: the test checked nothing of it")
    #expect(try JournalReader(directory: dir.path).verify().isSound)
  }
}

/// A flag one task sets and others poll.
final class StopFlag: Sendable {
  private let value = Atomic<Bool>(false)
  var isSet: Bool { value.load(ordering: .acquiring) }
  func set() { value.store(true, ordering: .releasing) }
}
