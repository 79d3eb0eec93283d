import Foundation
import Notebook
import Rewind
import RewindCLI
import RewindJournal
import RewindTestSupport
import Testing

/// The registration's type-erased API, in process: what an app's tooling can call without the CLI.
@Suite struct ModelRegistrationTests {
  let workspace = ModelRegistration(
    Workspace.self, name: "workspace",
    invariants: [Invariant("no more than 3 notebooks") { $0.notebooks.count <= 3 }],
    queries: [ModelQuery("count") { $0.notes.count }])

  @Test func replayRendersTheStateAtAnyPoint() async throws {
    let journal = try await NotebookJournal.write(commands: 50, seed: 21)
    #expect(workspace.invariantNames == ["no more than 3 notebooks"])
    #expect(workspace.queryNames == ["count"])
    #expect(workspace.fingerprint == Workspace.fingerprint)
    var progress: [ReplayProgress] = []
    for n in [0, 9, journal.lastSequence] {
      let replayed = try workspace.replay(journal.path, to: .sequence(n)) { progress.append($0) }
      #expect(replayed.report.lastSequence == n)
      #expect(try replayed.json() == CanonicalJSON.render(journal.states[Int(n)]))
      #expect(try replayed.digest() == StateDigest.of(journal.states[Int(n)]))
      #expect(replayed.collections.map(\.name) == ["notebooks", "notes", "readingList", "settings"])
      #expect(replayed.collections[1].count == journal.states[Int(n)].notes.count)
    }
    #expect(progress.last?.sequence == journal.lastSequence)
    let verification = try workspace.verify(journal.path)
    #expect(verification.report.lastSequence == journal.lastSequence)
    #expect(verification.report.firstDivergence == nil)
    #expect(verification.cacheProblems.isEmpty)
    let snapshot = try #require(try workspace.takeSnapshot(journal.path))
    #expect(snapshot.sequence == journal.lastSequence)
    #expect(snapshot.digest == (try StateDigest.of(journal.states.last!)))
  }
}
