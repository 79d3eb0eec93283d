import Foundation
import RewindJournal
import RewindTestSupport
import Testing

/// The directory `rewind demo` is given, as typed: relative or absolute, with or without a
/// trailing slash, one character long, or empty.
@Suite struct DemoDirectoryTests {
  /// Working out DIR's parent (to make it, as mkdir -p does) trapped in Foundation on Linux for a
  /// one-character relative name (`q`, `x/`): the tool died with Illegal instruction.
  @Test(arguments: ["q", "x/", "./x", "a/b", "deeper/a/b/"])
  func aRelativeDirectoryIsMadeInTheWorkingDirectory(_ name: String) async throws {
    let dir = TemporaryDirectory("cli-demo-dir")
    let run = try await ToolRun.run("rewind", ["demo", name, "--events", "1", "--seed", "1"], in: dir.path)
    #expect(run.status == 0, "\(name): \(run.out)\(run.err)")
    #expect(run.out.contains("integrity     sound"), "\(name): \(run.out)")
    let journal = dir.appending(name)
    #expect(try JournalReader(directory: journal).lastSequence() >= 1, "\(name)")
  }

  @Test func anAbsoluteDirectoryIsMadeWithItsParents() async throws {
    let dir = TemporaryDirectory("cli-demo-dir")
    let journal = dir.appending("a/b/c")
    let run = try await ToolRun.run("rewind", ["demo", journal, "--events", "1", "--seed", "1"])
    #expect(run.status == 0, "\(run.out)\(run.err)")
    #expect(try JournalReader(directory: journal).lastSequence() >= 1)
  }

  /// An empty DIR was taken as a directory named "", and the journal's mkdir failed (exit 3).
  @Test func anEmptyDirectoryIsAUsageError() async throws {
    let dir = TemporaryDirectory("cli-demo-dir")
    let run = try await ToolRun.run("rewind", ["demo", "", "--events", "1", "--seed", "1"], in: dir.path)
    #expect(run.status == 2, "\(run.out)\(run.err)")
    #expect(run.err == "rewind demo: DIR is empty: name a directory, or leave DIR out for ./rewind-demo\n")
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
  }
}
