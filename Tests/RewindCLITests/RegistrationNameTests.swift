import Notebook
import Rewind
import Testing

@testable import RewindCLI

/// Two models, invariants, queries or commands of one name were taken, and every use of the name
/// reached the first: `bisect --invariant same` checked only the first of two invariants named
/// `same`, and `--model labels` only the first of two models (a library user's walkthrough,
/// Dec 7). A tool or registration holding a repeated name is refused as it is made.
@Suite struct RegistrationNameTests {
  @Test func aRepeatedModelNameIsRefused() async {
    await #expect(processExitsWith: .failure) {
      _ = RewindTool(
        models: [ModelRegistration(Workspace.self, name: "w"), ModelRegistration(Workspace.self, name: "w")])
    }
    #expect(
      RewindTool(models: [ModelRegistration(Workspace.self, name: "w"), ModelRegistration(Workspace.self, name: "v")])
        .models.count == 2)
  }

  @Test func aRepeatedInvariantOrQueryNameIsRefused() async {
    await #expect(processExitsWith: .failure) {
      _ = ModelRegistration(
        Workspace.self, name: "w",
        invariants: [Invariant("same") { _ in true }, Invariant("same") { _ in false }])
    }
    await #expect(processExitsWith: .failure) {
      _ = ModelRegistration(
        Workspace.self, name: "w", queries: [ModelQuery("count") { $0.notes.count }, ModelQuery("count") { _ in 0 }])
    }
    let distinct = ModelRegistration(
      Workspace.self, name: "w", invariants: [Invariant("one") { _ in true }, Invariant("two") { _ in true }],
      queries: [ModelQuery("count") { $0.notes.count }])
    #expect(distinct.invariantNames == ["one", "two"] && distinct.queryNames == ["count"])
  }

  /// Two of the app's commands of one name are refused; one named like a built-in command takes
  /// its place, as it always did.
  @Test func aRepeatedCommandNameIsRefused() async throws {
    await #expect(processExitsWith: .failure) { _ = RewindTool(commands: [Shadowing.self, Shadowing.self]) }
    let tool = RewindTool(commands: [Shadowing.self])
    #expect(tool.allCommands.filter { $0.name == "log" }.map { $0.summary } == ["an app's log"])
  }

  /// A command named `help`, `--help` or `-h` was taken and never ran: each word asks for help
  /// wherever it stands (helper-207's review, Dec 7). It is refused as the tool is made.
  @Test func aCommandNamedLikeAHelpWordIsRefused() async {
    await #expect(processExitsWith: .failure) { _ = RewindTool(commands: [NamedHelp.self]) }
  }
}

/// An app's command named `help`.
private enum NamedHelp: RewindCommand {
  static let name = "help"
  static let summary = "an app's help"
  static let help = "Usage: rewind help\n"
  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode { .success }
}

/// An app's command named as the built-in `log`.
private enum Shadowing: RewindCommand {
  static let name = "log"
  static let summary = "an app's log"
  static let help = "Usage: rewind log\n"
  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode { .success }
}

/// What `blame` says after the events of one store when records of another with the same id's
/// text were touched too (it said nothing of them: a library user's walkthrough, Dec 7).
@Test func blameNamesTheOtherStoresOfAnId() {
  #expect(BlameCommand.otherStoresNote([], listed: "labels", id: "42") == nil)
  #expect(
    BlameCommand.otherStoresNote(["aliases", "tags"], listed: "labels", id: "42")
      == "note: records of id 42 in aliases, tags were touched too; the events above are those of labels, the first "
      + "touched")
}
