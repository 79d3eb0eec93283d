import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

@testable import Notebook
@testable import Rewind

/// A time machine driven through a seeded random walk over a journal with everything a real one
/// holds (upcast events, checkpoints, snapshots at several intervals, pruned, segments compacted,
/// a live manager appending and compacting), checked after every move against a plain replay:
/// the state at S is the state `Replay.rebuild` gives through S, whatever path got there.
@Suite struct TimeTravelDifferentialTests {
  /// Small segments and frames: many segments, several index entries each, some compacted.
  static var options: JournalOptions {
    var options = JournalOptions(durability: .none)
    options.segmentTargetBytes = 6 << 10
    options.frameTargetBytes = 512
    options.indexIntervalBytes = 1 << 10
    return options
  }

  /// The journal: a notebook and notes written as version 1 of `NoteCreated` (replay upcasts
  /// them), a seeded workload with checkpoints, snapshots every 41 records (3 kept), the sealed
  /// segments compacted, more of the workload with checkpoints, and snapshots every 29 records
  /// (4 kept, so some of the older interval's remain).
  static func journal(_ directory: String) async throws {
    let journal = try Journal(directory: directory, options: options)
    let book = NotebookID(Identifier(high: 9, low: 1))
    let events: [any Event] =
      [NotebookCreated(id: book, title: "old book")]
      + (2...6).map {
        NoteCreatedV1(id: NoteID(Identifier(high: 9, low: $0)), notebook: book, title: "old \($0)", body: "")
      }
      + [NoteRetitled(id: NoteID(Identifier(high: 9, low: 3)), title: "renamed")]
    for (index, event) in events.enumerated() {
      let command = Identifier(high: 8, low: UInt64(index + 1))
      try journal.appendAndWait(
        [NewRecord(timestamp: Int64(index), payload: try EventRecord.encode(event, origin: .user, commandID: command))])
    }
    journal.close()

    try await writeWorkload(
      directory, seed: 71, commands: 260, options: options, ids: .sequential(prefix: 1), checkpointEvery: 45
    ).close()
    try Snapshots.update(Workspace.self, directory: directory, every: 41, keep: 3)
    let compactor = try Journal(directory: directory, options: options)
    let report = try compactor.compactSealedSegments()
    compactor.close()
    try #require(report.compacted.count >= 2, "\(report)")
    try await writeWorkload(
      directory, seed: 72, commands: 160, options: options, ids: .sequential(prefix: 2), checkpointEvery: 50
    ).close()
    try Snapshots.update(Workspace.self, directory: directory, every: 29, keep: 4)
    let verified = try Replay.verify(Workspace.self, directory: directory)
    try #require(verified.checkpointsVerified >= 7 && verified.firstDivergence == nil, "\(verified)")
    try #require(verified.snapshotsVerified == 4 && verified.snapshotDivergences.isEmpty, "\(verified)")
    // The old notes, upcast (the workload may change them later).
    let state = try Replay.rebuild(Workspace.self, directory: directory, through: UInt64(events.count)).state
    try #require(Note.note(id: NoteID(Identifier(high: 9, low: 3)), in: state)?.title == "renamed")
    try #require(Note.notes(inNotebook: book, in: state).count == 5)
  }

  /// What replay rebuilds through each sequence number asked, kept.
  final class Reference {
    let directory: String
    private var digests: [UInt64: StateDigest] = [:]
    init(_ directory: String) { self.directory = directory }
    func digest(through sequence: UInt64) throws -> StateDigest {
      if let digest = digests[sequence] { return digest }
      let digest = try StateDigest.of(Replay.rebuild(Workspace.self, directory: directory, through: sequence).state)
      digests[sequence] = digest
      return digest
    }
  }

