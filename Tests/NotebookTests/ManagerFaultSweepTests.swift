import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

/// Fault injection at manager level: one Notebook workload, run again and again with its Nth
/// write (or fsync) call failing with EIO, ENOSPC or a short write, for every N the workload
/// makes (opening the journal included). Whatever fails, the manager's state, its observers and
/// the journal agree: the state is the replay of the journal, every acknowledged command is in
/// it, a failed command is neither applied nor announced, and once the fault is gone a new
/// manager opens the journal and continues.
@Suite struct ManagerFaultSweepTests {
  static func options(_ io: FaultInjectingFileIO?, _ durability: Durability) -> JournalOptions {
    var options = JournalOptions(durability: durability)
    options.segmentTargetBytes = 2 << 10  // several segment rolls in one workload
    options.indexIntervalBytes = 256
    if let io { options.io = io }
    return options
  }

  static func open(_ directory: String, _ io: FaultInjectingFileIO?, _ durability: Durability) throws
    -> NotebookManager
  {
    try NotebookManager(
      directory: directory, options: options(io, durability), clock: .stepping(from: 1_700_000_000_000_000_000),
      ids: .sequential())
  }

  /// Command `step` of the workload, against the manager's current state.
  static func command(_ step: Int, on manager: NotebookManager) async throws {
    let state = manager.state
    let notebook = state.notebooks.all().first?.id
    let note = state.notes.all().last?.id
    switch (step % 7, notebook, note) {
    case (0, _, _), (_, nil, _): try await manager.createNotebook(title: "book \(step)")
    case (1, let book?, _), (2, let book?, nil):
      try await manager.createNote(in: book, title: "note \(step)", body: String(repeating: "b", count: step * 7))
    case (2, _, let note?): try await manager.retitleNote(note, to: "title \(step)")
    case (3, _, let note?): try await manager.tagNote(note, with: NoteTag("tag\(step % 3)"))
    case (4, _, _): _ = try await manager.addReadingItem(title: "item \(step)")
    case (5, _, let note?): try await manager.editBody(of: note, to: "edited \(step)")
    default: try await manager.updateSettings(EditorSettings(fontSize: 10 + step % 9))
    }
  }

  struct RunResult {
    var writes = 0
    var syncs = 0
    var struck = 0
    var failedCommands = 0
    var durabilityLost = false
  }

  static let steps = 30

  /// One run of the workload with `fault` armed after `skip` calls (nil: a clean run).
  static func run(_ fault: FaultInjectingFileIO.Fault?, skip: Int, durability: Durability) async throws -> RunResult {
    let dir = TemporaryDirectory("manager-faults")
    let io = FaultInjectingFileIO()
    let context = "\(fault.map { "\($0)" } ?? "no fault") after \(skip) calls, \(durability)"
    if let fault { io.arm(fault, pathContains: "", skip: skip) }
    var result = RunResult()

    let manager: NotebookManager
    do {
      manager = try Self.open(dir.path, io, durability)
    } catch {
      // Opening failed under the fault: a typed error, and a clean retry opens.
      #expect(error is JournalError, "\(context): \(error)")
      io.disarm()
      manager = try Self.open(dir.path, io, durability)
    }
    let changes = manager.changes()
    let observed = Task {
      var seen: [ClosedRange<UInt64>] = []
      for await change in changes { seen.append(change.sequences) }
      return seen
    }

    var acknowledged: [ClosedRange<UInt64>] = []
    workload: for step in 0..<Self.steps {
      for attempt in 0..<2 {
        let before = manager.lastSequence
        let stateBefore = try StateDigest.of(manager.state)
        do {
          try await Self.command(step, on: manager)
          if manager.lastSequence > before { acknowledged.append((before + 1)...manager.lastSequence) }
          break
        } catch let error as ManagerError {
          result.failedCommands += 1
          #expect(manager.lastSequence == before, "\(context): a failed command moved the sequence")
          #expect(try StateDigest.of(manager.state) == stateBefore, "\(context): a failed command changed the state")
          if error.code == .durabilityLost {
            result.durabilityLost = true
            await #expect(throws: ManagerError.self, "\(context): commands after lost durability") {
              try await Self.command(step, on: manager)
            }
            break workload
          }
          #expect(error.code == .appendFailed, "\(context): \(error)")
          #expect(attempt == 0, "\(context): the fault strikes once, the retry must succeed: \(error)")
        }
      }
    }
    result.writes = io.counts.writes
    result.syncs = io.counts.syncs
    result.struck = io.struck
    let finalState = try StateDigest.of(manager.state)
    let finalSequence = manager.lastSequence
    manager.close()
    let seen = await observed.value
    #expect(seen == acknowledged, "\(context): observers saw \(seen.count) changes for \(acknowledged.count) commands")
    #expect(finalSequence == acknowledged.last?.upperBound ?? 0, "\(context)")

    // The journal holds exactly the acknowledged commands, and replays to the manager's state.
    io.disarm()
    let replayed = try Replay.rebuild(Workspace.self, directory: dir.path)
    #expect(replayed.lastSequence == finalSequence, "\(context)")
    #expect(try StateDigest.of(replayed.state) == finalState, "\(context)")
    #expect(try JournalReader(directory: dir.path).verify().isSound, "\(context)")

    // Once the fault is gone, a new manager opens the journal and continues.
    let reopened = try NotebookManager(
      directory: dir.path, options: options(nil, durability), clock: .stepping(from: 1_800_000_000_000_000_000),
      ids: .sequential(prefix: 1 << 40))
    #expect(try StateDigest.of(reopened.state) == finalState, "\(context)")
    try await reopened.createNotebook(title: "after the fault")
    #expect(reopened.lastSequence == finalSequence + 1, "\(context)")
    reopened.close()
    return result
  }

  static func sweep(_ fault: FaultInjectingFileIO.Fault, overSyncs: Bool, durability: Durability) async throws {
    let clean = try await run(nil, skip: 0, durability: durability)
    #expect(clean.failedCommands == 0 && clean.struck == 0)
    let calls = overSyncs ? clean.syncs : clean.writes
    #expect(calls > Self.steps, "the workload should make more calls than commands (segments, index)")
    var struck = 0
    var failed = 0
    var lost = 0
    for n in 0..<calls {
      let result = try await run(fault, skip: n, durability: durability)
      struck += result.struck
      failed += result.failedCommands
      lost += result.durabilityLost ? 1 : 0
    }
    #expect(struck == calls, "every armed fault should strike once")
    if overSyncs { #expect(lost > 0, "failed fsyncs of segments must lose durability") }
    // The figures docs/RELIABILITY.md quotes.
    print(
      "manager fault sweep: \(fault), \(durability): \(calls) runs, \(struck) faults, \(failed) failed commands, \(lost) stopped"
    )
  }

  @Test(arguments: [
    FaultInjectingFileIO.Fault.writeError(EIO), .writeError(ENOSPC), .shortWrite(bytes: 10, thenErrno: ENOSPC),
  ])
  func everyWriteCallFailsInTurn(fault: FaultInjectingFileIO.Fault) async throws {
    try await Self.sweep(fault, overSyncs: false, durability: .always)
  }

  @Test(arguments: [Durability.always, .batched])
  func everySyncCallFailsInTurn(durability: Durability) async throws {
    try await Self.sweep(.syncError(EIO), overSyncs: true, durability: durability)
  }
}
