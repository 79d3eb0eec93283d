import Foundation
import Notebook
import Rewind
import RewindCLI
import RewindJournal
import RewindTestSupport
import Testing

/// A journal is untrusted input for an audit tool: control characters in its strings (and in
/// words typed on the command line and echoed back) are shown as escapes in text output, never
/// sent to the terminal; JSON output escapes them as JSON does (`\u001b`), and reads back whole.
@Suite struct UntrustedTextTests {
  /// Clears the screen, returns the carriage to forge a line, starts a new line, then DEL, a C1
  /// CSI, a right-to-left override, a zero width space and an isolate.
  static let hostile = "x\u{1B}[2J\r1  forged\n\u{7F}\u{9B}31m\u{202E}gnp\u{200B}.exe\u{2066}y"

  /// What a terminal would act on: C0 but the line breaks the tool writes, DEL, C1, the line and
  /// paragraph separators, the bidirectional marks and controls; and what it shows as nothing
  /// (soft hyphen, zero width space, word joiner, byte order mark, ...), though not the zero
  /// width non-joiner and joiner.
  static func unsafe(_ text: String) -> [String] {
    text.unicodeScalars.filter { scalar in
      switch scalar.value {
      case 0x0A: false
      case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
      case 0x00AD, 0x180E, 0x200B, 0x2060...0x2064, 0xFEFF: true
      default: false
      }
    }.map { String(format: "U+%04X", $0.value) }
  }

  static func rewind(_ arguments: [String], input: String? = nil) async throws -> ToolRun {
    try await ToolRun.run("rewind", arguments, input: input)
  }

  /// A Notebook journal whose notebook, note (title, body, tag) and origin hold `hostile`.
  static func notebookJournal() async throws -> (TemporaryDirectory, note: String) {
    let dir = TemporaryDirectory("cli-untrusted")
    let manager = try NotebookManager(
      directory: dir.path, options: JournalOptions(durability: .none),
      clock: .stepping(from: 1_700_000_000_000_000_000, by: 1_000_000_000), ids: .sequential())
    defer { manager.close() }
    let book = try await manager.createNotebook(title: hostile)
    let note = try await manager.createNote(
      in: book, title: hostile, body: hostile, tags: [NoteTag(hostile)], origin: Origin(hostile))
    try await manager.retitleNote(note, to: "plain " + hostile)
    return (dir, note.raw.description)
  }

