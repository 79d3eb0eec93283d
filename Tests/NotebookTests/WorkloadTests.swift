import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

/// The seeded workload through the library: what it reports is what the journal holds, the state
/// it leaves replays, and the same seed under another durability policy leaves the same state.
@Suite struct WorkloadTests {
  static func run(seed: UInt64, events: Int, durability: Durability) async throws -> (
    TemporaryDirectory, WorkloadSummary, Workspace
  ) {
    let temporary = TemporaryDirectory("workload")
    let workload = NotebookWorkload(seed: seed)
    let manager = try NotebookManager(
      directory: temporary.appending("journal"), options: JournalOptions(durability: durability),
      clock: workload.clock, ids: workload.ids)
    let summary = try await workload.run(manager, events: events)
    #expect(manager.lastSequence == UInt64(summary.events), "seed \(seed)")
    let state = manager.state
    manager.close()
    return (temporary, summary, state)
  }

  @Test func theSummaryIsWhatTheJournalHoldsAndTheStateReplays() async throws {
    let (temporary, summary, state) = try await Self.run(seed: 21, events: 2_000, durability: .none)
    #expect(summary.events >= 2_000 && summary.events < 2_100)
    #expect(summary.commands >= summary.committedByOrigin.values.reduce(0, +))
    #expect(Set(summary.committedByOrigin.keys) == ["user", "sync", "automation"])
    #expect(try Replay.rebuild(Workspace.self, directory: temporary.appending("journal")).state == state)
    #expect(!Note.all(in: state).isEmpty && !ReadingItem.all(in: state).isEmpty)
  }

  @Test func aSeedLeavesTheSameStateUnderEveryPolicy() async throws {
    let (_, summary, state) = try await Self.run(seed: 8, events: 1_500, durability: .always)
    let (_, batched, other) = try await Self.run(seed: 8, events: 1_500, durability: .batched)
    #expect(batched == summary)
    #expect(other == state)
  }

  /// A run on a journal that already holds events (as an unseeded `rewind demo` run again in its
  /// directory is) still knows how many events each command records, so the journal grows by
  /// exactly what it reports: here the journal already holds the settings that the run's first
  /// settings command sets, which therefore records nothing.
  @Test func aRunOnAJournalThatHoldsEventsCountsThemRight() async throws {
    let (fresh, _, _) = try await Self.run(seed: 36, events: 3_000, durability: .none)
    let first = try #require(
      try Replay.events(of: Workspace.self, directory: fresh.appending("journal")).lazy
        .compactMap { $0.event as? EditorSettingsChanged }.first
    ).settings
    #expect(first != EditorSettings())
    let temporary = TemporaryDirectory("workload-again")
    let directory = temporary.appending("journal")
    let earlier = try NotebookManager(
      directory: directory, options: JournalOptions(durability: .none), clock: .stepping(from: 1))
    try await earlier.updateSettings(first)
    earlier.close()
    let workload = NotebookWorkload(seed: 36)
    let manager = try NotebookManager(
      directory: directory, options: JournalOptions(durability: .none), clock: workload.clock, ids: workload.ids)
    defer { manager.close() }
    let summary = try await workload.run(manager, events: 3_000)
    #expect(manager.lastSequence == 1 + UInt64(summary.events))
  }

  /// A run whose append fails (the disk fills under it) ends with that command's error, not with a
  /// complaint about command order set off by the recovery after the failed append; the journal
  /// then holds exactly what the manager acknowledged.
  @Test func aFailedAppendEndsTheRunWithItsError() async throws {
    let temporary = TemporaryDirectory("workload-full-disk")
    let io = FaultInjectingFileIO()
    var options = JournalOptions(durability: .always)
    options.io = io
    let workload = NotebookWorkload(seed: 3)
    let manager = try NotebookManager(
      directory: temporary.appending("journal"), options: options, clock: workload.clock, ids: workload.ids)
    // After 100 segment writes: the run's 20,000 events make at least about 260 however large
    // its groups grow (64 commands in flight at most). After 400, a loaded machine, whose slow
    // syncs let every group fill, sometimes finished the run before the fault.
    io.arm(.writeError(ENOSPC), skip: 100)
    do {
      let summary = try await workload.run(manager, events: 20_000)
      Issue.record("the run went on past a failed append: \(summary)")
    } catch let error as ManagerError {
      #expect(error.code == .appendFailed, "\(error)")
      #expect("\(error)".contains("No space left on device"), "\(error)")
    }
    #expect(io.struck == 1)
    let state = manager.state
    let last = manager.lastSequence
    manager.close()
    let replayed = try Replay.rebuild(Workspace.self, directory: temporary.appending("journal"))
    #expect(replayed.lastSequence == last && replayed.state == state)
  }

  @Test func aWorkloadRunsOnce() async throws {
    let temporary = TemporaryDirectory("workload-once")
    let workload = NotebookWorkload(seed: 1)
    let manager = try NotebookManager(
      directory: temporary.appending("journal"), options: JournalOptions(durability: .none), clock: workload.clock,
      ids: workload.ids)
    defer { manager.close() }
    _ = try await workload.run(manager, events: 10)
    await #expect(throws: WorkloadError.self) { try await workload.run(manager, events: 10) }
  }
}

/// `WorkloadText.words` writes the same prose it always has: the seeded histories (the demo's, the
/// benchmark's corpus, the golden digests) depend on every byte of it.
@Suite struct WorkloadTextTests {
  /// The words as they were first put together: a `String` appended to word by word, its first
  /// character uppercased.
  static func reference(_ range: ClosedRange<Int>, using random: inout SeededRandom) -> String {
    let count = range.lowerBound + Int(random.next() % UInt64(range.count))
    var text = ""
    for index in 0..<count {
      if index > 0 { text += " " }
      text += WorkloadText.vocabulary[Int(random.next() % UInt64(WorkloadText.vocabulary.count))]
    }
    return text.prefix(1).uppercased() + text.dropFirst()
  }

  @Test func theVocabularyIsLowercaseASCIIWords() {
    #expect(WorkloadText.vocabulary.count > 100)
    for word in WorkloadText.vocabulary {
      #expect(!word.isEmpty && word.utf8.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }, "\(word)")
    }
  }

  @Test(arguments: [1...1, 1...3, 2...7, 8...35, 60...200])
  func wordsAreTheReferencesProse(range: ClosedRange<Int>) {
    var random = SeededRandom(seed: 0x5EED ^ UInt64(range.upperBound))
    var expected = random
    for _ in 0..<500 {
      let text = WorkloadText.words(range, using: &random)
      #expect(text == Self.reference(range, using: &expected))
      // Both drew the same numbers: the next draw agrees too.
      #expect(random.next() == expected.next())
    }
  }
}
