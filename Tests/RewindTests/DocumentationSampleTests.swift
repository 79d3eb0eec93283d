import Foundation
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

/// The README's "Using the journal" example, compiled and run. Its code lies between the
/// `Journal` markers below; a test checks that every line the README shows is here, in order, as
/// a run of words (`DocumentationText.shown(_:isPartOf:)`): comments, line breaks and commas
/// aside, the README's path spelled `path`, and the bodies it leaves as comments (`{ /* ... */ }`)
/// the test's own. Lines marked `// not shown` let the test see what the code did.
enum JournalSample {
  /// What the example saw and did, for the tests to check.
  struct Outcome {
    var isClean: Bool
    var movedAside: [QuarantinedBytes]
    var range: ClosedRange<UInt64>
    var sequence: UInt64
    var read: [JournalRecord]
    var followed: [JournalRecord]
    var report: CompactionReport
    var lastSequence: UInt64
  }

  /// Runs the README's example on the journal at `path` (the README's `/var/lib/myapp/journal`),
  /// appending `bytes`, `next` and `more` stamped `now`; the follower ends once it has the record
  /// the example appends last, or when its task is cancelled.
  static func run(path: String, now: Int64, bytes: [UInt8], next: [UInt8], more: [UInt8]) async throws -> Outcome {
    // Journal begin
    let journal = try Journal(
      directory: path,
      options: JournalOptions(durability: .always))
    if !journal.recovery.isClean {  // a torn tail moved aside, or committed records
      print(journal.recovery.movedAside, journal.recovery.missingRecords as Any)  // found gone
    }

    let range = try await journal.append([
      NewRecord(timestamp: now, payload: bytes)  // one atomic batch: all or nothing
    ])
    // Only if it lands right after `range` (else JournalError .sequenceConflict, nothing written):
    try await journal.append([NewRecord(timestamp: now, payload: next)], expectingFirstSequence: range.upperBound + 1)
    let sequence = try await journal.append(NewRecord(timestamp: now, payload: more))  // a batch of one

    let reader = try JournalReader(directory: path)  // no lock; works while writing
    let cursor = try reader.records(from: 1_000)  // or records(since: timestampNanos)
    var read: [JournalRecord] = []  // not shown
    while let record = try cursor.next() {
      read.append(record)  // not shown
    }

    var followed: [JournalRecord] = []  // not shown
    for try await record in reader.follow(from: range.upperBound + 1) {
      followed.append(record)  // not shown
      if record.sequence == sequence { break }  // not shown
    }

    // Sealed segments (all but the one being appended to) rewritten smaller; readers need no change.
    let report = try journal.compactSealedSegments()  // report.bytesBefore, .bytesAfter, .compacted
    // Or as each segment is sealed, on a low-priority thread: options.compactsSealedSegments = true
    // Journal end
    return Outcome(
      isClean: journal.recovery.isClean, movedAside: journal.recovery.movedAside, range: range, sequence: sequence,
      read: read, followed: followed, report: report, lastSequence: journal.lastSequence)
  }
}

/// Reading the documentation's code blocks, to compare them with the code that compiles them.
enum DocumentationText {
  /// The package's root directory.
  static let root = URL(fileURLWithPath: DocumentationFile.root)

  /// `line` as compared: without its comments (`// ...` to the end, `/* ... */`; a `{ /* ... */ }`
  /// body made `{`), the README's path spelled `path`, as tokens: words, and each bracket, colon
  /// and equals sign on its own; commas left out (where lines break is the formatter's choice).
  static func tokens(_ line: some StringProtocol) -> [String] {
    var text = String(line).replacingOccurrences(of: "\"/var/lib/myapp/journal\"", with: "path")
    var leftAsComment = false
    while let start = text.range(of: "/*"), let end = text.range(of: "*/", range: start.upperBound..<text.endIndex) {
      text.removeSubrange(start.lowerBound..<end.upperBound)
      leftAsComment = true
    }
    if let comment = text.range(of: "//") { text.removeSubrange(comment.lowerBound...) }
    for mark in ["(", ")", "[", "]", "{", "}", ":", "="] {
      text = text.replacingOccurrences(of: mark, with: " \(mark) ")
    }
    var tokens = text.replacingOccurrences(of: ",", with: " ").split(separator: " ").map(String.init)
    if leftAsComment && tokens.suffix(2) == ["{", "}"] { tokens.removeLast() }
    return tokens
  }

