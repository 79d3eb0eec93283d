import Foundation
import RewindTestSupport
import Testing

/// Every command of the stock `rewind`, run as the built binary, against the issue's list of bad
/// input (a missing directory, a directory that is not a journal, a file of random bytes, a
/// truncated or corrupted segment, an unknown option): a clear message on stderr naming the
/// command, the documented exit code, never a crash or a hang. And the conventions that hold
/// for all of them: help with examples, and reading commands that write nothing.
@Suite struct EveryCommandTests {
  /// Every command with what it needs: "@" stands for the journal directory, "LAST" for its last
  /// sequence number, "FIRST" for the id of the notebook its first event created.
  static let commands: [[String]] = [
    ["log"], ["show", "@", "3"], ["stats"], ["export", "@", "--jsonl"], ["tail"], ["verify"], ["repair"],
    ["replay"], ["diff", "@", "0", "3"], ["blame", "@", "FIRST"],
    ["bisect", "@", "--invariant", "notes belong to notebooks"], ["debug"], ["snapshot"],
  ]

  /// What `rewind debug` reads from its standard input in these tests.
  static let debugScript = "goto end\nprint\n"

  static func arguments(_ command: [String], _ directory: String, last: Int = 3) async -> [String] {
    guard command.count > 1 else { return [command[0], directory] }
    let first = (try? await firstNotebook(directory)) ?? "0123456789abcdef0123456789abcdef"
    return command.map { $0 == "@" ? directory : $0 == "LAST" ? String(last) : $0 == "FIRST" ? first : $0 }
  }

  /// The id of the notebook the journal's first event created.
  static func firstNotebook(_ directory: String) async throws -> String? {
    let log = try await ToolRun.run("rewind", ["log", directory, "--limit", "1", "--json"])
    let object = try JSONSerialization.jsonObject(with: Data(log.out.utf8)) as? [String: Any]
    return (object?["payload"] as? [String: Any])?["id"] as? String
  }

  static func run(_ command: [String], _ directory: String, last: Int = 3) async throws -> ToolRun {
    try await ToolRun.run(
      "rewind", await arguments(command, directory, last: last), input: command[0] == "debug" ? debugScript : nil)
  }

  /// The error line: `rewind COMMAND: ...` on stderr.
  static func expectError(_ run: ToolRun, _ command: [String], status: Int32, containing parts: [String]) {
    #expect(run.status == status, "\(command): \(run.out)\(run.err)")
    #expect(
      run.err.hasPrefix("rewind \(command[0]): ") || (command[0] == "debug" && run.err.hasPrefix("error: ")),
      "\(command): \(run.err)")
    for part in parts { #expect(run.err.contains(part), "\(command): \(run.err)") }
  }

  @Test(arguments: commands)
  func aMissingDirectory(command: [String]) async throws {
    let run = try await Self.run(command, "/nonexistent/journal")
    Self.expectError(run, command, status: 3, containing: ["/nonexistent/journal does not exist: check the path"])
    #expect(run.out.isEmpty)
  }

  @Test(arguments: commands)
  func aDirectoryThatIsNotAJournalOrAFile(command: [String]) async throws {
    let dir = TemporaryDirectory("cli-every-notajournal")
    try Files.write(Array("shopping list".utf8), to: dir.appending("notes.txt"))
    let run = try await Self.run(command, dir.path)
    Self.expectError(run, command, status: 3, containing: ["not a Rewind journal", "Check the path"])
    let file = try await Self.run(command, dir.appending("notes.txt"))
    Self.expectError(file, command, status: 3, containing: ["is a file, not a journal directory"])
    #expect(Files.list(dir.path) == ["notes.txt"], "nothing is created in a directory that is not a journal")
  }

