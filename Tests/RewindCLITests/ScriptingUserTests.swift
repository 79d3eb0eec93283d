import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

/// What a script that audits journals relies on: counts that agree with the events `export`
/// writes, and a mistake on the command line told apart from a journal that cannot be read.
@Suite struct ScriptingUserTests {
  static func rewind(_ arguments: [String]) async throws -> ToolRun {
    try await ToolRun.run("rewind", arguments)
  }

  /// Whether the UTF-8 bytes of `part` occur in those of `text` (String's `contains` would
  /// take a composed and a decomposed spelling as one).
  static func holdsBytes(_ text: String, _ part: String) -> Bool {
    Data(text.utf8).range(of: Data(part.utf8)) != nil
  }

  /// Two origins spelled differently (a composed é, and e with a combining acute accent) are two
  /// origins in `export`, as in the journal's bytes: `stats` counted them as one, under whichever
  /// spelling came first.
  @Test func statsCountsOriginsSpelledDifferentlyApart() async throws {
    let dir = TemporaryDirectory("cli-spelling")
    let composed = "caf\u{E9}"
    let decomposed = "cafe\u{301}"
    do {
      let manager = try NotebookManager(
        directory: dir.path, options: JournalOptions(durability: .none),
        clock: .stepping(from: 1_700_000_000_000_000_000, by: 1_000_000_000), ids: .sequential())
      defer { manager.close() }
      let book = try await manager.createNotebook(title: "book")
      _ = try await manager.createNote(in: book, title: "one", origin: Origin(composed))
      _ = try await manager.createNote(in: book, title: "two", origin: Origin(decomposed))
      _ = try await manager.createNote(in: book, title: "three", origin: Origin(decomposed))
    }
    let export = try await Self.rewind(["export", dir.path, "--jsonl"])
    #expect(export.status == 0, "\(export.err)")
    #expect(Self.holdsBytes(export.out, #""origin":"\#(composed)""#))
    #expect(Self.holdsBytes(export.out, #""origin":"\#(decomposed)""#))

    let json = try await Self.rewind(["stats", dir.path, "--json"])
    #expect(json.status == 0, "\(json.err)")
    // Keys in the order of their bytes: "cafe" and the accent before "caf" and the composed é.
    #expect(
      Self.holdsBytes(json.out, #""byOrigin":{"\#(decomposed)":2,"\#(composed)":1,"user":1}"#), "\(json.out)")
    let text = try await Self.rewind(["stats", dir.path])
    #expect(text.status == 0, "\(text.err)")
    #expect(Self.holdsBytes(text.out, "  \(decomposed)     "), "\(text.out)")
    #expect(Self.holdsBytes(text.out, "  \(composed)      "), "\(text.out)")
    // The same bytes from another process, whatever order its dictionaries hold.
    #expect(try await Self.rewind(["stats", dir.path, "--json"]).out == json.out)
  }

  /// An empty DIR (`rewind stats "$J"` with `J` unset) is a mistake on the command line (exit
  /// 2), as `demo` takes it, not a journal that cannot be read (exit 3, " does not exist").
  @Test func anEmptyDirectoryArgumentIsAUsageError() async throws {
    let commands: [[String]] = [
      ["log", ""], ["show", "", "1"], ["stats", ""], ["export", "", "--jsonl"], ["tail", ""], ["verify", ""],
      ["repair", ""], ["compact", ""], ["replay", ""], ["diff", "", "0", "1"], ["blame", "", "settings"],
      ["bisect", "", "--invariant", "notes belong to notebooks"], ["debug", ""], ["snapshot", ""],
    ]
    for arguments in commands {
      let run = try await Self.rewind(arguments)
      #expect(run.status == 2, "\(arguments): \(run.status) \(run.err)")
      #expect(run.out.isEmpty, "\(arguments): \(run.out)")
      #expect(run.err.contains("the journal directory is empty ('')"), "\(arguments): \(run.err)")
    }
  }
}
