import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

@testable import Notebook
@testable import Rewind
@testable import RewindCLI

/// The replay-level commands, run as a built binary (`notebook-rewind`: the stock tool with
/// Notebook's Workspace registered, as an app builds its own) on journals the tests write.
@Suite struct TimeTravelCommandTests {
  static let tool = "notebook-rewind"

  func rewind(_ arguments: [String], input: String? = nil) async throws -> ToolRun {
    try await ToolRun.run(Self.tool, arguments, input: input)
  }

  /// `script` (util-linux) with `arguments`: a command run in a pseudo-terminal, whose output
  /// (the terminal's) comes back as standard output. The terminal's type is set, not inherited:
  /// progress lines erase with an escape only where `TERM` names a terminal that has one.
  func atTerminal(_ arguments: [String], input: String? = nil, term: String = "xterm") async throws -> ToolRun {
    try await ToolRun.run("/usr/bin/script", arguments, input: input, environment: ["TERM": term])
  }

  @Test func replayToNAsJSONEqualsTheLiveStateAfterN() async throws {
    let journal = try await NotebookJournal.write(commands: 120, seed: 4)
    let last = journal.lastSequence
    for n in [0, 1, 2, last / 3, last / 2, last - 1, last] {
      let run = try await rewind(["replay", journal.path, "--to", String(n), "--json"])
      #expect(run.status == 0, "\(run.err)")
      let live = journal.states[Int(n)]
      let expected =
        #"{"model":"workspace","seq":\#(n),"digest":"\#(try StateDigest.of(live))","state":"#
        + "\(try CanonicalJSON.render(live))}\n"
      #expect(run.out == expected, "n = \(n)")
      #expect(run.err.isEmpty)
    }
    // The whole state is there: every collection, and each record in id order.
    let whole = try await rewind(["replay", journal.path, "--json"])
    let object = try #require(try JSONSerialization.jsonObject(with: Data(whole.out.utf8)) as? [String: Any])
    let state = try #require(object["state"] as? [String: Any])
    #expect(Set(state.keys) == ["notebooks", "notes", "readingList", "settings"])
    let notes = try #require((state["notes"] as? [String: Any])?["records"] as? [[String: Any]])
    #expect(notes.compactMap { $0["id"] as? String } == journal.states.last!.notes.all().map(\.id.description))
  }

  @Test func replaySummaryUsesASnapshotAndAgrees() async throws {
    let journal = try await NotebookJournal.write(commands: 80, seed: 5)
    let snapshot = try await rewind(["snapshot", journal.path])
    #expect(snapshot.status == 0, "\(snapshot.err)")
    #expect(snapshot.out.hasPrefix("snapshot of workspace at sequence \(journal.lastSequence), digest "))
    #expect(SnapshotStore(journal: journal.path).sequences() == [journal.lastSequence])
    let summary = try await rewind(["replay", journal.path])
    #expect(summary.status == 0)
    let live = journal.states.last!
    #expect(summary.out.contains("sequence     \(journal.lastSequence) of \(journal.lastSequence)\n"))
    #expect(summary.out.contains("time         \(isoTime(journal.timestamps.last!))\n"))
    #expect(summary.out.contains("started from the snapshot at sequence \(journal.lastSequence)"))
    #expect(summary.out.contains("digest       \(try StateDigest.of(live))"))
    #expect(summary.out.contains("  notes        \(live.notes.count)\n"))
    // A snapshot after the target is not beyond the journal's end: nothing is said of it.
    let last = journal.lastSequence
    for target in [["--to", String(last - 1)], ["--at", isoTime(journal.timestamps[Int(last) - 2])]] {
      let earlier = try await rewind(["replay", journal.path] + target)
      #expect(earlier.status == 0, "\(earlier.err)")
      #expect(earlier.err.isEmpty, "\(target): \(earlier.err)")
    }
    // From the snapshot or from the journal, the state is the same.
    let json = try await rewind(["replay", journal.path, "--json"])
    #expect(json.out.contains(try CanonicalJSON.render(live)))
    // A replay to an earlier point does not start from the later snapshot, and says nothing of it.
    let earlier = try await rewind(["replay", journal.path, "--to", String(journal.lastSequence / 2)])
    #expect(earlier.status == 0)
    #expect(earlier.err.isEmpty, "\(earlier.err)")
    // A damaged snapshot is skipped, reported on stderr, and costs nothing in correctness.
    let file = journal.directory.appending("snapshots/" + SnapshotStore.fileName(journal.lastSequence))
    try Files.write(Array("not a snapshot".utf8), to: file)
    let fallback = try await rewind(["replay", journal.path, "--json"])
    #expect(fallback.status == 0)
    #expect(fallback.out == json.out)
    #expect(fallback.err.contains("skipped: corrupt"))
    // --keep prunes to the newest K.
    _ = try await rewind(["snapshot", journal.path])
    let pruned = try await rewind(["snapshot", journal.path, "--keep", "1"])
    #expect(pruned.status == 0)
    #expect(SnapshotStore(journal: journal.path).sequences().count == 1)
  }

  @Test func replayAtATimeIsTheStateThroughTheLastRecordStampedThen() async throws {
    let journal = try await NotebookJournal.write(commands: 40, seed: 6)
    for index in [0, 7, 20, journal.timestamps.count - 1] {
      let stamp = journal.timestamps[index]
      let run = try await rewind(["replay", journal.path, "--at", isoTime(stamp), "--json"])
      #expect(run.status == 0, "\(run.err)")
      let through = journal.timestamps.lastIndex { $0 <= stamp }! + 1
      #expect(run.out.contains(#""seq":\#(through),"#))
      #expect(run.out.contains(try CanonicalJSON.render(journal.states[through])))
    }
  }

