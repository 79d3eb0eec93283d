import Foundation
import Notebook
import Rewind
public import RewindCLI
import RewindJournal
import Synchronization

/// `rewind demo`: the Notebook workload through `NotebookManager` into a journal.
public enum NotebookDemoCommand: RewindCommand {
  public static let name = "demo"
  public static let summary = "write a Notebook journal: users, the sync job, the auto-tagger, the reading list"
  /// The directory used when none is given.
  public static let defaultDirectory = "rewind-demo"

  public static let help = """
    Usage: rewind demo [DIR] [--events N] [--seed S] [--durability always|batched|none] [--json]

    Runs the Notebook workload through NotebookManager until about N events (default 100000; 0
    issues no command, so DIR is left an empty journal, verified) are committed to the journal
    in DIR (default ./\(defaultDirectory)): users' commands on notebooks, notes, tags, settings
    and the reading list, the sync job landing a server's changes, and the auto-tagger tagging
    what users wrote. \(NotebookWorkload.commandsInFlight) commands are in flight at a time, so under
    always and batched group commit batches them (under none each command's append is written at
    once, in a frame of its own). Then prints a summary: the events and the commands that
    recorded them (both as `rewind stats` counts them), the commands issued (some find nothing to
    change and record no event, so the journal holds no trace of them), events and commands per
    origin, throughput, journal size and compression ratio. DIR and its missing parent
    directories are created (as mkdir -p does).

    With --seed, the run is fully deterministic: a simulated clock (from 2026-01-01T00:00:00Z)
    and seeded identifiers, so the same seed writes the same events, payloads and timestamps
    whatever the durability policy, and a run to fewer events is an exact prefix of a longer one
    (a problem seen at event 40000 reproduces with --events 40000). A seeded run needs an empty
    or new DIR. Without --seed, the system clock and random identifiers are used, and the events
    are appended to the journal in DIR. A DIR holding anything but a journal's files is refused
    (exit 2), as is an empty DIR argument.

    --durability  when an append is acknowledged: always (after fsync, the default), batched
                  (fsync within a short interval), none (left to the OS)
    --json        instead of the summary, one JSON object per command that recorded events (the
                  commands `rewind stats` counts), on its own line, written as soon as the
                  command is acknowledged:
                  {"seq":LAST,"first":FIRST,"events":K,"origin":"user","command":"ID",
                   "time":"ISO 8601","names":["note.created"]}
                  (the summary's check of the whole journal is not made: `rewind verify DIR`)

    Exit 0 when the run is done and the journal verifies sound; 1 when the summary's check found
    it damaged, or the journal grew by other than the events the workload recorded (a bug: report
    it with the seed); 2 on a usage error; 3 when the journal cannot be opened or written.

    Examples:
      rewind demo
      rewind demo /tmp/notes --events 200000 --seed 1 --durability batched
      rewind demo /tmp/notes-7 --events 5000 --seed 7 --json | tail -1

    """

