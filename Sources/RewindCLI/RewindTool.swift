import Foundation

/// The `rewind` command line tool as a library: tests and apps call `run` with arguments and
/// get the exit code; output goes to the given sinks.
///
/// Exit codes: 0 success, 1 findings (verify found damage), 2 usage error, 3 the journal cannot
/// be opened or read.
public struct RewindTool {
  public enum ExitCode: Int32 {
    case success = 0
    case findings = 1
    case usage = 2
    case unreadable = 3
  }

  /// Where output goes: standard output and standard error by default.
  public struct Output: Sendable {
    public var out: @Sendable (String) -> Void
    public var err: @Sendable (String) -> Void

    public init(out: @escaping @Sendable (String) -> Void, err: @escaping @Sendable (String) -> Void) {
      self.out = out
      self.err = err
    }

    public static let standard = Output(
      out: { text in FileHandle.standardOutput.write(Data(text.utf8)) },
      err: { text in FileHandle.standardError.write(Data(text.utf8)) })
  }

  /// The directory `rewind demo` uses when none is given.
  public static let defaultDemoDirectory = "rewind-demo"

  public init() {}

  static let commands: [(name: String, summary: String)] = [
    ("demo", "write a demo journal with concurrent producers"),
    ("log", "list records"),
    ("stats", "sizes, counts and compression of a journal"),
    ("verify", "check every byte of a journal; exit 1 if damaged"),
    ("repair", "move everything from the first damaged frame on into quarantine/"),
  ]

  static let overview = """
    rewind: audit and inspect Rewind journals

    Usage: rewind COMMAND DIR [options]      rewind COMMAND --help for details

    Commands:
    \(commands.map { "  " + $0.name.padding(toLength: 8, withPad: " ", startingAt: 0) + $0.summary }.joined(separator: "\n"))

    Exit codes: 0 success, 1 findings (verify), 2 usage error, 3 journal cannot be opened or read.

    Examples:
      rewind demo /tmp/j --records 100000 --durability batched
      rewind verify /tmp/j
      rewind log /tmp/j --from 10 --limit 5 --json

    """

  /// Runs one command line (without the program name) and returns the exit code.
  public func run(_ arguments: [String], output: Output = .standard) async -> Int32 {
    guard let name = arguments.first, name != "--help", name != "-h", name != "help" else {
      output.out(Self.overview)
      return arguments.isEmpty ? ExitCode.usage.rawValue : ExitCode.success.rawValue
    }
    let rest = Array(arguments.dropFirst())
    do {
      let code: ExitCode
      switch name {
      case "demo": code = try await DemoCommand.run(rest, output: output)
      case "log": code = try LogCommand.run(rest, output: output)
      case "stats": code = try StatsCommand.run(rest, output: output)
      case "verify": code = try VerifyCommand.run(rest, output: output)
      case "repair": code = try RepairCommand.run(rest, output: output)
      default: throw UsageError("unknown command '\(name)'; run rewind --help for the list")
      }
      return code.rawValue
    } catch let error as UsageError {
      output.err("rewind \(name): \(error.description)\n")
      return ExitCode.usage.rawValue
    } catch {
      output.err("rewind \(name): \(error)\n")
      return ExitCode.unreadable.rawValue
    }
  }
}

/// Every command answers `--help` with its own text.
protocol Command {
  static var help: String { get }
}

extension Command {
  /// Returns true (after printing the help) if `arguments` ask for help.
  static func printsHelp(_ arguments: [String], _ output: RewindTool.Output) -> Bool {
    guard arguments.contains("--help") || arguments.contains("-h") else { return false }
    output.out(help)
    return true
  }
}
