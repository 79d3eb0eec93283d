import Foundation
import RewindCLI
import RewindJournal
import RewindTestSupport
import Testing

/// The journal-level audit commands (log, show, stats, export, tail) on Notebook journals written
/// by `rewind demo`, run as the built binary.
@Suite struct AuditCommandTests {
  static func rewind(_ arguments: [String]) async throws -> RewindCommandTests.Run {
    try await RewindCommandTests.rewind(arguments)
  }

  /// A seeded demo journal, and its export parsed (one object per event, in order).
  static func journal(events: Int = 1_500, seed: Int = 4) async throws -> (TemporaryDirectory, String, [[String: Any]])
  {
    let dir = TemporaryDirectory("cli-audit")
    let path = dir.appending("journal")
    let demo = try await rewind(["demo", path, "--events", "\(events)", "--seed", "\(seed)", "--durability", "none"])
    try #require(demo.status == 0, "\(demo.err)")
    let export = try await rewind(["export", path, "--jsonl"])
    try #require(export.status == 0, "\(export.err)")
    return (dir, path, try parse(export.out))
  }

  static func parse(_ text: String) throws -> [[String: Any]] {
    try text.split(separator: "\n").map { line in
      try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
    }
  }

  static func sequences(_ objects: [[String: Any]]) -> [Int] { objects.compactMap { $0["seq"] as? Int } }

  @Test func exportHasEveryEventWithItsEnvelopeAndFields() async throws {
    let (dir, path, events) = try await Self.journal()
    defer { withExtendedLifetime(dir) {} }
    #expect(Self.sequences(events) == Array(1...events.count))
    let first = try #require(events.first)
    #expect(first["name"] as? String == "notebook.created")
    #expect(first["version"] as? Int == 1)
    #expect(first["origin"] as? String == "user")
    #expect((first["time"] as? String)?.hasPrefix("2026-01-01T00:00:") == true)
    #expect((first["command"] as? String)?.count == 32)
    let payload = try #require(first["payload"] as? [String: Any])
    #expect((payload["id"] as? String)?.count == 32)
    #expect(payload["title"] is String)
    let created = try #require(events.first { $0["name"] as? String == "note.created" })
    #expect(created["version"] as? Int == 2)
    #expect((created["payload"] as? [String: Any])?["tags"] is [Any])
    // log --json is the same rendering.
    let log = try await Self.rewind(["log", path, "--json"])
    #expect(log.out == (try await Self.rewind(["export", path, "--jsonl"])).out)
  }

  /// An event whose envelope reads and whose fields do not is still that event: export, log and
  /// show name it, its origin and command, with the fields' bytes and what is wrong with them.
  @Test func anEventWhoseFieldsDoNotDecodeKeepsItsEnvelope() async throws {
    let dir = TemporaryDirectory("cli-audit-fields")
    // note.created v2 from origin user, command 0…0, fields that start with an unknown type tag.
    let payload: [UInt8] =
      [1, 12] + Array("note.created".utf8) + [2, 4] + Array("user".utf8) + [UInt8](repeating: 0, count: 16)
      + [0xFF, 0xFE]
    let writer = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    try writer.appendAndWait([NewRecord(timestamp: 1, payload: payload)])
    writer.close()

    let export = try await Self.rewind(["export", dir.path, "--jsonl"])
    #expect(export.status == 0, "\(export.err)")
    let event = try #require(try Self.parse(export.out).first)
    #expect(event["name"] as? String == "note.created", "\(export.out)")
    #expect(event["version"] as? Int == 2)
    #expect(event["origin"] as? String == "user")
    #expect(event["command"] as? String == String(repeating: "0", count: 32))
    #expect(event["payload"] as? String == "fffe")
    #expect(event["payloadEncoding"] as? String == "hex")
    #expect((event["problem"] as? String)?.hasPrefix("its fields do not decode (") == true, "\(export.out)")
    let selected = try await Self.rewind(["log", dir.path, "--type", "note.created"])
    #expect(selected.out.contains("note.created v2 user  (fields do not decode) \"fffe\""), "\(selected.out)")
    let show = try await Self.rewind(["show", dir.path, "1"])
    #expect(show.status == 0, "\(show.err)")
    #expect(show.out.contains("  name      note.created (schema version 2)"), "\(show.out)")
    #expect(show.out.contains("  note      its fields do not decode ("), "\(show.out)")
  }