  @Test(arguments: commands)
  func aSegmentOfRandomBytes(command: [String]) async throws {
    let dir = TemporaryDirectory("cli-every-random")
    let segment = try await BadInputTests.journal(in: dir)
    var random = SeededGenerator(seed: 7)
    try Files.write((0..<Files.size(segment)).map { _ in UInt8.random(in: 0...255, using: &random) }, to: segment)
    let run = try await Self.run(command, dir.appending("journal"))
    switch command[0] {
    case "stats", "verify":
      #expect(run.status == 1, "damage is a finding: \(run.out)\(run.err)")
      #expect(run.out.contains("damaged"), "\(run.out)")
    case "repair":
      #expect(run.status == 1, "a plan, not carried out without --yes: \(run.out)\(run.err)")
      #expect(run.out.contains("not a Rewind segment"), "\(run.out)")
    default:
      Self.expectError(run, command, status: 3, containing: ["not a Rewind segment", "byte offset 0", "rewind verify"])
    }
  }

  @Test(arguments: commands)
  func aCorruptedFrameInTheMiddle(command: [String]) async throws {
    let dir = TemporaryDirectory("cli-every-corrupt")
    let segment = try await BadInputTests.journal(in: dir)
    let last = try #require(
      try await BadInputTests.rewind(["stats", dir.appending("journal"), "--json"]).out.split(separator: ",")
        .first { $0.hasPrefix("\"events\":") }.flatMap { Int($0.dropFirst(9)) })
    try Files.flipMiddleByte(of: segment, with: 0x5A)
    // Commands that read past the damage: show the last event, diff up to it.
    let reaching = command.map { $0 == "3" ? "LAST" : $0 }
    let run = try await Self.run(reaching, dir.appending("journal"), last: last)
    switch command[0] {
    case "stats":
      #expect(run.status == 1, "\(run.out)\(run.err)")
      #expect(run.out.contains("damaged      1 problem;"), "\(run.out)")
    case "verify", "repair":
      #expect(run.status == 1, "\(command): \(run.out)\(run.err)")
      #expect(run.out.contains("00000000000000000001.lz4"), "\(run.out)")
      #expect(run.out.contains("byte offset"), "\(run.out)")
    case "tail":
      // The last events lie after the damaged frame and read intact.
      #expect(run.status == 0, "\(run.err)")
      #expect(run.out.split(separator: "\n").count == 10)
    case "show":
      // So does the last event, and the events around it that tell its command's extent (show
      // read them from the journal's start, through the damage: DamagedJournalCommandTests).
      #expect(run.status == 0, "\(run.err)")
      #expect(run.out.hasPrefix("event \(last) in "), "\(run.out)")
    default:
      Self.expectError(
        run, command, status: 3, containing: ["00000000000000000001.lz4, byte offset", "rewind repair"])
    }
  }

  @Test(arguments: commands)
  func aTruncatedSegmentReadsUpToItsLastWholeFrame(command: [String]) async throws {
    let dir = TemporaryDirectory("cli-every-truncated")
    let segment = try await BadInputTests.journal(in: dir)
    let bytes = try Files.read(segment)
    try Files.write(Array(bytes.prefix(bytes.count * 2 / 3)), to: segment)
    let run = try await Self.run(command, dir.appending("journal"))
    if command[0] == "repair" {
      // The torn tail is what a repair would move aside: a plan, carried out only with --yes.
      #expect(run.status == 1, "\(run.out)\(run.err)")
      #expect(run.out.contains("will move"), "\(run.out)")
      return
    }
    #expect(run.status == 0, "\(command): \(run.out)\(run.err)")
    #expect(run.err.isEmpty, "\(command): \(run.err)")
  }

  @Test(arguments: commands + [["demo"]])
  func anUnknownOption(command: [String]) async throws {
    let run = try await ToolRun.run("rewind", await Self.arguments(command, "/nonexistent") + ["--colour"])
    Self.expectError(run, command, status: 2, containing: ["unknown option --colour"])
    #expect(run.out.isEmpty)
  }

  @Test(arguments: commands.map { $0[0] } + ["demo"])
  func helpWithExamples(command: String) async throws {
    for flag in ["--help", "-h"] {
      let help = try await ToolRun.run("rewind", [command, flag])
      #expect(help.status == 0)
      #expect(help.out.hasPrefix("Usage: rewind \(command)"), "\(help.out)")
      #expect(help.out.contains("\nExamples:\n  rewind \(command)"), "\(command) --help shows examples")
      #expect(help.err.isEmpty)
    }
    let overview = try await ToolRun.run("rewind", ["--help"])
    #expect(overview.out.contains("\n  \(command) "), "rewind --help lists \(command)")
    #expect(overview.out.contains("Examples:\n"))
    #expect(overview.out.contains("Exit codes: 0 success; 1 findings"))
  }

  /// Only demo, snapshot and repair write: every other command leaves the journal's files as
  /// they were, byte for byte (repair, on a sound journal, has nothing to move).
  @Test func readingCommandsWriteNothing() async throws {
    let dir = TemporaryDirectory("cli-every-readonly")
    _ = try await BadInputTests.journal(in: dir)
    let journal = dir.appending("journal")
    func contents() throws -> [String: [UInt8]] {
      var files: [String: [UInt8]] = [:]
      let enumerator = FileManager.default.enumerator(atPath: journal)
      while let path = enumerator?.nextObject() as? String {
        var isDirectory: ObjCBool = false
        let full = journal + "/" + path
        if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue {
          files[path] = try Files.read(full)
        }
      }
      return files
    }
    let before = try contents()
    #expect(!before.isEmpty)
    for command in Self.commands where command[0] != "snapshot" {
      let run = try await Self.run(command, journal)
      #expect(run.status == 0, "\(command): \(run.err)")
      #expect(try contents() == before, "\(command) changed the journal's files")
    }
    #expect(try await Self.run(["snapshot"], journal).status == 0)
    #expect(try contents().keys.contains { $0.hasPrefix("snapshots/") }, "snapshot writes")
  }

  /// A sequence number or time outside the journal, or an entity that never existed: exit 2 with
  /// what is valid.
  @Test func selectionsOutsideTheJournal() async throws {
    let dir = TemporaryDirectory("cli-every-range")
    _ = try await BadInputTests.journal(in: dir)
    let journal = dir.appending("journal")
    let never = String(repeating: "f", count: 32)
    let cases: [([String], String?, String)] = [
      (["log", journal, "--from", "999999"], nil, "--from 999999 is out of range: the journal ends at sequence"),
      (["log", journal, "--since", "2031-01-01"], nil, "is out of range: the last event"),
      (["log", journal, "--entity", never], nil, "no event in"),
      (["show", journal, "999999"], nil, "sequence 999999 is out of range: the journal holds sequences 1-"),
      (["export", journal, "--jsonl", "--from", "999999"], nil, "--from 999999 is out of range"),
      (["tail", journal, "-n", "-1"], nil, "-n needs a whole number in 0..."),
      (["replay", journal, "--to", "999999"], nil, "--to 999999 is beyond the journal's last sequence number"),
      (["replay", journal, "--at", "2031-01-01T00:00:00Z"], nil, "is after every record's time"),
      (["diff", journal, "0", "999999"], nil, "B 999999 is beyond the journal's last sequence number"),
      (["blame", journal, never], nil, "no event in \(journal) ever touched an entity '\(never)'"),
      (["debug", journal], "goto 999999\n", "error: goto: sequence 999999 is beyond the journal's last"),
      (
        ["debug", journal], "goto 2031-01-01T00:00:00Z\n",
        "error: goto: time 2031-01-01T00:00:00Z is after every record's time"
      ),
      (["debug", journal], "find entity \(never)\n", "error: find: no event after sequence 0 touched \(never)"),
      (["debug", journal], "blame \(never)\n", "error: blame: no event ever touched '\(never)'"),
    ]
    for (arguments, input, message) in cases {
      let run = try await ToolRun.run("rewind", arguments, input: input)
      #expect(run.status == 2, "\(arguments) \(input ?? ""): \(run.err)")
      #expect(run.err.contains(message), "\(arguments) \(input ?? ""): \(run.err)")
    }
  }
}
