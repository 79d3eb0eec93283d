import Foundation
import Notebook
import NotebookTool
import Rewind
import Testing

@testable import RewindCLI

/// `prepare` in a debug session: keyframes over the whole history, after which each move replays
/// fewer records than their spacing and lands on the same state as before.
@Suite struct DebugPrepareTests {
  /// Runs `script` through a debug session over `directory`, in process; returns its output and
  /// the session (which counts the records its time machine applied).
  func session(_ directory: String, _ script: [String]) throws -> (out: String, err: String, session: any ModelSession)
  {
    let machine = try #require(NotebookTool.models.first).open(directory)
    let captured = Captured()
    let debug = DebugSession(
      machine, model: "workspace", directory: directory, output: captured.output, interactive: false)
    var lines = script[...]
    _ = debug.run { lines.popFirst() }
    return (captured.out, captured.err, machine)
  }

  @Test func preparedMovesReplayFewerThanTheSpacingAndShowTheSameStates() async throws {
    let journal = try await NotebookJournal.write(commands: 2_500, seed: 41)
    let last = journal.lastSequence
    #expect(last > 2 * 1024)
    let targets = [last / 3, 5, last, last / 2 + 7, 1, last - 1]
    let printing = targets.flatMap { ["goto \($0)", "print json"] }
    let plain = try session(journal.path, printing)
    let prepared = try session(journal.path, ["prepare"] + printing)
    #expect(plain.err.isEmpty && prepared.err.isEmpty, "\(plain.err)\(prepared.err)")
    // The same states, after the line prepare prints.
    let announced = try #require(prepared.out.split(separator: "\n", maxSplits: 1).first)
    #expect(announced.hasPrefix("keyframes every 1024 records over sequences 0...\(last)"))
    #expect(prepared.out.dropFirst(announced.count + 1) == plain.out[...])
    // Preparing replayed the history once; the six moves after it replayed fewer than 1,024 each.
    #expect(prepared.session.recordsApplied < Int(last) + targets.count * 1024)
    #expect(prepared.session.recordsApplied >= Int(last / 1024 * 1024))
  }

  @Test func prepareTakesNoArguments() async throws {
    let journal = try await NotebookJournal.write(commands: 5, seed: 42)
    let (out, err, _) = try session(journal.path, ["prepare now"])
    #expect(err.contains("usage: prepare"))
    #expect(out.isEmpty)
  }
}
