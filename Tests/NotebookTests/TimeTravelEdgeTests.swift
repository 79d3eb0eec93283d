import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

@testable import Notebook
@testable import Rewind

/// The time machine at the edges of what it promises: journals with no events (empty, or only
/// checkpoint records), clocks that repeat and go back, sequence numbers and counts at the ends
/// of their types, and blame, bisect and diff at their edges, each checked against a plain
/// replay.
@Suite struct TimeTravelEdgeTests {
  /// Small frames and index entries every few of them: a time lookup starts from the index.
  static var options: JournalOptions {
    var options = JournalOptions(durability: .none)
    options.segmentTargetBytes = 4 << 10
    options.frameTargetBytes = 256
    options.indexIntervalBytes = 512
    return options
  }

  /// Appends `events`, one command each, stamped with `timestamps` (a record at a time).
  static func write(_ directory: String, _ events: [any Event], timestamps: [Int64]) throws {
    let journal = try Journal(directory: directory, options: options)
    defer { journal.close() }
    for (index, event) in events.enumerated() {
      let command = Identifier(high: 7, low: UInt64(index + 1))
      try journal.appendAndWait([
        NewRecord(
          timestamp: timestamps[index], payload: try EventRecord.encode(event, origin: .user, commandID: command))
      ])
    }
  }

  static func digest(_ directory: String, through sequence: UInt64) throws -> StateDigest {
    try StateDigest.of(Replay.rebuild(Workspace.self, directory: directory, through: sequence).state)
  }

  /// Clocks that repeat and go back (a clock set back, two writers): the state at a time is the
  /// state through the last record before the first one stamped later than it
  /// (`ReplayTarget.time`), whichever way it is asked, wherever the index entries fall.
  @Test(arguments: [5 as UInt64, 6, 7])
  func aTimeOnAClockThatRepeatsAndGoesBackIsTheStateBeforeTheFirstLaterRecord(seed: UInt64) throws {
    let directory = TemporaryDirectory()
    var random = SeededGenerator(seed: seed)
    let book = NotebookID(Identifier(high: 6, low: 1))
    let count = 300
    let events: [any Event] =
      [NotebookCreated(id: book, title: "book")]
      + (1..<count).map { NotebookRenamed(id: book, title: "title \($0) " + String(repeating: "x", count: $0 % 40)) }
    // Runs of equal stamps, steps forward, and now and then a step back.
    var stamps: [Int64] = []
    var clock: Int64 = 1_000
    for _ in 0..<count {
      switch Int.random(in: 0..<10, using: &random) {
      case 0..<4: break
      case 4..<8: clock += Int64.random(in: 1...5, using: &random)
      default: clock -= Int64.random(in: 1...30, using: &random)
      }
      stamps.append(clock)
    }
    try Self.write(directory.path, events, timestamps: stamps)

    let machine = try TimeMachine<Workspace>(directory: directory.path, keyframeInterval: 16, maxKeyframes: 4)
    var times = Set(stamps.flatMap { [$0 - 1, $0, $0 + 1] })
    times.formUnion([Int64.min, Int64.min + 1, -1, 0, Int64.max - 1, Int64.max])
    for time in times.sorted() {
      let expected = UInt64(stamps.firstIndex { $0 > time } ?? count)
      #expect(try machine.sequence(atTime: time) == expected, "time \(time)")
      #expect(try StateDigest.of(machine.state(atTime: time)) == Self.digest(directory.path, through: expected))
      try machine.jump(toTime: time)
      #expect(machine.position == expected, "time \(time)")
      #expect(try StateDigest.of(machine.state) == Self.digest(directory.path, through: expected), "time \(time)")
    }
  }

