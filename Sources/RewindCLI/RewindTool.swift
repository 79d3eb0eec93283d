import Foundation
import RewindJournal

/// The `rewind` command line tool as a library: tests and apps call `run` with arguments and
/// get the exit code; output goes to the given sinks.
///
/// Exit codes (`ExitCode`; each command's help, and `rewind --help`, say which of its outcomes
/// give which): 0 success; 1 findings, such as damage `verify` found or a failing sequence
/// `bisect` found; 2 a usage error; 3 the journal cannot be opened or read, or the command cannot
/// finish its work (a repair, a backup, `export -o`'s file, standard output).
public struct RewindTool {
  public enum ExitCode: Int32 {
    case success = 0
    case findings = 1
    case usage = 2
    case unreadable = 3
  }

  /// Where output goes: standard output and standard error by default.
  ///
  /// The standard sinks write with `write(2)`. Standard output that cannot be written ends the
  /// process: a closed pipe (`rewind log DIR | head -1`) quietly with status 141, as SIGPIPE
  /// would; any other failure (a full disk, standard output closed: `rewind log DIR >&-`) with a
  /// message on standard error and exit 3. A message that standard error cannot take (or a
  /// closed standard error) is dropped.
  public struct Output: Sendable {
    public var out: @Sendable (String) -> Void
    public var err: @Sendable (String) -> Void
    /// Called by a command about to wait with nothing to write (`tail -f` on an idle journal),
    /// so that it ends when the reader of `out` goes away rather than at its next write. Nil (the
    /// default) where `out` cannot tell. The standard sinks watch standard output when it is a
    /// pipe, and end the process as a write to the closed pipe would (status 141).
    public var endWhenReaderLeaves: (@Sendable () -> Void)?
    /// Whether these are the process's own standard output and error (`standard`): then `export
    /// --output` removes its temporary file, and `backup` its hidden copy, when SIGINT, SIGTERM or
    /// SIGHUP ends the process (`Interrupts`). Other sinks (a test's, an app's that runs the tool
    /// inside itself) leave the process's signals alone.
    var ownsProcess = false

    public init(
      out: @escaping @Sendable (String) -> Void, err: @escaping @Sendable (String) -> Void,
      endWhenReaderLeaves: (@Sendable () -> Void)? = nil
    ) {
      self.out = out
      self.err = err
      self.endWhenReaderLeaves = endWhenReaderLeaves
    }

    public static let standard = standardSinks.owningProcess

    private var owningProcess: Output {
      var output = self
      output.ownsProcess = true
      return output
    }

    private static let standardSinks = Output(
      out: { text in
        // Not written to: that descriptor is the runtime's, not the standard output given.
        let failure = stdoutClosed ? EBADF : writeAll(text, to: STDOUT_FILENO)
        guard failure != 0 else { return }
        // The reader is gone: nothing more to show, and nothing to say about it. `_exit`, not
        // `exit`, here and below: a sink may write on any thread (tail -f's on the task that
        // follows) while another ends the process (the reader's watcher, the main thread), and
        // `exit` runs the exit handlers and stdio's cleanup on the thread that calls it, on two
        // at once if two call it (exit(3) marks it MT-Unsafe). Nothing is left to flush: the
        // sinks write with `write(2)`.
        if failure == EPIPE { _exit(128 + SIGPIPE) }
        let why = stdoutClosed ? "it is closed" : String(cString: strerror(failure))
        if !stderrClosed { _ = writeAll("rewind: cannot write to standard output: \(why)\n", to: STDERR_FILENO) }
        _exit(ExitCode.unreadable.rawValue)
      },
      err: { text in if !stderrClosed { _ = writeAll(text, to: STDERR_FILENO) } },
      endWhenReaderLeaves: { if !stdoutClosed { watchReader(of: STDOUT_FILENO) } })