  @Test(arguments: [1 as UInt64, 2, 3, 4])
  func aRandomWalkAgreesWithReplay(seed: UInt64) async throws {
    let temporary = TemporaryDirectory()
    let directory = temporary.path
    try await Self.journal(directory)
    let reference = Reference(directory)
    var random = SeededGenerator(seed: seed)
    // Keyframes from every record to every 64th, from 2 at most (each seek drops one) to 50:
    // seeds 1 to 4 take each of both once.
    let keyframeInterval = [1, 7, 16, 64][Int(seed % 4)]
    let maxKeyframes = [2, 3, 12, 50][Int(seed * 3 % 4)]
    let machine = try TimeMachine<Workspace>(
      directory: directory, keyframeInterval: UInt64(keyframeInterval), maxKeyframes: maxKeyframes)
    var log = ["keyframes every \(keyframeInterval), at most \(maxKeyframes)"]
    var live: NotebookManager?
    defer { live?.close() }
    var appended = 0

    for move in 0..<70 {
      let last = machine.lastSequence
      let snapshots = SnapshotStore(journal: directory).sequences()
      let before = machine.position
      var expected: UInt64
      switch Int.random(in: 0..<14, using: &random) {
      case 0:
        expected = UInt64.random(in: 0...last, using: &random)
        try machine.jump(to: expected)
        log.append("jump \(expected)")
      case 1:
        let count = Int.random(in: -40...40, using: &random)
        expected = count >= 0 ? min(last, before + UInt64(count)) : before - min(before, UInt64(-count))
        try machine.step(by: count)
        log.append("step \(count)")
      case 2:
        let count = Bool.random(using: &random) ? 1 : -1
        expected = count > 0 ? min(last, before + 1) : before - min(before, 1)
        try machine.step(by: count)
        log.append("step \(count)")
      case 3:
        // A limit small enough to stop some calls part way, or none.
        let limit =
          Int.random(in: 0..<4, using: &random) == 0 ? nil : Int.random(in: 20_000...1_500_000, using: &random)
        let coverage = try machine.prepare(memoryLimit: limit)
        #expect(coverage.through <= last, "\(coverage)")
        expected = before
        log.append("prepare \(String(describing: limit)) -> \(coverage)")
        if Bool.random(using: &random) {
          expected = coverage.through
          try machine.jump(to: expected)
          log.append("jump \(expected)")
        }
      case 4:
        expected = 0
        try machine.jump(to: 0)
        log.append("jump 0")
      case 5:
        expected = last
        try machine.jump(to: last)
        log.append("jump last \(last)")
      case 6:
        let past = last + UInt64.random(in: 1...1_000, using: &random)
        expected = last
        try machine.jump(to: Bool.random(using: &random) ? past : .max)
        log.append("jump past \(past)")
      case 7:
        let oldest = snapshots.first ?? last
        expected = UInt64.random(in: 0..<max(1, oldest), using: &random)
        try machine.jump(to: expected)
        log.append("jump before the oldest snapshot \(oldest): \(expected)")
      case 8:
        // Looking does not move.
        let at = UInt64.random(in: 0...last + 5, using: &random)
        let looked = try machine.state(at: at)
        #expect(
          try StateDigest.of(looked) == reference.digest(through: min(at, last)), "state(at: \(at)) after \(log)")
        expected = before
        log.append("look \(at)")
      case 9 where snapshots.count > 0:
        // At a snapshot, and one record either side.
        let snapshot = snapshots.randomElement(using: &random)!
        expected = min(last, snapshot + UInt64(Int.random(in: 0...2, using: &random))) - 1
        try machine.jump(to: expected)
        log.append("jump near snapshot \(snapshot): \(expected)")
      case 10:
        // What one event did, applied to the state before it, is what replay's two states differ by.
        let at = UInt64.random(in: 1...max(1, last), using: &random)
        let effect = try machine.effect(of: at)
        let diff = StateDiff.between(
          try Replay.rebuild(Workspace.self, directory: directory, through: at - 1).state,
          try Replay.rebuild(Workspace.self, directory: directory, through: at).state, from: at - 1, to: at)
        let changed = diff.collections.flatMap { changes in
          (changes.inserted + changes.updated + changes.removed).map { "\(changes.name)/\($0.id) \($0.kind)" }
        }
        if let effect {
          #expect(effect.event.envelope.sequence == at)
          let touched = effect.records.filter { $0.change != .unchanged }.map { "\($0.store)/\($0.id) \($0.change)" }
          #expect(Set(touched) == Set(changed), "effect of \(at) after \(log)")
        } else {
          #expect(try machine.event(at: at) == nil && changed.isEmpty, "\(at): a checkpoint changes nothing")
        }
        expected = before
        log.append("effect \(at)")
      default:
        // A live manager appends (its journal compacting sealed segments as it goes), snapshots
        // follow, and the time machine refreshes.
        if live == nil {
          var options = Self.options
          options.compactsSealedSegments = true
          live = try NotebookManager(
            directory: directory, options: options, clock: .stepping(from: 1_800_000_000_000_000_000),
            ids: .sequential(prefix: 3))
        }
        appended += 1
        try await drive(
          try #require(live), seed: seed * 100 + UInt64(appended), commands: 40, checkpointEvery: 15)
        try Snapshots.update(Workspace.self, directory: directory, every: 23, keep: 3)
        try machine.refresh()
        #expect(machine.lastSequence == live?.lastSequence)
        expected = before
        log.append("refresh -> \(machine.lastSequence)")
      }
      #expect(machine.position == expected, "move \(move): \(log)")
      #expect(
        try StateDigest.of(machine.state) == reference.digest(through: machine.position), "move \(move): \(log)")
      #expect(machine.skippedSnapshots.isEmpty, "\(machine.skippedSnapshots)")
    }
    #expect(appended > 0 && log.contains { $0.hasPrefix("prepare") }, "\(log)")
  }

  /// The test journal, and a copy of it to damage.
  static func copy(_ temporary: TemporaryDirectory) async throws -> (intact: String, copy: String) {
    let intact = temporary.appending("intact")
    try await journal(intact)
    let copy = temporary.appending("copy")
    try Files.copyDirectory(intact, to: copy)
    return (intact, copy)
  }

  /// The segment in the middle of `directory`'s, and its batches.
  static func middleSegment(_ directory: String) throws -> (name: String, frames: [SegmentFrame]) {
    let segments = Files.list(directory).filter { $0.hasSuffix(".lz4") }
    let name = segments[segments.count / 2]
    return (name, segmentFrames(in: try Files.read(directory + "/" + name)))
  }

  /// The test journal, and a copy of it whose middle segment's middle batch fails its checksum
  /// (a byte of its data flipped): the segment's name and that batch.
  static func copyWithADamagedFrame(_ temporary: TemporaryDirectory) async throws
    -> (intact: String, copy: String, segment: String, frame: SegmentFrame)
  {
    let (intact, copy) = try await Self.copy(temporary)
    let (name, frames) = try Self.middleSegment(copy)
    let frame = frames[frames.count / 2]
    var bytes = try Files.read(copy + "/" + name)
    bytes[frame.middleOfData] ^= 0x20
    try Files.write(bytes, to: copy + "/" + name)
    return (intact, copy, name, frame)
  }

  /// A frame in the middle of the journal fails its checksum: seeks before it are served, seeks
  /// that reach it throw the journal's error locating it and leave the time machine where it
  /// stood, and a seek that starts from a snapshot after it does not read it.
  @Test func aSeekIntoADamagedFrameThrowsItAndMovesNothing() async throws {
    let temporary = TemporaryDirectory()
    let (intact, copy, name, frame) = try await Self.copyWithADamagedFrame(temporary)
    let reference = Reference(intact)
    let before = frame.sequences.lowerBound - 1
    let snapshot = try #require(SnapshotStore(journal: copy).sequences().first)
    try #require(snapshot > frame.sequences.upperBound + 1)

    let machine = try TimeMachine<Workspace>(directory: copy, keyframeInterval: 16, maxKeyframes: 12)
    #expect(machine.endHiddenBy == nil, "damage inside the history hides no end")
    try machine.jump(to: before)
    for target in [frame.sequences.lowerBound, frame.sequences.upperBound + 1, snapshot - 1] {
      let error = #expect(throws: JournalError.self, "jump to \(target)") { try machine.jump(to: target) }
      #expect(error?.code == .corrupt, "\(String(describing: error))")
      #expect(error?.file == name && error?.offset == Int64(frame.offset), "\(String(describing: error))")
      #expect(error?.sequences == frame.sequences, "\(String(describing: error))")
      #expect(machine.position == before)
      #expect(try StateDigest.of(machine.state) == reference.digest(through: before))
    }
    #expect(throws: JournalError.self) { try machine.prepare() }
    #expect(throws: JournalError.self) { try machine.prepare(memoryLimit: 1 << 30) }
    #expect(throws: JournalError.self) { try machine.state(at: snapshot - 1) }
    // From the snapshot after the damage: the state the journal held, its records not read.
    try machine.jump(to: snapshot + 1)
    #expect(try StateDigest.of(machine.state) == reference.digest(through: snapshot + 1))
    try machine.step(by: -Int(snapshot + 1 - before))
    #expect(machine.position == before)
    #expect(try StateDigest.of(machine.state) == reference.digest(through: before))
  }

  /// A snapshot file damaged on disk is skipped and reported, never trusted: the seek starts from
  /// an older one and gives the state replay gives.
  @Test func aCorruptedSnapshotIsSkippedAndReported() async throws {
    let temporary = TemporaryDirectory()
    let (intact, copy) = try await Self.copy(temporary)
    let reference = Reference(intact)
    let sequences = SnapshotStore(journal: copy).sequences()
    try #require(sequences.count >= 2)
    let newest = sequences[sequences.count - 1]
    let path = copy + "/snapshots/" + SnapshotStore.fileName(newest)
    var bytes = try Files.read(path)
    bytes[bytes.count - 10] ^= 0x01  // in the state
    try Files.write(bytes, to: path)

    let machine = try TimeMachine<Workspace>(directory: copy, keyframeInterval: 16, maxKeyframes: 12)
    try machine.jump(to: newest + 1)
    #expect(machine.skippedSnapshots.map(\.sequence) == [newest], "\(machine.skippedSnapshots)")
    guard case .corrupt = machine.skippedSnapshots.first?.reason else {
      Issue.record("\(machine.skippedSnapshots)")
      return
    }
    #expect(machine.recordsApplied == Int(newest + 1 - sequences[sequences.count - 2]), "from the one before")
    #expect(try StateDigest.of(machine.state) == reference.digest(through: newest + 1))
    try machine.jump(to: newest)
    #expect(try StateDigest.of(machine.state) == reference.digest(through: newest))
  }

  /// A seek whose closest snapshot was found unusable starts from the usable one before it, as
  /// the first seek that found it did, instead of replaying from wherever it stands.
  @Test func aSeekPastAnUnusableSnapshotStartsFromTheOneBefore() async throws {
    let temporary = TemporaryDirectory()
    let (intact, copy) = try await Self.copy(temporary)
    let reference = Reference(intact)
    let sequences = SnapshotStore(journal: copy).sequences()
    try #require(sequences.count >= 2)
    let (older, newest) = (sequences[sequences.count - 2], sequences[sequences.count - 1])
    try Files.write(Array("garbage".utf8), to: copy + "/snapshots/" + SnapshotStore.fileName(newest))

    // Two keyframes at most: a seek near the start leaves none near the end.
    let machine = try TimeMachine<Workspace>(directory: copy, keyframeInterval: 16, maxKeyframes: 2)
    try machine.jump(to: newest + 1)
    #expect(machine.skippedSnapshots.map(\.sequence) == [newest], "\(machine.skippedSnapshots)")
    #expect(machine.recordsApplied == Int(newest + 1 - older))
    try machine.jump(to: 40)
    let (applied, reads) = (machine.recordsApplied, machine.snapshotsRead)
    try machine.jump(to: newest + 1)
    #expect(machine.recordsApplied - applied == Int(newest + 1 - older), "from \(older), not from 40")
    #expect(machine.snapshotsRead == reads + 1)
    #expect(try StateDigest.of(machine.state) == reference.digest(through: newest + 1))
  }

  /// A segment missing in the middle (the index names it): the records before it are intact, and
  /// served as from an intact journal, as `lastIntactSequence` says; a seek that reaches it
  /// throws the journal's error naming it, and leaves the time machine where it stood.
  @Test func aMissingSegmentHidesOnlyTheRecordsFromIt() async throws {
    let temporary = TemporaryDirectory()
    let (intact, copy) = try await Self.copy(temporary)
    let reference = Reference(intact)
    let (name, frames) = try Self.middleSegment(copy)
    try FileManager.default.removeItem(atPath: copy + "/" + name)
    let first = try #require(frames.first?.sequences.lowerBound)
    let gone = first...(try #require(frames.last?.sequences.upperBound))
    let snapshot = try #require(SnapshotStore(journal: copy).sequences().first)
    try #require(snapshot > gone.upperBound + 1)

    #expect(
      try StateDigest.of(Replay.rebuild(Workspace.self, directory: copy, through: first - 1).state)
        == reference.digest(through: first - 1))
    let machine = try TimeMachine<Workspace>(directory: copy, keyframeInterval: 16, maxKeyframes: 12)
    #expect(machine.endHiddenBy?.file == name, "\(String(describing: machine.endHiddenBy))")
    #expect(machine.lastIntactSequence == first - 1)
    try machine.jump(to: first - 1)
    #expect(machine.position == first - 1)
    #expect(try StateDigest.of(machine.state) == reference.digest(through: first - 1))
    let coverage = try machine.prepare(memoryLimit: 1 << 30, through: machine.lastIntactSequence)
    #expect(!coverage.stoppedByLimit && coverage.through <= first - 1, "\(coverage)")
    let whole = try TimeMachine<Workspace>(directory: intact)
    for sequence in (first - 4)...(first - 1) {
      #expect(
        try machine.commandEnd(from: sequence, through: first - 1)
          == whole.commandEnd(from: sequence, through: first - 1))
      // The event itself, and what it did (`rewind debug` and `show` print them).
      #expect(try machine.event(at: sequence)?.envelope == whole.event(at: sequence)?.envelope)
      #expect(try machine.effect(of: sequence)?.keys == whole.effect(of: sequence)?.keys)
    }
    let error = #expect(throws: JournalError.self) { try machine.event(at: first) }
    #expect(error?.code == .sequenceBreak && error?.sequences == gone, "\(String(describing: error))")
    for target in [first, gone.upperBound + 1, snapshot - 1] {
      let error = #expect(throws: JournalError.self, "jump to \(target)") { try machine.jump(to: target) }
      #expect(error?.code == .sequenceBreak && error?.file == name, "\(String(describing: error))")
      #expect(error?.sequences == gone, "\(String(describing: error))")
      #expect(machine.position == first - 1)
      #expect(try StateDigest.of(machine.state) == reference.digest(through: first - 1))
    }
    // From the snapshot after the gap: the state the journal held, the gap not read.
    try machine.jump(to: snapshot + 1)
    #expect(try StateDigest.of(machine.state) == reference.digest(through: snapshot + 1))
  }
}
