import Foundation
import Notebook
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind
@testable import RewindCLI

/// `rewind show`'s touched records, run as the built binary: applied through the registered model
/// and checked against a naive comparison of the live states before and after each event; and,
/// for a journal no registered model reads, inferred from the payload's identifiers, saying so.
@Suite struct ShowCommandTests {
  func rewind(_ arguments: [String]) async throws -> ToolRun { try await RewindCommandTests.rewind(arguments) }

  /// Record by record, per store, what differs from `old` to `new`, without ChangeKeys: each as
  /// the `touched.records` entry `rewind show --json` must print for it, in key order.
  static func changes(from old: Workspace, to new: Workspace) throws -> [String] {
    var found: [String] = []
    func entry(_ store: String, _ id: String, _ before: (any Encodable)?, _ after: (any Encodable)?) throws -> String {
      let change = before == nil ? "inserted" : after == nil ? "removed" : "updated"
      let key = id.isEmpty ? store : "\(store)/\(id)"
      return #"{"key":"\#(key)","store":"\#(store)","id":"\#(id)","#
        + #""change":"\#(change)","#
        + #""before":\#(try before.map { try CanonicalJSON.render($0) } ?? "null"),"#
        + #""after":\#(try after.map { try CanonicalJSON.render($0) } ?? "null")}"#
    }
    func compare<R: StoreRecord & Encodable>(_ store: String, _ a: Store<R>, _ b: Store<R>) throws {
      for id in Set(a.all().map(\.id)).union(b.all().map(\.id)).sorted(by: { $0.description < $1.description }) {
        let (before, after) = (a.find(id: id), b.find(id: id))
        if before != after { found.append(try entry(store, id.description, before, after)) }
      }
    }
    try compare("notebooks", old.notebooks, new.notebooks)
    try compare("notes", old.notes, new.notes)
    try compare("readingList", old.readingList, new.readingList)
    if old.settings.value != new.settings.value {
      found.append(try entry("settings", "", old.settings.value, new.settings.value))
    }
    return found
  }

