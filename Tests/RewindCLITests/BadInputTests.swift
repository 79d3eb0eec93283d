import Foundation
import RewindTestSupport
import Testing

/// Every journal-level command on input it cannot use: a clear message on standard error, the
/// documented exit code, never a crash or a hang.
@Suite struct BadInputTests {
  static func rewind(_ arguments: [String]) throws -> RewindCommandTests.Run {
    try RewindCommandTests.rewind(arguments)
  }

  /// Each reading command, with what it needs after DIR.
  static let commands: [[String]] = [["log"], ["show", "@", "3"], ["stats"], ["export", "@", "--jsonl"], ["tail"]]

  static func arguments(_ command: [String], _ directory: String) -> [String] {
    command.count == 1 ? [command[0], directory] : command.map { $0 == "@" ? directory : $0 }
  }

  /// A small seeded Notebook journal in `dir/journal`; returns its only segment's path.
  static func journal(in dir: TemporaryDirectory) throws -> String {
    let run = try rewind(["demo", dir.appending("journal"), "--events", "400", "--seed", "9", "--durability", "none"])
    try #require(run.status == 0, "\(run.err)")
    let segments = Files.list(dir.appending("journal")).filter { $0.hasSuffix(".lz4") }
    try #require(segments.count == 1)
    return dir.appending("journal/" + segments[0])
  }

  @Test(arguments: commands)
  func aMissingDirectory(command: [String]) throws {
    let run = try Self.rewind(Self.arguments(command, "/nonexistent/journal"))
    #expect(run.status == 3)
    #expect(run.err.contains("/nonexistent/journal does not exist: check the path"), "\(run.err)")
    #expect(run.out.isEmpty)
  }

  @Test(arguments: commands)
  func aDirectoryThatIsNotAJournal(command: [String]) throws {
    let dir = TemporaryDirectory("cli-notajournal")
    try Files.write(Array("shopping list".utf8), to: dir.appending("notes.txt"))
    let run = try Self.rewind(Self.arguments(command, dir.path))
    #expect(run.status == 3)
    #expect(run.err.contains("not a Rewind journal"), "\(run.err)")
    let file = try Self.rewind(Self.arguments(command, dir.appending("notes.txt")))
    #expect(file.status == 3)
    #expect(file.err.contains("is a file, not a journal directory"), "\(file.err)")
  }

  @Test(arguments: commands)
  func aSegmentOfRandomBytes(command: [String]) throws {
    let dir = TemporaryDirectory("cli-random")
    let segment = try Self.journal(in: dir)
    var random = SeededGenerator(seed: 99)
    try Files.write((0..<Files.size(segment)).map { _ in UInt8.random(in: 0...255, using: &random) }, to: segment)
    let run = try Self.rewind(Self.arguments(command, dir.appending("journal")))
    if command[0] == "stats" {
      #expect(run.status == 1, "stats reports damage as a finding")
      #expect(run.out.contains("damaged"), "\(run.out)")
    } else {
      #expect(run.status == 3, "\(command): \(run.out)")
      #expect(run.err.contains("not a Rewind segment"), "\(run.err)")
      #expect(run.err.contains("rewind verify"), "the error suggests what to do: \(run.err)")
    }
    let verify = try Self.rewind(["verify", dir.appending("journal")])
    #expect(verify.status == 1)
  }

  @Test func aCorruptedFrameIsLocated() throws {
    let dir = TemporaryDirectory("cli-corrupt")
    let segment = try Self.journal(in: dir)
    var bytes = try Files.read(segment)
    bytes[bytes.count / 2] ^= 0x5A
    try Files.write(bytes, to: segment)
    let log = try Self.rewind(["log", dir.appending("journal")])
    #expect(log.status == 3)
    #expect(log.err.contains("byte offset"), "\(log.err)")
    #expect(log.err.contains("rewind repair"), "\(log.err)")
    #expect(log.out.hasPrefix("1  "), "the intact events before the damage are shown")
    let verify = try Self.rewind(["verify", dir.appending("journal")])
    #expect(verify.status == 1)
    #expect(verify.out.contains("problem: "))
  }

  @Test func aTruncatedSegmentReadsUpToItsLastWholeFrame() throws {
    let dir = TemporaryDirectory("cli-truncated")
    let segment = try Self.journal(in: dir)
    let bytes = try Files.read(segment)
    try Files.write(Array(bytes.prefix(bytes.count * 2 / 3)), to: segment)
    let log = try Self.rewind(["log", dir.appending("journal"), "--json"])
    #expect(log.status == 0, "\(log.err)")
    let count = log.out.split(separator: "\n").count
    #expect(count > 0 && count < 400)
    let verify = try Self.rewind(["verify", dir.appending("journal")])
    #expect(verify.status == 0)
    #expect(verify.out.contains("note: unfinished last frame"))
    let show = try Self.rewind(["show", dir.appending("journal"), "\(count + 1)"])
    #expect(show.status == 2)
    #expect(show.err.contains("out of range"))
  }

  @Test(arguments: commands + [["verify"], ["repair"], ["demo"]])
  func anUnknownOption(command: [String]) throws {
    let run = try Self.rewind(Self.arguments(command, "/nonexistent") + ["--colour"])
    #expect(run.status == 2)
    #expect(run.err.contains("unknown option --colour"), "\(run.err)")
  }

  @Test func anUnknownCommandOrNone() throws {
    let unknown = try Self.rewind(["explode", "/tmp"])
    #expect(unknown.status == 2)
    #expect(unknown.err.contains("unknown command 'explode'; run rewind --help"))
    let none = try Self.rewind([])
    #expect(none.status == 2)
    #expect(none.out.contains("Usage: rewind COMMAND"))
    let help = try Self.rewind(["--help"])
    #expect(help.status == 0)
    for command in ["demo", "log", "show", "stats", "export", "tail", "verify", "repair"] {
      #expect(help.out.contains("\n  \(command) "), "\(command) is listed")
    }
  }
}