  public static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
    let args = try Arguments(arguments, options: ["events", "seed", "durability"], flags: ["json"])
    let directory = try args.directory(default: defaultDirectory)
    guard !directory.isEmpty else {
      throw UsageError("DIR is empty: name a directory, or leave DIR out for ./\(defaultDirectory)")
    }
    let target = try args.integer("events", default: 100_000, range: 0...1_000_000_000)
    var seed: UInt64?
    if let text = args.value("seed") {
      guard let value = Arguments.sequenceNumber(text) else {
        throw UsageError("--seed needs a whole number in 0...\(UInt64.max), not '\(text)'")
      }
      seed = value
    }
    let durability: Durability
    switch args.value("durability") ?? "always" {
    case "always": durability = .always
    case "batched": durability = .batched
    case "none": durability = .none
    case let other: throw UsageError("--durability must be always, batched or none, not '\(other)'")
    }
    let json = args.flag("json")

    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), !isDirectory.boolValue {
      throw UsageError(
        "\(directory) is a file, not a directory: the demo writes a journal into a new or empty directory")
    }
    // The workload writes into DIR: one holding anything but a journal (`demo /`, a home directory)
    // is refused before a file is made there.
    if let stranger = try strangerEntry(in: directory) {
      throw UsageError(
        "\(directory) holds \(stranger), which is not part of a journal; the demo writes only into a new "
          + "or empty directory or a journal: name another directory")
    }
    // As mkdir -p: the journal creates DIR itself, its parents are made here, each durably named in
    // its own parent as the journal's directory is. A parent that cannot be made (a file in the
    // way) is left to the journal's own error about DIR.
    if let parent = parentDirectory(of: directory), !FileManager.default.fileExists(atPath: directory) {
      var missing: [String] = []  // outermost first
      var next: String? = parent
      while let ancestor = next, !FileManager.default.fileExists(atPath: ancestor) {
        missing.insert(ancestor, at: 0)
        next = parentDirectory(of: ancestor)
      }
      if (try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)) != nil {
        for made in missing { try? PosixFileIO().syncDirectory(parentDirectory(of: made) ?? ".") }
      }
    }
    // A seeded demo refuses a journal that holds records before it opens it for writing: opening
    // moves a damaged tail aside, and the refusal came after that, leaving `verify` nothing to report.
    if seed != nil, FileManager.default.fileExists(atPath: directory + "/" + Layout.manifestName) {
      let (last, hidden) = try JournalReader(directory: directory).intactEnd()
      if let hidden {
        throw UsageError(
          "\(directory) holds a journal whose end is damaged (\(hidden)); a seeded demo starts from an empty "
            + "journal and leaves this one as it is: see rewind verify \(shellWord(directory))")
      }
      if last > 0 {
        throw UsageError(
          "\(directory) already holds \(counted(last, "event")); a seeded demo starts from an empty journal. "
            + "Remove it (rm -r \(shellWord(directory))) or name a new directory.")
      }
    }
    let workload =
      seed.map { NotebookWorkload(seed: $0) }
      ?? NotebookWorkload(seed: UInt64.random(in: 0...UInt64.max), clock: .system, ids: .random)
    let manager = try NotebookManager(
      directory: directory, options: JournalOptions(durability: durability), clock: workload.clock,
      ids: workload.ids)
    let before = manager.lastSequence
    for moved in manager.recovery.movedAside { output.err(visible("opening moved aside: \(moved)") + "\n") }
    if let missing = manager.recovery.missingRecords { output.err(visible("opening found \(missing)") + "\n") }
    if seed != nil && before > 0 {
      manager.close()
      throw UsageError(
        "\(directory) already holds \(counted(before, "event")); a seeded demo starts from an empty journal. "
          + "Remove it (rm -r \(shellWord(directory))) or name a new directory.")
    }

    let committed = Mutex(0)
    // Returns the events committed per origin, as `rewind stats` counts them.
    let printer = Task {
      [changes = manager.changes(), progress = context.stderrIsTerminal && !json, erases = context.terminalErasesLines]
      in
      var shown = 0
      // The progress line's characters, which clearing covers with spaces where nothing erases.
      var width = 0
      var eventsByOrigin: [String: Int] = [:]
      for await change in changes {
        eventsByOrigin[change.origin.name, default: 0] += change.events.count
        let total = committed.withLock { total in
          total += change.events.count
          return total
        }
        if json { output.out(line(for: change)) }
        if progress && total - shown >= 5_000 {
          shown = total
          let text = "demo: \(total) of ~\(target) events"
          output.err("\r" + text)
          width = text.count
        }
      }
      if progress { output.err(ProgressLine.clearing(width, erases: erases)) }
      return eventsByOrigin
    }

    let clock = ContinuousClock()
    let started = clock.now
    let summary: WorkloadSummary
    do {
      summary = try await workload.run(manager, events: target)
    } catch {
      manager.close()
      _ = await printer.value
      throw error
    }
    let elapsed = started.duration(to: clock.now)
    let written = manager.lastSequence - before
    manager.close()
    let eventsByOrigin = await printer.value

    guard written == UInt64(summary.events) else {
      output.err(
        "rewind demo: the workload expected \(summary.events) events but the journal grew by \(written); "
          + "this is a bug in the workload, please report it with the seed\n")
      return .findings
    }
    if json { return .success }

    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let report = try JournalReader(directory: directory).verify()
    // The noun agrees with the total ("app 1 event", "app 1, sync 2 events").
    func perOrigin(_ counts: [String: Int], _ one: String, _ many: String) -> String {
      if counts.isEmpty { return "no " + many }
      let what = counts.values.reduce(0, +) == 1 ? one : many
      return counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + " " + what
    }
    // The commands that recorded events: what `rewind stats` can count (a command that records
    // nothing leaves no trace in the journal), as against all the commands issued.
    let recording = summary.committedByOrigin.values.reduce(0, +)
    // The directory as typed: shown, not sent to the terminal, as every command echoes text.
    let shown = visible(directory)
    let commands =
      summary.commands == 0
      ? "none issued"
      : "\(summary.commands) issued, \(summary.commands - recording) of them with nothing to record; "
        + "\(NotebookWorkload.commandsInFlight) in flight"
    // With no command (--events 0), rates of nothing over the time it took to open the journal.
    let throughput =
      summary.commands == 0
      ? "- (no command issued)"
      : "\(Int(Double(written) / max(seconds, 1e-9))) events/s, "
        + "\(Int(Double(summary.commands) / max(seconds, 1e-9))) commands issued/s in \(String(format: "%.3f", seconds)) s"
    output.out(
      """
      notebook demo: \(shown) (\(seed.map { "seed \($0)" } ?? "unseeded"), durability \(durability))
        events        \(written), recorded by \(counted(recording, "command")) (as rewind stats counts them)
        commands      \(commands)
        by origin     \(perOrigin(eventsByOrigin, "event", "events")) (as rewind stats counts them)
                      \(perOrigin(summary.committedByOrigin, "command that recorded events", "commands that recorded events"))
        throughput    \(throughput)
        journal       \(counted(report.records, "record")), \(counted(report.batches, "frame")), \(counted(report.segments, "segment"))
        size          \(report.bytesOnDisk) bytes on disk, \(report.bytesDecoded) decoded (ratio \(ratio(report)))
        integrity     \(report.isSound ? "sound" : "\(counted(report.problems.count, "problem")): run rewind verify \(visible(shellWord(directory)))")

      """)
    return report.isSound ? .success : .findings
  }

  /// The directory holding `path`, as typed (`a/b` for `a/b/c/`, `/` for `/x`), or nil when the
  /// path has no directory part (`q`, `x/`: the working directory holds it). Plain splitting at the
  /// last slash: Foundation's `deletingLastPathComponent` traps on Linux for a one-character
  /// relative name.
  static func parentDirectory(of path: String) -> String? {
    var trimmed = Substring(path)
    while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
    guard let slash = trimmed.lastIndex(of: "/") else { return nil }
    var parent = trimmed[..<slash]
    while parent.hasSuffix("/") { parent = parent.dropLast() }
    return parent.isEmpty ? "/" : String(parent)
  }

  /// What a journal directory holds: its manifest, lock, index, segments (named by 20 digits),
  /// snapshots, quarantine, and the temporary files of an interrupted write (`index.tmp`,
  /// `manifest.json.tmp`, `<segment>.tmp`, `<segment>.compact.tmp`). By name: `make demo`'s
  /// `scripts/demo-dir-check` also looks inside `snapshots/` and `quarantine/` before it removes them.
  static func isJournalEntry(_ name: String) -> Bool {
    let named = [
      Layout.manifestName, Layout.lockName, Layout.indexName, SnapshotStore.folderName, Layout.quarantineName,
      Layout.manifestName + ".tmp", Layout.indexName + ".tmp",
    ]
    if named.contains(name) { return true }
    // A segment (named by 20 digits), or the temporary file of its creation or compaction.
    for suffix in ["", ".tmp", ".compact.tmp"] where name.hasSuffix(Layout.segmentSuffix + suffix) {
      let digits = name.utf8.dropLast(Layout.segmentSuffix.utf8.count + suffix.utf8.count)
      return digits.count == 20 && digits.allSatisfy { (0x30...0x39).contains($0) }
    }
    return false
  }

  /// The first entry of `directory` that a journal does not hold, in name order; nil when the
  /// directory is missing, empty or a journal's.
  static func strangerEntry(in directory: String) throws -> String? {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
      return nil  // new, or a file in the way: the journal's own error says so
    }
    let entries = try FileManager.default.contentsOfDirectory(atPath: directory)
    return entries.sorted().first { !isJournalEntry($0) }
  }

  /// One committed command as a JSON line.
  static func line(for change: CommittedChange) -> String {
    let names = change.events.map { jsonString($0.envelope.name) }.joined(separator: ",")
    let time = change.events.first.map { isoTime($0.envelope.timestamp) } ?? ""
    return #"{"seq":\#(change.sequences.upperBound),"first":\#(change.sequences.lowerBound),"#
      + #""events":\#(change.events.count),"origin":\#(jsonString(change.origin.name)),"#
      + #""command":"\#(change.commandID)","time":"\#(time)","names":[\#(names)]}"# + "\n"
  }
}