    /// Whether standard output, and standard error, were closed when the process started
    /// (`rewind log DIR >&-`). The runtime then takes the free descriptor for its own (libdispatch's
    /// epoll or eventfd on Linux) before any command runs, so a write there fails with EINVAL, or
    /// worse, succeeds into it: the standard sinks write to neither.
    static let stdoutClosed = closedAtStart(STDOUT_FILENO)
    static let stderrClosed = closedAtStart(STDERR_FILENO)

    /// Whether `descriptor` was not open when the process started: it is closed now, or it is
    /// close-on-exec, which no descriptor inherited across `exec` is (exec would have closed it),
    /// and which the runtime sets on every descriptor it opens. Rewind sets the flag on no
    /// standard descriptor.
    static func closedAtStart(_ descriptor: Int32) -> Bool {
      let flags = fcntl(descriptor, F_GETFD)
      return flags == -1 || flags & FD_CLOEXEC != 0
    }

    /// When `descriptor` is a pipe, starts a thread that waits for its reader to go away (Linux
    /// reports `POLLERR` on a pipe's write end once its read end is closed) and then ends the
    /// process with status 141, as the write to the closed pipe would. Does nothing for a file or
    /// a terminal, whose reader cannot leave that way.
    static func watchReader(of descriptor: Int32) {
      var status = stat()
      guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFIFO else { return }
      Thread.detachNewThread {
        // No events asked for: POLLERR and POLLHUP are reported regardless.
        var watched = pollfd(fd: descriptor, events: 0, revents: 0)
        while true {
          let ready = poll(&watched, 1, -1)
          if ready < 0 && errno == EINTR { continue }
          // `_exit`: the main thread runs on meanwhile (see the `out` sink).
          if ready > 0 && watched.revents & Int16(POLLERR | POLLHUP) != 0 { _exit(128 + SIGPIPE) }
          // Anything else (the descriptor closed, an error): stop watching; a write still tells.
          return
        }
      }
    }