  /// An event with two entries of one key: replay reads the first (FORMAT.md), and export, log and
  /// show print that one only, saying that the other is not shown, so that what they print is
  /// what replay applied. The note's second "notebook" stands right after "id", which the
  /// hand-written reader of note.created reads first.
  @Test func aRepeatedKeyShowsTheEntryReplayReads() async throws {
    let dir = TemporaryDirectory("cli-audit-repeated-key")
    func envelope(_ name: String, version: UInt8) -> [UInt8] {
      [1, UInt8(name.utf8.count)] + Array(name.utf8) + [version, 4] + Array("user".utf8)
        + [UInt8](repeating: 0, count: 16)
    }
    func identifier(_ low: UInt8) -> [UInt8] { [10] + [UInt8](repeating: 0, count: 8) + [low] + [0, 0, 0, 0, 0, 0, 0] }
    func entry(_ key: String, _ value: [UInt8]) -> [UInt8] { [UInt8(key.utf8.count + 1)] + Array(key.utf8) + value }
    func string(_ text: String) -> [UInt8] { [6, UInt8(text.utf8.count)] + Array(text.utf8) }
    let notebooks = [(0xA, "first"), (0xB, "second")].map { low, title in
      envelope("notebook.created", version: 1) + [8] + entry("id", identifier(low)) + entry("title", string(title))
        + [0]
    }
    let note =
      envelope("note.created", version: 2) + [8] + entry("notebook", identifier(0xA)) + entry("id", identifier(1))
      + entry("notebook", identifier(0xB)) + entry("title", string("t")) + entry("body", string("b"))
      + entry("tags", [7, 9]) + [0]
    let writer = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    try writer.appendAndWait((notebooks + [note]).map { NewRecord(timestamp: 1, payload: $0) })
    writer.close()

    let first = String(repeating: "0", count: 30) + "0a"
    let replay = try await Self.rewind(["replay", dir.path, "--json"])
    #expect(replay.status == 0, "\(replay.err)")
    let state = try #require(try Self.parse(replay.out).first?["state"] as? [String: Any], "\(replay.out)")
    let notes = try #require((state["notes"] as? [String: Any])?["records"] as? [[String: Any]], "\(replay.out)")
    #expect(notes.map { $0["notebook"] as? String } == [first], "\(replay.out)")

    let export = try await Self.rewind(["export", dir.path, "--jsonl"])
    #expect(export.status == 0, "\(export.err)")
    let event = try #require(try Self.parse(export.out).last)
    #expect((event["payload"] as? [String: Any])?["notebook"] as? String == first, "\(export.out)")
    #expect(!export.out.contains(String(repeating: "0", count: 30) + "0b\",\"title\":\"t\""), "\(export.out)")
    let problem =
      "the entry at byte 47 repeats the key \\\"notebook\\\" and is not shown: the first is read; bytes are counted from "
      + "its fields' first"
    #expect(export.out.contains(#""problem":"\#(problem)""#), "\(export.out)")
    #expect(event["payloadEncoding"] == nil)
    let log = try await Self.rewind(["log", dir.path, "--type", "note.created"])
    #expect(log.out.contains("note.created v2 user  (the entry at byte 47 repeats the key"), "\(log.out)")
    let show = try await Self.rewind(["show", dir.path, "3"])
    #expect(show.out.contains("  note      the entry at byte 47 repeats the key \"notebook\""), "\(show.out)")
  }

  /// Two titles whose bytes differ but are not UTF-8 render alike (U+FFFD, as replay reads
  /// them): export and log say so, so that the difference is not lost without a word.
  @Test func aStringThatIsNotUTF8IsNoted() async throws {
    let dir = TemporaryDirectory("cli-audit-not-utf8")
    let envelope: [UInt8] =
      [1, 16] + Array("notebook.created".utf8) + [1, 4] + Array("user".utf8) + [UInt8](repeating: 0, count: 16)
    let id: [UInt8] =
      [3] + Array("id".utf8) + [10] + [UInt8](repeating: 0, count: 8) + [1] + [UInt8](repeating: 0, count: 7)
    let payloads = [[0xFF], [0xFE]].map { title -> [UInt8] in
      envelope + [8] + id + [6] + Array("title".utf8) + [6, 1] + title + [0]
    }
    let writer = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    try writer.appendAndWait(payloads.map { NewRecord(timestamp: 1, payload: $0) })
    writer.close()

    let export = try await Self.rewind(["export", dir.path, "--jsonl"])
    #expect(export.status == 0, "\(export.err)")
    let events = try Self.parse(export.out)
    #expect(events.map { ($0["payload"] as? [String: Any])?["title"] as? String } == ["\u{FFFD}", "\u{FFFD}"])
    let note =
      "the string at byte 27 is not UTF-8: its ill-formed bytes are shown as U+FFFD; bytes are counted from its fields' first"
    #expect(events.map { $0["problem"] as? String } == [note, note], "\(export.out)")
    let log = try await Self.rewind(["log", dir.path])
    #expect(log.out.contains("notebook.created v1 user  (\(note)) {"), "\(log.out)")
  }

  /// An event name or origin that is not UTF-8 was shown with U+FFFD and no word (the review of
  /// the audit commands, Dec 6, entry 305's "Left"), where a field's string gets a note: both
  /// get one now, before the fields' own, also when the fields do not decode.
  @Test func aNameOrOriginThatIsNotUTF8IsNoted() async throws {
    let dir = TemporaryDirectory("cli-audit-envelope-not-utf8")
    let command = [UInt8](repeating: 0, count: 16)
    let name: [UInt8] = [16] + Array("notebook.create".utf8) + [0xFF]
    let origin: [UInt8] = [4] + Array("us".utf8) + [0xC3, 0x28]
    let id: [UInt8] =
      [3] + Array("id".utf8) + [10] + [UInt8](repeating: 0, count: 8) + [1] + [UInt8](repeating: 0, count: 7)
    let fields: [UInt8] = [8] + id + [6] + Array("title".utf8) + [6, 1] + [0xFE] + [0]
    let payloads: [[UInt8]] = [
      [1] + name + [1, 4] + Array("user".utf8) + command + fields,
      [1, 16] + Array("notebook.created".utf8) + [1] + origin + command + fields,
      [1] + name + [1] + origin + command + [0xFF],
    ]
    let writer = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    try writer.appendAndWait(payloads.map { NewRecord(timestamp: 1, payload: $0) })
    writer.close()
    let nameNote = "the event's name is not UTF-8: its ill-formed bytes are shown as U+FFFD"
    let originNote = "the event's origin is not UTF-8: its ill-formed bytes are shown as U+FFFD"
    let fieldNote =
      "the string at byte 27 is not UTF-8: its ill-formed bytes are shown as U+FFFD; bytes are counted from its fields' first"
    let export = try await Self.rewind(["export", dir.path, "--jsonl"])
    #expect(export.status == 0, "\(export.err)")
    let problems = try Self.parse(export.out).map { $0["problem"] as? String ?? "" }
    try #require(problems.count == 3, "\(export.out)")
    #expect(problems[0] == "\(nameNote); \(fieldNote)", "\(problems[0])")
    #expect(problems[1] == "\(originNote); \(fieldNote)", "\(problems[1])")
    #expect(problems[2].hasPrefix("\(nameNote); \(originNote); its fields do not decode ("), "\(problems[2])")
    let log = try await Self.rewind(["log", dir.path])
    #expect(log.out.contains("notebook.create\u{FFFD} v1 user  (\(nameNote); \(fieldNote)) {"), "\(log.out)")
  }

