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
    // --origin selects what stats counts under that key, as jq's == would.
    for (origin, count) in [(composed, 1), (decomposed, 2)] {
      let selected = try await Self.rewind(["export", dir.path, "--jsonl", "--origin", origin])
      #expect(selected.out.split(separator: "\n").count == count, "\(Array(origin.utf8)): \(selected.out)")
    }
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

  /// A script's open-ended range, `--until 9999-12-31` or `--since 0001-01-01`, is past the
  /// journal's end or before its start, and reads to it as `--to 18446744073709551615` does; it
  /// was refused (exit 2) as not ISO 8601, for lying past what an Int64 of nanoseconds holds.
  @Test func timesBeyondWhatATimestampHoldsAreBeforeOrAfterEveryRecord() async throws {
    let dir = TemporaryDirectory("cli-far-times")
    let journal = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    // The first nanosecond an Int64 holds, and two ordinary times.
    for timestamp in [Int64.min, 0, 1_000_000_000] {
      try journal.appendAndWait([NewRecord(timestamp: timestamp, payload: Array("x".utf8))])
    }
    journal.close()
    let whole = try await Self.rewind(["export", dir.path, "--jsonl"])
    #expect(whole.status == 0 && whole.out.split(separator: "\n").count == 3, "\(whole.err)")
    for range in [
      ["--until", "9999-12-31"], ["--since", "0001-01-01"],
      ["--since", "1000-01-01", "--until", "3000-01-01T00:00:00Z"],
    ] {
      let export = try await Self.rewind(["export", dir.path, "--jsonl"] + range)
      #expect(export.status == 0 && export.out == whole.out, "\(range): \(export.status) \(export.err)")
      let log = try await Self.rewind(["log", dir.path, "--json"] + range)
      #expect(log.status == 0 && log.out == whole.out, "\(range): \(log.status) \(log.err)")
    }
    // Within the first second an Int64 holds: after the record stamped at its first nanosecond.
    let edge = try await Self.rewind(["log", dir.path, "--json", "--since", "1677-09-21T00:12:43.2Z"])
    #expect(edge.status == 0 && edge.out.split(separator: "\n").count == 2, "\(edge.status) \(edge.err)")
    // After every time a record can have, or before: nothing, though records are stamped at the
    // extremes, which are still inside them.
    let after = try await Self.rewind(["log", dir.path, "--since", "9999-12-31"])
    #expect(after.status == 2 && after.err.contains("is out of range: after every time"), "\(after.err)")
    let before = try await Self.rewind(["log", dir.path, "--until", "0001-01-01"])
    #expect(before.status == 2 && before.err.contains("is out of range: before every time"), "\(before.err)")
  }

  /// The README's `rewind debug` script (its `printf` line), run as shown on a Notebook journal:
  /// every line is a command the session knows and does what it names, and the script exits 0.
  @Test func theReadmesDebugScriptRunsAsShown() async throws {
    let root = #filePath.components(separatedBy: "/Tests/")[0]
    let readme = try String(contentsOfFile: root + "/README.md", encoding: .utf8)
    let line = try #require(
      readme.split(separator: "\n").first { $0.hasPrefix("printf '") && $0.hasSuffix("' \\") },
      "the README's debug script")
    let script = line.dropFirst("printf '".count).dropLast("' \\".count).replacingOccurrences(of: "\\n", with: "\n")
    #expect(
      script.split(separator: "\n").map { $0.split(separator: " ")[0] } == [
        "goto", "print", "mark", "find", "diff", "watch", "step",
      ], "\(script)")
    let dir = TemporaryDirectory("cli-readme-debug")
    let demo = try await Self.rewind(["demo", dir.path, "--events", "300", "--seed", "1"])
    #expect(demo.status == 0, "\(demo.err)")

    let run = try await ToolRun.run("rewind", ["debug", dir.path], input: script)
    #expect(run.status == 0 && run.err.isEmpty, "\(run.err)")
    let out = run.out.split(separator: "\n").map(String.init)
    #expect(out.first?.hasPrefix("at 120 of 300: #120 ") == true, "\(run.out)")
    #expect(out.dropFirst().first?.hasPrefix("[{") == true, "print notes: the notes as JSON")
    #expect(out.contains("marked sequence 120"))
    let found = try #require(out.first { $0.hasPrefix("at ") && $0.contains(" note.deleted v") }, "\(run.out)")
    let at = try #require(UInt64(found.dropFirst(3).prefix { $0.isNumber }))
    #expect(at > 120)
    #expect(out.contains { $0.hasSuffix("(from 120 to \(at))") }, "diff from the mark")
    #expect(out.contains { $0.hasPrefix("watch settings at \(at): settings {") }, "\(run.out)")
    #expect(out.last?.hasPrefix("at \(at + 10) of 300: ") == true, "step 10")
  }
}