    /// Writes all of `text` to `descriptor`, retrying short and interrupted writes; returns 0, or
    /// the `errno` of the write that failed.
    static func writeAll(_ text: String, to descriptor: Int32) -> Int32 {
      var bytes = Array(text.utf8)[...]
      while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written >= 0 {
          bytes = bytes.dropFirst(written)
        } else if errno != EINTR {
          return errno
        }
      }
      return 0
    }
  }

  /// The models whose journals the replay-level commands can rebuild (checked as the tool is
  /// made, so not to be changed after).
  public let models: [ModelRegistration]
  /// Commands an app adds to the built-in ones (the Notebook demo, for instance).
  public let extraCommands: [any RewindCommand.Type]
  /// The file system the commands that write a file the user names go through (`export
  /// --output`): tests put a `FaultInjectingFileIO` here.
  var fileIO: any FileIO = PosixFileIO()

  /// - Parameters:
  ///   - models: the app's models, for replay, diff, blame, bisect, debug and snapshot. Journal-level
  ///     commands (log, show, stats, tail, export, the integrity part of verify) need none.
  ///   - commands: commands of the app's own, listed and dispatched like the built-in ones.
  /// - Precondition: the models' names differ, and so do the commands' (`--model NAME` and the
  ///   command word would reach only the first); no command is named `help`, `--help` or `-h`,
  ///   which ask for help wherever they stand. A command named like a built-in one takes its
  ///   place.
  public init(models: [ModelRegistration] = [], commands: [any RewindCommand.Type] = []) {
    if let name = firstRepeated(models.map(\.name)) {
      preconditionFailure("two models are registered as '\(name)': `--model \(name)` would reach only the first")
    }
    if let name = firstRepeated(commands.map { $0.name }) {
      preconditionFailure("two commands are named '\(name)': `rewind \(name)` would run only the first")
    }
    if let name = commands.map({ $0.name }).first(where: Self.helpWords.contains) {
      preconditionFailure("a command is named '\(name)', which asks for help: `rewind \(name)` would never run it")
    }
    self.models = models
    self.extraCommands = commands
  }

  /// What a command gets besides its arguments.
  public struct Context: Sendable {
    public var output: Output
    public var models: [ModelRegistration]
    /// Whether standard error is a terminal: progress is shown only then.
    public var stderrIsTerminal: Bool
    /// Whether standard output is a terminal: commands that stream their output there (export)
    /// then show no progress, which would only garble it.
    public var stdoutIsTerminal: Bool
    /// Whether standard error's terminal erases the rest of a line on its escape
    /// (`RewindTool.erasesLines(term:)`): where it does not, progress lines pad with spaces.
    public var terminalErasesLines = true
    /// `RewindTool.fileIO`.
    var fileIO: any FileIO = PosixFileIO()
  }

  /// Whether a terminal of type `term` (the `TERM` variable) erases the rest of a line on the
  /// escape `ESC [ K`: every type but none, empty and `dumb` (what Emacs' shell buffers and some
  /// CI log viewers set), which show the escape as text.
  static func erasesLines(term: String?) -> Bool {
    guard let term, !term.isEmpty else { return false }
    return term != "dumb"
  }

  static var builtIn: [any RewindCommand.Type] {
    [
      LogCommand.self, ShowCommand.self, StatsCommand.self, ExportCommand.self, TailCommand.self,
      VerifyCommand.self, RepairCommand.self, CompactCommand.self, BackupCommand.self,
    ] + replayCommands
  }

  /// The commands that rebuild states, for registered models.
  static var replayCommands: [any RewindCommand.Type] {
    [
      ReplayCommand.self, DiffCommand.self, BlameCommand.self, BisectCommand.self, DebugCommand.self,
      SnapshotCommand.self,
    ]
  }

  var allCommands: [any RewindCommand.Type] {
    extraCommands
      + Self.builtIn.filter { builtIn in
        !extraCommands.contains { $0.name == builtIn.name }
      }
  }

  /// One line per command, its name in a column as wide as the widest name shown plus a space
  /// (an app's command may be longer than ours; none is cut), then its summary.
  private var commandLines: String {
    let width = max(9, visibleWidth(allCommands.map { $0.name }) + 1)
    return allCommands.map { "  " + visible($0.name, paddedTo: width) + $0.summary }.joined(separator: "\n")
  }

  var overview: String {
    """
    rewind: audit and inspect Rewind journals

    Usage: rewind COMMAND DIR [options]      rewind COMMAND --help for details

    Commands:
    \(commandLines)

    Options: rewind help COMMAND (or rewind --help COMMAND), or --help (or -h) wherever a flag
    could stand, shows a command's help (as an option's value it is just text); an option that
    takes a value may be given once (a second --since is a usage error), a flag twice counts once;
    -1 where a number is expected is out of range.
    Text output shows control characters, line separators, bidi marks and overrides, and
    invisible characters (zero width space, word joiner, soft hyphen, byte order mark; not the
    zero width joiner and non-joiner that scripts and emoji need) from the journal (or echoed from
    the command line) as escapes such as \\u{1B} (a backslash as \\\\, so text cannot pass for an
    escape, in a path too); --json output as JSON escapes such as \\u001b.

    Exit codes: 0 success; 1 findings (verify or stats found damage, bisect found a failing
    sequence, repair showed a plan it did not carry out, compact stopped at a damaged segment,
    snapshot found the state diverging from a checkpoint and wrote none, replay passed a checkpoint
    that disagrees with the state it printed, backup copied a journal that shows records lost);
    2 usage error; 3 the journal cannot be opened or read, a repair could not finish (it names what
    is left to do), export -o cannot write its file (FILE is left as it was), a backup could not be
    made (it removes what it wrote), or standard output cannot be written (a full disk, or closed:
    rewind log DIR >&-; one message says which). An export -o interrupted (Ctrl-C, SIGTERM, SIGHUP)
    removes its temporary file and ends by the signal (status 128 + its number: 130 for Ctrl-C), as
    tail -f and any other command interrupted do. A reader that closes the pipe early (rewind log
    DIR | head -1) ends the command quietly, with status 141 as SIGPIPE would (tail -f as soon as
    the reader leaves). Long operations (verify, stats, export, replay, show, diff, blame, bisect,
    snapshot, debug's seeks) show progress on standard error when it is a terminal, and nothing
    extra when it is not.

    Examples:
      rewind verify /tmp/j
      rewind stats /tmp/j
      rewind log /tmp/j --since 2026-01-01T00:00:00Z --limit 5 --json
      rewind replay /tmp/j --to 1200 --json
      rewind debug /tmp/j

    """
  }

  /// Runs this process's command line (`CommandLine`) and returns the exit code: `run(_:output:)`
  /// of its arguments, once each is valid UTF-8. One that is not (a path named in another
  /// encoding) is a usage error (exit 2): Swift's `CommandLine.arguments` replaces its bad bytes
  /// with U+FFFD, so the command would look for another path and report it missing.
  public func runCommandLine(output: Output = .standard) async -> Int32 {
    let raw = (1..<Int(CommandLine.argc)).map { index -> [UInt8] in
      guard let argument = CommandLine.unsafeArgv[index] else { return [] }
      return Array(
        UnsafeBufferPointer(
          start: UnsafeRawPointer(argument).assumingMemoryBound(to: UInt8.self), count: strlen(argument)))
    }
    if let bad = Self.firstArgumentNotUTF8(raw) {
      output.err(
        "rewind: argument \(bad + 1) ('\(Self.escaped(raw[bad]))') is not valid UTF-8: rewind reads paths and "
          + "values as UTF-8; rename the path, or reach it through a symbolic link whose name is valid UTF-8\n")
      return ExitCode.usage.rawValue
    }
    return await run(Array(CommandLine.arguments.dropFirst()), output: output)
  }

  /// An argument that is not UTF-8, shown as its bytes are: its valid runs as `visible` shows any
  /// text (controls escaped, a backslash doubled), each byte that is no UTF-8 as `\xHH`.
  static func escaped(_ bytes: [UInt8]) -> String {
    var out = ""
    var run = String.UnicodeScalarView()
    var parser = Unicode.UTF8.ForwardParser()
    var iterator = bytes.makeIterator()
    var position = 0
    while true {
      switch parser.parseScalar(from: &iterator) {
      case .valid(let encoded):
        run.append(Unicode.UTF8.decode(encoded))
        position += encoded.count
      case .error(let length):
        out += visible(String(run))
        run = String.UnicodeScalarView()
        for byte in bytes[position..<position + length] {
          let hex = String(byte, radix: 16, uppercase: true)
          out += "\\x" + (hex.count == 1 ? "0" + hex : hex)
        }
        position += length
      case .emptyInput:
        return out + visible(String(run))
      }
    }
  }

  /// The index of the first of `arguments` (raw bytes) that is not valid UTF-8; nil when all are.
  static func firstArgumentNotUTF8(_ arguments: [[UInt8]]) -> Int? {
    arguments.firstIndex { String(validating: $0, as: UTF8.self) == nil }
  }

  /// The words that ask for help in a command's place (`rewind help`, `rewind --help log`).
  static let helpWords = ["help", "--help", "-h"]

  /// Runs one command line (without the program name) and returns the exit code.
  public func run(_ arguments: [String], output: Output = .standard) async -> Int32 {
    // `rewind help COMMAND` is `rewind COMMAND --help`. In the command's place, `--help` and `-h`
    // are `help`: what follows them is a command's name, not more flags (`rewind --help extra`
    // is a usage error, as `rewind help log extra` is).
    let helpWords = Self.helpWords
    if arguments.count == 2, helpWords.contains(arguments[0]) {
      // Help about help is the overview, as `rewind help` alone is (rewritten to
      // `[help word, "--help"]`, it would come back here without end).
      if helpWords.contains(arguments[1]) { return await run([arguments[1]], output: output) }
      return await run([arguments[1], "--help"], output: output)
    }
    if arguments.count > 2, helpWords.contains(arguments[0]) {
      output.err(
        "rewind \(arguments[0]): unexpected argument '\(visible(arguments[2]))'; rewind help COMMAND shows one "
          + "command's help\n")
      return ExitCode.usage.rawValue
    }
    guard let name = arguments.first else {
      // A usage error: the overview goes where errors go, so a script's output stays empty.
      output.err(overview)
      return ExitCode.usage.rawValue
    }
    guard !helpWords.contains(name) else {
      output.out(overview)
      return ExitCode.success.rawValue
    }
    let rest = Array(arguments.dropFirst())
    let context = Context(
      output: output, models: models, stderrIsTerminal: isatty(STDERR_FILENO) == 1,
      stdoutIsTerminal: isatty(STDOUT_FILENO) == 1,
      terminalErasesLines: Self.erasesLines(term: ProcessInfo.processInfo.environment["TERM"]), fileIO: fileIO)
    do {
      guard let command = allCommands.first(where: { $0.name == name }) else {
        let near = Arguments.nearest(to: name, among: allCommands.map { $0.name }).map { "did you mean \($0)? " } ?? ""
        throw UsageError("unknown command '\(name)'; \(near)run rewind --help for the list")
      }
      if command.printsHelp(rest, output) { return ExitCode.success.rawValue }
      return try await command.run(rest, context: context).rawValue
    } catch let error as UsageError where error.asksForHelp {
      // `--help` further on, where a flag could stand (`Arguments` tells it from an option's value).
      if let command = allCommands.first(where: { $0.name == name }) { output.out(command.help) }
      return ExitCode.success.rawValue
    } catch let error as UsageError {
      output.err("rewind \(visible(name)): \(visible(error.description))\n")
      return ExitCode.usage.rawValue
    } catch {
      output.err("rewind \(visible(name)): \(visible(errorMessage(error)))\n")
      return ExitCode.unreadable.rawValue
    }
  }
}

