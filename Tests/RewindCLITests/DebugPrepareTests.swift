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
    let machine = try #require(NotebookTool.models.first).open(directory, .interactive)
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

  /// `prepare SIZE` stops laying keyframes at the first one that takes their trees past SIZE and
  /// says where and what a move costs on either side of it; a second `prepare` with the same
  /// limit lays no more (the keyframes hold more than it already), one with a larger limit lays
  /// the rest; and moves show the states they show unprepared.
  @Test func prepareStopsWhereTheKeyframesPassTheLimitGiven() async throws {
    let journal = try await NotebookJournal.write(commands: 4_000, seed: 43)
    let last = journal.lastSequence
    // Where the keyframes pass 200 KB, by the library's count of states side by side: the first
    // multiple of 1,024 whose keyframe takes them past it, if one before the last does.
    let machine = try TimeMachine<Workspace>(directory: journal.path, useSnapshots: false)
    var states: [Workspace] = []
    var through: UInt64 = 0
    for sequence in stride(from: 1_024, through: last / 1_024 * 1_024, by: 1_024) {
      through = sequence
      states.append(try machine.state(at: sequence))
      if StorageFootprint.of(states).bytes > 200_000 { break }
    }
    #expect(through < last / 1_024 * 1_024, "the limit stops the keyframes before the last one")
    let targets = [5, Int(through) + 1_030, Int(last) - 1]
    let printing = targets.flatMap { ["goto \($0)", "print json"] }
    let plain = try session(journal.path, printing)
    let prepared = try session(journal.path, ["prepare 200K", "prepare 200K", "prepare 1"] + printing)
    #expect(plain.err.isEmpty && prepared.err.isEmpty, "\(plain.err)\(prepared.err)")
    let lines = prepared.out.split(separator: "\n", omittingEmptySubsequences: false)
    let stopped = """
      keyframes every 1024 records over sequences 0...\(through) of \(last), where they reached the limit of \
      200 KB: a move to \(through + 1_023) or before now replays fewer than 1024, a later one starts from the \
      nearest keyframe or a snapshot (`prepare SIZE` with a larger limit lays more)
      """
    #expect(lines.count > 3 && lines[0] == stopped && lines[1] == stopped)
    #expect(
      lines.count > 3
        && lines[2] == "keyframes every 1024 records over sequences 0...\(last): a move now replays fewer than 1024")
    #expect(lines.dropFirst(3).joined(separator: "\n") == plain.out)
  }

  @Test(arguments: [
    "prepare now", "prepare 0", "prepare -5", "prepare 1 2", "prepare 1.5", "prepare 0G", "prepare K",
    "prepare 3T", "prepare 5ß",
  ])
  func prepareTakesOneSizeAtMost(line: String) async throws {
    let journal = try await NotebookJournal.write(commands: 5, seed: 42)
    let (out, err, _) = try session(journal.path, [line])
    #expect(err.contains("usage: prepare [SIZE]: the most the keyframes may take, a whole number from 1 of megabytes"))
    #expect(err.contains("not '\(line.dropFirst("prepare ".count))'"))
    #expect(out.isEmpty)
  }

  /// A whole number too large for bytes this process can count says so (it was refused as no
  /// whole number at all).
  @Test(arguments: [
    "prepare 99999999999G", "prepare 10000000000G", "prepare 9223372036855", "prepare 99999999999999999999",
  ])
  func aSizePastWhatBytesCanCountSaysSo(line: String) async throws {
    let journal = try await NotebookJournal.write(commands: 5, seed: 42)
    let (out, err, _) = try session(journal.path, [line])
    #expect(
      err
        == "error: prepare: usage: prepare [SIZE]: \(line.dropFirst("prepare ".count)) is more than this process "
        + "can count in bytes (at most 9223372036854 megabytes)\n")
    #expect(out.isEmpty)
  }

  /// Sizes as `prepare` takes them and says them.
  @Test func sizesInKilobytesMegabytesAndGigabytes() throws {
    #expect(try DebugSession.keyframeLimit(["512"]) == 512_000_000)
    #expect(try DebugSession.keyframeLimit(["500K"]) == 500_000)
    #expect(try DebugSession.keyframeLimit(["3M"]) == 3_000_000)
    #expect(try DebugSession.keyframeLimit(["2G"]) == 2_000_000_000)
    #expect(try DebugSession.keyframeLimit(["2g"]) == 2_000_000_000)
    #expect(try DebugSession.keyframeLimit(["300m"]) == 300_000_000)
    #expect(try DebugSession.keyframeLimit([]) == DebugSession.defaultKeyframeLimit)
    #expect(DebugSession.defaultKeyframeLimit > 0)
    #expect(DebugSession.size(2_000_000_000) == "2 GB")
    #expect(DebugSession.size(1_500_000) == "1500 KB")
    #expect(DebugSession.size(1_234) == "1234 bytes")
  }
}