  /// The lines of the first Swift code block after `heading` in the file at `path` (relative to
  /// the package's root), as tokens, without empty ones.
  static func codeBlock(in path: String, after heading: String) throws -> [[String]] {
    try DocumentationFile.codeBlock(in: path, after: heading, language: "swift").map(tokens).filter { !$0.isEmpty }
  }

  /// The tokens of the file at `path` (relative to the package's root) between `// KIND begin`
  /// and `// KIND end` (all of them without `kind`), after its imports, without the lines marked
  /// `// not shown`.
  static func compiled(in path: String, between kind: String? = nil) throws -> [String] {
    let text = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    var tokens: [String] = []
    var inside = kind == nil
    for line in text.split(separator: "\n") {
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      if let kind, trimmed == "// \(kind) begin" {
        inside = true
      } else if let kind, trimmed == "// \(kind) end" {
        inside = false
      } else if (inside || trimmed.hasPrefix("import ")) && !trimmed.hasSuffix("// not shown") {
        tokens += Self.tokens(line)
      }
    }
    return tokens
  }

  /// Nil when each line of `shown` is a run of `code`'s tokens, the lines in the same order
  /// (`code` may hold tokens between them); else the first line that is not, and the code left.
  static func shown(_ shown: [[String]], isPartOf code: [String]) -> String? {
    var rest = code[...]
    for line in shown {
      let found = rest.indices.first { start in
        rest[start...].starts(with: line)
      }
      guard let found else {
        return "shown but not compiled (in this order): \(line.joined(separator: " "))\nthe compiled code left: "
          + rest.joined(separator: " ")
      }
      rest = rest[(found + line.count)...]
    }
    return nil
  }
}

@Suite struct DocumentationSampleTests {
  static let thisFile = "Tests/RewindTests/DocumentationSampleTests.swift"

  /// A payload of `count` bytes starting at `first`.
  static func payload(_ first: UInt8, _ count: Int = 16) -> [UInt8] { (0..<count).map { first &+ UInt8($0) } }

  /// A journal at `path` holding 999 records, so that the example's `records(from: 1_000)` reads
  /// the ones it appends: 1,000 through 1,002.
  static func journalOf999(at path: String) async throws {
    let journal = try Journal(directory: path, options: JournalOptions(durability: .none))
    defer { journal.close() }
    let records = (0..<999).map { NewRecord(timestamp: Int64($0), payload: payload(UInt8($0 % 256))) }
    #expect(try await journal.append(records) == 1...999)
  }

  @Test func theReadmeShowsTheJournalExampleThatCompilesHere() throws {
    let shown = try DocumentationText.codeBlock(in: "README.md", after: "## Using the journal")
    let compiled = try DocumentationText.compiled(in: Self.thisFile, between: "Journal")
    #expect(shown.count > 10)
    let problem = DocumentationText.shown(shown, isPartOf: compiled)
    #expect(problem == nil, "README.md's \"Using the journal\": \(problem ?? "")")
  }

