import Foundation
import RewindTestSupport
import Testing

/// What `rewind COMMAND --help` shows is true: every example runs as shown, against a journal
/// written by `rewind demo --seed 1` (the journal the examples assume), and every option the
/// command accepts is named.
@Suite struct HelpTextTests {
  /// Every command of the stock `rewind`.
  static let commands = [
    "demo", "log", "show", "stats", "export", "tail", "verify", "repair", "compact", "replay", "diff", "blame",
    "bisect", "debug", "snapshot",
  ]

  /// The example lines of a help text: the indented lines after `Examples:`, up to a blank line.
  static func examples(_ help: String) -> [String] {
    guard let start = help.range(of: "\nExamples:\n") else { return [] }
    return help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
      .prefix { $0.hasPrefix("  ") }.map { $0.trimmingCharacters(in: .whitespaces) }
  }

  /// Every option and flag name any command parses: the string sets handed to `Arguments` (and
  /// `EventFilter.options`) in the tool's sources, read from them so a new option is checked too.
  static func acceptedNames() throws -> [String] {
    let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("Sources")
    var names: Set<String> = []
    let list = try Regex(#"(?:options|flags): *(?:Set<String> *= *)?(?:[A-Za-z.]*union\()?\[([^\]]*)\]"#)
    let name = try Regex(#""([a-z]+)""#)
    for folder in ["RewindCLI", "NotebookTool"] {
      let directory = sources.appendingPathComponent(folder)
      for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".swift") {
        let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
        for match in text.matches(of: list) {
          guard let inner = match.output[1].substring else { continue }
          for quoted in inner.matches(of: name) { names.insert(String(quoted.output[1].substring ?? "")) }
        }
      }
    }
    return names.sorted()
  }

  /// Whether `help` names the option `spelled` (`--full`, `-n`) as a word of its own.
  static func names(_ help: String, _ spelled: String) -> Bool {
    var rest = help[...]
    while let found = rest.range(of: spelled) {
      let before = found.lowerBound == help.startIndex ? " " : help[help.index(before: found.lowerBound)]
      let after = found.upperBound == help.endIndex ? " " : help[found.upperBound]
      if !(before.isLetter || before == "-") && !(after.isLetter || after == "-") { return true }
      rest = help[found.upperBound...]
    }
    return false
  }

  @Test(arguments: commands)
  func helpNamesEveryOptionTheCommandAccepts(command: String) async throws {
    let names = try Self.acceptedNames()
    #expect(names.contains("json") && names.contains("n"), "the sources' option lists were found: \(names)")
    let help = try await ToolRun.run("rewind", [command, "--help"]).out
    for spelled in try await Self.accepted(by: command, among: names) {
      #expect(Self.names(help, spelled), "rewind \(command) accepts \(spelled) but its --help never names it")
    }
  }

  /// The options among `names` that `rewind command` accepts, spelled as typed (`--json`, `-n`).
  static func accepted(by command: String, among names: [String]) async throws -> [String] {
    let scratch = TemporaryDirectory("cli-help-options")
    var accepted: [String] = []
    for name in names {
      let spelled = (name.count == 1 ? "-" : "--") + name
      // A name the command does not know fails at once with "unknown option"; a known one gets
      // past the option parser (and then fails on its bogus value or the missing journal).
      let run = try await ToolRun.run("rewind", [command, "\(spelled)=bogus"], in: scratch.path)
      if !run.err.contains("unknown option") { accepted.append(spelled) }
    }
    return accepted
  }

  @Test(arguments: commands)
  func helpCommandShowsTheCommandsHelp(command: String) async throws {
    let asked = try await ToolRun.run("rewind", ["help", command])
    #expect(asked.status == 0, "\(asked.err)")
    #expect(asked.out == (try await ToolRun.run("rewind", [command, "--help"])).out, "rewind help \(command)")
  }

  /// The widest line a help text may hold. Sentences added over time were left past it, up to
  /// 167 columns (blame), where the rest wraps before it: a terminal then breaks those lines
  /// mid-word, or they run off a pager's screen.
  static let helpWidth = 95

  /// The lines of `text` wider than `helpWidth`, counted in characters.
  static func tooWide(_ text: String) -> [String] {
    let lines: [Substring] = text.split(separator: "\n")
    return lines.filter { $0.count > helpWidth }.map { "\($0.count): \($0)" }
  }

  @Test(arguments: [""] + commands)
  func helpFitsItsWidth(command: String) async throws {
    let run = try await ToolRun.run("rewind", command.isEmpty ? ["--help"] : [command, "--help"])
    #expect(run.status == 0 && run.out.count > 200, "\(run.err)")
    #expect(Self.tooWide(run.out).isEmpty, "rewind \(command) --help: \(Self.tooWide(run.out))")
  }

  @Test func debugsCommandListFitsItsWidth() async throws {
    let journal = TemporaryDirectory("cli-help-width").appending("journal")
    try #require(try await ToolRun.run("rewind", ["demo", journal, "--events", "0"]).status == 0)
    let run = try await ToolRun.run("rewind", ["debug", journal], input: "help\n")
    #expect(run.out.contains("goto"), "the session's command list was shown: \(run.out)\(run.err)")
    #expect(Self.tooWide(run.out).isEmpty, "debug's help: \(Self.tooWide(run.out))")
  }

  @Test func helpForAnUnknownCommandIsAUsageError() async throws {
    let run = try await ToolRun.run("rewind", ["help", "lgo"])
    #expect(run.status == 2)
    #expect(run.err.contains("unknown command 'lgo'"), "\(run.err)")
  }

  @Test func everyExampleRunsAsShown() async throws {
    let rewind = try #require(ChildProcess.builtProduct("rewind"))
    let scratch = TemporaryDirectory("cli-help-examples")
    let journal = scratch.appending("journal")
    let demo = try await ToolRun.run(
      "rewind", ["demo", journal, "--events", "5000", "--seed", "1", "--durability", "none"])
    try #require(demo.status == 0, "\(demo.err)")
    // scripts/install-deps installs jq (`make test` runs it first): a machine without it skips
    // those examples, and says so below.
    let hasJQ = FileManager.default.isExecutableFile(atPath: "/usr/bin/jq")
    if !hasJQ { print("HelpTextTests: jq is not installed; the help's examples piped into jq are not run") }
    var lines: [(command: String, line: String)] = []
    for command in [""] + Self.commands {
      let help = try await ToolRun.run("rewind", command.isEmpty ? ["--help"] : [command, "--help"]).out
      for line in Self.examples(help) { lines.append((command, line)) }
    }
    #expect(lines.count > 30, "every command's examples were found")
    for (command, line) in lines {
      // `demo` writes a fresh journal of up to 200,000 events (its own tests run it), `tail -f`
      // never ends by itself, and jq may be missing.
      if command == "demo" || line.contains(" -f") || (line.contains("| jq") && !hasJQ) { continue }
      // The examples' journals (/tmp/notes, /tmp/j) are this one; `rewind` is the built tool.
      let script = line.replacingOccurrences(of: "/tmp/notes", with: "\u{1}")
        .replacingOccurrences(of: "/tmp/j", with: "\u{1}").replacingOccurrences(of: "\u{1}", with: journal)
        .replacing(try Regex("(^|\\| )rewind ")) { "\($0.output[1].substring ?? "")\(rewind) " }
      let run = try await ToolRun.run("/bin/bash", ["-o", "pipefail", "-c", script], in: scratch.path)
      #expect(run.status == 0, "rewind \(command) --help shows `\(line)`, which fails: \(run.err)")
      // Each shows something, but a debug session without a script, and an export into a file
      // (redirected, or with -o).
      #expect(
        !run.out.isEmpty || line.contains(">") || line.contains(" -o ") || line.hasPrefix("rewind debug "),
        "`\(line)` prints nothing")
    }
  }
}