  @Test func everyEventsTouchedRecordsAreWhatApplyingItChanged() async throws {
    let journal = try await NotebookJournal.write(commands: 70, seed: 31)
    var kinds = Set<String>()
    for n in 1...journal.lastSequence {
      let run = try await rewind(["show", journal.path, String(n), "--json"])
      #expect(run.status == 0, "\(n): \(run.err)")
      let object = try #require(try JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any])
      let touched = try #require(object["touched"] as? [String: Any])
      #expect(touched["from"] as? String == "model")
      #expect(touched["model"] as? String == "workspace")
      let records = try #require(touched["records"] as? [[String: Any]])
      let changed = records.filter { $0["change"] as? String != "unchanged" }
      kinds.formUnion(changed.compactMap { $0["change"] as? String })
      let expected = try Self.changes(from: journal.states[Int(n) - 1], to: journal.states[Int(n)])
      #expect(!expected.isEmpty, "every event here changes a record")
      #expect(changed.count == expected.count, "sequence \(n): \(run.out)")
      for entry in expected { #expect(run.out.contains(entry), "sequence \(n): \(entry)\n\(run.out)") }
      // The keys name every touched record.
      let keys = try #require(touched["keys"] as? [String])
      for record in changed {
        let (store, id) = (record["store"] as? String ?? "", record["id"] as? String ?? "")
        #expect(keys.contains(id.isEmpty ? store : "\(store)/\(id)"), "\(n)")
      }
      // The text names every key as "keys" does: each record's on a line with its change, the
      // groups' on the groups line.
      let text = try await rewind(["show", journal.path, String(n)])
      let section = try #require(text.out.range(of: "  touched   ").map { text.out[$0.lowerBound...] })
      for record in records {
        let key = try #require(record["key"] as? String)
        #expect(keys.contains(key), "\(n): \(key)")
        #expect(section.contains("\n            \(key) \(record["change"] as? String ?? "")\n"), "\(n): \(text.out)")
      }
      let groups = keys.filter { $0.contains("#") }
      if !groups.isEmpty {
        #expect(section.contains("  groups    " + groups.joined(separator: ", ") + " (grouping-cache keys)\n"))
      }
      #expect(records.count + groups.count == keys.count, "\(n): \(run.out)")
    }
    #expect(kinds == ["inserted", "updated", "removed"], "the journal exercises every kind of change")
  }

  @Test func theTextFormShowsEachRecordBeforeAndAfter() async throws {
    let journal = try await NotebookJournal.write(commands: 40, seed: 32)
    // A note updated by its event: present before and after, different.
    let updated = try #require(
      (2...journal.lastSequence).first { n in
        let old = journal.states[Int(n) - 1].notes
        return journal.states[Int(n)].notes.all().contains { note in old.find(id: note.id).map { $0 != note } ?? false }
      })
    let note = try #require(
      journal.states[Int(updated)].notes.all().first { journal.states[Int(updated) - 1].notes.find(id: $0.id) != $0 })
    let before = try #require(journal.states[Int(updated) - 1].notes.find(id: note.id))
    let run = try await rewind(["show", journal.path, String(updated)])
    #expect(run.status == 0, "\(run.err)")
    // Of an updated record, the fields that changed (never its id).
    let changed = try #require(StateInspector.changedFields(before: before, after: note))
    #expect(!changed.before.contains(#""id":"#) && !changed.after.contains(#""id":"#))
    #expect(
      run.out.contains(
        """
          touched   applied with model workspace to the state after sequence \(updated - 1):
                    notes/\(note.id) updated
                      before \(changed.before)
                      after  \(changed.after)

        """), "\(run.out)")
    // --json gives the whole records.
    let json = try await rewind(["show", journal.path, String(updated), "--json"])
    #expect(
      json.out.contains(#""before":\#(try CanonicalJSON.render(before)),"after":\#(try CanonicalJSON.render(note))"#))
    // The first event creates a notebook.
    let first = try await rewind(["show", journal.path, "1"])
    let notebook = try #require(journal.states[1].notebooks.all().first)
    #expect(
      first.out.hasSuffix(
        """
          touched   applied with model workspace to the state after sequence 0:
                    notebooks/\(notebook.id) inserted
                      after  \(try CanonicalJSON.render(notebook))

        """), "\(first.out)")
  }

  /// A field whose value only looks like an identifier (a title of 32 hex digits, a checksum in a
  /// body) is no touched record when a registered model reads the event: the model, applying it,
  /// says what it touched. Only without one are the records inferred from the fields, where such
  /// a value is listed too, and the output says they are inferred.
  @Test func aFieldThatOnlyLooksLikeAnIdentifierIsNoTouchedRecordOfTheModel() async throws {
    let dir = TemporaryDirectory("cli-show-lookalike")
    let (title, checksum) = ("0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210")
    let manager = try NotebookManager(
      directory: dir.path, options: JournalOptions(durability: .none), clock: .stepping(from: 1, by: 1),
      ids: .sequential())
    let book = try await manager.createNotebook(title: "inbox")
    let note = try await manager.createNote(in: book, title: "plain", body: checksum)
    try await manager.retitleNote(note, to: title)
    #expect(manager.lastSequence == 3)
    manager.close()
    for (sequence, change) in [(2, "inserted"), (3, "updated")] {
      let run = try await rewind(["show", dir.path, "\(sequence)", "--json"])
      #expect(run.status == 0, "\(run.err)")
      let object = try #require(try JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any])
      let touched = try #require(object["touched"] as? [String: Any])
      #expect(touched["from"] as? String == "model", "\(run.out)")
      let records = try #require(touched["records"] as? [[String: Any]])
      #expect(!records.contains { [title, checksum].contains($0["id"] as? String) }, "\(run.out)")
      let changed = records.filter { $0["change"] as? String != "unchanged" }
      #expect(changed.count == 1, "\(run.out)")
      #expect(changed.first?["id"] as? String == note.description, "\(run.out)")
      #expect(changed.first?["change"] as? String == change, "\(run.out)")
      let text = try await rewind(["show", dir.path, "\(sequence)"])
      let section = try #require(text.out.range(of: "  touched   ").map { text.out[$0.lowerBound...] })
      #expect(section.contains("notes/\(note) \(change)\n"), "\(text.out)")
      #expect(!section.contains(title + " ") && !section.contains(checksum + " "), "\(text.out)")
    }
    // Without the model there is nothing better than the fields: every value of 32 hex digits
    // counts, the lookalike too, and the output says the list is inferred.
    let captured = Captured()
    #expect(await RewindTool().run(["show", dir.path, "3"], output: captured.output) == 0)
    #expect(
      captured.out.hasSuffix(
        """
          touched   inferred from the identifiers in its fields, not applied (this rewind has no registered model; an app's own rewind registers its models)
                    \(note) (field id)
                    \(title) (field title)

        """), "\(captured.out)")
  }

  @Test func aCheckpointTouchesNothing() async throws {
    let journal = try await NotebookJournal.write(commands: 5, seed: 33)
    let manager = try Manager<Workspace>(directory: journal.path, options: JournalOptions(durability: .none))
    try await manager.recordCheckpoint()
    let sequence = manager.lastSequence
    manager.close()
    // The digest at `sequence`, its mark just before it.
    for shown in [sequence - 1, sequence] {
      let run = try await rewind(["show", journal.path, String(shown)])
      #expect(run.status == 0, "\(run.err)")
      #expect(
        run.out.hasSuffix(
          "  touched   nothing: checkpoint records (a checkpoint, a mark or a digest) change no record\n"), "\(run.out)"
      )
    }
    let json = try await rewind(["show", journal.path, String(sequence), "--json"])
    #expect(json.out.hasSuffix(#","touched":{"from":"checkpoint","records":[]}}"# + "\n"), "\(json.out)")
  }

  @Test func aJournalNoRegisteredModelReadsIsInferredFromItsFieldsAndSaysSo() async throws {
    let (dir, counter) = try await VerifyDecodingTests.tallies()

    let run = try await rewind(["show", dir.path, "2"])
    #expect(run.status == 0, "\(run.err)")
    #expect(
      run.out.hasSuffix(
        """
          touched   inferred from the identifiers in its fields, not applied (no registered model (workspace) reads tally.counted v1)
                    \(counter) (field tally)

        """), "\(run.out)")
    let json = try await rewind(["show", dir.path, "1", "--json"])
    #expect(json.status == 0, "\(json.err)")
    #expect(
      json.out.hasSuffix(
        #","touched":{"from":"payload","why":"no registered model (workspace) reads tally.opened v1","#
          + #""records":[{"field":"id","id":"\#(counter)"}]}}"# + "\n"), "\(json.out)")
    // Naming the model that does not read it says the same, and an unknown one is a usage error.
    let named = try await rewind(["show", dir.path, "2", "--model", "workspace"])
    #expect(named.status == 0)
    #expect(named.out.contains("not applied (model workspace does not read tally.counted v1)"))
    let unknown = try await rewind(["show", dir.path, "2", "--model", "ledger"])
    #expect(unknown.status == 2)
    #expect(unknown.err.contains("unknown model 'ledger'; registered models: workspace"))
    // A record that is not a Rewind event at all.
    let raw = TemporaryDirectory("cli-show-raw")
    let writer = try Journal(directory: raw.path, options: JournalOptions(durability: .none))
    try writer.appendAndWait([NewRecord(timestamp: 1, payload: Array("plain text".utf8))])
    writer.close()
    let plain = try await rewind(["show", raw.path, "1"])
    #expect(plain.status == 0, "\(plain.err)")
    #expect(
      plain.out.hasSuffix("not applied (the record is not a Rewind event)\n            (its fields name no record)\n"),
      "\(plain.out)")
    // An unknown model is a usage error there too, whatever the record (it was looked up only for
    // a Rewind event other than a checkpoint's, so this exited 0).
    let plainUnknown = try await rewind(["show", raw.path, "1", "--model", "ledger"])
    #expect(plainUnknown.status == 2, "\(plainUnknown.out)\(plainUnknown.err)")
    #expect(plainUnknown.err.contains("unknown model 'ledger'"), "\(plainUnknown.err)")
    #expect(plainUnknown.out.isEmpty)
  }

  @Test func aToolWithoutModelsInfersFromTheFields() async throws {
    let journal = try await NotebookJournal.write(commands: 3, seed: 34)
    let captured = Captured()
    let status = await RewindTool().run(["show", journal.path, "1"], output: captured.output)
    #expect(status == 0)
    let notebook = try #require(journal.states[1].notebooks.all().first)
    #expect(
      captured.out.hasSuffix(
        """
          touched   inferred from the identifiers in its fields, not applied (this rewind has no registered model; an app's own rewind registers its models)
                    \(notebook.id) (field id)

        """), "\(captured.out)")
  }

  /// Inferred from the fields, a field's name is shown as the event holds it, escaped once: in
  /// text as `visible` shows it, in --json as a JSON string that decodes to the name. And an id
  /// in capitals counts too (as `blame` and `--entity` take one), shown as written.
  @Test func anInferredFieldsNameIsEscapedOnceAndAnIdInCapitalsCounts() async throws {
    let (dir, counter) = try await VerifyDecodingTests.tallies()
    let manager = try Manager<Tally>(directory: dir.path, options: JournalOptions(durability: .none))
    let copy = "0123456789ABCDEF0123456789ABCDEF"
    try await manager.perform(.user) { _, command in command.record(TallyCopied(tally: counter, copy: copy)) }
    manager.close()
    let captured = Captured()
    #expect(await RewindTool().run(["show", dir.path, "3"], output: captured.output) == 0)
    #expect(
      captured.out.hasSuffix(
        """
          touched   inferred from the identifiers in its fields, not applied (this rewind has no registered model; an app's own rewind registers its models)
                    \(counter) (field t\\u{1B}"\\\\y)
                    \(copy) (field copy)

        """), "\(captured.out)")
    let json = Captured()
    #expect(await RewindTool().run(["show", dir.path, "3", "--json"], output: json.output) == 0)
    #expect(
      json.out.contains(
        #""records":[{"field":"t\u001b\"\\y","id":"\#(counter)"},{"field":"copy","id":"\#(copy)"}]"#),
      "\(json.out)")
    let object = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
    let records = try #require((object["touched"] as? [String: Any])?["records"] as? [[String: Any]])
    #expect(records.first?["field"] as? String == TallyCopied.CodingKeys.tally.rawValue, "\(json.out)")
  }

  /// A key with no record among the effect's records (`TimeMachine.effect(of:)` makes none, but
  /// the text must not drop one) is listed still, named as --json's "keys" names it.
  @Test func theTextListsAKeyWithNoRecord() throws {
    let opened = TallyOpened(id: Identifier(high: 1, low: 2), label: "a")
    let envelope = Envelope(
      sequence: 2, timestamp: 0, name: TallyOpened.name, version: 1, origin: .user,
      commandID: Identifier(high: 3, low: 4))
    let effect = EventEffect(
      event: RecordedEvent(envelope: envelope, event: opened),
      keys: [.record("tallies", opened.id), .group("tallies", "a")],
      records: [])
    let touched = Touched.applied(model: "tally", effect: effect)
    #expect(
      touched.lines(sequence: 2) == [
        "  touched   applied with model tally to the state after sequence 1:",
        "            tallies/\(opened.id) touched (no record value to show)",
        "  groups    tallies#a (grouping-cache keys)",
      ])
    #expect(touched.json.hasSuffix(#""records":[],"keys":["tallies/\#(opened.id)","tallies#a"]}"#), "\(touched.json)")
  }

  /// `--entity` finds an id the fields hold in capitals, as `show` lists it, typed either way;
  /// but not a longer run of hex digits that merely contains it.
  @Test func entityFindsAnIdTheFieldsHoldInCapitals() async throws {
    let (dir, counter) = try await VerifyDecodingTests.tallies()
    let manager = try Manager<Tally>(directory: dir.path, options: JournalOptions(durability: .none))
    let copy = "0123456789ABCDEF0123456789ABCDEF"
    for text in [copy, copy + "0", "0" + copy] {
      try await manager.perform(.user) { _, command in command.record(TallyCopied(tally: counter, copy: text)) }
    }
    manager.close()
    for typed in [copy, copy.lowercased()] {
      for command in ["log", "export", "tail"] {
        let captured = Captured()
        let format = command == "export" ? "--jsonl" : "--json"
        let status = await RewindTool().run([command, dir.path, format, "--entity", typed], output: captured.output)
        #expect(status == 0, "\(command) \(typed): \(captured.err)")
        let sequences = captured.out.split(separator: "\n").compactMap { line in
          (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["seq"] as? Int
        }
        #expect(sequences == [3], "\(command) \(typed): \(captured.out)")
      }
    }
  }
}

// A model no stock rewind registers: another app's journal.

struct TallyRecord: StoreRecord {
  var id: Identifier
  var label: String
  var count: Int
}

struct TallyOpened: Event {
  static let name = "tally.opened"
  var id: Identifier
  var label: String
}

struct TallyCounted: Event {
  static let name = "tally.counted"
  var tally: Identifier
  var by: Int
}

/// A field named with an ESC, a quote and a backslash, and an id copied in capitals.
struct TallyCopied: Event {
  static let name = "tally.copied"
  var tally: Identifier
  var copy: String

  enum CodingKeys: String, CodingKey {
    case tally = "t\u{1B}\"\\y"
    case copy
  }
}

struct Tally: Model {
  var tallies = Store<TallyRecord>(name: "tallies")

  static func registerEvents(in registry: inout EventRegistry<Tally>) {
    registry.register(TallyOpened.self) { state, event, context in
      state.tallies.insert(TallyRecord(id: event.id, label: event.label, count: 0), context: &context)
    }
    registry.register(TallyCounted.self) { state, event, context in
      state.tallies.update(id: event.tally, context: &context) { $0.count += event.by }
    }
    registry.register(TallyCopied.self) { _, _, _ in }
  }
}