  /// The example as the README tells it: three appends numbered one after the other, the last
  /// two conditional and single; a reader from 1,000 that reads them; a follower that gets them as
  /// they land; no sealed segment to compact in a journal of one segment. (A follower that missed
  /// a record would wait for ever: the time limit ends it.)
  @Test(.timeLimit(.minutes(10))) func theJournalExampleDoesWhatItsCommentsSay() async throws {
    let directory = TemporaryDirectory("doc-journal")
    try await Self.journalOf999(at: directory.path)
    let outcome = try await JournalSample.run(
      path: directory.path, now: 5_000, bytes: Self.payload(1), next: Self.payload(2), more: Self.payload(3))

    #expect(outcome.isClean)
    #expect(outcome.range == 1_000...1_000)
    #expect(outcome.sequence == 1_002)
    #expect(outcome.lastSequence == 1_002)
    #expect(outcome.read.map(\.sequence) == [1_000, 1_001, 1_002])
    #expect(outcome.read.map(\.payload) == [Self.payload(1), Self.payload(2), Self.payload(3)])
    #expect(outcome.read.allSatisfy { $0.timestamp == 5_000 })
    #expect(outcome.followed.map(\.sequence) == [1_001, 1_002])
    #expect(outcome.report.compacted.isEmpty, "one segment, the active one: nothing sealed")
    #expect(outcome.report.bytesBefore == 0 && outcome.report.bytesAfter == 0)

    // `records(since:)`: from the first record stamped at or after the time.
    let reader = try JournalReader(directory: directory.path)
    let since = try reader.records(since: 998)
    #expect(try since.next()?.sequence == 999)
  }

  /// The example opened on a journal whose last append was torn by a crash: `recovery` is not
  /// clean and says what was moved aside, the records before it are kept, and the example's
  /// appends number on from them.
  @Test(.timeLimit(.minutes(10))) func theJournalExampleSeesATornTailMovedAside() async throws {
    let directory = TemporaryDirectory("doc-journal")
    try await Self.journalOf999(at: directory.path)
    do {
      let journal = try Journal(directory: directory.path, options: JournalOptions(durability: .none))
      #expect(try await journal.append(NewRecord(timestamp: 999, payload: Self.payload(9, 64))) == 1_000)
      journal.close()
    }
    // Closed, the segment ends at its last frame: cut into that frame, as a crash mid-write can.
    let segments = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".lz4") }
      .sorted()
    let segment = try #require(segments.last.map { directory.appending($0) }, "the journal's segment")
    let size = try #require(try FileManager.default.attributesOfItem(atPath: segment)[.size] as? Int)
    #expect(truncate(segment, off_t(size - 10)) == 0)

    let outcome = try await JournalSample.run(
      path: directory.path, now: 5_000, bytes: Self.payload(1), next: Self.payload(2), more: Self.payload(3))
    #expect(!outcome.isClean)
    #expect(outcome.movedAside.count == 1)
    #expect(outcome.movedAside.first?.sequences == 1_000...1_000, "the torn batch's header names its record")
    #expect(outcome.range == 1_000...1_000, "the torn record's number is the next append's")
    #expect(outcome.read.map(\.payload) == [Self.payload(1), Self.payload(2), Self.payload(3)])
  }

  /// "else JournalError .sequenceConflict, nothing written": a conditional append that would not
  /// land right after `range` (an append came between) fails and writes nothing.
  @Test func aConditionalAppendThatWouldNotLandRightAfterWritesNothing() async throws {
    let directory = TemporaryDirectory("doc-journal")
    let journal = try Journal(directory: directory.path, options: JournalOptions(durability: .none))
    defer { journal.close() }
    let range = try await journal.append([NewRecord(timestamp: 1, payload: Self.payload(1))])
    try await journal.append(NewRecord(timestamp: 2, payload: Self.payload(2)))
    let error = await #expect(throws: JournalError.self) {
      try await journal.append(
        [NewRecord(timestamp: 3, payload: Self.payload(3))], expectingFirstSequence: range.upperBound + 1)
    }
    #expect(error?.code == .sequenceConflict)
    #expect(journal.lastSequence == 2)
    #expect(try journal.reader().lastSequence() == 2)
  }

  /// The README's own `rewind` ("Your own rewind, with your models registered") is
  /// `Tests/NotebookRewind/main.swift`, which the CLI tests build and run, less its second
  /// invariant: every line the README shows is there, in order.
  @Test func theReadmeShowsTheOwnRewindThatCompiles() throws {
    let shown = try DocumentationText.codeBlock(
      in: "README.md", after: "### Your own rewind, with your models registered")
    let compiled = try DocumentationText.compiled(in: "Tests/NotebookRewind/main.swift")
    #expect(shown.count > 10)
    let problem = DocumentationText.shown(shown, isPartOf: compiled)
    #expect(problem == nil, "README.md's \"Your own rewind\": \(problem ?? "")")
  }

  /// The comparison itself: a line shown and not compiled, shown out of order, or with another
  /// label, is found; comments, line breaks and commas are not compared.
  @Test func aShownLineThatIsNotCompiledIsFound() {
    let code = ["let a = f(x: 1,", "y: 2)", "print(a)"].flatMap(DocumentationText.tokens)
    #expect(DocumentationText.shown([DocumentationText.tokens("let a = f(x: 1, y: 2)  // a")], isPartOf: code) == nil)
    #expect(
      DocumentationText.shown(["let a = f(x: 1", "print(a)"].map(DocumentationText.tokens), isPartOf: code) == nil)
    #expect(
      DocumentationText.shown(["print(a)", "let a = f(x: 1"].map(DocumentationText.tokens), isPartOf: code) != nil)
    #expect(DocumentationText.shown([DocumentationText.tokens("let a = f(z: 1")], isPartOf: code) != nil)
    #expect(DocumentationText.shown([DocumentationText.tokens("let a = f(1")], isPartOf: code) != nil)
    #expect(DocumentationText.tokens("while let r = try c.next() { /* r */ }").suffix(2) == [")", "{"])
    #expect(
      DocumentationText.tokens("Journal(directory: \"/var/lib/myapp/journal\",") == [
        "Journal", "(", "directory", ":", "path",
      ])
  }
}