  /// A record that is not a Rewind event shows its bytes as text when they are UTF-8 and in hex
  /// otherwise, and says which: the bytes de ad be ef and the text "deadbeef" read apart.
  @Test func aRawPayloadSaysWhetherItIsTextOrHex() async throws {
    let dir = TemporaryDirectory("cli-audit-raw")
    let writer = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    try writer.appendAndWait([NewRecord(timestamp: 1, payload: Array("deadbeef".utf8))])
    try writer.appendAndWait([NewRecord(timestamp: 2, payload: [0xDE, 0xAD, 0xBE, 0xEF])])
    writer.close()
    let log = try await Self.rewind(["log", dir.path, "--json"])
    #expect(log.status == 0, "\(log.err)")
    let records = try Self.parse(log.out)
    #expect(records.map { $0["payload"] as? String } == ["deadbeef", "deadbeef"])
    #expect(records.map { $0["payloadEncoding"] as? String } == ["text", "hex"], "\(log.out)")
  }

  /// A range that starts inside the journal and ends past it reads to the end, as `sed -n 5,999p`
  /// does (the README and the help say so); one that starts past the end is a usage error.
  @Test func aRangeEndingPastTheJournalReadsToItsEnd() async throws {
    let (dir, path, events) = try await Self.journal(events: 200)
    defer { withExtendedLifetime(dir) {} }
    let last = try #require(Self.sequences(events).last)
    let range = ["--from", "\(last - 2)", "--to", "\(last + 1_000)"]
    let log = try await Self.rewind(["log", path, "--json"] + range)
    #expect(log.status == 0, "\(log.err)")
    #expect(Self.sequences(try Self.parse(log.out)) == Array((last - 2)...last))
    let export = try await Self.rewind(["export", path, "--jsonl"] + range)
    #expect(export.status == 0, "\(export.err)")
    #expect(export.out == log.out, "export and log --json print the same objects")
    for command in [["log", path], ["export", path, "--jsonl"]] {
      let past = try await Self.rewind(command + ["--from", "\(last + 1)", "--to", "\(last + 1_000)"])
      #expect(past.status == 2)
      #expect(past.err.contains("--from \(last + 1) is out of range: the journal ends at sequence \(last)"))
    }
  }

  /// In an empty journal, `--from 1` names a sequence past its end, as `--since` names a time
  /// after its last event: both are a selection outside the journal (exit 2), where `--from 1`
  /// used to exit 0. Without a selection, an empty journal lists nothing, fine; `tail -f` takes
  /// `--from 1` as the first event to come.
  @Test func anEmptyJournalRefusesFromAsItRefusesSince() async throws {
    let empty = TemporaryDirectory("cli-empty-from")
    try Journal(directory: empty.path, options: JournalOptions(durability: .none)).close()
    for (command, format) in [("log", []), ("export", ["--jsonl"]), ("tail", [])] {
      let arguments = [command, empty.path] + format
      let plain = try await Self.rewind(arguments)
      #expect(plain.status == 0 && plain.out.isEmpty, "\(command): \(plain.out)\(plain.err)")
      for (selection, says) in [
        (["--from", "1"], "--from 1 is out of range: the journal is empty"),
        (["--since", "2026-01-01"], "is out of range: the journal is empty"),
      ] {
        let run = try await Self.rewind(arguments + selection)
        #expect(run.status == 2, "\(command) \(selection): \(run.out)\(run.err)")
        #expect(run.err.contains(says), "\(command) \(selection): \(run.err)")
      }
      // Only an end: as `--to 5` lists nothing, so does `--until`, which a script gives as
      // 9999-12-31 to read to the end (it said "no event matches", exit 2: a review of the docs,
      // Dec 7).
      for selection in [["--to", "5"], ["--until", "9999-12-31"], ["--until", "2026-01-01"]] {
        let run = try await Self.rewind(arguments + selection)
        #expect(run.status == 0 && run.out.isEmpty && run.err.isEmpty, "\(command) \(selection): \(run.out)\(run.err)")
      }
    }
  }

  @Test func logSelectsByRangeTimeNameOriginAndEntity() async throws {
    let (dir, path, events) = try await Self.journal()
    defer { withExtendedLifetime(dir) {} }
    func log(_ options: [String]) async throws -> [[String: Any]] {
      let run = try await Self.rewind(["log", path, "--json"] + options)
      #expect(run.status == 0, "\(options): \(run.err)")
      return try Self.parse(run.out)
    }
    #expect(Self.sequences(try await log(["--from", "100", "--to", "120"])) == Array(100...120))
    #expect(Self.sequences(try await log(["--from", "7", "--limit", "5"])) == Array(7...11))

    let created = try await log(["--type", "note.created"])
    #expect(!created.isEmpty)
    #expect(Self.sequences(created) == Self.sequences(events.filter { $0["name"] as? String == "note.created" }))
    let notes = try await log(["--type", "note.*", "--origin", "sync"])
    #expect(!notes.isEmpty)
    #expect(
      Self.sequences(notes)
        == Self.sequences(
          events.filter {
            ($0["name"] as? String)?.hasPrefix("note.") == true && $0["origin"] as? String == "sync"
          }))

    let since = try #require(events[199]["time"] as? String)
    let until = try #require(events[299]["time"] as? String)
    let window = try await log(["--since", since, "--until", until])
    let expected = events.filter { event in
      let time = event["time"] as? String ?? ""
      return time >= since && time <= until
    }
    #expect(Self.sequences(window) == Self.sequences(expected))
    #expect(Self.sequences(window).contains(200) && Self.sequences(window).contains(300))