  @Test func diffListsRecordChangesLikeANaiveComparison() async throws {
    let journal = try await NotebookJournal.write(commands: 100, seed: 7)
    let (a, b) = (journal.lastSequence / 4, journal.lastSequence)
    let run = try await rewind(["diff", journal.path, String(a), String(b), "--json"])
    #expect(run.status == 0, "\(run.err)")
    let object = try #require(try JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any])
    let collections = try #require(object["collections"] as? [[String: Any]])
    let notes = try #require(collections.first { $0["name"] as? String == "notes" })
    func ids(_ key: String) -> [String] { (notes[key] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String } }
    let old = Dictionary(uniqueKeysWithValues: journal.states[Int(a)].notes.all().map { ($0.id.description, $0) })
    let new = Dictionary(uniqueKeysWithValues: journal.states[Int(b)].notes.all().map { ($0.id.description, $0) })
    #expect(ids("inserted") == new.keys.filter { old[$0] == nil }.sorted())
    #expect(ids("removed") == old.keys.filter { new[$0] == nil }.sorted())
    #expect(ids("updated") == old.keys.filter { new[$0] != nil && new[$0] != old[$0] }.sorted())
    #expect(!ids("inserted").isEmpty && !ids("updated").isEmpty)
    // The text form shows the same changes, and an empty range says so.
    let text = try await rewind(["diff", journal.path, String(a), String(b)])
    #expect(text.out.contains("notes: \(ids("inserted").count) inserted, \(ids("updated").count) updated"))
    // Each updated note by the fields that changed, never its id; --json has the whole records.
    for id in ids("updated") {
      let (before, after) = (try #require(old[id]), try #require(new[id]))
      let changed = try #require(StateInspector.changedFields(before: before, after: after))
      #expect(!changed.before.contains(#""id":"#) && !changed.after.contains(#""id":"#))
      #expect(text.out.contains("  ~ \(id)\n      before \(changed.before)\n      after  \(changed.after)\n"), "\(id)")
      #expect(run.out.contains(#""before":\#(try CanonicalJSON.render(before))"#))
    }
    let none = try await rewind(["diff", journal.path, "5", "5"])
    #expect(none.out == "no changes from 5 to 5\n")
  }

  @Test func blameListsEveryEventThatTouchedAnEntity() async throws {
    let journal = try await NotebookJournal.write(commands: 150, seed: 8)
    let ever = Set(journal.states.flatMap { $0.notes.all().map(\.id) })
    let deleted = try #require(ever.sorted().first { journal.states.last!.notes.find(id: $0) == nil })
    var expected: [(UInt64, Note?)] = []
    for n in 1..<journal.states.count
    where journal.states[n].notes.find(id: deleted) != journal.states[n - 1].notes.find(id: deleted) {
      expected.append((UInt64(n), journal.states[n].notes.find(id: deleted)))
    }
    let run = try await rewind(["blame", journal.path, deleted.description, "--json"])
    #expect(run.status == 0, "\(run.err)")
    let lines = run.out.split(separator: "\n").map(String.init)
    #expect(lines.count == expected.count)
    for (line, (sequence, note)) in zip(lines, expected) {
      #expect(line.contains(#""event":{"seq":\#(sequence),"#))
      #expect(line.hasSuffix(#","after":\#(try note.map { try CanonicalJSON.render($0) } ?? "null")}"#))
    }
    let text = try await rewind(["blame", journal.path, deleted.description])
    #expect(text.out.hasPrefix("\(deleted) in notes: \(expected.count) events\n"))
    #expect(text.out.hasSuffix("    after removed\n"))
    // An id in capitals is the same id (log --entity takes it so too), shown as the stores spell it.
    let capitals = try await rewind(["blame", journal.path, deleted.description.uppercased(), "--json"])
    #expect(capitals.status == 0, "\(capitals.err)")
    #expect(capitals.out == run.out)
    let capitalsText = try await rewind(["blame", journal.path, deleted.description.uppercased()])
    #expect(capitalsText.out == text.out)
    // A value collection by name.
    let settings = try await rewind(["blame", journal.path, "settings", "--json"])
    #expect(settings.status == 0)
    #expect(settings.out.split(separator: "\n").allSatisfy { $0.contains(#""name":"settings.changed""#) })
    // An entity that never existed.
    let unknown = try await rewind(["blame", journal.path, String(repeating: "f", count: 32)])
    #expect(unknown.status == 2)
    #expect(unknown.err.contains("no event in \(journal.path) ever touched an entity 'ffff"))
    #expect(unknown.out.isEmpty)
    // A collection chosen: the one that holds the id lists the same; another lists nothing, and
    // one the model lacks is named with the model's collections (exit 2 each).
    let notes = try await rewind(["blame", journal.path, deleted.description, "--collection", "notes", "--json"])
    #expect(notes.status == 0 && notes.out == run.out, "\(notes.err)")
    let other = try await rewind(["blame", journal.path, deleted.description, "--collection", "notebooks"])
    #expect(other.status == 2 && other.err.contains("ever touched an entity '\(deleted)' in notebooks"), "\(other.err)")
    let lacking = try await rewind(["blame", journal.path, deleted.description, "--collection", "nosuch"])
    #expect(lacking.status == 2, "\(lacking.err)")
    #expect(lacking.err.contains("the model has no collection 'nosuch'; its collections: "), "\(lacking.err)")
    #expect(lacking.err.contains("notes"), "\(lacking.err)")
  }

  /// blame and bisect show an event as replay applied it, upcast to the current schema version,
  /// and say so beside the version it was written with (which `log` shows with its stored fields).
  @Test func blameAndBisectSayWhenAnEventWasUpcast() async throws {
    let dir = TemporaryDirectory("cli-upcast")
    let note = try Self.writeUpcastJournal(dir.path)

    let json = try await rewind(["blame", dir.path, note.description, "--json"])
    #expect(json.status == 0, "\(json.err)")
    let lines = json.out.split(separator: "\n")
    #expect(lines.count == 2, "\(json.out)")
    #expect(lines.first?.contains(#""name":"note.created","version":1,"upcastTo":2,"origin":"user","#) == true)
    #expect(lines.first?.contains(#""tags":[]"#) == true, "the fields are version 2's: \(json.out)")
    #expect(lines.last?.contains(#""name":"note.retitled","version":1,"origin":"user","#) == true, "\(json.out)")
    let text = try await rewind(["blame", dir.path, note.description])
    #expect(text.out.contains(" note.created v1 origin user command \(Identifier(high: 1, low: 2)) (upcast to v2)\n"))
    #expect(text.out.contains(" note.retitled v1 origin user command \(Identifier(high: 1, low: 3))\n"), "\(text.out)")

    let bisect = try await rewind(["bisect", dir.path, "--invariant", "notes belong to notebooks", "--json"])
    #expect(bisect.status == 1, "\(bisect.err)")
    #expect(bisect.out.contains(#""firstFailure":4,"event":{"seq":4,"#), "\(bisect.out)")
    #expect(bisect.out.contains(#""version":1,"upcastTo":2,"#), "\(bisect.out)")
    let bisectText = try await rewind(["bisect", dir.path, "--invariant", "notes belong to notebooks"])
    #expect(bisectText.out.contains("(upcast to v2)\n    event "), "\(bisectText.out)")
  }

  /// A journal of four commands of one event each, two of them `note.created` written in
  /// version 1 (replay upcasts them to 2): a notebook (1), a note in it (2, upcast), the note
  /// retitled (3), and a note in a notebook that does not exist (4, upcast), which breaks
  /// "notes belong to notebooks". Returns the id of the note at 2.
  static func writeUpcastJournal(_ path: String) throws -> NoteID {
    let book = NotebookID(Identifier(high: 2, low: 1))
    let note = NoteID(Identifier(high: 3, low: 1))
    let missing = NotebookID(Identifier(high: 2, low: 9))
    let events: [any Event] = [
      NotebookCreated(id: book, title: "book"),
      NoteCreatedV1(id: note, notebook: book, title: "old", body: "b"),
      NoteRetitled(id: note, title: "new"),
      NoteCreatedV1(id: NoteID(Identifier(high: 3, low: 2)), notebook: missing, title: "stray", body: ""),
    ]
    let journal = try Journal(directory: path, options: JournalOptions(durability: .none))
    defer { journal.close() }
    for (index, event) in events.enumerated() {
      let command = Identifier(high: 1, low: UInt64(index + 1))
      try journal.appendAndWait(
        [NewRecord(timestamp: 1, payload: try EventRecord.encode(event, origin: .user, commandID: command))])
    }
    return note
  }

  /// debug shows an event as replay applied it too, and its lines (`where`, a move, `event`,
  /// `blame`) say when it was upcast, as blame's and bisect's do.
  @Test func debugSaysWhenAnEventWasUpcast() async throws {
    let dir = TemporaryDirectory("cli-upcast-debug")
    let note = try Self.writeUpcastJournal(dir.path)
    let run = try await rewind(["debug", dir.path], input: "goto 2\nwhere\nevent\nevent 3\nblame \(note)\n")
    #expect(run.status == 0, "\(run.err)")
    let created = " note.created v1 origin user command \(Identifier(high: 1, low: 2)) (upcast to v2)"
    let retitled = " note.retitled v1 origin user command \(Identifier(high: 1, low: 3))"
    let out = run.out.split(separator: "\n").map(String.init)
    #expect(out.count == 10, "\(run.out)")
    guard out.count == 10 else { return }
    #expect(out[0].hasPrefix("at 2 of 4: #2 ") && out[0].hasSuffix(created), "goto: \(out[0])")
    #expect(out[1] == out[0], "where: \(out[1])")
    #expect(out[2].hasPrefix("#2 ") && out[2].hasSuffix(created), "event: \(out[2])")
    #expect(out[3].contains(#""tags":[]"#), "the fields are version 2's: \(out[3])")
    #expect(out[4].hasPrefix("#3 ") && out[4].hasSuffix(retitled), "an event decoded as written: \(out[4])")
    #expect(out[6].hasPrefix("#2 ") && out[6].hasSuffix(created), "blame: \(out[6])")
    #expect(out[8].hasPrefix("#3 ") && out[8].hasSuffix(retitled), "blame: \(out[8])")
  }

  /// `find name` finds the records `rewind log` lists under that name, checkpoint records among
  /// them (a mark, a digest): they change no state, but they are records a user can look for.
  @Test func debugFindsCheckpointRecordsByName() async throws {
    let dir = TemporaryDirectory("cli-find-checkpoint")
    let book = NotebookID(Identifier(high: 2, low: 1))
    let fingerprint = try StateDigest.of(Workspace())
    let events: [any Event] = [
      NotebookCreated(id: book, title: "book"),
      CheckpointMark(fingerprint: fingerprint),
      NotebookRenamed(id: book, title: "renamed"),
      CheckpointDigest(mark: 2, digest: try StateDigest.of(Workspace()), fingerprint: fingerprint),
      NotebookRenamed(id: book, title: "again"),
    ]
    let journal = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    for (index, event) in events.enumerated() {
      let command = Identifier(high: 1, low: UInt64(index + 1))
      try journal.appendAndWait(
        [NewRecord(timestamp: 1, payload: try EventRecord.encode(event, origin: .user, commandID: command))])
    }
    journal.close()

    let run = try await rewind(
      ["debug", dir.path],
      input: "find name rewind.checkpoint.mark\nfind name notebook.renamed\nfind name rewind.checkpoint.digest\n"
        + "find name rewind.checkpoint.mark\n")
    let out = run.out.split(separator: "\n").map(String.init)
    #expect(out.count == 3, "\(run.out)")
    #expect(out.first == "at 2 of 5: a checkpoint record", "\(run.out)")
    #expect(out.dropFirst().first?.hasPrefix("at 3 of 5: #3 ") == true, "\(run.out)")
    #expect(out.last == "at 4 of 5: a checkpoint record", "\(run.out)")
    #expect(run.err == "error: find: no record after sequence 4 is named rewind.checkpoint.mark\n")
    #expect(run.status == 2)
  }

  /// Three commands, with events 1, 2-3 and 4-5: command 2 creates a note before its notebook
  /// (the state between its events breaks "notes belong to notebooks", the state after it does
  /// not), and command 3 creates a note in a notebook that never exists and retitles it.
  static func writeCommandsAroundABrokenInvariant(_ path: String) throws {
    let book = NotebookID(Identifier(high: 2, low: 1))
    let later = NotebookID(Identifier(high: 2, low: 2))
    let missing = NotebookID(Identifier(high: 2, low: 9))
    let stray = NoteID(Identifier(high: 3, low: 2))
    let commands: [[any Event]] = [
      [NotebookCreated(id: book, title: "book")],
      [
        NoteCreated(id: NoteID(Identifier(high: 3, low: 1)), notebook: later, title: "early", body: "", tags: []),
        NotebookCreated(id: later, title: "later"),
      ],
      [
        NoteCreated(id: stray, notebook: missing, title: "stray", body: "", tags: []),
        NoteRetitled(id: stray, title: "still stray"),
      ],
    ]
    let journal = try Journal(directory: path, options: JournalOptions(durability: .none))
    for (index, events) in commands.enumerated() {
      let command = Identifier(high: 1, low: UInt64(index + 1))
      try journal.appendAndWait(
        try events.map {
          NewRecord(timestamp: 1, payload: try EventRecord.encode($0, origin: .user, commandID: command))
        })
    }
    journal.close()
  }

  /// bisect's answer is the last event of the command that broke the invariant, here a retitle
  /// that broke nothing itself: the command's other events are named beside it, in text and
  /// JSON, where it used to show that event alone.
  @Test func bisectNamesTheFailingCommandsEvents() async throws {
    let dir = TemporaryDirectory("cli-bisect-command")
    try Self.writeCommandsAroundABrokenInvariant(dir.path)
    let invariant = "notes belong to notebooks"
    for linear in [false, true] {
      let text = try await rewind(["bisect", dir.path, "--invariant", invariant] + (linear ? ["--linear"] : []))
      #expect(text.status == 1, "\(text.err)")
      let lines = text.out.split(separator: "\n").map(String.init)
      #expect(lines.first == "invariant '\(invariant)' first fails at sequence 5", "\(text.out)")
      #expect(lines.count > 1 && lines[1].contains("note.retitled"), "\(text.out)")
      #expect(
        lines.contains(
          "  the last of its command's events 4-5 (2 in all): states are checked after whole commands, so any "
            + "of them may break it (rewind show DIR N shows each)"), "\(text.out)")
      let caveat = "  bisect assumes a broken invariant stays broken; --linear checks every command"
      #expect(lines.contains(caveat) == !linear, "\(text.out)")
      let json = try await rewind(
        ["bisect", dir.path, "--invariant", invariant, "--json"] + (linear ? ["--linear"] : []))
      #expect(json.status == 1, "\(json.err)")
      #expect(
        json.out.contains(#""firstFailure":5,"#) && json.out.hasSuffix(#","commandEvents":[4,5]}"# + "\n"),
        "\(json.out)")
    }
  }

