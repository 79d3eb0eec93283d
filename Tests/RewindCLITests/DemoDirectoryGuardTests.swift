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
  /// two words, a usage error, and no journal left. Quoted as `'$(DEMO_DIR)'`, a name holding a `'`
  /// then broke every line of the recipe (a shell syntax error, or with `x'; rm -rf ~; '` a command
  /// of its own), and make expanded a `$` in any name. Now the names reach the recipes through the
  /// environment. `make demo` runs here as it is (the debug `rewind` in place of the release one it
  /// builds, its `deps` taken as done) in a directory of its own, for names holding what a shell
  /// or make treats specially: it writes the journal there, audits it, and `make clean-demo`
  /// removes it; nothing else is made or removed (a sibling `it` is left, `pwned` never made).
  @Test(arguments: [
    "my demo", "it's", "say \"hi\"", "$HOME", "$(touch pwned)", "`touch pwned`", "back\\slash", "-x",
    "a;b&c|d*e?", "two\nlines",
  ])
  func makeDemoTakesAnyDirectoryName(name: String) async throws {
    let root = #filePath.components(separatedBy: "/Tests/")[0]
    let rewind = try #require(ChildProcess.builtProduct("rewind"), "rewind must be built with the tests")
    let parent = TemporaryDirectory("cli-demo-make")
    // The recipes run `scripts/demo-dir-check` from the directory make runs in.
    try FileManager.default.createSymbolicLink(
      atPath: parent.appending("scripts"), withDestinationPath: root + "/scripts")
    try FileManager.default.createDirectory(atPath: parent.appending("it"), withIntermediateDirectories: false)
    _ = FileManager.default.createFile(atPath: parent.appending("it/keep.txt"), contents: Data("mine".utf8))
    func make(_ target: String) async throws -> ToolRun {
      try await ToolRun.run(
        "/usr/bin/env",
        [
          "-u", "MAKEFLAGS", "-u", "MAKELEVEL", "make", "-f", root + "/Makefile", "-o", "deps", target, "SWIFT=:",
          "REWIND=\(rewind)", "DEMO_DIR=\(name)", "DEMO_EVENTS=5",
        ], in: parent.path)
    }
    let demo = try await make("demo")
    #expect(demo.status == 0, "\(demo.out)\(demo.err)")
    #expect(Files.list(parent.path) == [name, "it", "scripts"].sorted(), "\(demo.out)\(demo.err)")
    let log = try await ToolRun.run("rewind", ["log", "--json", "--", parent.appending(name)])
    #expect(log.status == 0 && log.out.split(separator: "\n").count >= 5, "\(log.out)\(log.err)")

    let clean = try await make("clean-demo")
    #expect(clean.status == 0, "\(clean.out)\(clean.err)")
    #expect(Files.list(parent.path) == ["it", "scripts"], "\(clean.out)\(clean.err)")
    #expect(Files.list(parent.appending("it")) == ["keep.txt"])
  }

  /// `make demo DEMO_DIR=$HOME` ran `rm -rf $HOME`. The check it runs first lets a missing
  /// directory, an empty one and a journal through, and refuses the rest (a symbolic link, an empty
  /// name), saying why.
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
    // A link to the journal is refused, also spelled `link/`, through which `rm -rf` would empty it.
    try FileManager.default.createSymbolicLink(
      atPath: dir.appending("link"), withDestinationPath: dir.appending("journal"))
    for spelled in ["link", "link/", "link//"] {
      let link = try await check(spelled)
      #expect(link.status == 1 && link.err.contains("it is a symbolic link"), "\(spelled): \(link.err)")
    }
    let unnamed = try await ToolRun.run(Self.check, [""])
    #expect(unnamed.status == 1 && unnamed.err.contains("DEMO_DIR is empty"), "\(unnamed.err)")

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

  /// The check judged a journal's entries by name alone, and loosely: a file of yours named
  /// `notes.lz4` or `mine.tmp`, anything in `snapshots/`, and what `rewind repair` moved into
  /// `quarantine/` (which it promises never to delete) were all removed with the journal. Now a
  /// segment is 20 digits and `.lz4`, `snapshots/` may hold snapshots only, and a non-empty
  /// `quarantine/` is refused; a journal with its snapshots and an empty quarantine still passes.
  @Test func makeDemoKeepsWhatAJournalDoesNotMake() async throws {
    let dir = TemporaryDirectory("cli-demo-guard-inside")
    let path = dir.appending("journal")
    let journal = try await ToolRun.run("rewind", ["demo", path, "--events", "50", "--seed", "1"])
    try #require(journal.status == 0, "\(journal.err)")
    let snapshot = try await ToolRun.run("rewind", ["snapshot", path])
    try #require(snapshot.status == 0, "\(snapshot.err)")
    try FileManager.default.createDirectory(atPath: path + "/quarantine", withIntermediateDirectories: false)
    let passes = try await ToolRun.run(Self.check, [path])
    #expect(passes.status == 0, "\(passes.err)")
    let cases: [(file: String, says: String)] = [
      ("notes.lz4", "it holds 'notes.lz4'"), ("mine.tmp", "it holds 'mine.tmp'"),
      ("snapshots/holiday.jpg", "it holds 'snapshots/holiday.jpg', which is not a snapshot"),
      ("quarantine/00000000000000000001.lz4", "its quarantine/ holds what 'rewind repair' moved aside"),
    ]
    for (file, says) in cases {
      _ = FileManager.default.createFile(atPath: path + "/" + file, contents: Data("mine".utf8))
      let run = try await ToolRun.run(Self.check, [path])
      #expect(run.status == 1 && run.err.contains(says), "\(file): \(run.err)")
      try FileManager.default.removeItem(atPath: path + "/" + file)
    }
    // `rewind demo`, which appends to a journal, refuses a foreign name at the top level alike.
    _ = FileManager.default.createFile(atPath: path + "/notes.lz4", contents: Data("mine".utf8))
    let appended = try await ToolRun.run("rewind", ["demo", path, "--events", "5"])
    #expect(appended.status == 2 && appended.err.contains("notes.lz4"), "\(appended.err)")
  }
}
