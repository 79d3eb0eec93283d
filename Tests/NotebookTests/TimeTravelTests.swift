import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

@testable import Notebook
@testable import Rewind

@Suite struct TimeTravelTests {
  @Test(arguments: [11 as UInt64, 12])
  func replayEqualsTheLiveStateAfterALongRandomWorkload(seed: UInt64) async throws {
    let directory = TemporaryDirectory()
    let manager = try await writeWorkload(directory.path, seed: seed, commands: 1500)
    defer { manager.close() }
    var options = ReplayOptions()
    var progress: [ReplayProgress] = []
    options.progressInterval = 100
    let streamed = try Replay.run(Workspace.self, directory: directory.path, options: options) { progress.append($0) }
    #expect(streamed.state == manager.state, "seed \(seed)")
    #expect(streamed.report.lastSequence == manager.lastSequence)
    #expect(try StateDigest.of(streamed.state) == StateDigest.of(manager.state))
    #expect(progress.last?.sequence == manager.lastSequence)
    #expect(progress.count >= Int(manager.lastSequence / 100))
    // Decoding on the applying thread gives the same state as the two-thread pipeline.
    options.batchesInFlight = 0
    options.recordsPerBatch = 7
    #expect(try Replay.run(Workspace.self, directory: directory.path, options: options).state == manager.state)
    // A manager reopened on the journal rebuilds the same state.
    manager.close()
    let reopened = try NotebookManager(directory: directory.path)
    #expect(reopened.state == streamed.state)
    reopened.close()
  }

  @Test(arguments: [false, true])
  func stateAtNEqualsAFreshReplayOfTheFirstNRecords(withSnapshots: Bool) async throws {
    let directory = TemporaryDirectory()
    let manager = try await writeWorkload(directory.path, seed: 21, commands: 600)
    let last = manager.lastSequence
    manager.close()
    if withSnapshots {
      let written = try Snapshots.update(Workspace.self, directory: directory.path, every: 97, keep: 100)
      #expect(written == Array(stride(from: 97, through: last, by: 97)))
    }
    let machine = try TimeMachine<Workspace>(
      directory: directory.path, keyframeInterval: 40, useSnapshots: withSnapshots)
    var random = SeededGenerator(seed: 5)
    var points: [UInt64] = [0, 1, last, last - 1, 97, 96, 98]
    for _ in 0..<40 { points.append(UInt64.random(in: 0...last, using: &random)) }
    for n in points {
      let fresh = try Replay.rebuild(Workspace.self, directory: directory.path, through: n).state
      #expect(try machine.state(at: n) == fresh, "n = \(n)")
    }
    // Stepping back and forth lands on the same states.
    try machine.jump(to: 300)
    try machine.step(by: -1)
    #expect(machine.position == 299)
    #expect(machine.state == (try Replay.rebuild(Workspace.self, directory: directory.path, through: 299).state))
    try machine.step(by: 2)
    #expect(machine.state == (try Replay.rebuild(Workspace.self, directory: directory.path, through: 301).state))
    try machine.step(by: -1_000_000)
    #expect(machine.position == 0 && machine.state == Workspace())
    #expect(machine.skippedSnapshots.isEmpty)
  }

