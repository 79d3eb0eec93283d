import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

/// `rewind demo`, the Notebook workload, run as the built binary: determinism across durability
/// policies, the prefix property, and the `--json` acknowledgement lines.
@Suite struct DemoCommandTests {
  static func rewind(_ arguments: [String]) async throws -> RewindCommandTests.Run {
    try await RewindCommandTests.rewind(arguments)
  }

  /// A seeded demo journal and its export.
  static func demo(events: Int, seed: Int, durability: String, json: Bool = false) async throws -> (
    TemporaryDirectory, RewindCommandTests.Run, [Substring]
  ) {
    let dir = TemporaryDirectory("cli-demo")
    let journal = dir.appending("journal")
    let run = try await rewind(
      ["demo", journal, "--events", "\(events)", "--seed", "\(seed)", "--durability", durability]
        + (json ? ["--json"] : []))
    #expect(run.status == 0, "\(run.err)")
    let export = try await rewind(["export", journal, "--jsonl"])
    #expect(export.status == 0, "\(export.err)")
    return (dir, run, export.out.split(separator: "\n"))
  }

  @Test func aSeedWritesTheSameEventsWhateverTheDurability() async throws {
    let (_, always, reference) = try await Self.demo(events: 3_000, seed: 5, durability: "always")
    #expect(reference.count >= 3_000 && reference.count < 3_100, "\(reference.count) events")
    #expect(always.out.contains("events        \(reference.count), recorded by "), "\(always.out)")
    for durability in ["batched", "none"] {
      let (_, _, lines) = try await Self.demo(events: 3_000, seed: 5, durability: durability)
      #expect(lines.count == reference.count, "\(durability)")
      let firstDifference = lines.indices.first { $0 < reference.count && lines[$0] != reference[$0] }
      #expect(firstDifference == nil, "\(durability) differs at line \(firstDifference.map { $0 + 1 } ?? 0)")
    }
    // Another seed, another history.
    let (_, _, other) = try await Self.demo(events: 300, seed: 6, durability: "none")
    #expect(other.first != reference.first)
  }

  @Test func aShorterRunIsAPrefixOfALongerOne() async throws {
    let (_, _, long) = try await Self.demo(events: 2_500, seed: 11, durability: "none")
    let (_, _, short) = try await Self.demo(events: 900, seed: 11, durability: "batched")
    #expect(short.count >= 900 && short.count < long.count)
    #expect(Array(long.prefix(short.count)) == short)
  }

