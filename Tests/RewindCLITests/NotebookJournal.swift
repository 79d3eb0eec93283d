import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

/// A Notebook journal written by the tests through `NotebookManager`, with the live state after
/// every sequence number it reached (the reference the replay-level commands are checked against).
struct NotebookJournal {
  let directory: TemporaryDirectory
  /// The live workspace after each sequence number (index = sequence; 0 is the empty state).
  var states: [Workspace] = [Workspace()]
  /// Each record's timestamp (index = sequence - 1).
  var timestamps: [Int64] = []
  /// The sequence of the planted "forbidden" notebook, if one was planted.
  var planted: UInt64?

  var path: String { directory.path }
  var lastSequence: UInt64 { UInt64(states.count - 1) }

  /// Writes `commands` seeded random Notebook commands (sequential ids, a stepping clock); with
  /// `plantAt`, a notebook titled "forbidden" is created at that step; `options` open the journal.
  static func write(
    commands: Int, seed: UInt64, plantAt: Int? = nil, options: JournalOptions = JournalOptions(durability: .none)
  ) async throws -> NotebookJournal {
    var journal = NotebookJournal(directory: TemporaryDirectory("cli-travel"))
    let manager = try NotebookManager(
      directory: journal.path, options: options,
      clock: .stepping(from: 1_700_000_000_000_000_000, by: 1_000_000_000), ids: .sequential())
    defer { manager.close() }
    var random = SeededGenerator(seed: seed)
    var books: [NotebookID] = []
    for title in ["inbox", "work"] {
      books.append(try await manager.createNotebook(title: title))
      try journal.settle(manager)
    }
    for step in 0..<commands {
      if step == plantAt {
        try await manager.createNotebook(title: "forbidden")
        try journal.settle(manager)
        journal.planted = journal.lastSequence
      }
      let notes = manager.state.notes.all().map(\.id)
      let items = manager.state.readingList.all().map(\.id)
      switch Int.random(in: 0..<10, using: &random) {
      case 0...2:
        try await manager.createNote(
          in: books[step % 2], title: "note \(step)", body: "body \(step)", tags: [step % 3 == 0 ? "swift" : "todo"])
      case 3 where !notes.isEmpty: try await manager.retitleNote(notes[step % notes.count], to: "title \(step)")
      case 4 where !notes.isEmpty: try await manager.tagNote(notes[step % notes.count], with: "ideas")
      case 5 where !notes.isEmpty: try await manager.deleteNote(notes[step % notes.count])
      case 6: _ = try await manager.addReadingItem(title: "item \(step)")
      case 7 where !items.isEmpty: try await manager.toggleReadingItem(items[step % items.count])
      default: try await manager.updateSettings(EditorSettings(fontSize: 10 + step % 7))
      }
      try journal.settle(manager)
    }
    return journal
  }

  /// Records the live state after the command just run. Each command here commits at most one
  /// event (no imports), so that is the state after the new sequence number, if any.
  private mutating func settle(_ manager: NotebookManager) throws {
    let reached = manager.lastSequence
    try #require(reached <= lastSequence + 1, "a command committed more than one event")
    while lastSequence < reached { states.append(manager.state) }
    let reader = try JournalReader(directory: path)
    while UInt64(timestamps.count) < lastSequence {
      timestamps.append(try #require(try reader.record(UInt64(timestamps.count + 1))).timestamp)
    }
  }
}

/// Runs a built product with arguments and optional standard input; output goes through files,
/// so neither stream can fill a pipe and stall the child. The child runs on a thread of its own
/// (`onOwnThread`), so no thread of the cooperative pool waits for it. `standardOutput` and
/// `standardError` send a stream to that path instead (`/dev/full`); `out` or `err` is then empty.
/// `environment` sets variables over this process's, which the child inherits.
struct ToolRun: Sendable {
  var status: Int32
  var out: String
  var err: String

  static func run(
    _ product: String, _ arguments: [String], input: String? = nil, in directory: String? = nil,
    standardOutput: String? = nil, standardError: String? = nil, environment: [String: String] = [:]
  ) async throws -> ToolRun {
    let executable = try #require(
      product.hasPrefix("/") ? product : ChildProcess.builtProduct(product), "\(product) must be built with the tests")
    let scratch = TemporaryDirectory("cli-run")
    let outPath = scratch.appending("out")
    let errPath = scratch.appending("err")
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    let status = try await onOwnThread {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: executable)
      process.arguments = arguments
      if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
      if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
      }
      process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: standardOutput ?? outPath))
      process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: standardError ?? errPath))
      // Input from a file, not a pipe: a child that exits before reading it (a usage error, a
      // journal it cannot open) would make writing into a pipe raise SIGPIPE and end this process.
      if let input {
        let inPath = scratch.appending("in")
        _ = FileManager.default.createFile(atPath: inPath, contents: Data(input.utf8))
        process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
      } else {
        process.standardInput = FileHandle.nullDevice
      }
      try process.run()
      let watchdog = ChildWatchdog(process)
      process.waitUntilExit()
      try watchdog.end(waitingFor: "\(product) \(arguments.joined(separator: " ")) to exit")
      return process.terminationStatus
    }
    return ToolRun(
      status: status, out: String(decoding: try Files.read(outPath), as: UTF8.self),
      err: String(decoding: try Files.read(errPath), as: UTF8.self))
  }
}
