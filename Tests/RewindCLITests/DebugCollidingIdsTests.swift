import Foundation
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

@testable import RewindCLI

/// debug's `print ID` and `watch ID` showed the record of the first collection holding the id
/// and said nothing of another holding a record of that id too (helper-213, Dec 7), and neither
/// they nor debug's `blame` could name the collection, as `rewind blame --collection` can. A
/// note now names the others, and `COLLECTION ID` picks one.
@Suite struct DebugCollidingIdsTests {
  /// A journal of crate 1, box 1 and crate 1 relabelled, one command each.
  static func shelvesJournal() async throws -> TemporaryDirectory {
    let temporary = TemporaryDirectory("cli-colliding-ids")
    let manager = try Manager<Shelves>(directory: temporary.path, clock: .stepping(from: 0), ids: .sequential())
    for event in [
      ShelfPlaced(crate: true, id: 1, label: "crate one"), ShelfPlaced(crate: false, id: 1, label: "box one"),
      ShelfPlaced(crate: true, id: 1, label: "crate one, relabelled"),
    ] {
      try await manager.perform(.user) { _, command in command.record(event) }
    }
    manager.close()
    return temporary
  }

  /// Runs `script` in a debug session over `directory` with the `Shelves` model.
  static func debug(_ script: [String], in directory: String) throws -> (
    out: String, err: String, status: RewindTool.ExitCode
  ) {
    let machine = try ModelRegistration(Shelves.self, name: "shelves").open(directory, .interactive)
    let captured = Captured()
    let session = DebugSession(
      machine, model: "shelves", directory: directory, output: captured.output, interactive: false)
    var lines = script[...]
    let status = session.run { lines.popFirst() }
    return (captured.out, captured.err, status)
  }

  @Test func printNamesTheOtherCollectionAndPicksOne() async throws {
    let journal = try await Self.shelvesJournal()
    let run = try Self.debug(
      ["goto 3", "print 1", "print crates 1", "goto 1", "print 1"], in: journal.path)
    let lines = run.out.split(separator: "\n").map(String.init)
    #expect(run.status == .success, "\(run.err)")
    #expect(
      lines.contains(#"boxes {"id":1,"label":"box one"}"#)
        && lines.contains("note: crates holds a record of id 1 too (print crates 1 for it)"), "\(run.out)")
    #expect(lines.contains(#"crates {"id":1,"label":"crate one, relabelled"}"#), "\(run.out)")
    // At 1 only the crate holds it: no note.
    #expect(lines.last == #"crates {"id":1,"label":"crate one"}"#, "\(run.out)")
    #expect(lines.filter { $0.hasPrefix("note:") }.count == 1, "\(run.out)")
  }

  @Test func aCollectionTheModelLacksOrARecordItLacksIsRefused() async throws {
    let journal = try await Self.shelvesJournal()
    for (line, message) in [
      ("print shelves 1", "no collection 'shelves' (collections: boxes, crates)"),
      ("print boxes 2", "no record '2' in boxes at sequence 3"),
      ("watch shelves 1", "no collection 'shelves'"),
      ("blame boxes 7", "no event ever touched '7' in boxes"),
      ("print boxes 1 2", "usage: print [json|COLLECTION|ID|COLLECTION ID]"),
    ] {
      let run = try Self.debug(["goto 3", line], in: journal.path)
      #expect(run.status == .usage, "\(line): \(run.err)")
      #expect(run.err.contains(message), "\(line): \(run.err)")
    }
  }

  /// A watch with a collection follows that collection's record; one without shows the first
  /// collection holding the id at each position, and its note names the other.
  @Test func watchFollowsTheCollectionItNames() async throws {
    let journal = try await Self.shelvesJournal()
    let run = try Self.debug(
      ["goto 1", "watch crates 1", "goto 2", "goto 3", "unwatch crates 1", "watch 1", "goto 2"], in: journal.path)
    let lines = run.out.split(separator: "\n").map(String.init)
    #expect(run.status == .success, "\(run.err)")
    #expect(lines.contains(#"watch crates 1 at 1: crates {"id":1,"label":"crate one"}"#), "\(run.out)")
    // Box 1 came at 2, which the crate's watch does not show; the crate's relabelling at 3 it does.
    #expect(!lines.contains { $0.hasPrefix("watch crates 1 at 2") }, "\(run.out)")
    #expect(lines.contains(#"watch crates 1 at 3: crates {"id":1,"label":"crate one, relabelled"}"#), "\(run.out)")
    #expect(lines.contains("no longer watching crates 1"), "\(run.out)")
    #expect(lines.contains(#"watch 1 at 3: boxes {"id":1,"label":"box one"}"#), "\(run.out)")
    #expect(lines.contains("note: crates holds a record of id 1 too (watch crates 1 for it)"), "\(run.out)")
    #expect(!lines.contains { $0.hasPrefix("watch 1 at 2") }, "box 1 is unchanged at 2: \(run.out)")
    // `unwatch 1` ends the watch made as `watch 1`, not the crate's made before it (helper-219).
    let both = try Self.debug(["watch crates 1", "watch 1", "unwatch 1"], in: journal.path)
    #expect(both.out.hasSuffix("no longer watching 1\n"), "\(both.out)")
  }

  @Test func blameTakesACollection() async throws {
    let journal = try await Self.shelvesJournal()
    let run = try Self.debug(["blame 1", "blame boxes 1", "blame crates 1"], in: journal.path)
    #expect(run.status == .success, "\(run.err)")
    let afters = run.out.split(separator: "\n").filter { $0.hasPrefix("    after ") }.map { $0.dropFirst(10) }
    #expect(
      afters == [
        #"{"id":1,"label":"crate one"}"#, #"{"id":1,"label":"crate one, relabelled"}"#,
        #"{"id":1,"label":"box one"}"#,
        #"{"id":1,"label":"crate one"}"#, #"{"id":1,"label":"crate one, relabelled"}"#,
      ], "\(run.out)")
    #expect(
      run.out.contains(
        "note: records of id 1 in boxes were touched too; the events above are those of crates, the first touched "
          + "(blame COLLECTION ID shows another's)\n"), "\(run.out)")
    #expect(
      run.out.contains(
        "note: records of id 1 in crates were touched too; the events above are those of boxes, as asked\n"),
      "\(run.out)")
  }
}
