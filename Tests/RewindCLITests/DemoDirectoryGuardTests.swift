import Foundation
import RewindJournal
import RewindTestSupport
import Testing

/// What the demo may write into or remove: `rewind demo DIR` writes only into a new or empty
/// directory or a journal, and `make demo` removes `DEMO_DIR` (`scripts/demo-dir-check`) only
/// when it is missing, empty or a journal.
@Suite struct DemoDirectoryGuardTests {
  static let check = #filePath.components(separatedBy: "/Tests/")[0] + "/scripts/demo-dir-check"

  /// `rewind demo /` wrote a journal into /: a seeded run checked only that DIR held no events.
  @Test(arguments: [["--seed", "1"], []])
  func aDirectoryHoldingOtherFilesIsRefused(_ seed: [String]) async throws {
    let dir = TemporaryDirectory("cli-demo-guard")
    try Data("mine".utf8).write(to: URL(fileURLWithPath: dir.appending("notes.txt")))
    let run = try await ToolRun.run("rewind", ["demo", dir.path, "--events", "1"] + seed)
    #expect(run.status == 2, "\(run.out)\(run.err)")
    #expect(
      run.err
        == "rewind demo: \(dir.path) holds notes.txt, which is not part of a journal; the demo writes only into "
        + "a new or empty directory or a journal: name another directory\n")
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["notes.txt"], "nothing written")
  }

  /// A journal's own files are no obstacle: an empty journal takes a seeded run, twice.
  @Test func anEmptyJournalTakesASeededRun() async throws {
    let dir = TemporaryDirectory("cli-demo-guard")
    for _ in 0..<2 {
      let run = try await ToolRun.run("rewind", ["demo", dir.path, "--events", "0", "--seed", "1"])
      #expect(run.status == 0, "\(run.out)\(run.err)")
    }
    #expect(FileManager.default.fileExists(atPath: dir.appending("manifest.json")))
  }

  /// `make demo DEMO_DIR='my demo'` removed the journal in `my demo`, then ran `rewind demo my demo`:
  /// two words, a usage error, and no journal left. Every command of `make demo` and `make
  /// clean-demo` that takes the directory now gets it as one word, as a shell splits the commands
  /// `make -n` shows (`set --`, which runs none of them).
  @Test(arguments: ["demo", "clean-demo"])
  func makeGivesDemoDirAsOneWord(target: String) async throws {
    let root = #filePath.components(separatedBy: "/Tests/")[0]
    let dir = TemporaryDirectory("cli-demo-guard").appending("my demo")
    let plan = try await ToolRun.run("/usr/bin/env", ["make", "-n", target, "DEMO_DIR=\(dir)"], in: root)
    #expect(plan.status == 0, "\(plan.err)")
    let commands = plan.out.split(separator: "\n").filter { $0.contains("my demo") }
    #expect(commands.count == (target == "demo" ? 6 : 2), "\(plan.out)")
    for command in commands {
      let words = try await ToolRun.run("/bin/sh", ["-c", "set -- \(command); printf '%s\\n' \"$@\""])
      #expect(words.status == 0, "\(words.err)")
      #expect(words.out.split(separator: "\n").contains { $0 == dir }, "\(command)")
    }
  }

  /// `make demo DEMO_DIR=$HOME` ran `rm -rf $HOME`. The check it runs first lets a missing
  /// directory, an empty one and a journal through, and refuses the rest, saying why.
  @Test func makeDemoRemovesOnlyAJournal() async throws {
    let dir = TemporaryDirectory("cli-demo-guard")
    func check(_ name: String) async throws -> ToolRun {
      try await ToolRun.run(Self.check, [dir.appending(name)])
    }
    #expect(try await check("missing").status == 0)
    try FileManager.default.createDirectory(atPath: dir.appending("empty"), withIntermediateDirectories: false)
    #expect(try await check("empty").status == 0)
    let journal = try await ToolRun.run("rewind", ["demo", dir.appending("journal"), "--events", "5", "--seed", "1"])
    #expect(journal.status == 0, "\(journal.err)")
    #expect(try await check("journal").status == 0)

    try FileManager.default.createDirectory(atPath: dir.appending("home/.config"), withIntermediateDirectories: true)
    let home = try await check("home")
    #expect(home.status == 1)
    #expect(
      home.err.contains("refusing to remove DEMO_DIR '\(dir.appending("home"))': it is not empty and holds no journal"))
    _ = FileManager.default.createFile(atPath: dir.appending("journal/todo.txt"), contents: Data())
    let mixed = try await check("journal")
    #expect(mixed.status == 1)
    #expect(mixed.err.contains("it holds 'todo.txt', which is not part of a journal"), "\(mixed.err)")
    _ = FileManager.default.createFile(atPath: dir.appending("file"), contents: Data())
    #expect(try await check("file").status == 1)
  }
}
