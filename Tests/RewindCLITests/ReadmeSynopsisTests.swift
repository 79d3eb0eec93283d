import Foundation
import RewindTestSupport
import Testing

/// The README's synopses of the `rewind` commands say what the tool accepts. `rewind show` and
/// `rewind verify` were shown without `--model`, which they took, and the replay-level commands
/// left it to a sentence above them: each synopsis is now the command's own usage line, names
/// only options the command accepts and every option it accepts (by one of its spellings).
@Suite struct ReadmeSynopsisTests {
  /// The README's code blocks of synopses, by the heading above each.
  static let blocks = ["## The rewind tool", "## Replay and time travel from the terminal"]

  /// Options a synopsis names by one spelling, the command's usage line too: the other spelling
  /// (`--lines` of `-n`) is one option with it, which the README's prose names.
  static let otherSpellings = ["--lines": "-n", "--follow": "-f", "--output": "-o"]

  /// The synopses in `lines`: each line that starts with `rewind `, with the indented lines after
  /// it, without the comments (`# ...`) and with runs of spaces made one.
  static func synopses(_ lines: [Substring]) -> [String] {
    var synopses: [String] = []
    for line in lines {
      let text = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
      let words = text.split(separator: " ").joined(separator: " ")
      if line.hasPrefix("rewind ") {
        synopses.append(words)
      } else if line.hasPrefix(" "), !words.isEmpty, let last = synopses.indices.last {
        synopses[last] += " " + words
      }
    }
    return synopses
  }

  static func readmeSynopses() throws -> [String] {
    try blocks.flatMap { try synopses(DocumentationFile.codeBlock(in: "README.md", after: $0)) }
  }

  /// The options a synopsis names: each word of one or two dashes and a name (`--json`, `-n`).
  static func options(_ synopsis: String) throws -> Set<String> {
    Set(
      synopsis.matches(of: try Regex(#"(?:^|[ \[|])(--?[a-z]+)"#)).compactMap {
        $0.output[1].substring.map(String.init)
      })
  }

  /// The usage line of `rewind command --help` (from `rewind`), with the lines indented under it, runs of
  /// spaces made one.
  static func usage(_ command: String) async throws -> String {
    let help = try await ToolRun.run("rewind", [command, "--help"]).out
    let lines = help.split(separator: "\n", omittingEmptySubsequences: false).drop { !$0.hasPrefix("Usage: ") }
    let first = try #require(lines.first, "rewind \(command) --help has a usage line")
    let usage = [first.dropFirst("Usage: ".count)] + lines.dropFirst().prefix { $0.hasPrefix(" ") }
    return usage.flatMap { $0.split(separator: " ") }.joined(separator: " ")
  }

  @Test func theSynopsesAreFoundAndCoverEveryCommand() throws {
    let synopses = try Self.readmeSynopses()
    #expect(
      synopses.contains(
        "rewind log DIR [--from SEQ] [--to SEQ] [--since TIME] [--until TIME] [--type NAME] [--origin ORIGIN] "
          + "[--entity ID] [--limit N] [--full] [--json]"), "\(synopses)")
    #expect(
      try Self.options("rewind tail DIR [-n N] [-f] [--durability always|none] [--json]") == [
        "-n", "-f", "--durability", "--json",
      ])
    for command in HelpTextTests.commands {
      #expect(synopses.contains { $0.hasPrefix("rewind \(command) ") }, "README.md shows no synopsis of \(command)")
    }
  }

  @Test(arguments: HelpTextTests.commands)
  func theSynopsisNamesWhatTheCommandAccepts(command: String) async throws {
    let synopses = try Self.readmeSynopses().filter { $0.hasPrefix("rewind \(command) ") }
    let accepted = Set(try await HelpTextTests.accepted(by: command, among: try HelpTextTests.acceptedNames()))
    #expect(command == "compact" || !accepted.isEmpty, "the options rewind \(command) accepts were found")
    let usage = try await Self.usage(command)
    let readme = try String(contentsOfFile: DocumentationFile.root + "/README.md", encoding: .utf8)
    for synopsis in synopses {
      #expect(synopsis == usage, "README.md's synopsis is not rewind \(command) --help's usage line")
      let named = try Self.options(synopsis)
      for option in named.sorted() where !accepted.contains(option) {
        Issue.record("README.md: \(synopsis) names \(option), which rewind \(command) does not accept")
      }
      for option in accepted.sorted() where !named.contains(option) {
        if let other = Self.otherSpellings[option], named.contains(other) {
          #expect(
            HelpTextTests.names(readme, option), "README.md never names \(option), the other spelling of \(other)")
        } else {
          Issue.record("README.md: \(synopsis) leaves out \(option), which rewind \(command) accepts")
        }
      }
    }
  }
}