/// A model of the test's own for claims of the overview (plain properties) and of the funnel
/// article's "The record layout and schema evolution": a canvas counting the colours painted on
/// it, and its painter's signature.
enum Canvas {
  struct Colour: Hashable, Codable, Sendable {
    var name: String
  }

  /// Colours in a set of elements that are not `Comparable`: no order but their hash order.
  struct Painted: Event {
    static let name = "canvas.painted"
    var colours: Set<Colour>
  }

  /// The painter's signature, kept in a plain property rather than a store.
  struct Signed: Event {
    static let name = "canvas.signed"
    var painter: String
  }

  struct State: SnapshotModel {
    var strokes = ValueStore<Int>(name: "strokes", initial: 0)
    var signature = ""
    static func registerEvents(in registry: inout EventRegistry<State>) {
      registry.register(Painted.self) { canvas, event, context in
        canvas.strokes.set(canvas.strokes.value + event.colours.count, context: &context)
      }
      registry.register(Signed.self) { canvas, event, _ in canvas.signature = event.painter }
    }
  }
}

@Suite struct DocumentedBehaviourTests {
  /// "Whatever `Codable` writes either reads back as the same value or is refused when the event is
  /// encoded ... (the command fails; nothing is journaled)": through a manager, the command throws
  /// `ManagerError` `encodingFailed`, whose message holds the `EncodingError`'s reason, and the
  /// next command goes through.
  @Test func anEventCodableCannotWriteFaithfullyFailsItsCommandAlone() async throws {
    let directory = TemporaryDirectory("doc-encoding")
    let manager = try Manager<Canvas.State>(directory: directory.path, options: JournalOptions(durability: .none))
    defer { manager.close() }
    let two: Set = [Canvas.Colour(name: "red"), Canvas.Colour(name: "blue")]
    let error = await #expect(throws: ManagerError.self) {
      try await manager.perform(.user) { _, command in command.record(Canvas.Painted(colours: two)) }
    }
    #expect(error?.code == .encodingFailed)
    #expect(error?.message.contains("make Colour Comparable") == true, "\(String(describing: error))")
    #expect(manager.lastSequence == 0)
    #expect(manager.state.strokes.value == 0)