/// The message of an error that makes a command exit 3: for a journal's, with the tool's advice
/// where the library's would mislead (`manifestAdvice`, `foreignManifestMessage`).
func errorMessage(_ error: any Error) -> String {
  let journalError = error as? JournalError
  return journalError.flatMap(manifestAdvice) ?? journalError.flatMap(foreignManifestMessage)
    ?? String(describing: error)
}

/// `errorMessage(error)` ended as a sentence, ready for another: ". " after it, or only a space
/// when it ends with a full stop already (advice does).
func errorSentence(_ error: any Error) -> String {
  let message = errorMessage(error)
  return message + (message.hasSuffix(".") ? " " : ". ")
}

/// One `rewind` command. The built-in ones and an app's own (`RewindTool(commands:)`) conform.
public protocol RewindCommand {
  /// The word after `rewind`.
  static var name: String { get }
  /// One line for `rewind --help`.
  static var summary: String { get }
  /// The text of `rewind NAME --help`, with usage and examples.
  static var help: String { get }
  /// Runs the command. `rewind NAME --help` (or `-h`) is handled before this is called; a command
  /// that parses its arguments with `Arguments` also gets help for `--help` further on, wherever a
  /// flag could stand (`Arguments` throws `UsageError.helpRequested`, answered with `help`).
  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode
}

extension RewindCommand {
  /// Returns true (after printing the help) if the first of `arguments` asks for help: there it
  /// cannot be an option's value. Further on, `Arguments` tells (`UsageError.helpRequested`).
  static func printsHelp(_ arguments: [String], _ output: RewindTool.Output) -> Bool {
    guard arguments.first == "--help" || arguments.first == "-h" else { return false }
    output.out(help)
    return true
  }
}

/// The first name of `names` that an earlier one repeats, or nil.
func firstRepeated(_ names: [String]) -> String? {
  var seen: Set<String> = []
  return names.first { !seen.insert($0).inserted }
}