  /// A journal with no records, and one with only checkpoint records: every move ends at a
  /// state equal to the empty one, and every look says there is no event.
  @Test(arguments: [0, 3])
  func aJournalWithNoEventsHasOnlyTheEmptyState(checkpoints: Int) async throws {
    let directory = TemporaryDirectory()
    let manager = try NotebookManager(
      directory: directory.path, options: JournalOptions(durability: .none),
      clock: .stepping(from: 1_700_000_000_000_000_000), ids: .sequential())
    for _ in 0..<checkpoints { _ = try await manager.recordCheckpoint() }
    manager.close()
    try Snapshots.update(Workspace.self, directory: directory.path, every: 1, keep: 3)

    let machine = try TimeMachine<Workspace>(directory: directory.path, keyframeInterval: 1, maxKeyframes: 2)
    // A checkpoint is a mark and a digest record.
    let last = UInt64(checkpoints * 2)
    #expect(machine.lastSequence == last && machine.endHiddenBy == nil)
    let empty = try StateDigest.of(Workspace())
    func expect(at position: UInt64, _ what: String) throws {
      #expect(machine.position == position, "\(what)")
      #expect(try StateDigest.of(machine.state) == empty, "\(what)")
    }
    try machine.jump(to: .max)
    try expect(at: last, "jump .max")
    try machine.step(by: .min)
    try expect(at: 0, "step .min")
    try machine.step(by: .max)
    try expect(at: last, "step .max")
    try machine.step(by: -1)
    try expect(at: last - min(last, 1), "step -1")
    // Two keyframes at most: one spacing over the whole history.
    #expect(try machine.prepare() == KeyframeCoverage(spacing: max(1, last), through: last, stoppedByLimit: false))
    _ = try machine.prepare(memoryLimit: 0)
    try machine.jump(toTime: .min)
    try expect(at: 0, "time .min")
    try machine.jump(toTime: .max)
    try expect(at: last, "time .max")
    for sequence in [0, 1, last, last + 1, .max] {
      #expect(try machine.event(at: sequence) == nil, "event \(sequence)")
      #expect(try StateDigest.of(machine.state(at: sequence)) == empty, "state \(sequence)")
      #expect(try machine.commandEnd(from: sequence) == sequence)
      #expect(try machine.firstEvent(after: sequence) { _ in true } == nil)
      #expect(try machine.diff(from: sequence, to: 0).collections.isEmpty)
    }
    #expect(try machine.blame(entity: "settings").isEmpty)
    #expect(try machine.blame(\.settings).isEmpty)
    let never = Invariant<Workspace>("never") { _ in false }
    let always = Invariant<Workspace>("always") { _ in true }
    #expect(try machine.bisect(never) == 0 && machine.firstFailure(of: never) == 0)
    #expect(try machine.bisect(always) == nil && machine.firstFailure(of: always) == nil)
    #expect(machine.skippedSnapshots.isEmpty, "\(machine.skippedSnapshots)")
  }

