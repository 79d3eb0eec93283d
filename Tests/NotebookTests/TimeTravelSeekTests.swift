import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

@testable import Notebook
@testable import Rewind

/// What seeking costs, blame by entity id, the start-up replay's report and the maintenance job.
@Suite struct TimeTravelSeekTests {
  /// With snapshots every 100 records (and keyframes every 50), any seek applies fewer than 100
  /// records, however long the journal and however few keyframes the time machine may keep, and
  /// lands on the right state.
  @Test func seekingCostsAtMostTheSnapshotInterval() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 91, commands: 1200).close()
    try Snapshots.update(Workspace.self, directory: directory.path, every: 100, keep: 100)
    let machine = try TimeMachine<Workspace>(directory: directory.path, keyframeInterval: 50, maxKeyframes: 2)
    let last = machine.lastSequence
    #expect(last > 1000)
    var random = SeededGenerator(seed: 92)
    var targets: [UInt64] = [last, 0, last / 2, 1, 99, 100, 101, last - 1]
    for _ in 0..<30 { targets.append(UInt64.random(in: 0...last, using: &random)) }
    for target in targets {
      let before = machine.recordsApplied
      let state = try machine.jump(to: target)
      #expect(machine.recordsApplied - before < 100, "seek to \(target)")
      if target % 7 == 0 || target == last {
        #expect(state == (try Replay.rebuild(Workspace.self, directory: directory.path, through: target).state))
      }
    }
  }

  /// A seek reads a snapshot only when that costs less than replaying from where it would start
  /// otherwise (a file of B bytes counts as B / `snapshotBytesPerRecord` records): a jump from
  /// just before the snapshot to just after it replays the records between, a jump from the empty
  /// state to just after it reads the file. Both land on the state a replay from scratch gives.
  @Test func aSnapshotIsReadOnlyWhenThatCostsLessThanReplaying() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 97, commands: 1500).close()
    let middle = try JournalReader(directory: directory.path).lastSequence() / 2
    let store = SnapshotStore(journal: directory.path)
    try store.write(try Replay.rebuild(Workspace.self, directory: directory.path, through: middle).state, at: middle)
    let worth = UInt64(try #require(store.fileBytes(middle)) / TimeMachine<Workspace>.snapshotBytesPerRecord)
    // The test's shape: the file is worth more than the 15 records of the near jump, and less
    // than the replay from the empty state.
    #expect(worth > 15 && worth + 5 < middle, "the snapshot counts as \(worth) records")
    let expected = try Replay.rebuild(Workspace.self, directory: directory.path, through: middle + 5).state

    let near = try TimeMachine<Workspace>(directory: directory.path, keyframeInterval: 5)
    try near.jump(to: middle - 10)
    let before = near.recordsApplied
    #expect(try near.jump(to: middle + 5) == expected)
    #expect(near.snapshotsRead == 0)
    #expect(near.recordsApplied - before == 15)

    let far = try TimeMachine<Workspace>(directory: directory.path, keyframeInterval: 5)
    #expect(try far.jump(to: middle + 5) == expected)
    #expect(far.snapshotsRead == 1)
    #expect(far.recordsApplied == 5)
  }

  /// Without snapshots, keyframes bound the cost near where the machine has been: stepping back
  /// from the end of a long journal costs at most the keyframe interval per step, even after far
  /// more keyframes were laid down than are kept (the least recently used go first).
  @Test func keyframesKeepSeeksNearRecentPositionsCheap() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 93, commands: 900).close()
    let machine = try TimeMachine<Workspace>(
      directory: directory.path, keyframeInterval: 20, maxKeyframes: 8, useSnapshots: false)
    let last = machine.lastSequence
    try machine.jump(to: last)  // lays down last / 20 keyframes, keeps the newest 8
    #expect(machine.recordsApplied == Int(last))
    for _ in 0..<50 {  // 150 records back: within the 8 keyframes kept (160 records)
      let before = machine.recordsApplied
      try machine.step(by: -3)
      #expect(machine.recordsApplied - before <= 20, "step back to \(machine.position)")
    }
    #expect(
      machine.state == (try Replay.rebuild(Workspace.self, directory: directory.path, through: machine.position).state))
  }

  /// After `prepare()`, every seek applies fewer than the keyframe spacing, however few keyframes
  /// the machine keeps, reads no snapshot (there is one every 50 records, closer than most
  /// keyframes), and lands on the state a replay from scratch gives;
  /// the spacing spreads `maxKeyframes` over the journal.
  @Test func preparedSeeksCostAtMostTheKeyframeSpacing() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 95, commands: 1000).close()
    try Snapshots.update(Workspace.self, directory: directory.path, every: 50, keep: 100)
    let machine = try TimeMachine<Workspace>(directory: directory.path, keyframeInterval: 10, maxKeyframes: 12)
    let last = machine.lastSequence
    try machine.prepare()
    let spacing = machine.keyframeSpacing
    #expect(spacing > 10 && spacing * 11 >= last && spacing * 10 < last)
    #expect(machine.recordsApplied <= Int(last))
    var random = SeededGenerator(seed: 96)
    var targets: [UInt64] = [last, 0, 1, spacing - 1, spacing, spacing + 1, last - 1]
    for _ in 0..<40 { targets.append(UInt64.random(in: 0...last, using: &random)) }
    for (index, target) in targets.enumerated() {
      let before = machine.recordsApplied
      let state = try machine.jump(to: target)
      #expect(machine.recordsApplied - before < Int(spacing), "seek to \(target)")
      #expect(machine.snapshotsRead == 0, "seek to \(target)")
      if index % 5 == 0 {
        #expect(state == (try Replay.rebuild(Workspace.self, directory: directory.path, through: target).state))
      }
    }
  }

  /// `prepare()` is one replay from the empty state through the last keyframe: one pass of
  /// progress, whose last report counts every record it applied, and a second `prepare()`
  /// applies nothing. The keyframes it laid give the states a replay from scratch gives.
  @Test func prepareIsOneReplay() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 98, commands: 1000).close()
    let machine = try TimeMachine<Workspace>(
      directory: directory.path, keyframeInterval: 10, maxKeyframes: 12, useSnapshots: false)
    var reports: [ReplayProgress] = []
    machine.progress = { reports.append($0) }
    try machine.prepare()
    let spacing = machine.keyframeSpacing
    let end = machine.lastSequence / spacing * spacing
    #expect(end >= 10 * spacing)
    #expect(machine.recordsApplied == Int(end))
    #expect(reports.last == ReplayProgress(sequence: end, target: end, recordsApplied: Int(end)))
    #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.recordsApplied < $1.recordsApplied })
    try machine.prepare()
    #expect(machine.recordsApplied == Int(end))
    for sequence in [spacing, 5 * spacing, end] {
      #expect(
        try machine.state(at: sequence)
          == (try Replay.rebuild(Workspace.self, directory: directory.path, through: sequence).state))
    }
    #expect(machine.recordsApplied == Int(end), "the states at keyframes are kept, not replayed")
  }

  /// `blame(entity:)` finds the store by the id's text and agrees with the typed blame.
  @Test func blameByEntityIDAgreesWithTypedBlame() async throws {
    let directory = TemporaryDirectory()
    let manager = try await writeWorkload(directory.path, seed: 94, commands: 300)
    let items = Set(manager.state.readingList.all().map(\.id))
    manager.close()
    let machine = try TimeMachine<Workspace>(directory: directory.path)
    let notes = Set(
      try Replay.events(of: Workspace.self, directory: directory.path).compactMap {
        ($0.event as? NoteCreated)?.id
      })
    #expect(!notes.isEmpty && !items.isEmpty)
    for id in notes {
      let typed = try machine.blame(\.notes, id: id)
      let erased = try machine.blame(entity: id.description)
      #expect(erased.map(\.event.envelope.sequence) == typed.map(\.event.envelope.sequence))
      #expect(erased.map { $0.after as? Note } == typed.map(\.after))
      #expect(erased.allSatisfy { $0.store == "notes" })
    }
    for id in items {
      let erased = try machine.blame(entity: id.description)
      #expect(
        erased.map(\.event.envelope.sequence)
          == (try machine.blame(\.readingList, id: id)).map(\.event.envelope.sequence))
      #expect(erased.allSatisfy { $0.store == "readingList" })
    }
    let settings = try machine.blame(entity: "settings")
    #expect(settings.map(\.event.envelope.sequence) == (try machine.blame(\.settings)).map(\.event.envelope.sequence))
    #expect(try machine.blame(entity: "00000000000000000000000000abcdef").isEmpty)
  }

  /// A manager's start-up replay says which snapshot it used and which it skipped, and why.
  @Test func startUpReportsSkippedSnapshots() async throws {
    let directory = TemporaryDirectory()
    let manager = try await writeWorkload(directory.path, seed: 95, commands: 320)
    let live = manager.state
    manager.close()
    try Snapshots.update(Workspace.self, directory: directory.path, every: 100, keep: 10)
    let store = SnapshotStore(journal: directory.path)
    #expect(store.sequences() == [100, 200, 300])
    let path = { (sequence: UInt64) in directory.appending("snapshots/" + SnapshotStore.fileName(sequence)) }
    // 300 is cut short, 200 comes from another journal, and 100 is left alone.
    var bytes = try Files.read(path(300))
    bytes.removeLast(40)
    try Files.write(bytes, to: path(300))
    var foreign = try SnapshotFile.decode(try Files.read(path(200)))
    foreign.journalID = JournalID.random().bytes
    try Files.write(foreign.encoded(), to: path(200))

    let reopened = try Manager<Workspace>(directory: directory.path, options: JournalOptions(durability: .none))
    defer { reopened.close() }
    #expect(reopened.state == live)
    let report = reopened.startupReport
    #expect(report.snapshotSequence == 100)
    #expect(report.recordsApplied == Int(reopened.lastSequence - 100))
    #expect(report.skippedSnapshots.map(\.sequence) == [300, 200])
    switch (report.skippedSnapshots[0].reason, report.skippedSnapshots[1].reason) {
    case (.corrupt, .foreign): break
    default: Issue.record("\(report.skippedSnapshots)")
    }
    // A journal without snapshots reports a full replay and nothing skipped.
    let plain = TemporaryDirectory()
    try await writeWorkload(plain.path, seed: 96, commands: 30).close()
    let fresh = try Manager<Workspace>(directory: plain.path, options: JournalOptions(durability: .none))
    #expect(fresh.startupReport.snapshotSequence == nil)
    #expect(fresh.startupReport.recordsApplied == Int(fresh.lastSequence))
    #expect(fresh.startupReport.skippedSnapshots.isEmpty)
    fresh.close()
  }

  /// The maintenance job records a checkpoint after every 10 committed events and keeps the
  /// newest 2 snapshots at multiples of 25; every checkpoint verifies and the snapshots are used.
  @Test func maintenanceWritesCheckpointsAndSnapshots() async throws {
    let directory = TemporaryDirectory()
    let manager = try Manager<Workspace>(
      directory: directory.path, options: JournalOptions(durability: .none),
      clock: .stepping(from: 1_700_000_000_000_000_000), ids: .sequential())
    let job = Task {
      try await manager.maintain(
        checkpointEvery: 10, snapshots: SnapshotPolicy(directory: directory.path, every: 25, keep: 2))
    }
    // The job subscribes when it starts: wait for it before committing anything.
    try await manager.waitUntil(observersAttached: 1)
    // Blocks of 10 commands, each waited for until its checkpoint is sent, then 5. One append
    // per command (each awaited) and two per checkpoint (its mark, then its digest): the k-th
    // digest is append 12k. Once sent, its sequence number is fixed, and the next block's
    // commands come after it. (A poll of the journal's files every 5 ms gave up after 6000
    // looks, which a loaded parallel run could outlast.)
    func commit(_ count: Int) async throws {
      for step in 0..<count {
        try await manager.perform(.user) { _, command in
          command.record(EditorSettingsChanged(settings: EditorSettings(fontSize: 10 + step % 9)))
        }
      }
    }
    for block in 1...12 {
      try await commit(10)
      try await manager.waitUntil(journalAppends: 12 * block)
    }
    try await commit(5)
    let live = manager.state
    let last = manager.lastSequence
    manager.close()
    try await job.value

    // A checkpoint after every 10 user events, as a mark and its digest: the k-th mark lands after
    // 10k events and k - 1 checkpoints (2 records each), its digest next (nothing else ran).
    #expect(try checkpointSequences(directory.path, CheckpointMark.name) == (1...12).map { UInt64(12 * $0 - 1) })
    #expect(try checkpointSequences(directory.path, CheckpointDigest.name) == (1...12).map { UInt64(12 * $0) })
    #expect(last == 12 * 12 + 5)
    let verified = try Replay.verify(Workspace.self, directory: directory.path)
    #expect(verified.checkpointsVerified == 12)
    #expect(verified.firstDivergence == nil)
    // Snapshots: at multiples of 25, pruned to the newest 2, and usable.
    let snapshots = SnapshotStore(journal: directory.path).sequences()
    #expect((1...2).contains(snapshots.count), "\(snapshots)")
    #expect(snapshots.allSatisfy { $0 % 25 == 0 && $0 <= last })
    // The job's last look came within 25 records of the end, and wrote every multiple of 25 by then.
    #expect(try #require(snapshots.last) >= (last - 24) / 25 * 25)
    let outcome = try Replay.run(Workspace.self, directory: directory.path)
    #expect(outcome.report.snapshotSequence == snapshots.last)
    #expect(outcome.report.skippedSnapshots.isEmpty)
    #expect(outcome.state == live)
  }

  private func checkpointSequences(_ directory: String, _ name: String) throws -> [UInt64] {
    let cursor = try JournalReader(directory: directory).records(from: 1)
    var found: [UInt64] = []
    while let record = try cursor.next() {
      if try EventRecord.header(of: record.payload).name == name { found.append(record.sequence) }
    }
    return found
  }
}
