import Notebook
import Rewind
import RewindTestSupport
import Testing

@testable import Rewind

/// What a time machine's keyframes hold (`TimeMachine.keyframeFootprint`): the states at their
/// sequence numbers, sharing every node the events between two of them did not change.
@Suite struct KeyframeFootprintTests {
  /// Levels of the deepest tree of `state`'s record stores (1: a root that is a leaf).
  func levels(_ state: Workspace) -> Int {
    func levels<K, V>(_ tree: RecordTree<K, V>) -> Int {
      guard var node = tree.root else { return 0 }
      var count = 1
      while !node.isLeaf {
        node = node.child(at: 0)
        count += 1
      }
      return count
    }
    return [levels(state.notes.records), levels(state.notebooks.records), levels(state.readingList.records)].max()!
  }

  /// After `prepare()` with a keyframe every 4 records, each keyframe adds to what the keyframes
  /// before it hold at most two nodes per level for each key the events since the previous one
  /// touched (the path copied to it, and the halves of the nodes an insert split), and together
  /// they hold a small part of what as many separate states would.
  @Test func keyframesShareTheNodesTheirIntervalDidNotTouch() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 97, commands: 1_200).close()
    let machine = try TimeMachine<Workspace>(
      directory: directory.path, keyframeInterval: 4, maxKeyframes: 4_096, useSnapshots: false)
    try machine.prepare()
    #expect(machine.keyframeSpacing == 4)
    let sequences = Array(stride(from: 4, through: machine.lastSequence, by: 4))
    #expect(sequences.count > 250)
    let states = try sequences.map { try machine.state(at: $0) }
    #expect(machine.keyframeFootprint == StorageFootprint.of(states))

    var census = StorageCensus()
    var separate = 0
    for (index, state) in states.enumerated() {
      let held = census.footprint.nodes
      census.add(state)
      separate += StorageFootprint.of([state]).nodes
      guard index > 0 else { continue }
      var touched = 0
      for sequence in (sequences[index - 1] + 1)...sequences[index] {
        touched += try machine.effect(of: sequence)?.keys.count ?? 0
      }
      let added = census.footprint.nodes - held
      #expect(added <= touched * 2 * levels(state) + 1, "keyframe at \(sequences[index])")
    }
    #expect(census.footprint == machine.keyframeFootprint)
    #expect(census.footprint.nodes * 4 < separate, "\(census.footprint.nodes) shared, \(separate) separate")
  }

  // MARK: - A memory limit

  /// A time machine over a workload's journal, reading no snapshot; by default a keyframe every
  /// 16 records, and room for all of them.
  static func machine(_ directory: String, interval: UInt64 = 16, maxKeyframes: Int = 4_096) throws
    -> TimeMachine<Workspace>
  {
    try TimeMachine<Workspace>(
      directory: directory, keyframeInterval: interval, maxKeyframes: maxKeyframes, useSnapshots: false)
  }

  /// With a limit, `prepare` lays keyframes until the first one that takes what they hold past
  /// it, and no more: those before it hold no more than the limit, it holds more, none lies past
  /// it, and it replayed no record past it. Seeks past it still land on the right states, and a
  /// second `prepare` without a limit lays the rest, as one without a limit lays them all.
  @Test func aMemoryLimitStopsTheKeyframesAtTheFirstOneThatPassesIt() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 97, commands: 1_200).close()
    let whole = try Self.machine(directory.path)
    let all = try whole.prepare()
    #expect(!all.stoppedByLimit && all.spacing == 16)
    #expect(all.through == whole.lastSequence / 16 * 16)
    let full = whole.keyframeFootprint.bytes

    let limit = full / 3
    let limited = try Self.machine(directory.path)
    let coverage = try limited.prepare(memoryLimit: limit)
    #expect(coverage.stoppedByLimit && coverage.spacing == 16)
    #expect(coverage.through > 16 && coverage.through < all.through && coverage.through % 16 == 0)
    #expect(limited.recordsApplied == Int(coverage.through), "replayed through the last keyframe, no further")
    let laid = try stride(from: 16, through: coverage.through, by: 16).map { try limited.state(at: $0) }
    #expect(limited.recordsApplied == Int(coverage.through), "every keyframe through it was laid")
    #expect(limited.keyframeFootprint == StorageFootprint.of(laid), "no keyframe past the last one")
    #expect(limited.keyframeFootprint.bytes > limit, "the last keyframe passed the limit")
    #expect(StorageFootprint.of(laid.dropLast()).bytes <= limit, "the ones before it did not")

    for target in [coverage.through + 5, coverage.through + 40, all.through + 3, limited.lastSequence] {
      #expect(try StateDigest.of(limited.state(at: target)) == StateDigest.of(whole.state(at: target)), "at \(target)")
    }
    let rest = try Self.machine(directory.path)
    #expect(try rest.prepare(memoryLimit: limit) == coverage)
    // The limit counts the keyframes already kept: they hold more than it, so none is laid.
    #expect(try rest.prepare(memoryLimit: limit) == coverage)
    #expect(rest.recordsApplied == Int(coverage.through))
    #expect(try rest.prepare() == all)
    #expect(rest.keyframeFootprint == whole.keyframeFootprint)
  }

  /// A `prepare` the limit stopped leaves seeks keeping keyframes at the keyframe interval, as
  /// before it, not at its wider spacing, where a seek to the end would lay the keyframes the
  /// limit refused: here the seek keeps its keyframes every 4 records, at most 16 of them.
  @Test func aStoppedPrepareLeavesSeeksKeepingKeyframesAtTheInterval() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 99, commands: 1_200).close()
    func machine() throws -> TimeMachine<Workspace> { try Self.machine(directory.path, interval: 4, maxKeyframes: 16) }
    let whole = try machine()
    let all = try whole.prepare()
    #expect(all.spacing > 40 && whole.keyframeSpacing == all.spacing, "the spacing widened to fit 16 keyframes")
    let limited = try machine()
    let coverage = try limited.prepare(memoryLimit: whole.keyframeFootprint.bytes / 4)
    #expect(coverage.stoppedByLimit && coverage.spacing == all.spacing && coverage.through < all.through)
    #expect(limited.keyframeSpacing == 4)
    let end = limited.lastSequence
    #expect(try StateDigest.of(limited.jump(to: end)) == StateDigest.of(whole.state(at: end)))
    // The seek kept keyframes every 4 records on its way (the last 16 of them): a move back
    // within 4 records of one replays fewer than 4.
    let applied = limited.recordsApplied
    #expect(try StateDigest.of(limited.state(at: end / 4 * 4 - 5)) == StateDigest.of(whole.state(at: end / 4 * 4 - 5)))
    #expect(limited.recordsApplied - applied < 4)
  }

  /// Seeks after a `prepare` the limit stopped keep keyframes at the interval, and those count
  /// toward `maxKeyframes`; a later `prepare` that lays the rest then drops them, not the ones
  /// the first one laid: every point of the history is within the spacing of a keyframe.
  @Test func seeksAfterAStoppedPrepareDoNotPushOutItsKeyframes() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 99, commands: 1_200).close()
    let whole = try Self.machine(directory.path, interval: 4, maxKeyframes: 16)
    let all = try whole.prepare()
    let machine = try Self.machine(directory.path, interval: 4, maxKeyframes: 16)
    let coverage = try machine.prepare(memoryLimit: whole.keyframeFootprint.bytes / 3)
    #expect(coverage.stoppedByLimit && coverage.through >= 2 * all.spacing)
    // Five keyframes at the interval, past the prepared ones.
    try machine.jump(to: coverage.through + 20)
    #expect(try machine.prepare() == all)
    for keyframe in stride(from: all.spacing, through: all.through, by: Int(all.spacing)) {
      let applied = machine.recordsApplied
      let target = keyframe + all.spacing - 1
      #expect(try StateDigest.of(machine.state(at: target)) == StateDigest.of(whole.state(at: target)))
      #expect(machine.recordsApplied - applied < Int(all.spacing), "a seek to \(target)")
    }
  }

  /// A limit the keyframes never reach changes nothing: the same keyframes, the same nodes.
  @Test func aLimitTheKeyframesDoNotReachLaysThemAll() async throws {
    let directory = TemporaryDirectory()
    try await writeWorkload(directory.path, seed: 98, commands: 400).close()
    let whole = try Self.machine(directory.path)
    let all = try whole.prepare()
    let limited = try Self.machine(directory.path)
    #expect(try limited.prepare(memoryLimit: whole.keyframeFootprint.bytes) == all)
    #expect(limited.keyframeFootprint == whole.keyframeFootprint)
    #expect(limited.recordsApplied == whole.recordsApplied)
  }
}