    let note = try #require((created[0]["payload"] as? [String: Any])?["id"] as? String)
    let mentions = try await log(["--entity", note])
    #expect(mentions.count >= 1)
    let mentioning = events.filter { event in
      (try? JSONSerialization.data(withJSONObject: event["payload"] ?? [:]))
        .map { String(decoding: $0, as: UTF8.self).contains(note) } ?? false
    }
    #expect(Self.sequences(mentions) == Self.sequences(mentioning))
  }

  /// export takes log's selection, so a narrowed log can be had as JSON lines: the same events,
  /// the same lines as `log --json`.
  @Test func exportSelectsTheEventsLogSelects() async throws {
    let (dir, path, events) = try await Self.journal()
    defer { withExtendedLifetime(dir) {} }
    let note = try #require(
      (events.first { $0["name"] as? String == "note.created" }?["payload"] as? [String: Any])?["id"] as? String)
    let since = try #require(events[199]["time"] as? String)
    let until = try #require(events[899]["time"] as? String)
    for options in [
      ["--type", "note.*", "--origin", "sync"],
      ["--since", since, "--until", until, "--type", "note.created"],
      ["--entity", note.uppercased()],
      ["--from", "300", "--to", "1200", "--origin", "user"],
    ] {
      let log = try await Self.rewind(["log", path, "--json"] + options)
      #expect(log.status == 0, "\(options): \(log.err)")
      let selected = Self.sequences(try Self.parse(log.out))
      #expect(!selected.isEmpty && selected.count < events.count, "\(options)")
      let export = try await Self.rewind(["export", path, "--jsonl"] + options)
      #expect(export.status == 0, "\(options): \(export.err)")
      #expect(Self.sequences(try Self.parse(export.out)) == selected, "\(options)")
      #expect(export.out == log.out, "\(options)")
    }
  }

  @Test func logForPeopleShowsOneLinePerEvent() async throws {
    let (dir, path, events) = try await Self.journal(events: 200)
    defer { withExtendedLifetime(dir) {} }
    let run = try await Self.rewind(["log", path, "--limit", "3"])
    #expect(run.status == 0)
    let lines = run.out.split(separator: "\n")
    #expect(lines.count == 3)
    #expect(lines[0].hasPrefix("1  \(events[0]["time"] as? String ?? "?")  notebook.created v1 user  {\"id\":\""))
    #expect(lines.allSatisfy { $0.count < 260 })
  }

  @Test(arguments: [
    (["--from", "999999"], "--from 999999 is out of range: the journal ends at sequence"),
    (["--since", "2031-01-01"], "is out of range: the last event"),
    (["--entity", "0123456789abcdef0123456789abcdef"], "no event in"),
    (["--entity", "note-1"], "--entity needs an identifier of 32 hexadecimal digits"),
    (["--since", "yesterday"], "--since needs an ISO 8601 time"),
    (["--until", "2026-13-01"], "--until needs an ISO 8601 time"),
    // Past the last nanosecond an Int64 holds (2262-04-11T23:47:16.854775807Z): not a trap, a
    // time after every record (an --until there reads to the end: ScriptingUserTests).
    (["--since", "2262-04-11T23:47:16.9Z"], "--since 2262-04-11T23:47:16.9Z is out of range: after every time"),
    (["--until", "0001-01-01"], "--until 0001-01-01 is out of range: before every time"),
    // Days a month does not have and zone offsets past 23:59 are refused, not rolled over.
    (["--until", "2026-02-31"], "--until needs an ISO 8601 time"),
    (["--since", "2026-01-01T00:00:00+99:99"], "--since needs an ISO 8601 time"),
    (["--from", "5", "--to", "3"], "--from 5 is after --to 3"),
    (["--from", "0"], "--from needs a whole number"),
    (["--type", "no.such.event"], "no event in"),
    (["--frobnicate"], "unknown option --frobnicate"),
  ])
  func logAndExportRejectSelectionsOutsideTheJournal(options: [String], message: String) async throws {
    let (dir, path, _) = try await Self.journal(events: 100)
    defer { withExtendedLifetime(dir) {} }
    for command in [["log", path], ["export", path, "--jsonl"]] {
      let run = try await Self.rewind(command + options)
      #expect(run.status == 2, "\(command[0]) \(options)")
      #expect(run.err.contains(message), "\(command[0]): \(run.err)")
      #expect(run.out.isEmpty)
    }
  }

  @Test func showPrintsOneEventItsCommandAndTheRecordsItTouched() async throws {
    let (dir, path, events) = try await Self.journal()
    defer { withExtendedLifetime(dir) {} }
    let index = try #require(events.firstIndex { $0["name"] as? String == "note.created" })
    let event = events[index]
    let payload = try #require(event["payload"] as? [String: Any])
    let run = try await Self.rewind(["show", path, "\(index + 1)"])
    #expect(run.status == 0, "\(run.err)")
    #expect(run.out.hasPrefix("event \(index + 1) in \(path)\n"))
    #expect(run.out.contains("  time      \(event["time"] as? String ?? "?")\n"))
    #expect(run.out.contains("  name      note.created (schema version 2)\n"))
    #expect(run.out.contains("  origin    \(event["origin"] as? String ?? "?")\n"))
    // The stock rewind registers Notebook's model, so it applies the event to find what it touched.
    #expect(run.out.contains("  touched   applied with model workspace to the state after sequence \(index):\n"))
    #expect(run.out.contains("            notes/\(payload["id"] as? String ?? "?") inserted\n"))
    #expect(run.out.contains("\"title\": \(try jsonText(payload["title"]))"))

    // An event of a command with several: the command's range.
    let command = try #require(
      events.indices.first { $0 > 0 && events[$0]["command"] as? String == events[$0 - 1]["command"] as? String })
    let id = try #require(events[command]["command"] as? String)
    let range = events.indices.filter { events[$0]["command"] as? String == id }
    let json = try await Self.rewind(["show", path, "\(command + 1)", "--json"])
    let object = try #require(try Self.parse(json.out).first)
    #expect(object["commandEvents"] as? [Int] == [range.first! + 1, range.last! + 1])
    #expect(object["seq"] as? Int == command + 1)
    let touched = try #require(object["touched"] as? [String: Any])
    #expect(touched["from"] as? String == "model")
    #expect((touched["records"] as? [[String: Any]])?.isEmpty == false)
  }

  func jsonText(_ value: Any?) throws -> String {
    String(decoding: try JSONSerialization.data(withJSONObject: [value ?? NSNull()]), as: UTF8.self)
      .dropFirst().dropLast().replacingOccurrences(of: "\\/", with: "/")
  }

  @Test(arguments: [
    (["0"], "the sequence number must be a whole number from 1"),
    (["abc"], "the sequence number must be a whole number from 1"),
    (["999999"], "sequence 999999 is out of range: the journal holds sequences 1-"),
    ([], "needs the journal directory and a sequence number"),
  ])
  func showRejectsBadSequenceNumbers(arguments: [String], message: String) async throws {
    let (dir, path, _) = try await Self.journal(events: 50)
    defer { withExtendedLifetime(dir) {} }
    let run = try await Self.rewind(["show", path] + arguments)
    #expect(run.status == 2)
    #expect(run.err.contains(message), "\(run.err)")
  }

  @Test func statsCountsEventsByNameAndOrigin() async throws {
    let (dir, path, events) = try await Self.journal()
    defer { withExtendedLifetime(dir) {} }
    let run = try await Self.rewind(["stats", path])
    #expect(run.status == 0, "\(run.err)")
    #expect(run.out.contains("events       \(events.count) (sequences 1-\(events.count)), recorded by "))
    let created = events.filter { $0["name"] as? String == "note.created" }.count
    let sync = events.filter { $0["origin"] as? String == "sync" }.count
    let lines = run.out.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
    #expect(lines.contains { $0.first == "note.created" && $0.dropFirst().first.flatMap { Int($0) } == created })
    #expect(lines.contains { $0.first == "sync" && $0.dropFirst().first.flatMap { Int($0) } == sync })
    let first = events.first?["time"] as? String ?? "?"
    let last = events.last?["time"] as? String ?? "?"
    #expect(run.out.contains("time span    \(first) to \(last) ("))
    #expect(run.out.contains("compression  ratio "))
    #expect(run.out.contains("snapshots    none"))
    #expect(run.out.contains("checkpoints  none"))

    let json = try Self.parse(try await Self.rewind(["stats", path, "--json"]).out)
    let object = try #require(json.first)
    #expect(object["events"] as? Int == events.count)
    // Every record is an event here: the text's mean per frame is records over frames.
    let frames = try #require(object["frames"] as? Int)
    #expect(object["records"] as? Int == events.count)
    #expect(
      run.out.contains(String(format: "%.1f records per frame", Double(events.count) / Double(frames))), "\(run.out)")
    #expect((object["byName"] as? [String: Int])?["note.created"] == created)
    #expect((object["byOrigin"] as? [String: Int])?["sync"] == sync)
    #expect(object["first"] as? String == first)
    #expect(object["sound"] as? Bool == true)
    #expect(object["partial"] as? [String] == [], "a sound journal's counts are whole")
  }

  /// tail takes --full and --lines as log and head do; its help names them.
  @Test func tailHelpNamesEveryOptionItTakes() async throws {
    let help = try await Self.rewind(["tail", "--help"])
    for option in ["-n N", "--lines N", "-f", "--follow", "--json", "--full"] {
      #expect(help.out.contains(option), "\(option): \(help.out)")
    }
  }

  @Test func tailShowsTheLastEventsAndFollowsNewOnes() async throws {
    let (dir, path, events) = try await Self.journal(events: 300)
    defer { withExtendedLifetime(dir) {} }
    let tail = try await Self.rewind(["tail", path, "-n", "3", "--json"])
    #expect(Self.sequences(try Self.parse(tail.out)) == Array((events.count - 2)...events.count))

    let executable = try #require(ChildProcess.builtProduct("rewind"))
    // Killed on any early exit too: ChildProcess's deinit sends SIGKILL.
    let follower = try ChildProcess(executable: executable, arguments: ["tail", path, "-f", "-n", "1", "--json"])
    #expect(try await follower.waitForLine { $0.contains("\"seq\":\(events.count),") })
    // Another writer appends while tail follows.
    let more = try await Self.rewind(["demo", path, "--events", "40", "--durability", "none"])
    #expect(more.status == 0, "\(more.err)")
    let last = try #require(
      try Self.parse(try await Self.rewind(["export", path, "--jsonl"]).out).last?["seq"] as? Int)
    #expect(last >= events.count + 40)
    #expect(try await follower.waitForLine { $0.contains("\"seq\":\(last),") })
    try await follower.kill()
    let followed = try Self.parse(follower.lines.joined(separator: "\n"))
    #expect(Self.sequences(followed) == Array(events.count...last))
  }

  /// tail with log's selection options shows the last N events that match: the end of what log
  /// shows for the same selection, however far back the matches lie.
  @Test func tailWithASelectionShowsTheLastMatchingEvents() async throws {
    let (dir, path, events) = try await Self.journal()
    defer { withExtendedLifetime(dir) {} }
    // Counted here from the export, not by the code under test.
    let sync = Self.sequences(events.filter { $0["origin"] as? String == "sync" })
    // A rare name: the last few lie far apart, over hundreds of events.
    let rare = Self.sequences(events.filter { $0["name"] as? String == "settings.changed" })
    try #require(sync.count > 20 && rare.count > 3)
    for count in [1, 3, 20, 10_000, Int.max] {
      let bySync = try await Self.rewind(["tail", path, "-n", "\(count)", "--origin", "sync", "--json"])
      #expect(Self.sequences(try Self.parse(bySync.out)) == Array(sync.suffix(count)), "\(count): \(bySync.err)")
      let byName = try await Self.rewind(["tail", path, "--lines", "\(count)", "--type", "settings.changed", "--json"])
      #expect(Self.sequences(try Self.parse(byName.out)) == Array(rare.suffix(count)), "\(count): \(byName.err)")
    }
    let entity = try #require((events.first?["payload"] as? [String: Any])?["id"] as? String)
    let middle = try #require(events[events.count / 2]["time"] as? String)
    for selection in [
      ["--entity", entity], ["--type", "note.*", "--from", "200", "--to", "900"], ["--since", middle],
      ["--until", middle, "--origin", "user"], ["--from", "1400"],
    ] {
      let log = try await Self.rewind(["log", path, "--json"] + selection)
      let tail = try await Self.rewind(["tail", path, "-n", "7", "--json"] + selection)
      #expect(tail.status == 0, "\(selection): \(tail.err)")
      let shown = log.out.split(separator: "\n")
      #expect(shown.count > 7, "\(selection)")
      #expect(tail.out.split(separator: "\n") == Array(shown.suffix(7)), "\(selection)")
    }
  }

  /// A selection tail cannot serve is a usage error that says why, before anything is shown.
  @Test func tailRefusesASelectionItCannotShow() async throws {
    let (dir, path, events) = try await Self.journal(events: 100)
    defer { withExtendedLifetime(dir) {} }
    for (arguments, message) in [
      (["-f", "--to", "50"], "--to ends the selection, and -f shows the events after the journal's end"),
      // The spelling typed (it named -f whatever was typed: the review of the arguments, Dec 6).
      (["--follow", "--until", "2026-01-01"], "--until ends the selection, and --follow shows"),
      (["--entity", String(repeating: "0", count: 32)], "no event in \(path) matches: mentioning entity 000"),
      (["--from", "\(events.count + 1)"], "--from \(events.count + 1) is out of range: the journal ends at"),
      (
        ["-f", "--from", "\(events.count + 2)"],
        "--from \(events.count + 2) is out of range: the journal ends at sequence \(events.count); "
          + "-f --from \(events.count + 1) follows from the next event to be written"
      ),
      (["--type", "x", "--origin"], "--origin needs a value"),
      // Quoted as typed: a comma inside a value reads as part of it, not of the message.
      (["--type", "note.*, x", "--origin", "user "], "matches: named 'note.*, x', from origin 'user '"),
    ] {
      let run = try await Self.rewind(["tail", path] + arguments)
      #expect(run.status == 2 && run.out.isEmpty, "\(arguments): \(run.out)")
      #expect(run.err.contains(message), "\(arguments): \(run.err)")
    }
  }

  /// tail -f with a selection shows the last matching events, then only the new ones that match.
  @Test func tailFollowsOnlyTheNewEventsThatMatch() async throws {
    let (dir, path, events) = try await Self.journal(events: 300)
    defer { withExtendedLifetime(dir) {} }
    let before = Self.sequences(events.filter { $0["name"] as? String == "note.created" })
    let executable = try #require(ChildProcess.builtProduct("rewind"))
    let follower = try ChildProcess(
      executable: executable, arguments: ["tail", path, "-f", "-n", "2", "--type", "note.created", "--json"])
    let lastBefore = try #require(before.last)
    #expect(try await follower.waitForLine { $0.contains("\"seq\":\(lastBefore),") })
    let more = try await Self.rewind(["demo", path, "--events", "40", "--durability", "none"])
    #expect(more.status == 0, "\(more.err)")
    let added = try Self.parse(try await Self.rewind(["export", path, "--jsonl"]).out).dropFirst(events.count)
    let created = Self.sequences(added.filter { $0["name"] as? String == "note.created" })
    // The new events hold some that match and some that do not.
    try #require(!created.isEmpty && created.count < added.count)
    #expect(try await follower.waitForLine { $0.contains("\"seq\":\(created.last!),") })
    try await follower.kill()
    let followed = try Self.parse(follower.lines.joined(separator: "\n"))
    #expect(Self.sequences(followed) == before.suffix(2) + created)
    #expect(followed.allSatisfy { $0["name"] as? String == "note.created" })
  }

  /// tail -f --since a time after the last event waits for it and shows the events at or after
  /// it as they come; without -f such a --since is still refused.
  @Test func tailFollowsFromATimeAfterTheLastEvent() async throws {
    let (dir, path, events) = try await Self.journal(events: 50)
    defer { withExtendedLifetime(dir) {} }
    let reader = try JournalReader(directory: path)
    let last = try #require(try reader.record(UInt64(events.count)))
    let since = last.timestamp + 1_000_000_000
    let iso = isoTime(since)
    let refused = try await Self.rewind(["tail", path, "--since", iso])
    #expect(refused.status == 2 && refused.err.contains("is out of range: the last event"), "\(refused.err)")
    let executable = try #require(ChildProcess.builtProduct("rewind"))
    let follower = try ChildProcess(executable: executable, arguments: ["tail", path, "-f", "--since", iso, "--json"])
    // Most likely following by now; were it not, its first read shows the same events.
    try await Task.sleep(for: .milliseconds(300))
    // One record before the time (though after the last event), one at it, one after it.
    let writer = try Journal(directory: path, options: JournalOptions(durability: .none))
    try writer.appendAndWait(
      [since - 1, since, since + 1].map { NewRecord(timestamp: $0, payload: last.payload) })
    writer.close()
    let lastAppended = events.count + 3
    #expect(try await follower.waitForLine { $0.contains("\"seq\":\(lastAppended),") })
    try await follower.kill()
    #expect(Self.sequences(try Self.parse(follower.lines.joined(separator: "\n"))) == [lastAppended - 1, lastAppended])
    // An empty journal too: its first event at the time is shown.
    let empty = TemporaryDirectory("cli-tail-empty")
    try Journal(directory: empty.path, options: JournalOptions(durability: .none)).close()
    let waiting = try ChildProcess(
      executable: executable, arguments: ["tail", empty.path, "-f", "--since", iso, "--json"])
    try await Task.sleep(for: .milliseconds(300))
    let first = try Journal(directory: empty.path, options: JournalOptions(durability: .none))
    try first.appendAndWait([NewRecord(timestamp: since, payload: last.payload)])
    first.close()
    #expect(try await waiting.waitForLine { $0.contains("\"seq\":1,") })
    try await waiting.kill()
  }

  /// tail -f --from the last sequence number plus 1 shows no event of the journal, only those
  /// appended after it started, from the first of them on.
  @Test func tailFollowsFromTheNextSequenceNumber() async throws {
    let (dir, path, events) = try await Self.journal(events: 50)
    defer { withExtendedLifetime(dir) {} }
    let next = events.count + 1
    let executable = try #require(ChildProcess.builtProduct("rewind"))
    let follower = try ChildProcess(
      executable: executable, arguments: ["tail", path, "-f", "--from", "\(next)", "--json"])
    // Most likely following by now; were it not, its first read shows the same events.
    try await Task.sleep(for: .milliseconds(300))
    let last = try #require(try JournalReader(directory: path).record(UInt64(events.count)))
    let writer = try Journal(directory: path, options: JournalOptions(durability: .none))
    try writer.appendAndWait(
      Array(repeating: NewRecord(timestamp: last.timestamp + 1, payload: last.payload), count: 3))
    writer.close()
    #expect(try await follower.waitForLine { $0.contains("\"seq\":\(next + 2),") })
    try await follower.kill()
    #expect(Self.sequences(try Self.parse(follower.lines.joined(separator: "\n"))) == [next, next + 1, next + 2])
  }

  /// Timestamps need not increase (a clock set back): a time after the last record's but at or
  /// before an earlier record's is inside the journal for `log --since` and `replay --at`; a
  /// time after every record's is still refused; `stats` counts the step back and gives the
  /// extremes.
  @Test func aClockSetBackLeavesLaterTimesInRange() async throws {
    let (dir, path, events) = try await Self.journal(events: 50)
    defer { withExtendedLifetime(dir) {} }
    let last = try #require(try JournalReader(directory: path).record(UInt64(events.count)))
    let first = try #require(try JournalReader(directory: path).record(1)).timestamp
    let ahead = last.timestamp + 10_000_000_000
    // The clock ran ten seconds ahead for one record, then was set back.
    let writer = try Journal(directory: path, options: JournalOptions(durability: .none))
    try writer.appendAndWait([NewRecord(timestamp: ahead, payload: last.payload)])
    try writer.appendAndWait([NewRecord(timestamp: last.timestamp + 1, payload: last.payload)])
    writer.close()
    let between = isoTime(ahead - 5_000_000_000)
    let log = try await Self.rewind(["log", path, "--since", between, "--json"])
    #expect(log.status == 0, "\(log.err)")
    #expect(Self.sequences(try Self.parse(log.out)) == [events.count + 1])
    // Through the record before the first one stamped after the time: the original last.
    let replay = try await Self.rewind(["replay", path, "--at", between, "--json"])
    #expect(replay.status == 0, "\(replay.err)")
    let state = try JSONSerialization.jsonObject(with: Data(replay.out.utf8)) as? [String: Any]
    #expect(state?["seq"] as? Int == events.count, "\(replay.out.prefix(200))")
    // At the latest record's own time, which is not the last's: every record, through the end.
    let atLatest = try await Self.rewind(["replay", path, "--at", isoTime(ahead), "--json"])
    #expect(atLatest.status == 0, "\(atLatest.err)")
    let whole = try JSONSerialization.jsonObject(with: Data(atLatest.out.utf8)) as? [String: Any]
    #expect(whole?["seq"] as? Int == events.count + 2, "\(atLatest.out.prefix(200))")
    let beyond = isoTime(ahead + 1_000_000_000)
    let refusedLog = try await Self.rewind(["log", path, "--since", beyond])
    #expect(
      refusedLog.status == 2 && refusedLog.err.contains("no event is stamped at or after it"), "\(refusedLog.err)")
    // stats says the clock went back once, and gives the extremes beside the first and last.
    let stats = try await Self.rewind(["stats", path])
    #expect(
      stats.out.contains(
        "1 record is stamped before the one preceding it (a clock set back): stamps from \(isoTime(first)) to "
          + "\(isoTime(ahead))\n"), "\(stats.out)")
    let statsJSON = try #require(
      try JSONSerialization.jsonObject(with: Data(try await Self.rewind(["stats", path, "--json"]).out.utf8))
        as? [String: Any])
    #expect(statsJSON["stampedBeforePrevious"] as? Int == 1)
    #expect(statsJSON["earliest"] as? String == isoTime(first) && statsJSON["latest"] as? String == isoTime(ahead))
    #expect(statsJSON["last"] as? String == isoTime(last.timestamp + 1))
    let refusedReplay = try await Self.rewind(["replay", path, "--at", beyond])
    #expect(
      refusedReplay.status == 2
        && refusedReplay.err.contains(
          "is after every record's time (the last record is stamped \(isoTime(last.timestamp + 1)))"),
      "\(refusedReplay.err)")
    let before = try await Self.rewind(["replay", path, "--at", isoTime(first - 1)])
    #expect(
      before.status == 2 && before.err.contains("is before the journal's first record, stamped \(isoTime(first))"),
      "\(before.err)")
  }

  /// A journal whose last record a clock set back stamped before its first: `stats`' time span
  /// says so, where it used to say "(0 s)" beside a range running backwards.
  @Test func aLastRecordStampedBeforeTheFirstIsSaidSo() async throws {
    let (dir, path, _) = try await Self.journal(events: 5)
    defer { withExtendedLifetime(dir) {} }
    let first = try #require(try JournalReader(directory: path).record(1))
    let writer = try Journal(directory: path, options: JournalOptions(durability: .none))
    try writer.appendAndWait([NewRecord(timestamp: first.timestamp - 90_000_000_000, payload: first.payload)])
    writer.close()
    let stats = try await Self.rewind(["stats", path])
    #expect(stats.status == 0, "\(stats.err)")
    #expect(
      stats.out.contains(
        "time span    \(isoTime(first.timestamp)) to \(isoTime(first.timestamp - 90_000_000_000)) "
          + "(the last record is stamped 1 min 30 s before the first)\n"), "\(stats.out)")
  }

  /// Stamps are any `Int64`: two at its extremes lie 2^64 − 1 ns apart, a distance `Int64` cannot
  /// hold. `stats` used to trap on it (arithmetic overflow, exit 132) in either order, though
  /// `verify` called the journal sound.
  @Test(arguments: [(Int64.min, Int64.max), (Int64.max, Int64.min)])
  func stampsAtTheExtremesOfInt64HaveASpan(first: Int64, last: Int64) async throws {
    let dir = TemporaryDirectory("cli-audit-extreme-stamps")
    let path = dir.appending("journal")
    let writer = try Journal(directory: path, options: JournalOptions(durability: .none))
    try writer.appendAndWait([NewRecord(timestamp: first, payload: Array("a".utf8))])
    try writer.appendAndWait([NewRecord(timestamp: last, payload: Array("b".utf8))])
    writer.close()
    let stats = try await Self.rewind(["stats", path])
    #expect(stats.status == 0, "\(stats.err)")
    // 18,446,744,073 whole seconds.
    let length = "213503 d 23 h 34 min 33 s"
    let span = first < last ? length : "the last record is stamped \(length) before the first"
    #expect(
      stats.out.contains("time span    \(isoTime(first)) to \(isoTime(last)) (\(span))\n"), "\(stats.out)")
  }

  /// `rewind tail -f J | head -1` on an idle journal: once the reader has its line and closes the
  /// pipe, tail ends as a write to the closed pipe would (status 141), with no event to come.
  @Test func tailFollowEndsWhenItsReaderLeaves() async throws {
    let (dir, path, _) = try await Self.journal(events: 20)
    defer { withExtendedLifetime(dir) {} }
    let executable = try #require(ChildProcess.builtProduct("rewind"))
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = ["tail", path, "-f", "-n", "1"]
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    // A line that never comes ends in a failure, not a hang: the child is killed, the read ends.
    let watchdog = ChildWatchdog(process)
    try out.fileHandleForWriting.close()
    // Its one line first, read on a thread of its own: then it waits, and the reader leaves.
    let reading = out.fileHandleForReading.fileDescriptor
    let line = try await onOwnThread {
      var received: [UInt8] = []
      var byte: UInt8 = 0
      while received.last != 0x0A, read(reading, &byte, 1) == 1 { received.append(byte) }
      return String(decoding: received, as: UTF8.self)
    }
    #expect(line.hasPrefix("20 "), "\(line)")
    try out.fileHandleForReading.close()
    // Nothing is written to the journal: only the reader's leaving can end it. Polled with
    // `Task.sleep`, so no thread of the cooperative pool waits; the deadline only stops a hang.
    let deadline = Date().addingTimeInterval(30)
    while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
    let ended = !process.isRunning
    if !ended {
      process.terminate()
      process.waitUntilExit()
    }
    try watchdog.end(waitingFor: "the first line of tail -f")
    #expect(ended, "tail -f was still waiting 30 s after its reader left")
    #expect(ended && process.terminationReason == .exit && process.terminationStatus == 128 + SIGPIPE)
  }

  /// Ctrl-C ends `tail -f` by the signal, the lines shown intact. It used to exit 0 (a handler
  /// that called `_exit(0)`): a shell running a script takes an exit for a command that handled
  /// the interrupt and runs the script on, so a Ctrl-C did not stop a loop of `tail -f`, and a
  /// caller could not tell an interrupt from an end.
  @Test func tailFollowEndsByTheInterrupt() async throws {
    let (dir, path, events) = try await Self.journal(events: 100)
    defer { withExtendedLifetime(dir) {} }
    let executable = try #require(ChildProcess.builtProduct("rewind"))
    // The child runs and is read on a thread of its own: no thread of the cooperative pool waits.
    let (received, reason, status) = try await onOwnThread {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: executable)
      process.arguments = ["tail", path, "-f", "-n", "2", "--json"]
      let out = Pipe()
      process.standardOutput = out
      try process.run()
      let watchdog = ChildWatchdog(process)
      // The first lines arrive before the interrupt, so it lands while following. (A child that
      // ended early ends the loop: at the end of the output, the read is empty.)
      var received = Data()
      while received.filter({ $0 == 0x0A }).count < 2 {
        let data = PipeReads.some(out.fileHandleForReading)
        if data.isEmpty { break }
        received.append(data)
      }
      process.interrupt()
      received.append(PipeReads.toEnd(out.fileHandleForReading))
      process.waitUntilExit()
      try watchdog.end(waitingFor: "tail -f to end on its interrupt")
      return (received, process.terminationReason, process.terminationStatus)
    }
    #expect(reason == .uncaughtSignal && status == SIGINT, "\(reason) \(status)")
    let help = try await Self.rewind(["tail", "--help"]).out.split(whereSeparator: \.isWhitespace).joined(
      separator: " ")
    #expect(help.contains("Ctrl-C (or SIGTERM, SIGHUP) ends it by the signal"), "\(help)")
    #expect(
      Self.sequences(try Self.parse(String(decoding: received, as: UTF8.self))) == [events.count - 1, events.count])
  }

  /// A SIGINT ignored when the tool started (a shell ignores it for a job in the background) stays
  /// ignored: `tail -f` goes on following. Its handler used to replace the ignoring, so a Ctrl-C
  /// meant for the foreground ended a `rewind tail -f J > log &` of a script.
  @Test func tailFollowKeepsAnIgnoredInterruptIgnored() async throws {
    let (dir, path, events) = try await Self.journal(events: 100)
    defer { withExtendedLifetime(dir) {} }
    let executable = try #require(ChildProcess.builtProduct("rewind"))
    let script = #"trap '' INT; exec "$0" "$@""#
    let follower = try ChildProcess(
      executable: "/bin/sh", arguments: ["-c", script, executable, "tail", path, "-f", "-n", "1", "--json"])
    #expect(try await follower.waitForLine { $0.contains("\"seq\":\(events.count),") })
    kill(follower.processIdentifier, SIGINT)
    let more = try await Self.rewind(["demo", path, "--events", "5", "--durability", "none"])
    #expect(more.status == 0, "\(more.err)")
    let last = try #require(
      try Self.parse(try await Self.rewind(["export", path, "--jsonl"]).out).last?["seq"] as? Int)
    #expect(try await follower.waitForLine { $0.contains("\"seq\":\(last),") }, "\(follower.lines)")
    #expect(follower.isRunning, "tail -f ended on an ignored SIGINT")
    try await follower.kill()
  }
}