  @Test func jsonLinesAcknowledgeEveryCommandInOrder() async throws {
    let (_, run, exported) = try await Self.demo(events: 1_500, seed: 3, durability: "batched", json: true)
    let lines = run.out.split(separator: "\n")
    #expect(lines.count > 100)
    var events: [Int: [String: Any]] = [:]
    for line in exported {
      let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
      events[try #require(object["seq"] as? Int)] = object
    }
    var previous = 0
    var origins = Set<String>()
    for line in lines {
      let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
      let seq = try #require(object["seq"] as? Int)
      let first = try #require(object["first"] as? Int)
      let names = try #require(object["names"] as? [String])
      let origin = try #require(object["origin"] as? String)
      origins.insert(origin)
      #expect(first == previous + 1, "commands are contiguous and in order")
      #expect(object["events"] as? Int == seq - first + 1)
      #expect(names.count == seq - first + 1)
      // The journal holds exactly these events, from this command and origin.
      for (offset, sequence) in (first...seq).enumerated() {
        let event = try #require(events[sequence])
        #expect(event["name"] as? String == names[offset])
        #expect(event["command"] as? String == object["command"] as? String)
        #expect(event["origin"] as? String == origin)
        #expect(event["time"] as? String == object["time"] as? String)
      }
      previous = seq
    }
    #expect(previous == exported.count, "the last line names the journal's last event")
    #expect(origins == ["user", "sync", "automation"])
  }

  /// `replay --to N --json` against the live state the demo had after sequence N. The demo runs as
  /// the binary; the same seeded workload then runs in process through its own manager, stopped
  /// at N (a command boundary the demo's --json lines name), and its live state, rendered as
  /// replay renders a state, must equal the replayed one byte for byte.
  @Test func replayToNEqualsTheDemosLiveStateAfterN() async throws {
    let (dir, run, _) = try await Self.demo(events: 1_200, seed: 8, durability: "none", json: true)
    let journal = dir.appending("journal")
    let commands = try run.out.split(separator: "\n").map { line in
      try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
    }
    let seqs = try commands.map { try #require($0["seq"] as? Int) }
    // The first command, several mid-history ones (one of them a command of several events, as
    // the sync job's are), and the last.
    let multi = try #require(commands.first { ($0["events"] as? Int ?? 0) > 1 }?["seq"] as? Int)
    let points = Set([seqs[0], seqs[seqs.count / 3], multi, seqs[seqs.count / 2], seqs[seqs.count * 4 / 5], seqs.last!])
    for n in points.sorted() {
      let scratch = TemporaryDirectory("cli-demo-live")
      let workload = NotebookWorkload(seed: 8)
      let manager = try NotebookManager(
        directory: scratch.path, options: JournalOptions(durability: .none), clock: workload.clock,
        ids: workload.ids)
      _ = try await workload.run(manager, events: n)
      let live = manager.state
      #expect(manager.lastSequence == UInt64(n), "the workload stops at the command boundary \(n)")
      manager.close()
      let expected =
        #"{"model":"workspace","seq":\#(n),"digest":"\#(try StateDigest.of(live))","state":"#
        + "\(try CanonicalJSON.render(live))}\n"
      let replayed = try await Self.rewind(["replay", journal, "--to", "\(n)", "--json"])
      #expect(replayed.status == 0, "\(replayed.err)")
      #expect(replayed.out == expected, "replay --to \(n) differs from the live state after \(n)")
      // One record earlier is another state: the comparison would catch an off-by-one.
      let before = try await Self.rewind(["replay", journal, "--to", "\(n - 1)", "--json"])
      #expect(before.status == 0)
      #expect(before.out != expected, "\(n)")
    }
  }

  @Test func theSummarySaysWhatWasWritten() async throws {
    let (dir, run, exported) = try await Self.demo(events: 1_000, seed: 2, durability: "none")
    #expect(run.out.contains("notebook demo: \(dir.appending("journal")) (seed 2, durability none)"))
    #expect(run.out.contains("events        \(exported.count), recorded by "))
    // Events per origin, as stats counts them; then the commands, labelled so.
    let stats = try await Self.rewind(["stats", dir.appending("journal"), "--json"])
    let object = try #require(try JSONSerialization.jsonObject(with: Data(stats.out.utf8)) as? [String: Any])
    let byOrigin = try #require(object["byOrigin"] as? [String: Int])
    let events = byOrigin.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    #expect(run.out.contains("  by origin     \(events) events (as rewind stats counts them)\n"), "\(run.out)")
    #expect(run.out.contains(" commands that recorded events\n"), "\(run.out)")
    #expect(run.out.contains("integrity     sound"))
    // The journal line counts what the frames hold, records (a checkpoint is one, not an event),
    // in the figures and words of stats' segments line.
    let records = try #require(object["events"] as? Int)
    let frames = try #require(object["frames"] as? Int)
    let segments = try #require(object["segments"] as? Int)
    func counted(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
    let line = [counted(records, "record"), counted(frames, "frame"), counted(segments, "segment")]
    #expect(run.out.contains("  journal       \(line.joined(separator: ", "))\n"), "\(run.out)")
    let statsText = try await Self.rewind(["stats", dir.appending("journal")])
    #expect(statsText.out.contains("segments     \(segments), \(frames) frames ("), "\(statsText.out)")
    let names = Set(
      try exported.map { line in
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])["name"] as? String
      })
    for name in ["notebook.created", "note.created", "note.bodyEdited", "note.tagged", "reading.itemAdded"] {
      #expect(names.contains(name), "\(name)")
    }
  }

  /// The demo counts the commands it issued, `stats` those the journal shows (a command that
  /// finds nothing to change records no event): each output says which it counts, and the
  /// commands that recorded events are the same number in the demo's summary, its --json lines,
  /// and stats' text and JSON.
  @Test func theDemoAndStatsSayWhichCommandsTheyCount() async throws {
    let (dir, run, exported) = try await Self.demo(events: 1_000, seed: 2, durability: "none")
    // Counted here: the runs of one command id among the exported events.
    var recording = 0
    var previous: String?
    for line in exported {
      let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
      let command = try #require(object["command"] as? String)
      if command != previous { recording += 1 }
      previous = command
    }
    // The commands issued, counted by the same seeded workload run in process.
    let scratch = TemporaryDirectory("cli-demo-issued")
    let workload = NotebookWorkload(seed: 2)
    let manager = try NotebookManager(
      directory: scratch.path, options: JournalOptions(durability: .none), clock: workload.clock, ids: workload.ids)
    let issued = try await workload.run(manager, events: 1_000).commands
    manager.close()
    try #require(issued > recording, "some commands found nothing to record")
    #expect(
      run.out.contains(
        "  events        \(exported.count), recorded by \(recording) commands (as rewind stats counts them)\n"),
      "\(run.out)")
    #expect(
      run.out.contains("  commands      \(issued) issued, \(issued - recording) of them with nothing to record; "),
      "\(run.out)")
    #expect(run.out.contains(" commands issued/s in "), "\(run.out)")
    let journal = dir.appending("journal")
    let stats = try await Self.rewind(["stats", journal])
    #expect(
      stats.out.contains(
        "events       \(exported.count) (sequences 1-\(exported.count)), recorded by \(recording) commands\n"),
      "\(stats.out)")
    let object = try #require(
      try JSONSerialization.jsonObject(with: Data(try await Self.rewind(["stats", journal, "--json"]).out.utf8))
        as? [String: Any])
    #expect(object["commandsWithEvents"] as? Int == recording, "\(object)")
    #expect(object["commands"] == nil, "the count says which commands it counts")
    // --json writes one line per command that recorded events: as many.
    let (_, lines, _) = try await Self.demo(events: 1_000, seed: 2, durability: "none", json: true)
    #expect(lines.out.split(separator: "\n").count == recording)
  }

  /// One event is counted in the singular in every line of the summary (it read "user 1 events").
  @Test func oneEventIsCountedInTheSingular() async throws {
    let (dir, run, _) = try await Self.demo(events: 1, seed: 1, durability: "none")
    let journal = dir.appending("journal")
    #expect(run.out.contains("  events        1, recorded by 1 command (as rewind stats counts them)\n"), "\(run.out)")
    #expect(run.out.contains("  by origin     user 1 event (as rewind stats counts them)\n"), "\(run.out)")
    #expect(run.out.contains("                user 1 command that recorded events\n"), "\(run.out)")
    #expect(run.out.contains("  journal       1 record, 1 frame, 1 segment\n"), "\(run.out)")
    let replay = try await Self.rewind(["replay", journal])
    #expect(replay.out.contains("applied      1 record, 0 checkpoints verified\n"), "\(replay.out)")
  }

  /// --events 0 issues no command: DIR is an empty journal, verified, and the summary says so.
  /// The summary printed an empty origin list before "events", a throughput of nothing, a
  /// compression ratio of 0.00 and "1 segments".
  @Test func zeroEventsLeavesAnEmptyJournal() async throws {
    let dir = TemporaryDirectory("cli-demo-zero")
    let journal = dir.appending("journal")
    let run = try await Self.rewind(["demo", journal, "--events", "0", "--seed", "1", "--durability", "none"])
    #expect(run.status == 0, "\(run.err)")
    #expect(run.out.contains("  events        0, recorded by 0 commands (as rewind stats counts them)\n"), "\(run.out)")
    #expect(run.out.contains("  commands      none issued\n"), "\(run.out)")
    #expect(run.out.contains("  by origin     no events (as rewind stats counts them)\n"), "\(run.out)")
    #expect(run.out.contains("                no commands that recorded events\n"), "\(run.out)")
    #expect(run.out.contains("  throughput    - (no command issued)\n"), "\(run.out)")
    #expect(run.out.contains("  journal       0 records, 0 frames, 1 segment\n"), "\(run.out)")
    #expect(run.out.contains(" decoded (ratio -)\n"), "\(run.out)")
    #expect(run.out.contains("  integrity     sound\n"), "\(run.out)")
    let verify = try await Self.rewind(["verify", journal])
    #expect(verify.status == 0, "\(verify.out)\(verify.err)")
    #expect(verify.out.contains("frames: sound, 0 records in 0 frames, 1 segment, last sequence 0\n"), "\(verify.out)")
    let stats = try await Self.rewind(["stats", journal])
    #expect(stats.out.contains("compression  ratio - ("), "\(stats.out)")
    let export = try await Self.rewind(["export", journal, "--jsonl"])
    #expect(export.status == 0 && export.out.isEmpty, "\(export.out)\(export.err)")
    // Empty, it still takes a seeded run.
    let again = try await Self.rewind(["demo", journal, "--events", "5", "--seed", "1", "--durability", "none"])
    #expect(again.status == 0, "\(again.err)")
  }

  /// DIR's missing parent directories are made, as mkdir -p would; where a file stands in the
  /// way, the journal's error names it.
  @Test func theDemoMakesMissingParentDirectories() async throws {
    let dir = TemporaryDirectory("cli-demo-parents")
    let journal = dir.appending("a/b/journal")
    let run = try await Self.rewind(["demo", journal, "--events", "5", "--seed", "1", "--durability", "none"])
    #expect(run.status == 0, "\(run.err)")
    #expect(try await Self.rewind(["verify", journal]).status == 0)
    try Files.write(Array("x".utf8), to: dir.appending("file"))
    let blocked = try await Self.rewind([
      "demo", dir.appending("file/journal"), "--events", "5", "--durability", "none",
    ])
    #expect(blocked.status == 3, "\(blocked.out)\(blocked.err)")
    #expect(blocked.err.contains(dir.appending("file/journal")), "\(blocked.err)")
  }

  /// Without DIR the demo writes to ./rewind-demo, the directory the README names.
  @Test func withoutADirectoryItWritesToRewindDemo() async throws {
    let dir = TemporaryDirectory("cli-demo-default")
    let demo = try await ToolRun.run(
      "rewind", ["demo", "--events", "60", "--seed", "1", "--durability", "none"], in: dir.path)
    let text = demo.out
    #expect(demo.status == 0)
    #expect(text.hasPrefix("notebook demo: rewind-demo (seed 1, durability none)\n"), "\(text)")
    #expect(Files.list(dir.path) == ["rewind-demo"])
    let verify = try await Self.rewind(["verify", dir.appending("rewind-demo")])
    #expect(verify.status == 0)
    let root = #filePath.components(separatedBy: "/Tests/")[0]
    let readme = try String(contentsOfFile: root + "/README.md", encoding: .utf8)
    #expect(readme.contains("`rewind demo` without DIR writes to `./rewind-demo`"))
  }

  @Test func aSeededRunRefusesAJournalThatHoldsEvents() async throws {
    let (dir, _, _) = try await Self.demo(events: 50, seed: 1, durability: "none")
    let again = try await Self.rewind(["demo", dir.appending("journal"), "--events", "50", "--seed", "1"])
    #expect(again.status == 2)
    #expect(again.err.contains("already holds"), "\(again.err)")
    #expect(
      try await Self.rewind(["export", dir.appending("journal"), "--jsonl"]).out.split(separator: "\n").count >= 50)
    // Unseeded runs append.
    let unseeded = try await Self.rewind(["demo", dir.appending("journal"), "--events", "20", "--durability", "none"])
    #expect(unseeded.status == 0, "\(unseeded.err)")
    #expect(unseeded.out.contains("unseeded"))
  }

  /// The commands the demo's refusals suggest name DIR as one shell word (closing-65: "rm -r
  /// my notes" would remove two other directories, pasted).
  @Test func theSuggestedCommandsQuoteTheDirectory() async throws {
    let dir = TemporaryDirectory("cli-demo-quoted")
    let journal = dir.appending("my notes")
    let first = try await Self.rewind(["demo", journal, "--events", "50", "--seed", "1", "--durability", "none"])
    #expect(first.status == 0, "\(first.err)")
    let again = try await Self.rewind(["demo", journal, "--events", "50", "--seed", "1"])
    #expect(again.status == 2)
    #expect(again.err.contains("Remove it (rm -r '\(journal)') or name a new directory."), "\(again.err)")
  }

  /// A seeded run given a journal whose end is damaged refuses it before opening it for writing:
  /// opening moved the damaged tail aside, then the refusal came, and `verify` found the journal
  /// sound, the loss no longer reported. A file as DIR is refused as one.
  @Test func aSeededRunLeavesADamagedJournalAsItIs() async throws {
    let (dir, _, _) = try await Self.demo(events: 3000, seed: 1, durability: "none")
    let path = dir.appending("journal")
    let segment = path + "/00000000000000000001.lz4"
    let size = try #require(try FileManager.default.attributesOfItem(atPath: segment)[.size] as? Int)
    // Cut well before the index's last entry: committed records are gone, the index says so.
    try #require(truncate(segment, off_t(size / 3)) == 0)
    let damaged = try await Self.rewind(["verify", path])
    #expect(damaged.status == 1, "\(damaged.out)\(damaged.err)")
    let listed = Files.list(path)

    let again = try await Self.rewind(["demo", path, "--events", "50", "--seed", "1"])
    #expect(again.status == 2)
    #expect(again.err.contains("whose end is damaged"), "\(again.err)")
    #expect(!again.err.contains("opening moved"), "\(again.err)")
    #expect(Files.list(path) == listed, "nothing moved aside")
    let still = try await Self.rewind(["verify", path])
    #expect(still.status == 1 && still.out == damaged.out, "\(still.out)\(still.err)")

    try Files.write([1, 2, 3], to: dir.appending("file"))
    let file = try await Self.rewind(["demo", dir.appending("file"), "--events", "5", "--seed", "1"])
    #expect(file.status == 2)
    #expect(file.err.contains("is a file, not a directory"), "\(file.err)")
  }

  @Test(arguments: [
    (["--durability", "sometimes"], "--durability must be always, batched or none"),
    (["--events", "-1"], "--events needs a whole number in 0...1000000000, not '-1'"),
    (["--seed", "-1"], "--seed needs a whole number"),
    (["--records", "5"], "unknown option --records"),
  ])
  func badOptionsAreUsageErrors(arguments: [String], message: String) async throws {
    let dir = TemporaryDirectory("cli-demo-bad")
    let run = try await Self.rewind(["demo", dir.appending("journal")] + arguments)
    #expect(run.status == 2)
    #expect(run.err.contains(message), "\(run.err)")
    #expect(!FileManager.default.fileExists(atPath: dir.appending("journal")), "nothing is written")
  }
}