  @Test func stateAtATimeIsTheStateThroughTheLastRecordStampedBeforeIt() async throws {
    let directory = TemporaryDirectory()
    let manager = try await writeWorkload(directory.path, seed: 3, commands: 200)
    manager.close()
    let events = try Replay.events(of: Workspace.self, directory: directory.path)
    let machine = try TimeMachine<Workspace>(directory: directory.path)
    for index in stride(from: 0, to: events.count, by: 17) {
      let stamp = events[index].envelope.timestamp
      let through = events.last { $0.envelope.timestamp <= stamp }!.envelope.sequence
      #expect(
        try machine.state(atTime: stamp)
          == Replay.rebuild(Workspace.self, directory: directory.path, through: through).state)
    }
    #expect(try machine.state(atTime: 0) == Workspace())
  }

  @Test func digestsDoNotDependOnFrameOrSegmentSizesOrTheProcess() async throws {
    let large = TemporaryDirectory()
    let small = TemporaryDirectory()
    var tiny = JournalOptions(durability: .none)
    tiny.segmentTargetBytes = 2048
    tiny.frameTargetBytes = 128
    tiny.indexIntervalBytes = 256
    try await writeWorkload(large.path, seed: 8, commands: 400).close()
    try await writeWorkload(small.path, seed: 8, commands: 400, options: tiny).close()
    #expect(Files.list(small.path).filter { $0.hasSuffix(".lz4") }.count > 3)
    let last = try JournalReader(directory: large.path).lastSequence()
    #expect(try JournalReader(directory: small.path).lastSequence() == last)
    let child = try #require(ChildProcess.builtProduct("replay-child"))
    for n in stride(from: 0, through: last, by: 37) + [last] {
      let a = try StateDigest.of(Replay.rebuild(Workspace.self, directory: large.path, through: n).state)
      let b = try StateDigest.of(Replay.rebuild(Workspace.self, directory: small.path, through: n).state)
      #expect(a == b, "n = \(n)")
      if n % 111 == 0 || n == last {
        let process = try ChildProcess(executable: child, arguments: ["digest", small.path, String(n)])
        #expect(try await process.waitForLine { $0.hasPrefix("digest ") })
        #expect(process.lines.first == "digest \(a)", "n = \(n)")
      }
    }
  }

  @Test func diffAgreesWithANaiveComparison() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 31, commands: 300).close()
    let machine = try TimeMachine<Workspace>(directory: directory.path, keyframeInterval: 25)
    var random = SeededGenerator(seed: 9)
    for _ in 0..<25 {
      let a = UInt64.random(in: 0...machine.lastSequence, using: &random)
      let b = UInt64.random(in: 0...machine.lastSequence, using: &random)
      let diff = try machine.diff(from: a, to: b)
      let old = try Replay.rebuild(Workspace.self, directory: directory.path, through: a).state
      let new = try Replay.rebuild(Workspace.self, directory: directory.path, through: b).state
      let before = Dictionary(uniqueKeysWithValues: old.notes.all().map { ($0.id.description, $0) })
      let after = Dictionary(uniqueKeysWithValues: new.notes.all().map { ($0.id.description, $0) })
      let changes = diff.changes(in: "notes") ?? CollectionChanges(name: "notes")
      #expect(Set(changes.inserted.map(\.id)) == Set(after.keys).subtracting(before.keys))
      #expect(Set(changes.removed.map(\.id)) == Set(before.keys).subtracting(after.keys))
      let updated = Set(before.keys).intersection(after.keys).filter { before[$0] != after[$0] }
      #expect(Set(changes.updated.map(\.id)) == updated)
      for change in changes.updated {
        #expect(change.before(as: Note.self) == before[change.id] && change.after(as: Note.self) == after[change.id])
      }
      let settingsChanged = old.settings.value != new.settings.value
      #expect((diff.changes(in: "settings") != nil) == settingsChanged)
    }
  }

  @Test func blameAgreesWithANaiveWalkOverEveryPrefix() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 41, commands: 150).close()
    let machine = try TimeMachine<Workspace>(directory: directory.path)
    let final = try machine.state(at: machine.lastSequence)
    var states = [Workspace()]
    for n in 1...machine.lastSequence {
      states.append(try Replay.rebuild(Workspace.self, directory: directory.path, through: n).state)
    }
    let everNotes = Set(states.flatMap { $0.notes.all().map(\.id) })
    #expect(everNotes.count > final.notes.count)  // some notes were deleted: blame must see removals
    for id in everNotes {
      let blamed = try machine.blame(\.notes, id: id)
      var expected: [(UInt64, Note?)] = []
      for n in 1..<states.count where states[n].notes.find(id: id) != states[n - 1].notes.find(id: id) {
        expected.append((UInt64(n), states[n].notes.find(id: id)))
      }
      #expect(blamed.map(\.event.envelope.sequence) == expected.map(\.0), "note \(id)")
      #expect(blamed.map(\.after) == expected.map(\.1), "note \(id)")
    }
    let settings = try machine.blame(\.settings)
    #expect(settings.allSatisfy { $0.event.envelope.name == EditorSettingsChanged.name })
  }

  @Test func bisectFindsAPlantedBreak() async throws {
    let directory = TemporaryDirectory()
    let planted = SequenceBox()
    let manager = try await writeWorkload(
      directory.path, seed: 51, commands: 700,
      plant: (
        at: 417,
        action: { manager in
          try await manager.createNotebook(title: "forbidden")
          planted.value = manager.lastSequence
        }
      ))
    manager.close()
    let invariant = Invariant<Workspace>("no notebook is titled forbidden") { state in
      !state.notebooks.all().contains { $0.title == "forbidden" }
    }
    let machine = try TimeMachine<Workspace>(directory: directory.path, keyframeInterval: 64)
    #expect(planted.value > 0)
    #expect(try machine.bisect(invariant) == planted.value)
    #expect(try machine.firstFailure(of: invariant) == planted.value)
    #expect(try machine.bisect(Invariant("always") { _ in true }) == nil)
  }

  /// A time machine keeping the fewest keyframes (two, as `rewind bisect` opens it, none laid
  /// within this history) bisects as one keeping many does, replaying about twice the history:
  /// each probe starts from the last
  /// state found to hold, which it keeps again for the next (RELIABILITY 372). Before, a probe
  /// after a failing one found no keyframe before it and replayed from the start, about half the
  /// history for each of the log2(history) probes.
  @Test(arguments: [0.9, 0.5, 0.1])
  func bisectWithTwoKeyframesReplaysAboutTwiceTheHistory(breakAt fraction: Double) async throws {
    let directory = TemporaryDirectory()
    let planted = SequenceBox()
    let manager = try await writeWorkload(
      directory.path, seed: 52, commands: 1_200,
      plant: (
        at: Int(1_200 * fraction),
        action: { manager in
          try await manager.createNotebook(title: "forbidden")
          planted.value = manager.lastSequence
        }
      ))
    let last = manager.lastSequence
    manager.close()
    let invariant = Invariant<Workspace>("no notebook is titled forbidden") { state in
      !state.notebooks.all().contains { $0.title == "forbidden" }
    }
    let many = try TimeMachine<Workspace>(directory: directory.path, keyframeInterval: 64, useSnapshots: false)
    let few = try TimeMachine<Workspace>(directory: directory.path, maxKeyframes: 2, useSnapshots: false)
    #expect(try many.bisect(invariant) == planted.value)
    #expect(try few.bisect(invariant) == planted.value)
    // The first pass to the end, then probes that together cover about the history once more
    // (each ends its command, a few records past its middle).
    #expect(few.recordsApplied <= Int(last) * 2 + 200, "\(few.recordsApplied) records for \(last)")
  }

  /// How a planted break is made: a note retitled "bad" (and left so, or retitled back by the next
  /// command), or a note's notebook renamed "forbidden" and back, which breaks the note without
  /// touching it.
  enum PlantedBreak: CaseIterable {
    case noteStays, noteRepaired, notebookRepaired
  }

  /// `firstFailure` of an invariant over the notes, checked incrementally, against the same
  /// predicate checked on the whole state after every record, on seeded workloads with a break
  /// planted at several points; and both against where the break was planted.
  @Test(arguments: PlantedBreak.allCases)
  func incrementalFirstFailureAgreesWithTheWholeCheck(kind: PlantedBreak) async throws {
    let incremental = Invariant<Workspace>("notes are fine", everyRecordOf: \.notes) { note, state in
      note.title != "bad" && state.notebooks.find(id: note.notebook)?.title != "forbidden"
    }
    let whole = Invariant<Workspace>("notes are fine, whole", holds: incremental.holds)
    // The same, naming the one other store it reads: changes elsewhere are passed over.
    let reading = Invariant<Workspace>("notes are fine", everyRecordOf: \.notes, reading: [\.notebooks]) {
      note, state in
      note.title != "bad" && state.notebooks.find(id: note.notebook)?.title != "forbidden"
    }
    #expect(incremental.holdsAfterChange != nil && whole.holdsAfterChange == nil)
    var replaced = incremental
    replaced.holds = { _ in true }
    #expect(replaced.holdsAfterChange == nil, "a replaced whole check drops the incremental one")
    for seed in 60..<66 as Range<UInt64> {
      var random = SeededGenerator(seed: seed)
      let at = Int.random(in: 0..<120, using: &random)
      let directory = TemporaryDirectory()
      let planted = SequenceBox()
      let manager = try await writeWorkload(
        directory.path, seed: seed, commands: 120,
        plant: (
          at: at,
          action: { manager in
            let note = try await Self.someNote(of: manager)
            switch kind {
            case .noteStays, .noteRepaired:
              try await manager.retitleNote(note.id, to: "bad")
              planted.value = manager.lastSequence
              if kind == .noteRepaired { try await manager.retitleNote(note.id, to: "fixed") }
            case .notebookRepaired:
              try await manager.renameNotebook(note.notebook, to: "forbidden")
              planted.value = manager.lastSequence
              try await manager.renameNotebook(note.notebook, to: "allowed")
            }
          }
        ))
      manager.close()
      let machine = try TimeMachine<Workspace>(directory: directory.path)
      #expect(planted.value > 0, "seed \(seed)")
      #expect(try machine.firstFailure(of: whole) == planted.value, "seed \(seed), \(kind) at \(at)")
      #expect(try machine.firstFailure(of: incremental) == planted.value, "seed \(seed), \(kind) at \(at)")
      #expect(try machine.firstFailure(of: reading) == planted.value, "seed \(seed), \(kind) at \(at)")
      if kind != .noteStays { #expect(try machine.bisect(whole) == nil, "repaired: bisect sees it hold at the end") }
    }
    // Without a planted break, both hold throughout.
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 66, commands: 120).close()
    let machine = try TimeMachine<Workspace>(directory: directory.path)
    #expect(try machine.firstFailure(of: whole) == nil)
    #expect(try machine.firstFailure(of: incremental) == nil)
    #expect(try machine.firstFailure(of: reading) == nil)
  }

  /// The incremental check asks only about the records each event changed (and every record
  /// after a change elsewhere): on a seeded workload, far fewer questions than the whole check,
  /// which asks about every note after every event, for the same answer.
  @Test func incrementalFirstFailureAsksAboutTheChangedRecords() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 67, commands: 300).close()
    let asked = Locked(0)
    let incremental = Invariant<Workspace>("titles are not bad", everyRecordOf: \.notes) { note, _ in
      asked.withLock { $0 += 1 }
      return note.title != "bad"
    }
    let machine = try TimeMachine<Workspace>(directory: directory.path)
    #expect(try machine.firstFailure(of: incremental) == nil)
    let questions = asked.withLock { count in
      defer { count = 0 }
      return count
    }
    #expect(try machine.firstFailure(of: Invariant("the same, whole", holds: incremental.holds)) == nil)
    let wholeQuestions = asked.withLock { $0 }
    #expect(questions > 0 && questions * 4 < wholeQuestions, "\(questions) against \(wholeQuestions)")
  }

  /// An invariant over the notes that names the other store it reads (`reading:`) is not checked
  /// whole after a command that changed only stores it does not read (the reading list, the
  /// settings): on a seeded workload it asks fewer questions than the same invariant without
  /// `reading`, which checks every note after each such command, for the same answer.
  @Test func anInvariantNamingWhatItReadsPassesOverChangesElsewhere() async throws {
    let directory = TemporaryDirectory()
    let manager = try await writeWorkload(directory.path, seed: 69, commands: 300)
    for index in 0..<40 { _ = try await manager.addReadingItem(title: "item \(index)") }
    manager.close()
    let asked = Locked(0)
    let holds: @Sendable (Note, Workspace) -> Bool = { note, state in
      asked.withLock { $0 += 1 }
      return state.notebooks.contains(id: note.notebook)
    }
    func questions(_ invariant: Invariant<Workspace>) throws -> Int {
      asked.withLock { $0 = 0 }
      #expect(try TimeMachine<Workspace>(directory: directory.path).firstFailure(of: invariant) == nil)
      return asked.withLock { $0 }
    }
    let anywhere = try questions(Invariant("notes belong to notebooks", everyRecordOf: \.notes, holds: holds))
    let named = try questions(
      Invariant("notes belong to notebooks", everyRecordOf: \.notes, reading: [\.notebooks], holds: holds))
    // The 40 reading-list commands at the end alone cost `anywhere` every note each.
    #expect(named > 0 && named + 40 * 10 < anywhere, "\(named) against \(anywhere)")
  }

  /// Readers see states between commands only (DESIGN.md, contract 3): a command whose first
  /// event makes a note in a notebook its second event makes breaks "notes have notebooks" in a
  /// state no reader saw, and neither `firstFailure` nor `bisect` reports it. The next command
  /// breaks it for readers, at its first event of two: both report that command's last record.
  @Test func invariantsAreCheckedBetweenCommandsOnly() async throws {
    let directory = TemporaryDirectory()
    let journal = try Journal(directory: directory.path, options: JournalOptions(durability: .none))
    let a = NotebookID(Identifier(high: 2, low: 1))
    let b = NotebookID(Identifier(high: 2, low: 2))
    let missing = NotebookID(Identifier(high: 2, low: 3))
    let (first, second) = (NoteID(Identifier(high: 3, low: 1)), NoteID(Identifier(high: 3, low: 2)))
    let commands: [[any Event]] = [
      [NotebookCreated(id: a, title: "a")],
      [NoteCreated(id: first, notebook: b, title: "n", body: "", tags: []), NotebookCreated(id: b, title: "b")],
      [
        NoteCreated(id: second, notebook: missing, title: "n", body: "", tags: []),
        NoteRetitled(id: second, title: "m"),
      ],
    ]
    for (index, events) in commands.enumerated() {
      let command = Identifier(high: 1, low: UInt64(index + 1))
      try await journal.append(
        events.map { NewRecord(timestamp: 1, payload: try EventRecord.encode($0, origin: .user, commandID: command)) })
    }
    journal.close()
    let whole = Invariant<Workspace>("notes have notebooks") { state in
      state.notes.all().allSatisfy { state.notebooks.find(id: $0.notebook) != nil }
    }
    let incremental = Invariant<Workspace>("notes have notebooks, incrementally", everyRecordOf: \.notes) {
      note, state in state.notebooks.find(id: note.notebook) != nil
    }
    let machine = try TimeMachine<Workspace>(directory: directory.path)
    #expect(try machine.firstFailure(of: whole) == 5)
    #expect(try machine.firstFailure(of: incremental) == 5)
    #expect(try machine.bisect(whole) == 5)
    #expect(try !whole.holds(machine.state(at: 2)), "the state inside the second command breaks it")
  }

  /// A note of the workload's, made in the first notebook if there is none yet.
  static func someNote(of manager: NotebookManager) async throws -> Note {
    if let note = manager.state.notes.all().first { return note }
    let notebook = try #require(manager.state.notebooks.all().first)
    let id = try await manager.createNote(in: notebook.id, title: "planted", body: "", tags: [])
    return try #require(manager.state.notes.find(id: id))
  }
}

/// A sequence number set from inside a workload's planted action.
final class SequenceBox: @unchecked Sendable {
  // `value` is written once by the workload's task and read after it finished.
  var value: UInt64 = 0
}