    try await manager.perform(.user) { _, command in
      command.record(Canvas.Painted(colours: [Canvas.Colour(name: "red")]))
    }
    #expect(manager.lastSequence == 1)
    #expect(manager.state.strokes.value == 1)
    #expect(try Replay.rebuild(Canvas.State.self, directory: directory.path).lastSequence == 1)
  }

  /// "Foundation's types are written in their own `Codable` form, which is what `rewind log` and
  /// `export` show": a `Date` as its seconds since 2001-01-01, a `UUID` as its string, a `URL` as
  /// an object holding its string, a `Decimal` as its internal fields.
  @Test func foundationTypesRenderAsTheArticleSays() throws {
    struct Record: Codable {
      var date = Date(timeIntervalSinceReferenceDate: 123.5)
      var uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
      var url = URL(string: "https://example.com/a")!
      var decimal = Decimal(string: "-12.5")!
    }
    let json = try FieldRenderer.json(FieldEncoder().encode(Record()))
    #expect(json.hasPrefix(#"{"date":123.5,"uuid":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","url":{"#), "\(json)")
    #expect(json.contains(#""url":{"relative":"https://example.com/a"}"#), "\(json)")
    for field in ["exponent", "length", "isNegative", "mantissa"] {
      #expect(json.contains(#""decimal":{"#) && json.contains("\"\(field)\":"), "\(field): \(json)")
    }
  }

  /// The overview: "a plain property is replayed, but change streams, diffs, blame and the tool
  /// see stores' records only". A command that changes only one is journaled and replayed, and
  /// its change names no key; a diff across it shows nothing.
  @Test func aPlainPropertyIsReplayedButNoChangeNamesIt() async throws {
    let directory = TemporaryDirectory("doc-plain")
    let manager = try Manager<Canvas.State>(directory: directory.path, options: JournalOptions(durability: .none))
    var changes = manager.changes().makeAsyncIterator()
    try await manager.perform(.user) { _, command in command.record(Canvas.Signed(painter: "ada")) }
    try await manager.perform(.user) { _, command in
      command.record(Canvas.Painted(colours: [Canvas.Colour(name: "red")]))
    }
    manager.close()
    let signed = try #require(await changes.next())
    #expect(signed.sequences == 1...1 && signed.keys.isEmpty, "\(signed)")
    let painted = try #require(await changes.next())
    #expect(painted.keys == [.value("strokes")], "\(painted)")

    let rebuilt = try Replay.rebuild(Canvas.State.self, directory: directory.path)
    #expect(rebuilt.state.signature == "ada")
    #expect(rebuilt.state.strokes.value == 1)
    let machine = try TimeMachine<Canvas.State>(directory: directory.path)
    #expect(try machine.diff(from: 0, to: 1).collections.allSatisfy(\.isEmpty))
    #expect(try machine.state(at: 1).signature == "ada")
    #expect(try !machine.diff(from: 1, to: 2).collections.allSatisfy(\.isEmpty))
  }

  /// TheFunnel.md, "Notify": each observer receives the command's events and "the sorted
  /// `ChangeKey`s they touched": in their order, not a set's hash order, so that two runs print
  /// the same change.
  @Test func aChangesKeysAreSorted() async throws {
    let directory = TemporaryDirectory("doc-keys")
    let manager = try Manager<ReadmeExample.Notes>(
      directory: directory.path, options: JournalOptions(durability: .none), ids: .sequential())
    defer { manager.close() }
    var changes = manager.changes().makeAsyncIterator()
    let ids = try await manager.perform(.user) { _, command in
      let ids = (0..<20).map { _ in command.newID() }
      for id in ids.reversed() { command.record(ReadmeExample.NoteAdded(id: id, title: "\(id)")) }
      return ids
    }
    let change = try #require(await changes.next())
    #expect(change.keys == ids.map { .record("notes", $0) })
    #expect(change.keys == change.keys.sorted())
  }
}