  @Test func textOutputShowsControlCharactersAsEscapes() async throws {
    let (dir, note) = try await Self.notebookJournal()
    let path = dir.path
    // In a field's JSON, every control is the encoder's escape; elsewhere `visible`'s.
    let inJSON = #"x\u001b[2J\r1  forged\n\u007f\u009b31m\u202egnp\u200b.exe\u2066y"#
    let bare = #"x\u{1B}[2J\u{D}1  forged\u{A}\u{7F}\u{9B}31m\u{202E}gnp\u{200B}.exe\u{2066}y"#
    let runs: [(arguments: [String], shows: String?)] = [
      (["log", path], inJSON), (["log", path, "--full"], bare), (["tail", path], bare),
      (["show", path, "1"], inJSON), (["show", path, "2"], bare), (["show", path, "3"], inJSON),
      (["stats", path], bare), (["replay", path], nil), (["diff", path, "0", "3"], inJSON),
      (["blame", path, note], bare), (["bisect", path, "--invariant", "notes belong to notebooks", "--linear"], nil),
      // Words typed by the user, echoed in errors.
      (["log", path, "--type", Self.hostile], bare), (["log", path, "--origin", Self.hostile], bare),
      (["blame", path, Self.hostile], bare), (["show", path, Self.hostile], bare),
      (["bisect", path, "--invariant", Self.hostile], bare), ([Self.hostile, path], bare),
      (["log", path, "--" + Self.hostile], bare), (["debug", path, "--model", Self.hostile], bare),
      // The overview names the escape, and sends none.
      (["--help"], #"such as \u{1B} (a backslash as \\,"#),
    ]
    for (arguments, shows) in runs {
      let run = try await Self.rewind(arguments)
      #expect(Self.unsafe(run.out).isEmpty, "\(arguments): \(Self.unsafe(run.out)) in \(run.out)")
      #expect(Self.unsafe(run.err).isEmpty, "\(arguments): \(Self.unsafe(run.err)) in \(run.err)")
      if let shows { #expect((run.out + run.err).contains(shows), "\(arguments): \(run.out)\(run.err)") }
    }
    // Standard input splits lines and debug splits words: no newline or space in these.
    let word = Self.hostile.replacingOccurrences(of: "\n", with: "").replacingOccurrences(of: " ", with: "")
    let debug = try await Self.rewind(
      ["debug", path],
      input: "goto end\nprint\nprint json\nprint notes\nprint \(note)\nevent 2\nwatch \(note)\nback\nblame \(note)\n"
        + "find name \(word)\ncheck \(word)\nquery \(word)\n\(word)\n")
    #expect(Self.unsafe(debug.out).isEmpty, "debug: \(Self.unsafe(debug.out)) in \(debug.out)")
    #expect(Self.unsafe(debug.err).isEmpty, "debug: \(Self.unsafe(debug.err)) in \(debug.err)")
    #expect(debug.out.contains(inJSON) && debug.out.contains(bare), "\(debug.out)")
    #expect(
      debug.err.contains(#"error: x\u{1B}[2J\u{D}1forged\u{7F}\u{9B}31m\u{202E}gnp\u{200B}.exe\u{2066}y: unknown"#),
      "\(debug.err)")
  }

  /// `log` cuts an event's fields at 160 characters: never inside an escape, which would show
  /// a broken one (`\u00…`). Titles of escapes, each behind a lead-in of 0 to 5 letters, put the
  /// cut at every place within an escape.
  @Test func logCutsFieldsBetweenEscapesNotInsideOne() async throws {
    let dir = TemporaryDirectory("cli-cut-escapes")
    let manager = try NotebookManager(
      directory: dir.path, options: JournalOptions(durability: .none),
      clock: .stepping(from: 1_700_000_000_000_000_000, by: 1_000_000_000), ids: .sequential())
    let book = try await manager.createNotebook(title: "escapes")
    for lead in 0...5 {
      _ = try await manager.createNote(
        in: book, title: String(repeating: "a", count: lead) + String(repeating: "\u{1B}", count: 60), body: "")
    }
    manager.close()
    let run = try await Self.rewind(["log", dir.path])
    #expect(run.status == 0, "\(run.err)")
    let cut = run.out.split(separator: "\n").filter { $0.hasSuffix("…") }
    #expect(cut.count == 6, "\(run.out)")
    for line in cut {
      let shown = line.dropLast()
      // Whole escapes only: the text after the last backslash is `u001b`, or more.
      let tail = shown[(shown.lastIndex(of: "\\") ?? shown.startIndex)...]
      #expect(tail.hasPrefix(#"\u001b"#), "\(line)")
    }
  }

  /// The cut keeps as many characters as it may, less only an escape it would split.
  @Test func aJSONPrefixEndsBetweenEscapes() throws {
    // The second starts with a combining mark, which makes one character of the opening quote.
    for original in ["a\u{1B}b\n\"c\\d\u{7F}", "\u{301}x\u{1B}\u{301}\u{1B}é\n"] {
      let text = jsonString(original)
      for width in 1..<text.count {
        let prefix = jsonPrefix(text, width: width)
        #expect(text.hasPrefix(prefix) && prefix.count <= width && prefix.count > width - 6, "\(width): \(prefix)")
        // Closed with a quote, the prefix is a JSON string that starts the original.
        let decoded = try JSONSerialization.jsonObject(with: Data("[\(prefix)\"]".utf8)) as? [String]
        #expect(
          decoded.map { original.unicodeScalars.starts(with: $0[0].unicodeScalars) } == true, "\(width): \(prefix)")
      }
    }
  }

  @Test func anEventNameFromTheJournalIsShownEscaped() async throws {
    // A record with Rewind's envelope written by hand: the name and origin are the journal's.
    let dir = TemporaryDirectory("cli-untrusted-name")
    var payload: [UInt8] = [1]
    for (text, version) in [(Self.hostile, UInt8(1)), (Self.hostile + "o", nil)] {
      let bytes = Array(text.utf8)
      payload += [UInt8(bytes.count)] + bytes
      if let version { payload.append(version) }
    }
    payload += [UInt8](repeating: 0, count: 16) + [0]
    let journal = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    try journal.appendAndWait([NewRecord(timestamp: 1, payload: payload)])
    journal.close()
    for arguments in [["log", dir.path], ["tail", dir.path], ["show", dir.path, "1"], ["stats", dir.path]] {
      let run = try await Self.rewind(arguments)
      #expect(run.status == 0, "\(arguments): \(run.err)")
      #expect(Self.unsafe(run.out).isEmpty, "\(arguments): \(Self.unsafe(run.out)) in \(run.out)")
      #expect(run.out.contains(#"x\u{1B}[2J\u{D}1  forged\u{A}"#), "\(arguments): \(run.out)")
    }
    // JSON output escapes every control as JSON does, and decodes back to the journal's text.
    let json = try await Self.rewind(["log", dir.path, "--json"])
    #expect(Self.unsafe(json.out).isEmpty, "\(Self.unsafe(json.out)) in \(json.out)")
    let expected = #"x\u001b[2J\r1  forged\n\u007f\u009b31m\u202egnp\u200b.exe\u2066y"#
    #expect(json.out.contains(#""name":""# + expected + #"""#), "\(json.out)")
    let object = try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any]
    #expect(object?["name"] as? String == Self.hostile)
    // verify names such an event when its fields do not decode (here a tag no encoding has).
    let damaged = TemporaryDirectory("cli-untrusted-name-fields")
    let writer = try Journal(directory: damaged.path, options: JournalOptions(durability: .none))
    try writer.appendAndWait([NewRecord(timestamp: 1, payload: payload.dropLast() + [0xFF])])
    writer.close()
    let verify = try await Self.rewind(["verify", damaged.path])
    #expect(verify.status == 1, "\(verify.out)\(verify.err)")
    #expect(Self.unsafe(verify.out).isEmpty, "\(Self.unsafe(verify.out)) in \(verify.out)")
    #expect(verify.out.contains(#"sequence 1: x\u{1B}[2J\u{D}1  forged\u{A}"#), "\(verify.out)")
  }