  /// Blame, bisect and diff at their edges on a real history: an entity no event touched, an
  /// invariant that fails from the first command on or never, diff backwards and to itself.
  @Test func blameBisectAndDiffAtTheirEdges() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 9, commands: 120, checkpointEvery: 25).close()
    let machine = try TimeMachine<Workspace>(directory: directory.path, keyframeInterval: 8, maxKeyframes: 3)
    let last = machine.lastSequence
    #expect(try machine.blame(entity: "no-such-entity").isEmpty)
    #expect(try machine.blame(\.notes, id: NoteID(Identifier(high: 99, low: 99))).isEmpty)
    #expect(try machine.event(at: last + 1) == nil && machine.event(at: .max) == nil)
    #expect(try machine.firstEvent(after: last) { _ in true } == nil)
    #expect(try machine.firstEvent(after: .max) { _ in true } == nil)
    #expect(try machine.firstEvent(after: 0) { _ in true }?.envelope.sequence == 1)

    // Fails once the first command is done: both say its last record.
    let first = try machine.commandEnd(from: 1)
    let empty = Invariant<Workspace>("empty") { $0.notebooks.count == 0 }
    #expect(try machine.bisect(empty) == first && machine.firstFailure(of: empty) == first)
    let always = Invariant<Workspace>("always") { _ in true }
    #expect(try machine.bisect(always) == nil && machine.firstFailure(of: always) == nil)
    #expect(try machine.bisect(empty, through: 0) == nil && machine.firstFailure(of: empty, through: 0) == nil)

    for (a, b) in [(0, last), (last, 0), (40, 17), (17, 40), (33, 33), (.max, 5), (5, .max)] as [(UInt64, UInt64)] {
      let diff = try machine.diff(from: a, to: b)
      let old = try Replay.rebuild(Workspace.self, directory: directory.path, through: min(a, last)).state
      let new = try Replay.rebuild(Workspace.self, directory: directory.path, through: min(b, last)).state
      let naive = StateDiff.between(old, new, from: a, to: b)
      #expect(Self.text(diff) == Self.text(naive), "\(a) -> \(b)")
      if a == b { #expect(diff.collections.isEmpty) }
      // Backwards: what one way inserts, the other removes.
      let back = try machine.diff(from: b, to: a)
      #expect(
        diff.collections.map { $0.inserted.map(\.id) } == back.collections.map { $0.removed.map(\.id) }, "\(a) \(b)")
    }
  }

  /// The library's lookups by an id's text take an identifier typed in capitals, as `rewind
  /// blame` and `log --entity` do: `blame(entity:)` and `StateInspector.record(_:in:)` found
  /// nothing for one (a library user's walkthrough, Dec 7), though `Identifier` parses it.
  @Test func anIdentifierTypedInCapitalsIsFound() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 9, commands: 120, checkpointEvery: 25).close()
    let machine = try TimeMachine<Workspace>(directory: directory.path)
    let state = try machine.jump(to: machine.lastSequence)
    let note = try #require(state.notes.all().first { $0.id.description.contains { "abcdef".contains($0) } })
    let lower = note.id.description
    let upper = lower.uppercased()
    let blamed = try machine.blame(entity: lower).map(\.event.envelope.sequence)
    try #require(!blamed.isEmpty)
    #expect(try machine.blame(entity: upper).map(\.event.envelope.sequence) == blamed)
    let found = try #require(StateInspector.record(upper, in: state))
    #expect(found.store == "notes" && StateInspector.json(found.value) == StateInspector.json(note))
    #expect(StateInspector.located(upper, in: state)?.key == lower)
    #expect(StateInspector.record(String(upper.dropLast()), in: state) == nil, "31 digits are no identifier")
  }

  /// Every change of `diff`, as text.
  static func text(_ diff: StateDiff) -> [String] {
    diff.collections.flatMap { changes in
      (changes.inserted + changes.updated + changes.removed).map { "\(changes.name) \($0)" }
    }
  }

  /// A journal whose end a missing segment hides: `prepare` through a sequence number past the
  /// end, `UInt64.max` among them, throws the damage (it trapped on an overflow), and leaves the
  /// time machine serving the records before it; blame by key path answers for them.
  @Test func prepareAndBlameAtAHiddenEnd() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 4, commands: 150, options: Self.options).close()
    let segments = Files.list(directory.path).filter { $0.hasSuffix(".lz4") }
    try #require(segments.count > 3)
    let scratch = TemporaryDirectory()
    let intactCopy = scratch.appending("intact")
    try Files.copyDirectory(directory.path, to: intactCopy)
    try FileManager.default.removeItem(atPath: directory.appending(segments[1]))
    let whole = try TimeMachine<Workspace>(directory: intactCopy)
    for maxKeyframes in [2, 5, 1024] {
      let machine = try TimeMachine<Workspace>(directory: directory.path, maxKeyframes: maxKeyframes)
      let intact = machine.lastIntactSequence
      try #require(machine.endHiddenBy != nil && intact > 5)
      for through: UInt64 in [.max, .max - 1, .max - UInt64(maxKeyframes), UInt64(Int.max) + 7, intact + 1] {
        #expect(throws: JournalError.self, "through \(through)") { try machine.prepare(through: through) }
        #expect(throws: JournalError.self) { try machine.prepare(memoryLimit: 1 << 30, through: through) }
      }
      // Blame by key path answers for the records before the damage when told to stop there, as
      // blame by the id's text does (it took no `through`, and so always met the damage).
      let note = try #require(whole.state(at: intact).notes.all().first?.id)
      #expect(throws: JournalError.self) { try machine.blame(\.notes, id: note) }
      #expect(
        try machine.blame(\.notes, id: note, through: intact).map(\.event.envelope.sequence)
          == whole.blame(\.notes, id: note).map(\.event.envelope.sequence).filter { $0 <= intact })
      #expect(
        try machine.blame(\.settings, through: intact).map(\.event.envelope.sequence)
          == whole.blame(\.settings).map(\.event.envelope.sequence).filter { $0 <= intact })
      let coverage = try machine.prepare(through: intact)
      #expect(coverage.through <= intact && !coverage.stoppedByLimit)
      try machine.jump(to: intact)
      #expect(try StateDigest.of(machine.state) == Self.digest(directory.path, through: intact))
    }
  }

  /// A frame in the middle of the history fails its checksum, and a snapshot lies after it: a
  /// seek past the snapshot is served from it, as the documentation promises (only a read that
  /// reaches damage meets it), though a keyframe before the damage was closer (the seek replayed
  /// from there, met the damage and threw). A seek between the damage and the snapshot still
  /// throws it and moves nothing.
  @Test func aSeekPastDamageStartsFromASnapshotAfterIt() async throws {
    let temporary = TemporaryDirectory()
    let (intact, copy, _, frame) = try await TimeTravelDifferentialTests.copyWithADamagedFrame(temporary)
    let reference = TimeTravelDifferentialTests.Reference(intact)
    let snapshot = try #require(SnapshotStore(journal: copy).sequences().first { $0 > frame.sequences.upperBound })
    let before = frame.sequences.lowerBound - 1

    // The default interval: the whole journal lies within one, so no snapshot is read as cheaper.
    let machine = try TimeMachine<Workspace>(directory: copy)
    try #require(machine.lastSequence - before < machine.keyframeSpacing)
    for target in [snapshot, snapshot + 1, machine.lastSequence] {
      try machine.jump(to: before)
      try machine.jump(to: target)
      #expect(machine.position == target)
      #expect(try StateDigest.of(machine.state) == reference.digest(through: target), "\(target)")
      try machine.jump(to: before)
      #expect(try StateDigest.of(machine.state(at: target)) == reference.digest(through: target))
    }
    try machine.jump(to: before)
    let error = #expect(throws: JournalError.self) { try machine.jump(to: snapshot - 1) }
    #expect(error?.sequences == frame.sequences, "\(String(describing: error))")
    #expect(machine.position == before)
    #expect(try StateDigest.of(machine.state) == reference.digest(through: before))
    #expect(machine.skippedSnapshots.isEmpty, "\(machine.skippedSnapshots)")
  }

  /// A `prepare()` whose replay meets damage in the middle of the history throws it and leaves
  /// seeks keeping keyframes every `keyframeInterval` records, as one a memory limit stopped
  /// does, not at the wide spacing it reckoned for the whole history (a seek would then replay
  /// up to that many records where it should replay up to the interval).
  @Test func aPrepareThatMeetsDamageLeavesSeeksAtTheInterval() async throws {
    let temporary = TemporaryDirectory()
    let (intact, copy, _, frame) = try await TimeTravelDifferentialTests.copyWithADamagedFrame(temporary)
    let reference = TimeTravelDifferentialTests.Reference(intact)

    let machine = try TimeMachine<Workspace>(
      directory: copy, keyframeInterval: 8, maxKeyframes: 4, useSnapshots: false)
    try #require(machine.lastSequence / 3 > 8, "a history long enough for a wider spacing")
    let error = #expect(throws: JournalError.self) { try machine.prepare() }
    #expect(error?.sequences == frame.sequences, "\(String(describing: error))")
    #expect(machine.keyframeSpacing == 8)
    // Seeks before the damage are served as before.
    let before = frame.sequences.lowerBound - 1
    try machine.jump(to: before)
    #expect(try StateDigest.of(machine.state) == reference.digest(through: before))
  }
}
