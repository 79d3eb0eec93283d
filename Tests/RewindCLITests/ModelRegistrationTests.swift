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

/// `ModelRegistration`'s documentation example, compiled (never run: it ends the process). Its
/// code lies between the markers; a test checks that the doc comment shows exactly that code.
enum RegistrationDocExample {
  static func main() async {
    // Doc begin
    let tool = RewindTool(models: [
      ModelRegistration(
        Workspace.self, name: "workspace",
        invariants: [
          Invariant("notes belong to notebooks", everyRecordOf: \.notes) { note, state in
            state.notebooks.contains(id: note.notebook)
          }
        ])
    ])
    exit(await tool.runCommandLine())
    // Doc end
  }
}

/// The doc comment's example and the code above, as words: without `///`, whitespace and commas
/// (where lines break is the formatter's choice).
@Test func theRegistrationsDocumentationShowsCodeThatCompiles() throws {
  let root = #filePath.components(separatedBy: "/Tests/")[0]
  func words(_ text: some StringProtocol) -> [String] {
    var text = String(text).replacingOccurrences(of: ",", with: " ")
    for mark in ["(", ")", "[", "]", "{", "}", ":"] { text = text.replacingOccurrences(of: mark, with: " \(mark) ") }
    return text.split(whereSeparator: \.isWhitespace).map(String.init)
  }
  let source = try String(contentsOfFile: root + "/Sources/RewindCLI/ModelRegistration.swift", encoding: .utf8)
  let start = try #require(source.range(of: "/// ```swift\n"))
  let end = try #require(source.range(of: "/// ```\n", range: start.upperBound..<source.endIndex))
  let shown = source[start.upperBound..<end.lowerBound].split(separator: "\n").map {
    $0.trimmingCharacters(in: .whitespaces).dropFirst(3)
  }
  let test = try String(contentsOfFile: #filePath, encoding: .utf8)
  let begin = try #require(test.range(of: "// Doc begin\n"))
  let finish = try #require(test.range(of: "// Doc end\n", range: begin.upperBound..<test.endIndex))
  let compiled = test[begin.upperBound..<finish.lowerBound]
  #expect(words(shown.joined(separator: "\n")).count > 30)
  #expect(words(shown.joined(separator: "\n")) == words(compiled))
}
