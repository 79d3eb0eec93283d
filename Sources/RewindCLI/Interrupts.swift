import Dispatch
import Foundation
import RewindLocking

/// SIGINT (Ctrl-C), SIGTERM and SIGHUP while a command of the `rewind` process makes files it
/// must not leave half made (`RewindTool.Output.ownsProcess`: never in a test or an app that runs
/// the tool with sinks of its own): `export -o`'s temporary file (`ExportInterrupts`), `backup`'s
/// hidden copy (`BackupCommand`). The command's `cleanUp` removes what it has made so far, one
/// line says what is left, and the process ends by the signal, its default action restored
/// (`end(by:)`): a shell's `$?` is 128 + the signal's number, as the signal would have given it.
///
/// The handler runs on a queue of its own (a Dispatch signal source), not in a signal handler,
/// so it may take a lock: the command runs each change that decides what is left (a file made,
/// a rename over or into DEST) as a `step` under the same lock, and the step says what cleaning
/// up means from then on; so the handler finds exactly one state, and nothing moves until the
/// process has exited. The one line it writes is waited for a bounded time (`say`): standard
/// error that cannot take it does not keep the process from ending.
enum Interrupts {
  private struct Watched: Sendable {
    var command: String
    var output: RewindTool.Output
    /// Columns of the widest progress line the command shows (0: none), cleared with spaces
    /// before the message where the terminal cannot erase (`ProgressLine.clearing`).
    var progressWidth: Int
    /// Removes what the command has made and says what is left; runs holding the lock.
    var cleanUp: @Sendable () -> String
  }

  private static let watched = Lock<Watched?>(nil)

  /// The signals handled, with their names for the message.
  private static let signals: [(number: Int32, name: String)] = [
    (SIGINT, "SIGINT"), (SIGTERM, "SIGTERM"), (SIGHUP, "SIGHUP"),
  ]

  /// The signal sources, made by the first `watch` and kept for the process's life (libdispatch
  /// keeps its handler for a signal installed once it has one).
  private static let sources = Lock<[any DispatchSourceSignal]>([])

  /// Handles the signals from now until `end()`, for `command` (its name, for the message),
  /// whose cleaning up is `cleanUp` until a `step` says otherwise.
  static func watch(
    _ command: String, output: RewindTool.Output, progressWidth: Int = 0, cleanUp: @escaping @Sendable () -> String
  ) {
    sources.withLock { sources in
      guard sources.isEmpty else { return }
      let queue = DispatchQueue(label: "rewind.interrupts")
      // One ignored when the process started stays ignored: `nohup` ignores SIGHUP, and a shell
      // SIGINT for a job it runs in the background.
      for signal in signals where !isIgnored(signal.number) {
        let source = DispatchSource.makeSignalSource(signal: signal.number, queue: queue)
        // Registered before the command makes anything: a signal from then on reaches `interrupted`.
        let registered = DispatchSemaphore(value: 0)
        source.setRegistrationHandler { registered.signal() }
        source.setEventHandler { interrupted(by: signal.number, named: signal.name) }
        source.resume()
        // Bounded: a source that cannot be registered (no descriptor left for its signalfd)
        // must not hang the command, which then goes on without handling that signal.
        _ = registered.wait(timeout: .now() + .seconds(10))
        sources.append(source)
      }
    }
    watched.withLock {
      $0 = Watched(command: command, output: output, progressWidth: progressWidth, cleanUp: cleanUp)
    }
  }

  /// Whether `signal` is ignored (`SIG_IGN`), as set by whoever started the process.
  private static func isIgnored(_ signal: Int32) -> Bool {
    var current = sigaction()
    guard sigaction(signal, nil, &current) == 0, let handler = current.__sigaction_handler.sa_handler else {
      return false
    }
    return unsafeBitCast(handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
  }

  /// Runs `run`, one of the command's changes, under the handler's lock, and makes `cleanUp`
  /// the cleaning up from then on when it returns: no signal is handled between the two. When
  /// nothing is watched (a test's sinks, an app's), runs `run` alone.
  static func step(_ run: () throws -> Void, then cleanUp: @escaping @Sendable () -> String) throws {
    try watched.withLock { watched in
      try run()
      watched?.cleanUp = cleanUp
    }
  }

  /// The command is over (done, or failed and cleaned up): a signal now ends the process with
  /// its status and nothing more to do.
  static func end() { watched.withLock { $0 = nil } }

  private static func interrupted(by signal: Int32, named name: String) -> Never {
    watched.withLock { watched -> Never in
      guard let watched else { end(by: signal) }
      let said = watched.cleanUp()
      // A progress line on the terminal is cleared first, as an error's message does (with
      // spaces as wide as the widest where the terminal cannot erase: which was shown is not known).
      let erases = RewindTool.erasesLines(term: ProcessInfo.processInfo.environment["TERM"])
      let clear = isatty(STDERR_FILENO) == 1 ? ProgressLine.clearing(watched.progressWidth, erases: erases) : ""
      say(clear + "rewind \(watched.command): interrupted (\(name)); " + visible(said) + "\n", to: watched.output)
      // Still holding the lock: no step runs before the process has ended.
      end(by: signal)
    }
  }

  /// How long the handler waits for its message to be written before it ends the process anyway.
  static let messageWait: DispatchTimeInterval = .seconds(1)

  /// Writes `message` to `output`'s standard error, waiting for the write at most `messageWait`.
  /// Standard error may block for ever (a pipe whose reader is stopped or never reads, full; a
  /// terminal stopped by Ctrl-S): the handler, holding the lock, would then never end the
  /// process, and a second Ctrl-C would wait behind it. The write runs on a thread of its own,
  /// which the process's end takes with it; the line may then be cut short, or not written.
  static func say(_ message: String, to output: RewindTool.Output) {
    let written = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      output.err(message)
      written.signal()
    }
    _ = written.wait(timeout: .now() + messageWait)
  }

  /// Ends the process by `signal` itself, its default action restored, so that whoever waits for
  /// it sees it killed by the signal (`WIFSIGNALED`), not exited: a shell running a script stops
  /// the script on a Ctrl-C only then (it takes an exit status of 130 for a command that handled
  /// the interrupt and goes on), and `xargs` stops too. A shell's `$?` is 128 + the signal's
  /// number either way. Nothing else runs: no `atexit` handler, no stdio flush, on this queue's
  /// thread while the main thread may be writing; `_exit` if the signal does not end it.
  static func end(by signal: Int32) -> Never {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = SIG_DFL
    sigemptyset(&action.sa_mask)
    sigaction(signal, &action, nil)
    // Dispatch keeps a signal it watches blocked: unblocked on this thread, `raise` delivers it here.
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, signal)
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
    raise(signal)
    _exit(128 + signal)
  }
}
