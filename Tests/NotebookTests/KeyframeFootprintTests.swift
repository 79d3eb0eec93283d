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
      for store in StateInspector.stores(of: state) { store.addStorage(to: &census) }
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
}