  /// debug's `check` judges the states readers see, after whole commands (DESIGN.md, contract 3),
  /// as bisect does: inside a command it checks after the command's last event and says so,
  /// without moving (`writeCommandsAroundABrokenInvariant`'s journal).
  @Test func debugChecksAnInvariantAfterWholeCommands() async throws {
    let dir = TemporaryDirectory("cli-debug-check")
    try Self.writeCommandsAroundABrokenInvariant(dir.path)
    let invariant = "notes belong to notebooks"
    let script = [
      "goto 2", "check \(invariant)", "where", "goto 3", "check \(invariant)", "goto 4", "check \(invariant)",
      "goto 5", "check \(invariant)", "goto 0", "check \(invariant)",
    ].joined(separator: "\n")
    let run = try await rewind(["debug", dir.path], input: script + "\n")
    #expect(run.status == 0, "\(run.err)")
    let out = run.out.split(separator: "\n").map(String.init)
    let between = "readers see a command's events together, never the state between them"
    #expect(out.count == 11, "\(run.out)")
    guard out.count == 11 else { return }
    #expect(
      out[1] == "'\(invariant)' holds at sequence 3, the end of the command sequence 2 is part of: \(between) "
        + "(`goto 3` stands there)")
    #expect(out[2].hasPrefix("at 2 of 5: #2 "), "check does not move: \(out[2])")
    #expect(out[4] == "'\(invariant)' holds at sequence 3")
    #expect(
      out[6] == "'\(invariant)' fails at sequence 5, the end of the command sequence 4 is part of: \(between) "
        + "(`goto 5` stands there)")
    #expect(out[8] == "'\(invariant)' fails at sequence 5")
    #expect(out[10] == "'\(invariant)' holds at sequence 0")
  }

  @Test func bisectFindsAPlantedBreakAndExitsOne() async throws {
    let journal = try await NotebookJournal.write(commands: 200, seed: 9, plantAt: 131)
    let planted = try #require(journal.planted)
    for linear in [false, true] {
      let run = try await rewind(
        ["bisect", journal.path, "--invariant", "no notebook is titled forbidden", "--json"]
          + (linear ? ["--linear"] : []))
      #expect(run.status == 1, "\(run.err)")
      #expect(run.out.contains(#""firstFailure":\#(planted),"event":{"seq":\#(planted),"#), "\(run.out)")
    }
    let text = try await rewind(["bisect", journal.path, "--invariant", "no notebook is titled forbidden"])
    #expect(text.out.hasPrefix("invariant 'no notebook is titled forbidden' first fails at sequence \(planted)\n"))
    let holds = try await rewind(["bisect", journal.path, "--invariant", "notes belong to notebooks"])
    #expect(holds.status == 0)
    #expect(
      holds.out.hasPrefix(
        "invariant 'notes belong to notebooks' holds at the last sequence number, \(journal.lastSequence) "))
    let linear = try await rewind(["bisect", journal.path, "--invariant", "notes belong to notebooks", "--linear"])
    #expect(linear.status == 0)
    #expect(
      linear.out
        == "invariant 'notes belong to notebooks' holds after every command through sequence \(journal.lastSequence)\n")
    let unknown = try await rewind(["bisect", journal.path, "--invariant", "nope"])
    #expect(unknown.status == 2)
    #expect(unknown.err.contains("unknown invariant 'nope'"))
    #expect(unknown.err.contains("'notes belong to notebooks', 'no notebook is titled forbidden'"))
  }

  /// A writer may append while bisect or replay runs: what they report is the last sequence
  /// number their replay reached, not the journal's end as read before it. Here a record lands
  /// after the command read the journal's bounds and before it opened its session (or replayed),
  /// through the registration's `open` and `replay`, which the commands call at that point.
  @Test func bisectAndReplayNameTheLastSequenceTheyReplayed() async throws {
    let journal = try await NotebookJournal.write(commands: 40, seed: 12)
    let path = journal.path
    let append = try appendingSettingsAgain(to: journal)
    var workspace = ModelRegistration(
      Workspace.self, name: "workspace",
      invariants: [
        Invariant("notes belong to notebooks", everyRecordOf: \.notes) { note, state in
          state.notebooks.contains(id: note.notebook)
        }
      ])
    let open = workspace.open
    let replay = workspace.replay
    workspace.open = { directory, use in
      try append()
      return try open(directory, use)
    }
    workspace.replay = { directory, target, progress in
      try append()
      return try replay(directory, target, progress)
    }
    let tool = RewindTool(models: [workspace])
    func run(_ arguments: [String]) async -> (status: Int32, out: String) {
      let captured = Captured()
      let status = await tool.run(arguments, output: captured.output)
      #expect(captured.err.isEmpty, "\(arguments): \(captured.err)")
      return (status, captured.out)
    }
    var last = journal.lastSequence
    let invariant = "notes belong to notebooks"
    for linear in [false, true] {
      last += 1
      let json = await run(["bisect", path, "--invariant", invariant, "--json"] + (linear ? ["--linear"] : []))
      #expect(json.status == 0)
      #expect(json.out.contains(#""lastSequence":\#(last),"firstFailure":null"#), "\(json.out)")
    }
    last += 1
    let text = await run(["bisect", path, "--invariant", invariant, "--linear"])
    #expect(text.out == "invariant '\(invariant)' holds after every command through sequence \(last)\n", "\(text.out)")
    last += 1
    let replayed = await run(["replay", path])
    #expect(replayed.status == 0)
    #expect(replayed.out.contains("sequence     \(last) of \(last)\n"), "\(replayed.out)")
  }

  /// Appends the journal's last settings event again, as another writer would: it applies to any
  /// state, so the grown journal still replays.
  func appendingSettingsAgain(to journal: NotebookJournal) throws -> @Sendable () throws -> Void {
    let reader = try JournalReader(directory: journal.path)
    var settings: JournalRecord?
    for sequence in 1...journal.lastSequence {
      let record = try #require(try reader.record(sequence))
      if try EventRecord.header(of: record.payload).name == "settings.changed" { settings = record }
    }
    let again = try #require(settings, "the seeded journal has a settings event")
    let path = journal.path
    return {
      let writer = try Journal(directory: path, options: JournalOptions(durability: .none))
      defer { writer.close() }
      try writer.appendAndWait([NewRecord(timestamp: again.timestamp, payload: again.payload)])
    }
  }

  /// `verify` of a live journal named the end its walk of the frames read, then replayed on
  /// through records appended after it (a stress beside live writers, helper-212, Dec 7:
  /// "frames: … last sequence 35228" and "replay: … through 36773"), so its two checks judged
  /// different journals. The replay stops where the walk did.
  @Test func verifyReplaysThroughTheEndItsWalkOfTheFramesRead() async throws {
    let journal = try await NotebookJournal.write(commands: 30, seed: 13)
    let append = try appendingSettingsAgain(to: journal)
    var workspace = ModelRegistration(Workspace.self, name: "workspace")
    let verify = workspace.verify
    // A writer appends between the walk of the frames and the replay.
    workspace.verify = { directory, last, progress in
      try append()
      return try verify(directory, last, progress)
    }
    let captured = Captured()
    let status = await RewindTool(models: [workspace]).run(["verify", journal.path], output: captured.output)
    #expect(status == 0, "\(captured.out)\(captured.err)")
    let last = journal.lastSequence
    #expect(captured.out.contains(", last sequence \(last)\n"), "\(captured.out)")
    #expect(captured.out.contains("replay: workspace rebuilt through sequence \(last), "), "\(captured.out)")
    #expect(try JournalReader(directory: journal.path).lastSequence() == last + 1)
  }

  @Test func verifyReplaysAgainstCheckpointsAndNamesTheFirstDivergence() async throws {
    let journal = try await NotebookJournal.write(commands: 60, seed: 10)
    let manager = try Manager<Workspace>(directory: journal.path, options: JournalOptions(durability: .none))
    try await manager.recordCheckpoint()
    try await manager.perform(.user) { _, command in
      command.record(EditorSettingsChanged(settings: EditorSettings(fontSize: 31)))
    }
    try await manager.recordCheckpoint()
    let sound = try await rewind(["verify", journal.path])
    #expect(sound.status == 0, "\(sound.out)\(sound.err)")
    #expect(
      sound.out.contains(
        "replay: workspace rebuilt through sequence \(manager.lastSequence), 2 checkpoints and 0 snapshots verified, "
          + "caches coherent")
    )
    // A checkpoint that disagrees with the rebuilt state, as a changed apply function would leave.
    try await manager.perform(.rewind) { _, command in
      let other = try StateDigest.of(Workspace())
      command.record(Checkpoint(digest: other, fingerprint: Workspace.fingerprint))
    }
    let bad = manager.lastSequence
    try await manager.recordCheckpoint()
    manager.close()
    let diverged = try await rewind(["verify", journal.path])
    #expect(diverged.status == 1)
    let replay = try await rewind(["replay", journal.path])
    // The state is printed, as this model code rebuilds it, and the divergence is a finding.
    #expect(replay.status == 1)
    #expect(replay.out.contains("records, 4 checkpoints verified\n"))
    #expect(replay.err.contains("rewind replay: checkpoint at sequence \(bad) recorded digest"))
    let json = try await rewind(["replay", journal.path, "--json"])
    #expect(json.status == 1)
    #expect(json.out.hasPrefix(#"{"model":"workspace""#), "\(json.out)")
    // Before the bad checkpoint, nothing diverges.
    let before = try await rewind(["replay", journal.path, "--to", "\(bad - 1)"])
    #expect(before.status == 0, "\(before.err)")
    #expect(diverged.out.contains("problem: replay diverges from the recorded checkpoints first at sequence \(bad): "))
  }

  /// A snapshot whose state its replay found diverging from a checkpoint is not written: every
  /// replay starting from it would pass the checkpoint that shows the state wrong, and report
  /// nothing. Here a snapshot of an earlier state, whose own checks pass, stands where a later
  /// checkpoint sees it; `rewind snapshot` used to copy its state into a newer snapshot (exit 0),
  /// after which `replay` gave the wrong digest with no warning.
  @Test func aSnapshotOfAStateACheckpointShowsWrongIsNotWritten() async throws {
    let journal = try await NotebookJournal.write(commands: 60, seed: 15)
    let last = try JournalReader(directory: journal.path).lastSequence()
    let earlier = try Replay.rebuild(Workspace.self, directory: journal.path, through: last - 10).state
    let store = SnapshotStore(journal: journal.path)
    try store.write(earlier, at: last - 5)
    let manager = try Manager<Workspace>(directory: journal.path, options: JournalOptions(durability: .none))
    try await manager.perform(.user) { _, command in
      command.record(EditorSettingsChanged(settings: EditorSettings(fontSize: 29)))
    }
    // The digest of the journal's own state, which the start-up replay (from the snapshot) does
    // not hold: written directly, as a manager of the right state would have.
    let right = try Replay.rebuild(Workspace.self, directory: journal.path, through: manager.lastSequence).state
    try await manager.perform(.rewind) { _, command in
      command.record(Checkpoint(digest: try StateDigest.of(right), fingerprint: Workspace.fingerprint))
    }
    let checkpoint = manager.lastSequence
    manager.close()

    let refused = try await rewind(["snapshot", journal.path])
    #expect(refused.status == 1, "\(refused.out)\(refused.err)")
    #expect(refused.out.isEmpty, "\(refused.out)")
    #expect(
      refused.err.hasPrefix("rewind snapshot: checkpoint at sequence \(checkpoint) recorded digest ")
        && refused.err.contains("no snapshot was written"), "\(refused.err)")
    #expect(store.sequences() == [last - 5], "no snapshot but the planted one")
  }

  /// verify compares each snapshot with the state replay rebuilds at its sequence number: a
  /// well-formed snapshot of another state is a problem (exit 1) naming the file.
  @Test func verifyComparesEachSnapshotWithTheReplayedState() async throws {
    let journal = try await NotebookJournal.write(commands: 60, seed: 14)
    let snapshot = try await rewind(["snapshot", journal.path])
    #expect(snapshot.status == 0, "\(snapshot.err)")
    let last = try JournalReader(directory: journal.path).lastSequence()
    let sound = try await rewind(["verify", journal.path])
    #expect(sound.status == 0, "\(sound.out)\(sound.err)")
    #expect(sound.out.contains("0 checkpoints and 1 snapshot verified, caches coherent\n"), "\(sound.out)")
    let earlier = try Replay.rebuild(Workspace.self, directory: journal.path, through: last - 10).state
    try SnapshotStore(journal: journal.path).write(earlier, at: last - 5)
    let diverged = try await rewind(["verify", journal.path])
    #expect(diverged.status == 1, "\(diverged.out)\(diverged.err)")
    #expect(
      diverged.out.contains(
        "problem: snapshots/\(SnapshotStore.fileName(last - 5)) holds a state with digest "
          + "\(try StateDigest.of(earlier)) for the records through \(last - 5), but replay of the journal rebuilt"),
      "\(diverged.out)")
    #expect(diverged.out.contains("0 checkpoints and 2 snapshots verified\n"), "\(diverged.out)")
  }

  /// A mark whose digest never came is noted as harmless (verify still passes); a digest that names
  /// no mark is a problem (exit 1), with its sequence number.
  @Test func verifyNotesUnfinishedMarksAndReportsStrayDigests() async throws {
    let journal = try await NotebookJournal.write(commands: 30, seed: 12)
    let manager = try Manager<Workspace>(directory: journal.path, options: JournalOptions(durability: .none))
    try await manager.recordCheckpoint()
    try await manager.perform(.rewind) { _, command in
      command.record(CheckpointMark(fingerprint: Workspace.fingerprint))
    }
    let mark = manager.lastSequence
    try await manager.perform(.user) { _, command in
      command.record(EditorSettingsChanged(settings: EditorSettings(fontSize: 29)))
    }
    let unfinished = try await rewind(["verify", journal.path])
    #expect(unfinished.status == 0, "\(unfinished.out)\(unfinished.err)")
    #expect(
      unfinished.out.contains(
        "replay: workspace rebuilt through sequence \(manager.lastSequence), 1 checkpoint and 0 snapshots "
          + "verified, a checkpoint mark without a digest (at sequence \(mark); harmless: the writer stopped "
          + "before appending it, or is still writing), caches coherent\n"))
    // stats tells the finished checkpoint (mark and digest) from the unfinished mark.
    let stats = try await rewind(["stats", journal.path])
    #expect(stats.status == 0, "\(stats.err)")
    #expect(
      stats.out.contains(
        "checkpoints  1, the last at sequence \(mark - 2); 1 unfinished (a mark without its digest; "
          + "the last at sequence \(mark))\n"), "\(stats.out)")
    let statsJSON = try await rewind(["stats", journal.path, "--json"])
    // The live manager's preallocated zeros are told apart, and the ratio leaves them out.
    let figures = try #require(
      try JSONSerialization.jsonObject(with: Data(statsJSON.out.utf8)) as? [String: Any])
    let onDisk = try #require(figures["bytesOnDisk"] as? Int)
    let preallocated = try #require(figures["bytesPreallocated"] as? Int)
    let decoded = try #require(figures["bytesDecoded"] as? Int)
    #expect(preallocated > 0 && preallocated < onDisk)
    let ratio = String(format: "%.2f", Double(decoded) / Double(onDisk - preallocated))
    #expect(stats.out.contains("compression  ratio \(ratio) ("), "\(stats.out)")
    #expect(statsJSON.out.contains(#""checkpoints":[\#(mark - 2)],"unfinishedCheckpoints":[\#(mark)],"#))
    // A digest naming the first record, an event, not a mark; then one naming a sequence after
    // itself (whatever comes to stand there, a digest follows its mark).
    let state = manager.state
    try await manager.perform(.rewind) { _, command in
      command.record(CheckpointDigest(mark: 1, digest: try StateDigest.of(state), fingerprint: Workspace.fingerprint))
    }
    let stray = manager.lastSequence
    try await manager.perform(.rewind) { _, command in
      command.record(
        CheckpointDigest(mark: stray + 5, digest: try StateDigest.of(state), fingerprint: Workspace.fingerprint))
    }
    manager.close()
    let strayRun = try await rewind(["verify", journal.path])
    #expect(strayRun.status == 1)
    #expect(
      strayRun.out.contains(
        "problem: 2 checkpoint digest records, the first at sequence \(stray), name no checkpoint mark of this "
          + "model code before them (a digest follows its mark)"), "\(strayRun.out)")
  }

  /// The other counts of the two: several marks whose digests never came (a note, verify still
  /// passes), and one digest that names no mark (a problem, exit 1), each worded for its count.
  @Test func verifyWordsSeveralUnfinishedMarksAndOneStrayDigest() async throws {
    let journal = try await NotebookJournal.write(commands: 30, seed: 12)
    let manager = try Manager<Workspace>(directory: journal.path, options: JournalOptions(durability: .none))
    try await manager.perform(.rewind) { _, command in
      command.record(CheckpointMark(fingerprint: Workspace.fingerprint))
    }
    let firstMark = manager.lastSequence
    try await manager.perform(.user) { _, command in
      command.record(EditorSettingsChanged(settings: EditorSettings(fontSize: 29)))
    }
    try await manager.perform(.rewind) { _, command in
      command.record(CheckpointMark(fingerprint: Workspace.fingerprint))
    }
    let unfinished = try await rewind(["verify", journal.path])
    #expect(unfinished.status == 0, "\(unfinished.out)\(unfinished.err)")
    #expect(
      unfinished.out.contains(
        "replay: workspace rebuilt through sequence \(manager.lastSequence), 0 checkpoints and 0 snapshots "
          + "verified, 2 checkpoint marks without a digest (the first at sequence \(firstMark); harmless: the "
          + "writer stopped before appending them, or is still writing), caches coherent\n"), "\(unfinished.out)")
    // A digest naming the first record, an event, not a mark.
    let state = manager.state
    try await manager.perform(.rewind) { _, command in
      command.record(CheckpointDigest(mark: 1, digest: try StateDigest.of(state), fingerprint: Workspace.fingerprint))
    }
    let stray = manager.lastSequence
    manager.close()
    let strayRun = try await rewind(["verify", journal.path])
    #expect(strayRun.status == 1)
    #expect(
      strayRun.out.contains(
        "problem: a checkpoint digest record at sequence \(stray) names no checkpoint mark of this model code "
          + "before it (a digest follows its mark): the journal is not what its writer wrote\n"), "\(strayRun.out)")
  }

  @Test func aScriptedDebugSessionFromStandardInput() async throws {
    // Standard input that is not a terminal (a file here; `printf ... | rewind debug` reads a pipe
    // the same way): no prompt, one command per line.
    let journal = try await NotebookJournal.write(commands: 60, seed: 11)
    // A note that exists at 20 and changes again after 23.
    func changes(_ id: NoteID, at sequence: UInt64) -> Bool {
      journal.states[Int(sequence)].notes.find(id: id) != journal.states[Int(sequence) - 1].notes.find(id: id)
    }
    let note = try #require(
      journal.states[20].notes.all().first { note in (24...journal.lastSequence).contains { changes(note.id, at: $0) } }
    )
    let next = try #require((24...journal.lastSequence).first { changes(note.id, at: $0) })
    let id = note.id.description
    let script = """
      # a comment, then a blank line

      goto 20
      print \(id)
      mark
      step 5
      back 2
      where
      diff
      watch \(id)
      find entity \(id)
      find name note.deleted
      goto 0
      print
      check notes belong to notebooks
      goto \(isoTime(journal.timestamps[9]))
      goto 0
      query titles
      frobnicate
      goto 99999
      goto 1999-01-01T00:00:00Z
      quit
      step
      """
    let run = try await rewind(["debug", journal.path], input: script)
    #expect(run.status == 2, "a failing script line makes the exit code 2")
    let out = run.out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    #expect(!run.out.contains("rewind@"), "no prompt when standard input is not a terminal")
    #expect(out[0].hasPrefix("at 20 of \(journal.lastSequence): #20 "))
    #expect(out[1] == "notes \(try CanonicalJSON.render(note))")
    #expect(out[2] == "marked sequence 20")
    #expect(out[3].hasPrefix("at 25 of "))
    #expect(out[4].hasPrefix("at 23 of "))
    #expect(out[5] == out[4])
    let diff = try #require(run.out.range(of: "(from 20 to 23)"))
    _ = diff
    let watch = out.firstIndex { $0.hasPrefix("watch \(id) at 23: ") }
    #expect(watch != nil)
    #expect(out.contains { $0.hasPrefix("at \(next) of ") })
    #expect(run.out.contains("watch \(id) at \(next): "))
    #expect(run.out.contains("at 0 of \(journal.lastSequence): the empty state\n"))
    #expect(run.out.contains("'notes belong to notebooks' holds at sequence 0\n"))
    #expect(run.out.contains("at 10 of \(journal.lastSequence): #10 \(isoTime(journal.timestamps[9])) "))
    #expect(run.out.contains("\n[]\n"), "the titles query at the empty state")
    #expect(run.err.contains("error: frobnicate: unknown command"))
    #expect(run.err.contains("error: goto: sequence 99999 is beyond the journal's last"))
    #expect(run.err.contains("error: goto: time 1999-01-01T00:00:00Z is before the journal's first record"))
    #expect(!run.out.hasSuffix("at 1 of \(journal.lastSequence)"), "nothing runs after quit")
  }

  /// `step` at the journal's end says it is there (it used to show the same position again, as
  /// if it had moved), and one that runs past the end stops there saying so, as `back` does at 0;
  /// a count too large to add no longer wraps round to an earlier position.
  @Test func debugStepSaysWhenItIsAtTheJournalsEnd() async throws {
    let journal = try await NotebookJournal.write(commands: 8, seed: 15)
    let last = journal.lastSequence
    let run = try await rewind(
      ["debug", journal.path],
      input: "goto end\nstep\ngoto 2\nstep 99\ngoto 3\nback 5\nback\ngoto 2\nstep \(UInt64.max)\n")
    #expect(run.status == 0, "\(run.err)")
    let out = run.out.split(separator: "\n").map(String.init)
    try #require(out.count == 12, "\(run.out)")
    #expect(out[0].hasPrefix("at \(last) of \(last): #\(last) "))
    #expect(
      out[1] == "at the journal's end, sequence \(last): no event after it (`refresh` reads records appended since)")
    #expect(out[3] == out[0])
    #expect(out[4] == "stopped at the journal's end, sequence \(last): \(last - 2) of the 99 records asked")
    #expect(out[6] == "at 0 of \(last): the empty state")
    #expect(out[7] == "stopped at the start, sequence 0: 3 of the 5 records asked")
    #expect(out[8] == "at the start, sequence 0, the empty state: no event before it")
    #expect(out[10] == out[0], "\(run.out)")
    #expect(out[11] == "stopped at the journal's end, sequence \(last): \(last - 2) of the \(UInt64.max) records asked")
  }

  /// Every debug command that takes a record id takes it in capitals too (as `blame` and
  /// `log --entity` do), and shows it as the stores spell it: the same session typed in capitals
  /// prints what it prints in lowercase, and `unwatch` finds a watch in either spelling.
  @Test func debugTakesARecordIdInCapitals() async throws {
    let journal = try await NotebookJournal.write(commands: 60, seed: 12)
    // A note whose id has letters in it (the journal's ids count up from 1), and where it exists.
    let (sequence, note) = try #require(
      (1...Int(journal.lastSequence)).lazy.compactMap { sequence in
        journal.states[sequence].notes.all().first { $0.id.description.contains { "abcdef".contains($0) } }
          .map { (sequence, $0) }
      }.first)
    func script(_ id: String, unwatch: String) -> String {
      "goto \(sequence)\nprint \(id)\nwatch \(id)\nblame \(id)\ngoto 0\nfind entity \(id)\nunwatch \(unwatch)\n"
    }
    let lower = note.id.description
    let upper = lower.uppercased()
    let typedLower = try await rewind(["debug", journal.path], input: script(lower, unwatch: upper))
    #expect(typedLower.status == 0, "\(typedLower.err)")
    #expect(typedLower.out.contains("notes \(try CanonicalJSON.render(note))\n"), "\(typedLower.out)")
    #expect(typedLower.out.contains("watch \(lower) at \(sequence): notes "), "\(typedLower.out)")
    #expect(typedLower.out.hasSuffix("no longer watching \(lower)\n"), "\(typedLower.out)")
    let typedUpper = try await rewind(["debug", journal.path], input: script(upper, unwatch: lower))
    #expect(typedUpper.status == 0, "\(typedUpper.err)")
    #expect(typedUpper.out == typedLower.out)
  }

  /// An id copied where a sequence number goes is refused, not read as a number: this journal's
  /// ids count up from 1 (`IdentifierSource.sequential`), so 0000…0021, a note's or a command's
  /// id as `show` and `log` print it, also reads as 21, and `show` used to show event 21.
  @Test func anIdWhereASequenceNumberGoesIsRefused() async throws {
    let journal = try await NotebookJournal.write(commands: 40, seed: 13)
    let id = String(repeating: "0", count: 30) + "21"
    try #require(Identifier(id) != nil && journal.lastSequence >= 21)
    let path = journal.path
    let refused: [([String], String?, String)] = [
      (["show", path, id], nil, "SEQ"), (["replay", path, "--to", id], nil, "--to"),
      (["diff", path, "0", id], nil, "B"), (["log", path, "--from", id], nil, "--from"),
      (["export", path, "--jsonl", "--to", id], nil, "--to"),
      (["debug", path], "goto \(id)\n", "error: goto: goto"),
      (["debug", path], "event \(id)\n", "error: event: event"),
      (["debug", path], "diff 0 \(id)\n", "error: diff: diff"),
    ]
    for (arguments, input, what) in refused {
      let run = try await rewind(arguments, input: input)
      #expect(run.status == 2, "\(arguments) \(input ?? ""): \(run.out)")
      #expect(
        run.err.contains("\(what) '\(id)' is a record or command id (32 hex digits), not a sequence number"),
        "\(run.err)")
    }
  }

  /// At a terminal (a pseudo-terminal from util-linux `script`), the session greets, prompts and
  /// shows the progress of a seek. The terminal does not echo the input (`stty -echo`): where the
  /// echo lands among the session's output depends on when the input arrives, which made the
  /// output differ on a busy machine.
  @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
  func debugPromptsAtATerminal() async throws {
    let journal = try await NotebookJournal.write(commands: 5, seed: 14)
    let binary = try #require(ChildProcess.builtProduct(Self.tool))
    let run = try await atTerminal(
      ["-qec", "stty -echo && \(binary) debug \(journal.path)", "/dev/null"],
      input: "step 2\nquit\n")
    #expect(run.status == 0, "\(run.out)\(run.err)")
    #expect(run.out.contains("rewind debug: workspace in \(journal.path), sequences 0...\(journal.lastSequence)"))
    // The seek shows progress, cleared before the answer.
    #expect(
      run.out.contains(
        "rewind@0> \rreplaying 100% (sequence 2 of 2)\u{1B}[K\r\u{1B}[Kat 2 of \(journal.lastSequence): #2 "))
    #expect(run.out.contains("rewind@2> "))
  }

  /// Long operations show progress on stderr at a terminal (a pseudo-terminal from util-linux
  /// `script`), on one line rewritten in place and then cleared; when stderr is not a terminal
  /// they print nothing extra: the same standard output, and an empty standard error.
  @Test(
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")),
    arguments: [
      (["replay"], ["replaying"]),
      (["verify"], ["verifying", "verifying replay"]),
      (["stats"], ["checking", "counting"]),
      (["export", "--jsonl"], ["exporting"]),
      // Only the first two events match: the progress still reaches the last record read.
      (["export", "--jsonl", "--type", "notebook.created"], ["exporting"]),
      (["blame", "settings"], ["blame: replaying"]),
      (["bisect", "--invariant", "notes belong to notebooks"], ["bisect: replaying"]),
      (["bisect", "--invariant", "notes belong to notebooks", "--linear"], ["bisect: replaying"]),
      (["diff", "0", "LAST"], ["diff: replaying"]),
      (["snapshot"], ["replaying"]),
      (["show", "LAST"], ["show: replaying"]),
    ])
  func progressOnlyAtATerminal(command: [String], labels: [String]) async throws {
    let journal = try await NotebookJournal.write(commands: 30, seed: 16)
    let binary = try #require(ChildProcess.builtProduct(Self.tool))
    let last = journal.lastSequence
    let arguments =
      [command[0], journal.path] + command.dropFirst().map { $0 == "LAST" ? String(last) : $0 }
    // export streams to stdout: at a terminal it shows progress only when stdout is redirected.
    let streams = command[0] == "export"
    let scratch = TemporaryDirectory("cli-progress")
    let line = ([binary] + arguments).map { "'\($0)'" }.joined(separator: " ")
    let redirect = streams ? " > \(scratch.appending("out"))" : ""
    let terminal = try await atTerminal(["-qec", line + redirect, "/dev/null"])
    #expect(terminal.status == 0, "\(terminal.out)")
    // show replays up to the state before its event.
    let through = command[0] == "show" ? last - 1 : last
    for label in labels {
      #expect(
        terminal.out.contains("\r\(label) 100% (sequence \(through) of \(through))\u{1B}[K"),
        "\(label): \(terminal.out)")
    }
    #expect(terminal.out.contains("\r\u{1B}[K"), "the line is cleared")
    if command[0] == "snapshot" {
      // Written again, not found on disk: the same words as the terminal saw.
      try FileManager.default.removeItem(atPath: journal.directory.appending("snapshots"))
    }
    let piped = try await rewind(arguments)
    #expect(piped.err.isEmpty, "\(piped.err)")
    #expect(!piped.out.contains("\u{1B}") && !piped.out.contains("\r"))
    // Apart from the progress, the terminal saw what the pipe got (a terminal ends lines with \r\n).
    var seen = terminal.out.replacingOccurrences(of: "\r\n", with: "\n")
    while let start = seen.range(of: "\r"),
      let end = seen.range(of: "\u{1B}[K", range: start.upperBound..<seen.endIndex)
    {
      seen.removeSubrange(start.lowerBound..<end.upperBound)
    }
    let expected = streams ? String(decoding: try Files.read(scratch.appending("out")), as: UTF8.self) : seen
    #expect(piped.out == expected)
    if streams {
      #expect(seen.isEmpty, "export's output went to the file")
      // With stdout at the terminal too, export shows no progress that would garble its output.
      let both = try await atTerminal(["-qec", line, "/dev/null"])
      #expect(!both.out.contains("exporting"))
    }
  }

  /// Where the terminal cannot erase (`TERM=dumb`, as in Emacs' shell buffers, or unset), the
  /// escape would show as text: the progress line is padded with spaces over the longer line
  /// before it, and cleared with spaces, and no escape reaches the terminal (`ProgressLineTests`
  /// has a line shorter than the one before).
  @Test(
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")),
    arguments: ["dumb", ""])
  func progressAtATerminalThatCannotErase(term: String) async throws {
    let scratch = TemporaryDirectory("cli-progress-dumb")
    let journal = scratch.appending("journal")
    let binary = try #require(ChildProcess.builtProduct(Self.tool))
    // The demo's own progress (every 5,000 events) too (helper-226: it ended with the escape).
    let tool = try #require(ChildProcess.builtProduct("rewind"))
    let demo = try await atTerminal(
      ["-qec", "'\(tool)' demo '\(journal)' --events 12000 --seed 3 --durability none", "/dev/null"], term: term)
    try #require(demo.status == 0, "\(demo.out)")
    #expect(!demo.out.contains("\u{1B}"), "\(demo.out)")
    let demoLine = "demo: 10000 of ~12000 events"
    #expect(
      demo.out.contains("\r" + demoLine + "\r" + String(repeating: " ", count: demoLine.count) + "\r"),
      "\(demo.out)")
    let line = "'\(binary)' export '\(journal)' --jsonl > '\(scratch.appending("out"))'"
    let terminal = try await atTerminal(["-qec", line, "/dev/null"], term: term)
    #expect(terminal.status == 0, "\(terminal.out)")
    #expect(!terminal.out.contains("\u{1B}"), "\(terminal.out)")
    let last = try JournalReader(directory: journal).end().lastSequence
    let final = "exporting 100% (sequence \(last) of \(last))"
    // Each line starts with a carriage return and is padded to the longest before it; the last
    // is cleared by as many spaces as it has characters, then a carriage return.
    let shown = terminal.out.split(separator: "\r", omittingEmptySubsequences: true).map(String.init)
    #expect(shown.count >= 3, "\(terminal.out)")
    #expect(shown.suffix(2) == [final, String(repeating: " ", count: final.count)], "\(shown.suffix(3))")
    var widest = 0
    for text in shown.dropLast() {
      #expect(text.count >= widest, "a shorter line must cover the one before: \(shown)")
      widest = max(widest, text.count)
      #expect(text.hasPrefix("exporting "), "\(text)")
    }
    // The same with an escape-capable terminal, for contrast: the escape is there.
    let capable = try await atTerminal(["-qec", line, "/dev/null"])
    #expect(capable.out.contains("\(final)\u{1B}[K"), "\(capable.out)")
  }

  /// A command that fails after its progress line was shown clears the line first: the error
  /// starts a line of its own instead of trailing "exporting 66% (sequence N of M)". Export meets
  /// a damaged frame two thirds in; the replaying commands an event past the first progress
  /// report (every 10,000 records) whose fields do not decode.
  @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
  func anErrorAfterProgressStartsOnItsOwnLine() async throws {
    let scratch = TemporaryDirectory("cli-progress-error")
    let (damaged, undecodable) = (scratch.appending("damaged"), scratch.appending("undecodable"))
    let demo = try await ToolRun.run(
      "rewind", ["demo", damaged, "--events", "12000", "--seed", "1", "--durability", "none"])
    try #require(demo.status == 0, "\(demo.err)")
    try FileManager.default.copyItem(atPath: damaged, toPath: undecodable)
    let segment = damaged + "/00000000000000000001.lz4"
    var bytes = try Files.read(segment)
    bytes[bytes.count * 2 / 3] ^= 0x5A
    try Files.write(bytes, to: segment)
    // note.created v2 with Rewind's envelope, and fields that start with an unknown type tag.
    var payload: [UInt8] = [1, 12] + Array("note.created".utf8) + [2, 4] + Array("user".utf8)
    payload += [UInt8](repeating: 0, count: 16) + [0xFF, 0xFE]
    let writer = try Journal(directory: undecodable, options: JournalOptions(durability: .none))
    try writer.appendAndWait([NewRecord(timestamp: 1, payload: payload)])
    writer.close()

    let binary = try #require(ChildProcess.builtProduct(Self.tool))
    for (journal, command) in [
      (damaged, ["export", "--jsonl"]), (undecodable, ["blame", "settings"]),
      (undecodable, ["bisect", "--invariant", "notes belong to notebooks"]), (undecodable, ["replay"]),
      (undecodable, ["diff", "0", "12001"]), (undecodable, ["snapshot"]),
    ] {
      let arguments = [binary, command[0], journal] + command.dropFirst()
      let line = arguments.map { "'\($0)'" }.joined(separator: " ") + " > '\(scratch.appending("out"))'"
      let terminal = try await atTerminal(["-qec", line, "/dev/null"])
      #expect(terminal.status == 3, "\(command): \(terminal.out)")
      let error = try #require(terminal.out.range(of: "rewind \(command[0]): "), "\(command): \(terminal.out)")
      let before = terminal.out[..<error.lowerBound]
      #expect(before.contains("% (sequence "), "\(command): progress was shown: \(terminal.out)")
      #expect(before.hasSuffix("\r\u{1B}[K"), "\(command): \(terminal.out)")
    }
  }

  /// At a terminal, repair shows its plan and asks; only "y" moves anything.
  @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
  func repairAsksAtATerminal() async throws {
    let journal = try await NotebookJournal.write(commands: 40, seed: 17)
    let segment = try #require(Files.list(journal.path).first { $0.hasSuffix(".lz4") })
    try Files.flipMiddleByte(of: journal.directory.appending(segment), with: 0x5A)
    let binary = try #require(ChildProcess.builtProduct(Self.tool))
    let command = "'\(binary)' repair '\(journal.path)'"
    let declined = try await atTerminal(["-qec", command, "/dev/null"], input: "n\n")
    #expect(declined.status == 1, "\(declined.out)")
    #expect(declined.out.contains("will move "))
    #expect(declined.out.contains("? [y/N] "))
    #expect(declined.out.contains("nothing moved"))
    #expect(!FileManager.default.fileExists(atPath: journal.directory.appending("quarantine")))
    let accepted = try await atTerminal(["-qec", command, "/dev/null"], input: "y\n")
    #expect(accepted.status == 0, "\(accepted.out)")
    #expect(accepted.out.contains("repaired: the journal ends at sequence "))
    #expect(Files.list(journal.directory.appending("quarantine")).count == 1)
    #expect(try await rewind(["verify", journal.path]).status == 0)
  }

  /// Reading commands (and snapshot) take no lock: they run while the app holds the journal and appends.
  @Test func commandsRunWhileTheAppAppends() async throws {
    let journal = try await NotebookJournal.write(commands: 30, seed: 15)
    let manager = try NotebookManager(directory: journal.path, options: JournalOptions(durability: .none))
    defer { manager.close() }
    let before = manager.lastSequence
    let writer = Task {
      for step in 0..<200 { _ = try await manager.addReadingItem(title: "while reading \(step)") }
    }
    let everyReader = [
      ["log"], ["show", "1"], ["stats"], ["export", "--jsonl"], ["tail"], ["replay"], ["replay", "--json"],
      ["diff", "0", "1"], ["bisect", "--invariant", "notes belong to notebooks"], ["debug"], ["snapshot"],
      ["blame", "settings"], ["verify"],
    ]
    for arguments in everyReader {
      let run = try await rewind([arguments[0], journal.path] + arguments.dropFirst())
      #expect(run.status == 0, "\(arguments): \(run.err)")
    }
    try await writer.value
    let replayed = try await rewind(["replay", journal.path, "--json"])
    #expect(replayed.out.contains(#""seq":\#(manager.lastSequence),"#))
    #expect(replayed.out.contains(try CanonicalJSON.render(manager.state)))
    #expect(manager.lastSequence == before + 200)
  }

  /// A debug session sees the journal as it was when it started, until `refresh`. `goto TIME`
  /// for a time stamped on a record appended since does not land on the session's last state,
  /// which is not the state at that time: it says so, and after `refresh` it goes there.
  @Test func debugGotoATimeOfARecordAppendedSinceTheSessionStarted() async throws {
    let journal = try await NotebookJournal.write(commands: 10, seed: 16)
    let machine = try ModelRegistration(Workspace.self, name: "workspace").open(journal.path, .interactive)
    let manager = try NotebookManager(
      directory: journal.path, options: JournalOptions(durability: .none),
      clock: .stepping(from: try #require(journal.timestamps.last) + 1_000_000_000, by: 1_000_000_000))
    _ = try await manager.addReadingItem(title: "later")
    let later = manager.lastSequence
    manager.close()
    #expect(later == journal.lastSequence + 1)
    let time = isoTime(try #require(try JournalReader(directory: journal.path).record(later)).timestamp)
    let captured = Captured()
    let debug = DebugSession(
      machine, model: "workspace", directory: journal.path, output: captured.output, interactive: false)
    var lines = ["goto \(time)", "refresh", "goto \(time)"][...]
    #expect(debug.run { lines.popFirst() } == .usage)
    #expect(
      captured.err.contains(
        "time \(time) is past the last record this session has read (sequence \(journal.lastSequence)); "
          + "`refresh` reads the records appended since"), "\(captured.err)")
    #expect(!captured.out.contains("at \(journal.lastSequence) of"), "\(captured.out)")
    #expect(captured.out.hasPrefix("the journal ends at sequence \(later)\nat \(later) of \(later): #\(later) "))
  }

  /// `find name` looks through the session's last record and no further: records a writer
  /// appended since, the first of them damaged, are not read (it answers that no record is named
  /// so, not the damage).
  @Test func debugFindNameReadsNothingPastTheSessionsLastRecord() async throws {
    let journal = try await NotebookJournal.write(commands: 10, seed: 19)
    let machine = try ModelRegistration(Workspace.self, name: "workspace").open(journal.path, .interactive)
    let manager = try NotebookManager(directory: journal.path, options: JournalOptions(durability: .none))
    _ = try await manager.addReadingItem(title: "later")
    _ = try await manager.addReadingItem(title: "later still")
    manager.close()
    // The first record appended is damaged, with the second's batch after it: damage, to a reader.
    let appended = try JournalReader(directory: journal.path).records(from: journal.lastSequence + 1)
    #expect(try appended.next()?.sequence == journal.lastSequence + 1)
    let place = try #require(appended.lastBatch)
    #expect(try appended.next()?.sequence == journal.lastSequence + 2)
    try #require(appended.lastBatch != place)
    let segment = journal.path + "/" + Layout.segmentName(firstSequence: place.segment)
    var bytes = try Files.read(segment)
    bytes[Int(place.offset) + Layout.batchHeaderSize + 2] ^= 0x20
    try Files.write(bytes, to: segment)

    let captured = Captured()
    let debug = DebugSession(
      machine, model: "workspace", directory: journal.path, output: captured.output, interactive: false)
    var lines = ["find name no.such"][...]
    #expect(debug.run { lines.popFirst() } == .usage)
    #expect(captured.err == "error: find: no record after sequence 0 is named no.such\n", "\(captured.err)")
  }

  /// The record at the session's position damaged after the session moved there: `where` says
  /// it cannot be read, with the journal's error, where it called the record a checkpoint record
  /// (it read the event with `try?`, taking any error for "no event here"). Exit 3.
  @Test func debugWhereOfARecordDamagedSinceSaysTheError() async throws {
    let journal = try await NotebookJournal.write(commands: 10, seed: 20)
    let machine = try ModelRegistration(Workspace.self, name: "workspace").open(journal.path, .interactive)
    let target: UInt64 = 5
    let records = try JournalReader(directory: journal.path).records(from: target)
    #expect(try records.next()?.sequence == target)
    let place = try #require(records.lastBatch)
    let segment = journal.path + "/" + Layout.segmentName(firstSequence: place.segment)
    var bytes = try Files.read(segment)
    bytes[Int(place.offset) + Layout.batchHeaderSize + 2] ^= 0x20

    let captured = Captured()
    let debug = DebugSession(
      machine, model: "workspace", directory: journal.path, output: captured.output, interactive: false)
    var lines = ["goto \(target)", "where"][...]
    var damaged = false
    let code = debug.run {
      // Damaged between the two commands: the move read the record intact.
      if lines.count == 1 { damaged = (try? Files.write(bytes, to: segment)) != nil }
      return lines.popFirst()
    }
    #expect(damaged)
    #expect(code == .unreadable, "\(captured.out)\(captured.err)")
    let out = captured.out.split(separator: "\n").map(String.init)
    #expect(
      out.count == 1 && out[0].hasPrefix("at \(target) of \(journal.lastSequence): #\(target) "), "\(captured.out)")
    #expect(captured.err.hasPrefix("error: where: "), "\(captured.err)")
    #expect(captured.err.contains(Layout.segmentName(firstSequence: place.segment)), "\(captured.err)")
    #expect(!captured.out.contains("checkpoint record"), "\(captured.out)")
  }

  /// As for a time: a sequence number appended since the session started is past what the
  /// session has read, and `refresh` reads it; one past the journal's end says both.
  @Test func debugGotoASequenceAppendedSinceTheSessionStarted() async throws {
    let journal = try await NotebookJournal.write(commands: 10, seed: 17)
    let machine = try ModelRegistration(Workspace.self, name: "workspace").open(journal.path, .interactive)
    let manager = try NotebookManager(directory: journal.path, options: JournalOptions(durability: .none))
    _ = try await manager.addReadingItem(title: "later")
    let later = manager.lastSequence
    manager.close()
    let read = journal.lastSequence
    #expect(later == read + 1)
    let captured = Captured()
    let debug = DebugSession(
      machine, model: "workspace", directory: journal.path, output: captured.output, interactive: false)
    var lines = ["goto \(later)", "goto \(later + 1)", "refresh", "goto \(later)"][...]
    #expect(debug.run { lines.popFirst() } == .usage)
    let hint = "`refresh` reads the records appended since"
    #expect(
      captured.err.contains(
        "sequence \(later) is past the last record this session has read (sequence \(read)); \(hint)"),
      "\(captured.err)")
    #expect(
      captured.err.contains(
        "sequence \(later + 1) is beyond the journal's last, \(later) (this session has read up to sequence \(read); \(hint))"
      ),
      "\(captured.err)")
    #expect(captured.out.hasPrefix("the journal ends at sequence \(later)\nat \(later) of \(later): #\(later) "))
  }

  /// A journal that got shorter under a session (a repair moved its last frame aside between two
  /// commands), and one written again past its old end after that: `refresh` says so plainly and
  /// what to do, and the session serves no more states, which may show the records gone; `help`
  /// still answers. Exit 3.
  @Test(arguments: [0, 2]) func debugSaysWhenTheJournalGotShorterUnderIt(appendedAfterRepair: Int) async throws {
    let journal = try await NotebookJournal.write(commands: 10, seed: 18)
    let last = journal.lastSequence
    let machine = try ModelRegistration(Workspace.self, name: "workspace").open(journal.path, .interactive)
    let captured = Captured()
    let debug = DebugSession(
      machine, model: "workspace", directory: journal.path, output: captured.output, interactive: false)
    var lines = ["goto end", "refresh", "print", "step", "help"][...]
    var shortened: UInt64?
    let status = debug.run {
      if lines.count == 4 {
        // Between `goto end` and `refresh`: a bit of the last frame flipped, and repaired.
        shortened = try? { () throws -> UInt64 in
          let segment = try #require(Files.list(journal.path).filter { $0.hasSuffix(".lz4") }.sorted().last)
          var bytes = try Files.read(journal.directory.appending(segment))
          bytes[bytes.count - 6] ^= 0x20
          try Files.write(bytes, to: journal.directory.appending(segment))
          let repaired = try Journal.repair(directory: journal.path).lastSequence
          let writer = try Journal(directory: journal.path)
          defer { writer.close() }
          // Never decoded: the refresh refuses the journal first.
          for _ in 0..<appendedAfterRepair { try writer.appendAndWait([NewRecord(timestamp: 1, payload: [0])]) }
          return repaired
        }()
      }
      return lines.popFirst()
    }
    try #require(shortened == last - 1, "the repair moved the last record aside")
    #expect(status == .unreadable)
    #expect(captured.out.hasPrefix("at \(last) of \(last): #\(last) "), "\(captured.out)")
    #expect(
      captured.err.contains(
        "error: refresh: the journal \(journal.path) got shorter under this session: sequence \(last) is gone, "
          + "which this session had read (moved aside by `rewind repair`, perhaps with other records written under "
          + "its number since, or the directory replaced), so the states it holds may show what is gone and it shows no more. Quit and start `rewind debug \(journal.path)` "
          + "again to see what the journal holds now; `rewind verify \(journal.path)` reports on it\n"),
      "\(captured.err)")
    for command in ["print", "step"] {
      #expect(
        captured.err.contains(
          "error: \(command): not done: the journal got shorter under this session (see above); quit and start "
            + "`rewind debug \(journal.path)` again\n"), "\(captured.err)")
    }
    #expect(!captured.out.contains("at \(last): digest "), "print showed a state: \(captured.out)")
    #expect(captured.out.contains(DebugCommand.commands), "help still answers")
  }

  /// A Notebook journal written with limits larger than the default, holding a record (a note's
  /// body) larger than a default reader accepts: replay and debug read it, with the largest
  /// limits, to the writer's live state.
  @Test func replayAndDebugReadAJournalWrittenWithLargerLimits() async throws {
    let dir = TemporaryDirectory("cli-travel-larger")
    var options = JournalOptions(durability: .none)
    options.limits = JournalLimits(maxRecordBytes: 8 << 20, maxBatchBytes: 64 << 20)
    let manager = try NotebookManager(
      directory: dir.path, options: options, clock: .stepping(from: 1_700_000_000_000_000_000), ids: .sequential())
    let book = try await manager.createNotebook(title: "large")
    let note = try await manager.createNote(in: book, title: "large", body: String(repeating: "z", count: 5 << 20))
    try await manager.retitleNote(note, to: "after")
    let live = manager.state
    let last = manager.lastSequence
    manager.close()
    #expect(last == 3)
    // The journal needs the larger limits: a reader with the default ones refuses its note.
    #expect(throws: JournalError.self) {
      let cursor = try JournalReader(directory: dir.path).records(from: 1)
      while try cursor.next() != nil {}
    }
    let replay = try await rewind(["replay", dir.path, "--json"])
    #expect(replay.status == 0, "\(replay.err)")
    #expect(
      replay.out
        == #"{"model":"workspace","seq":\#(last),"digest":"\#(try StateDigest.of(live))","state":"#
        + "\(try CanonicalJSON.render(live))}\n")
    let debug = try await rewind(["debug", dir.path], input: "goto end\nprint\nback\nquery titles\n")
    #expect(debug.status == 0, "\(debug.err)")
    #expect(debug.out.contains("at \(last): digest \(try StateDigest.of(live))\n"), "\(debug.out.prefix(500))")
    #expect(debug.out.contains("at \(last - 1) of \(last): #\(last - 1) "), "\(debug.out.prefix(500))")
    #expect(debug.out.hasSuffix("\n[\"large\"]\n"), "the title before the last event: \(debug.out.suffix(500))")
  }

  @Test func debugHelpListsTheCommands() async throws {
    let journal = try await NotebookJournal.write(commands: 5, seed: 12)
    let run = try await rewind(["debug", journal.path], input: "help\n")
    #expect(run.status == 0)
    for command in ["step", "back", "goto", "find name", "find entity", "print", "query", "mark", "diff", "watch"] {
      #expect(run.out.contains("\n  \(command)"), "\(command)")
    }
  }

  @Test func badInputGetsClearErrorsAndTheRightExitCodes() async throws {
    let journal = try await NotebookJournal.write(commands: 10, seed: 13)
    let last = journal.lastSequence
    let cases: [([String], Int32, String)] = [
      (["replay", journal.path, "--to", String(last + 1)], 2, "beyond the journal's last sequence number \(last)"),
      (["replay", journal.path, "--to", "-3"], 2, "--to -3 is out of range: sequence numbers start at 0"),
      (["replay", journal.path, "--at", "yesterday"], 2, "--at 'yesterday' is not ISO 8601"),
      (
        ["replay", journal.path, "--at", "2262-04-11T23:47:16.9Z"], 2,
        "--at 2262-04-11T23:47:16.9Z is after every record's time"
      ),
      (["replay", journal.path, "--at", "0001-01-01"], 2, "--at 0001-01-01 is before the journal's first record"),
      (["replay", journal.path, "--at", "1999-01-01T00:00:00Z"], 2, "is before the journal's first record"),
      (["replay", journal.path, "--to", "1", "--at", isoTime(journal.timestamps[0])], 2, "not both"),
      (["replay", journal.path, "--model", "ledger"], 2, "unknown model 'ledger'; registered models: workspace"),
      (["diff", journal.path, "1"], 2, "needs the journal directory and two sequence numbers: rewind diff DIR A B"),
      (["diff", journal.path, "1", "2", "3"], 2, "unexpected argument '3'"),
      (["blame", journal.path], 2, "needs the journal directory and an entity"),
      (["show", journal.path, "1", "2"], 2, "unexpected argument '2'"),
      (["diff", journal.path, "1", "99999"], 2, "B 99999 is beyond"),
      (["bisect", journal.path], 2, "missing --invariant NAME"),
      (["replay", "/nonexistent/journal"], 3, "/nonexistent/journal"),
      (["blame", "/nonexistent/journal", "x"], 3, "/nonexistent/journal"),
      (["debug", "/nonexistent/journal"], 3, "/nonexistent/journal"),
      (["snapshot", "/nonexistent/journal"], 3, "/nonexistent/journal"),
      (["replay", journal.directory.appending("manifest.json")], 3, "manifest.json"),
      (["replay", journal.path, "--frobnicate"], 2, "unknown option --frobnicate"),
    ]
    for (arguments, status, message) in cases {
      let run = try await rewind(arguments)
      #expect(run.status == status, "\(arguments): \(run.err)")
      #expect(run.err.contains(message), "\(arguments): \(run.err)")
      #expect(run.err.hasPrefix("rewind \(arguments[0]): "), "\(arguments)")
    }
    // A directory of random bytes is not a journal.
    let garbage = TemporaryDirectory("cli-garbage")
    var random = SeededGenerator(seed: 3)
    try Files.write(
      (0..<4096).map { _ in UInt8.random(in: 0...255, using: &random) }, to: garbage.appending("manifest.json"))
    let run = try await rewind(["replay", garbage.path])
    #expect(run.status == 3)
    #expect(run.err.contains("manifest"))
    // Another app's journal (raw records): replay says which model cannot read which record;
    // verify checks its integrity and leaves replay aside.
    let raw = TemporaryDirectory("cli-raw")
    let writer = try Journal(directory: raw.path, options: JournalOptions(durability: .none))
    try writer.appendAndWait([NewRecord(timestamp: 1, payload: Array("not an event".utf8))])
    writer.close()
    let foreign = try await rewind(["replay", raw.path])
    #expect(foreign.status == 3)
    #expect(foreign.err.contains("model workspace cannot replay \(raw.path): record at sequence 1 is not an event"))
    // debug says it as replay does (it gave the replay's error alone: no model, no hint).
    let session = try await rewind(["debug", raw.path], input: "step\n")
    #expect(session.status == 3)
    #expect(
      session.err.hasPrefix(
        "error: step: model workspace cannot replay \(raw.path): record at sequence 1 is not an event"),
      "\(session.err)")
    #expect(session.err.contains("`rewind log \(raw.path) --from 1 --limit 1` shows the record"), "\(session.err)")
    let verify = try await rewind(["verify", raw.path])
    #expect(verify.status == 0, "\(verify.out)")
    #expect(
      verify.out.contains("note: replay not checked: no registered model (workspace) knows this journal's events"))
    // A tool with no registered model says how to get one.
    let errors = Captured()
    let bare = await RewindTool().run(["replay", journal.path], output: errors.output)
    #expect(bare == 2)
    #expect(errors.err.contains("no registered models"))
  }
}

/// Output captured from an in-process `RewindTool.run`.
final class Captured: @unchecked Sendable {
  // `out` and `err` are written by the tool's sinks under `lock` and read after it returned.
  private let lock = NSLock()
  private var outText = ""
  private var errText = ""

  var out: String { lock.withLock { outText } }
  var err: String { lock.withLock { errText } }

  var output: RewindTool.Output {
    RewindTool.Output(
      out: { text in self.lock.withLock { self.outText += text } },
      err: { text in self.lock.withLock { self.errText += text } })
  }
}