  @Test func verifyShowsADamagedJournalsDirectoryEscaped() async throws {
    // A directory typed with control characters: verify's report and advice quote it.
    let parent = TemporaryDirectory("cli-untrusted-verify")
    let path = parent.path + "/j\u{1B}[2J\r"
    let manager = try NotebookManager(directory: path, options: JournalOptions(durability: .none))
    for index in 0..<20 { _ = try await manager.createNotebook(title: "notebook \(index)") }
    manager.close()
    // One byte flipped in the middle of the only segment.
    let segment = path + "/00000000000000000001.lz4"
    var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: segment)))
    let middle = try #require(bytes.indices.reversed().first { bytes[$0] != 0 }) / 2
    bytes[middle] ^= 0xFF
    try Data(bytes).write(to: URL(fileURLWithPath: segment))
    let run = try await Self.rewind(["verify", path])
    #expect(run.status == 1, "\(run.out)\(run.err)")
    #expect(run.out.contains("problem: "), "\(run.out)")
    #expect(run.out.contains(#"j\u{1B}[2J\u{D}"#), "\(run.out)")
    #expect(Self.unsafe(run.out).isEmpty, "\(Self.unsafe(run.out)) in \(run.out)")
  }

  @Test func snapshotShowsAnEmptyJournalsDirectoryEscaped() async throws {
    // A directory typed with control characters: snapshot says that journal is empty.
    let parent = TemporaryDirectory("cli-untrusted-snapshot")
    let path = parent.path + "/j\u{1B}[2J\r"
    try NotebookManager(directory: path, options: JournalOptions(durability: .none)).close()
    let run = try await Self.rewind(["snapshot", path])
    #expect(run.status == 0, "\(run.out)\(run.err)")
    #expect(run.out.contains(#"/j\u{1B}[2J\u{D} is empty"#), "\(run.out)")
    #expect(Self.unsafe(run.out).isEmpty, "\(Self.unsafe(run.out)) in \(run.out)")
  }

  @Test func theDemoShowsItsDirectoryEscaped() async throws {
    // A directory typed with control characters: the demo's summary names it.
    let parent = TemporaryDirectory("cli-untrusted-demo")
    let path = parent.path + "/j\u{1B}[2J\r"
    let run = try await Self.rewind(["demo", path, "--events", "30", "--seed", "1", "--durability", "none"])
    #expect(run.status == 0, "\(run.out)\(run.err)")
    #expect(run.out.contains(#"notebook demo: "# + parent.path + #"/j\u{1B}[2J\u{D} (seed 1"#), "\(run.out)")
    #expect(Self.unsafe(run.out).isEmpty, "\(Self.unsafe(run.out)) in \(run.out)")
    #expect(Self.unsafe(run.err).isEmpty, "\(Self.unsafe(run.err)) in \(run.err)")
  }

  @Test func visibleEscapesControlCharactersAndKeepsTheRest() {
    #expect(
      visible("a\u{0}\t\n\r\u{1B}\u{1F} \u{7F}\u{80}\u{9F}\u{A0}b")
        == #"a\u{0}\u{9}\u{A}\u{D}\u{1B}\u{1F} \u{7F}\u{80}\u{9F}"# + "\u{A0}b")
    #expect(
      visible("\u{2027}\u{202A}\u{202E}\u{202F}\u{2065}\u{2066}\u{2069}\u{206A}")
        == "\u{2027}" + #"\u{202A}\u{202E}"# + "\u{202F}\u{2065}" + #"\u{2066}\u{2069}"# + "\u{206A}")
    let ordinary = #"plain é 漢 🙂 " ' u{1B} ~"# + "\u{200D}\u{2010}\u{2027}\u{202F}\u{061B}\u{061D}"
    #expect(visible(ordinary) == ordinary)
  }

  @Test func visibleDoublesABackslashSoTextCannotImitateAnEscape() {
    // A real ESC and the six characters that spell its escape are shown apart.
    #expect(visible("\u{1B}") == #"\u{1B}"#)
    #expect(visible(#"\u{1B}"#) == #"\\u{1B}"#)
    #expect(visible("a\\\u{1B}") == #"a\\\u{1B}"#)
    // A path is text like any other: its backslashes are doubled too.
    #expect(visible(#"C:\notes\j"#) == #"C:\\notes\\j"#)
    // Not idempotent: a second pass doubles the first one's backslashes.
    #expect(visible(visible("\u{1B}")) == #"\\u{1B}"#)
  }

  @Test func visibleEscapesTheBidiMarksAndLineSeparators() {
    #expect(
      visible("1\u{200E}2\u{200F}3\u{061C}4\u{2028}5\u{2029}6")
        == #"1\u{200E}2\u{200F}3\u{61C}4\u{2028}5\u{2029}6"#)
    // JSON escapes the same ones, and still decodes to the same string.
    let marks = "1\u{200E}2\u{200F}3\u{061C}4\u{2028}5\u{2029}6"
    #expect(jsonString(marks) == #""1\u200e2\u200f3\u061c4\u20285\u20296""#)
    let decoded = try? JSONSerialization.jsonObject(with: Data("[\(jsonString(marks))]".utf8)) as? [String]
    #expect(decoded == [marks])
  }

  @Test func visibleAndTheJSONEscaperEscapeTheSameScalars() {
    // Every scalar below U+3000, a byte order mark and an emoji: `visible` shows it as an escape
    // exactly when JSON output does (quote and backslash aside, which JSON's syntax needs); and
    // the invisible ones are among them, so two names that differ only by one do not look the
    // same, while the zero width non-joiner and joiner, which words and emoji are spelled with,
    // are kept.
    let invisible: Set<UInt32> = [0x00AD, 0x180E, 0x200B, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xFEFF]
    let kept: Set<UInt32> = [0x200C, 0x200D, 0x1F642]
    let scalars = (0..<0x3000).compactMap(Unicode.Scalar.init) + [Unicode.Scalar(0xFEFF)!, Unicode.Scalar(0x1F642)!]
    for scalar in scalars where scalar != "\"" && scalar != "\\" {
      let text = String(Character(scalar))
      let byVisible = visible(text) != text
      let byJSON = jsonString(text) != "\"" + text + "\""
      let name = "U+\(String(scalar.value, radix: 16, uppercase: true))"
      #expect(byVisible == byJSON, "\(name)")
      if invisible.contains(scalar.value) { #expect(byVisible, "\(name) is invisible: escaped") }
      if kept.contains(scalar.value) { #expect(!byVisible, "\(name) is kept as is") }
    }
    #expect(visible("a\u{200B}b\u{FEFF}") == #"a\u{200B}b\u{FEFF}"#)
    #expect(jsonString("a\u{200B}b\u{AD}") == #""a\u200bb\u00ad""#)
  }

  /// A Notebook journal whose origin and note title hold a real ESC and the text of its escape,
  /// a path with backslashes, and a right-to-left mark.
  static let imitation = "real \u{1B} fake \\u{1B} path C:\\dir mark \u{200F}1"

  @Test func textThatSpellsAnEscapeIsShownApartFromARealControl() async throws {
    let dir = TemporaryDirectory("cli-untrusted-imitation")
    let manager = try NotebookManager(
      directory: dir.path, options: JournalOptions(durability: .none),
      clock: .stepping(from: 1_700_000_000_000_000_000, by: 1_000_000_000), ids: .sequential())
    let book = try await manager.createNotebook(title: "book")
    let note = try await manager.createNote(
      in: book, title: Self.imitation, body: "", tags: [], origin: Origin(Self.imitation))
    manager.close()
    let path = dir.path
    // In text, `visible`'s spelling: the fake escape's backslash doubled, the real one single.
    let shown = #"real \u{1B} fake \\u{1B} path C:\\dir mark \u{200F}1"#
    // In JSON (also where a line of text holds it), JSON's own escapes, not doubled again.
    let inJSON = #""real \u001b fake \\u{1B} path C:\\dir mark \u200f1""#
    let id = note.raw.description
    let runs: [(arguments: [String], shows: [String])] = [
      (["stats", path], [shown]), (["show", path, "2"], ["  origin    " + shown, inJSON]),
      (["log", path], [" " + shown + "  {", inJSON]), (["tail", path], [" " + shown + "  {", inJSON]),
      (["log", path, "--json"], [inJSON]), (["blame", path, id], ["origin " + shown, inJSON]),
      (["diff", path, "1", "2"], [inJSON]),
    ]
    for (arguments, shows) in runs {
      let run = try await Self.rewind(arguments)
      #expect(run.status == 0, "\(arguments): \(run.err)")
      #expect(Self.unsafe(run.out).isEmpty, "\(arguments): \(Self.unsafe(run.out)) in \(run.out)")
      for text in shows { #expect(run.out.contains(text), "\(arguments): \(text) in \(run.out)") }
    }
    // `show` writes the fields as indented lines, not as one line of escaped newlines.
    let show = try await Self.rewind(["show", path, "2"])
    #expect(!show.out.contains(#"\u{A}"#) && show.out.contains("\n              \"title\""), "\(show.out)")
    let debug = try await Self.rewind(["debug", path], input: "goto end\nevent 2\nprint \(id)\nblame \(id)\n")
    #expect(debug.status == 0, "\(debug.err)")
    #expect(Self.unsafe(debug.out).isEmpty, "\(Self.unsafe(debug.out)) in \(debug.out)")
    #expect(debug.out.contains("origin " + shown) && debug.out.contains("notes {"), "\(debug.out)")
    #expect(debug.out.contains(inJSON) && !debug.out.contains(#"\\u001b"#), "\(debug.out)")
  }

  /// `replay`'s collection table pads each name as `visible` shows it (as `stats` does), so a
  /// store named with a backslash, shown doubled, leaves the counts in one column.
  @Test func replayAlignsCollectionsAsTheirNamesAreShown() async throws {
    let (dir, _) = try await VerifyDecodingTests.tallies()
    let tool = RewindTool(models: [ModelRegistration(Shelf.self, name: "shelf")])
    let captured = Captured()
    #expect(await tool.run(["replay", dir.path], output: captured.output) == 0, "\(captured.err)")
    // The widest name shown, `tallies\\old`, is 12 characters; two spaces follow it.
    #expect(captured.out.contains("\n  " + #"tallies\\old"# + "  0\n"), "\(captured.out)")
    #expect(captured.out.contains("\n  tallies" + String(repeating: " ", count: 12 + 2 - 7) + "1\n"), "\(captured.out)")
  }
}

/// A model with a store whose name holds a backslash, for another app's (`Tally`'s) journal.
struct Shelf: SnapshotModel {
  var tallies = Store<ShelfItem>(name: "tallies")
  var old = Store<ShelfItem>(name: #"tallies\old"#)

  static func registerEvents(in registry: inout EventRegistry<Shelf>) {
    registry.register(TallyOpened.self) { state, event, context in
      state.tallies.insert(ShelfItem(id: event.id), context: &context)
    }
    registry.register(TallyCounted.self) { _, _, _ in }
  }
}

struct ShelfItem: StoreRecord, Codable {
  var id: Identifier
}
