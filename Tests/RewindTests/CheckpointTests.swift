import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// A counter whose encoding (what a digest hashes) a test can hold, to catch a checkpoint's
/// digest while it is being computed.
struct Tally: SnapshotModel {
  var count = ValueStore<Int>(name: "count", initial: 0)

  static func registerEvents(in registry: inout EventRegistry<Tally>) {
    registry.register(Counted.self) { model, event, context in
      model.count.set(model.count.value + event.by, context: &context)
    }
  }

  private enum CodingKeys: String, CodingKey { case count }

  init() {}

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    count = try container.decode(ValueStore<Int>.self, forKey: .count)
  }

  func encode(to encoder: any Encoder) throws {
    if count.value != 0 { EncodingHold.shared.pass() }  // the empty state (the fingerprint's) never waits
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(count, forKey: .count)
  }
}

struct Counted: Event {
  static let name = "tally.counted"
  var by: Int
}

/// Holds `Tally`'s encoding, once armed, until `release()`, or for at most `limit` seconds so that
/// code that waits for the holder itself (a digest computed inside the funnel) fails the test
/// instead of hanging it.
///
/// `@unchecked Sendable`: `armed`, `entered`, `holding`, `released` and `timedOut` are read and
/// written only while holding `condition`.
final class EncodingHold: @unchecked Sendable {
  static let shared = EncodingHold()
  private let condition = NSCondition()
  private var armed = false
  private var entered = false
  private var holding = false
  private var released = false
  private var timedOut = false
  let limit: TimeInterval = 60

  func arm() {
    condition.lock()
    (armed, entered, holding, released, timedOut) = (true, false, false, false, false)
    condition.unlock()
  }

  /// Called by the encoding: once armed, waits until released (or `limit` runs out).
  func pass() {
    condition.lock()
    defer { condition.unlock() }
    guard armed else { return }
    armed = false
    (entered, holding) = (true, true)
    let deadline = Date(timeIntervalSinceNow: limit)
    while !released, condition.wait(until: deadline) {}
    timedOut = !released
    holding = false
  }

  private func read<T>(_ value: () -> T) -> T {
    condition.lock()
    defer { condition.unlock() }
    return value()
  }

  /// Whether an encoding came to the hold since `arm()`.
  var hasEntered: Bool { read { entered } }
  /// Whether an encoding waits in the hold now.
  var isHolding: Bool { read { holding } }
  /// Whether the last encoding held went on because `limit` ran out, not because of `release()`.
  var hasTimedOut: Bool { read { timedOut } }

  func release() {
    condition.lock()
    released = true
    condition.broadcast()
    condition.unlock()
  }
}

/// Checkpoints as marks in the funnel and digests computed beside it, and the checkpoints of
/// format 1 (`rewind.checkpoint`), which journals keep and verification keeps comparing.
@Suite(.serialized) struct CheckpointTests {
  /// Starts a checkpoint and returns once its digest's computation is held (`EncodingHold`), its
  /// mark committed; the caller releases the hold.
  private func checkpointHeldWhileItsDigestIsComputed(_ manager: Manager<Tally>) async throws -> (
    Task<StateDigest, any Error>, EncodingHold
  ) {
    let hold = EncodingHold.shared
    hold.arm()
    let checkpoint = Task { try await manager.recordCheckpoint() }
    var polls = 0
    while !hold.hasEntered, polls < 60_000 {
      try await Task.sleep(for: .milliseconds(1))
      polls += 1
    }
    #expect(hold.hasEntered)
    return (checkpoint, hold)
  }

  private func manager(_ directory: TemporaryDirectory) throws -> Manager<Tally> {
    try Manager<Tally>(
      directory: directory.path, options: JournalOptions(durability: .none), clock: .stepping(from: 1_000),
      ids: .sequential())
  }

  private func count(_ manager: Manager<Tally>, by amount: Int) async throws {
    try await manager.perform(.user) { _, command in command.record(Counted(by: amount)) }
  }

  /// Every record's event name, by sequence number from 1.
  /// The digest of the state whose count is 1: a checkpoint's, marked after one count.
  private func digestOfCountOne() throws -> StateDigest {
    var one = Tally()
    var context = ApplyContext(recording: false)
    one.count.set(1, context: &context)
    return try StateDigest.of(one)
  }

  private func names(_ directory: TemporaryDirectory) throws -> [String] {
    let cursor = try JournalReader(directory: directory.path).records(from: 1)
    var names: [String] = []
    while let record = try cursor.next() { names.append(try EventRecord.header(of: record.payload).name) }
    return names
  }

  /// The digest's state is the one at the mark, and a command issued while the digest is computed
  /// commits while it is still being computed, before the digest record: the funnel does not wait
  /// for the hash. (With the digest computed inside the funnel, the command waited for it: the
  /// hold ran out, and the command landed after the checkpoint.)
  /// The work a checkpoint's digest and the snapshots' upkeep hand off runs on threads of their
  /// own, not on the tasks' shared threads: more hand-offs blocked at once than there are shared
  /// threads leave a task free to run and release them (run in place, they would hold every
  /// shared thread until their waits gave up). Their values and errors come back.
  @Test(.timeLimit(.minutes(10))) func handedOffWorkLeavesTheSharedThreadsFree() async throws {
    let release = DispatchSemaphore(value: 0)
    let count = ProcessInfo.processInfo.activeProcessorCount + 1
    try await withThrowingTaskGroup(of: Bool.self) { group in
      for _ in 0..<count {
        group.addTask {
          try await onThreadOfItsOwn(named: "rewind.test.handoff") { release.wait(timeout: .now() + 300) == .success }
        }
      }
      group.addTask {
        for _ in 0..<count { release.signal() }
        return true
      }
      for try await released in group { #expect(released) }
    }
    await #expect(throws: CancellationError.self) {
      try await onThreadOfItsOwn(named: "rewind.test.handoff") { () throws -> Int in throw CancellationError() }
    }
  }

  @Test func aCommandIssuedWhileTheDigestIsComputedLandsFirst() async throws {
    let directory = TemporaryDirectory()
    let manager = try manager(directory)
    try await count(manager, by: 1)
    let (checkpoint, hold) = try await checkpointHeldWhileItsDigestIsComputed(manager)
    // Issued while the digest is being computed: with the funnel free, it commits at once. (The
    // wait is bounded well past the hold's limit, so that a held funnel fails the test, not hangs it.)
    let landed = Task { try await count(manager, by: 10) }
    var waited = 0
    while manager.state.count.value != 11, waited < 120_000 {
      try await Task.sleep(for: .milliseconds(1))
      waited += 1
    }
    let committedWhileHeld = hold.isHolding
    hold.release()
    try await landed.value
    let digest = try await checkpoint.value
    manager.close()
    #expect(committedWhileHeld)
    #expect(!hold.hasTimedOut)
    #expect(try names(directory) == [Counted.name, CheckpointMark.name, Counted.name, CheckpointDigest.name])
    // The digest is that of the state at the mark (count 1), not of the state after the command.
    #expect(digest == (try digestOfCountOne()))
    let report = try Replay.verify(Tally.self, directory: directory.path)
    #expect(report.checkpointsVerified == 1)
    #expect(report.firstDivergence == nil)
    #expect(report.unfinishedCheckpoints.isEmpty)
  }

  /// A checkpoint whose task is cancelled once its mark is committed (while its digest is being
  /// computed) still appends the digest and returns it. It used to throw `CancellationError` from
  /// the digest's command, reporting as not done a checkpoint whose mark was in the journal, and
  /// leaving that mark without its digest.
  @Test func aCheckpointCancelledAfterItsMarkStillRecordsItsDigest() async throws {
    let directory = TemporaryDirectory()
    let manager = try manager(directory)
    try await count(manager, by: 1)
    let (checkpoint, hold) = try await checkpointHeldWhileItsDigestIsComputed(manager)
    checkpoint.cancel()
    hold.release()
    let digest = try await checkpoint.value
    try await count(manager, by: 1)
    manager.close()
    #expect(!hold.hasTimedOut)
    #expect(try names(directory) == [Counted.name, CheckpointMark.name, CheckpointDigest.name, Counted.name])
    #expect(digest == (try digestOfCountOne()))
    let report = try Replay.verify(Tally.self, directory: directory.path)
    #expect(report.checkpointsVerified == 1)
    #expect(report.unfinishedCheckpoints.isEmpty)
  }

  /// `verify(through:)` judges the records through that number only, as `rewind verify` asks of
  /// a live journal: a mark whose digest comes later is unfinished there, and records after it are
  /// not applied.
  @Test func verifyThroughASequenceStopsThere() async throws {
    let directory = TemporaryDirectory()
    let manager = try manager(directory)
    try await count(manager, by: 1)
    try await manager.recordCheckpoint()  // 2 mark, 3 digest
    try await count(manager, by: 1)
    manager.close()
    let atTheMark = try Replay.verify(Tally.self, directory: directory.path, through: 2)
    #expect(atTheMark.lastSequence == 2)
    #expect(atTheMark.checkpointsVerified == 0)
    #expect(atTheMark.unfinishedCheckpoints == [2])
    let whole = try Replay.verify(Tally.self, directory: directory.path)
    #expect(whole.lastSequence == 4)
    #expect(whole.checkpointsVerified == 1)
    #expect(whole.unfinishedCheckpoints.isEmpty)
  }

  /// A digest that disagrees with the state at its mark is reported at the mark's sequence number,
  /// with the digest record's; it is the first divergence even when a later checkpoint that also
  /// disagrees is compared before the digest comes.
  @Test func aMismatchingDigestIsReportedAtItsMark() async throws {
    let directory = TemporaryDirectory()
    let manager = try manager(directory)
    try await count(manager, by: 1)
    try await manager.recordCheckpoint()  // 2 mark, 3 digest: agrees
    try await count(manager, by: 2)
    let fingerprint = Tally.fingerprint
    let wrong = StateDigest(bytes: SHA256.hash([7]))
    try await manager.perform(.rewind) { _, command in command.record(CheckpointMark(fingerprint: fingerprint)) }
    let mark = manager.lastSequence  // 5
    try await count(manager, by: 3)
    // A checkpoint of format 1 that disagrees too, after the mark but compared before its digest.
    try await manager.perform(.rewind) { _, command in
      command.record(Checkpoint(digest: wrong, fingerprint: fingerprint))
    }
    let laterBad = manager.lastSequence  // 7
    try await manager.perform(.rewind) { _, command in
      command.record(CheckpointDigest(mark: mark, digest: wrong, fingerprint: fingerprint))
    }
    let digestSequence = manager.lastSequence  // 8
    try await manager.recordCheckpoint()  // agrees
    manager.close()

    let report = try Replay.verify(Tally.self, directory: directory.path)
    #expect(report.checkpointsVerified == 4)
    #expect(report.firstDivergence?.sequence == mark)
    #expect(report.firstDivergence?.digestSequence == digestSequence)
    #expect(report.firstDivergence?.recorded == wrong.description)
    #expect(mark < laterBad && laterBad < digestSequence)
    let description = report.firstDivergence?.description ?? ""
    #expect(description.hasPrefix("checkpoint marked at sequence \(mark) (digest at sequence \(digestSequence))"))
    #expect(report.strayCheckpointDigests.isEmpty)
  }

  /// A mark whose digest never came (the writer stopped first) is reported as unfinished, compared
  /// with nothing and changes nothing; a digest naming a record that is no mark is reported.
  @Test func aMarkWithoutADigestIsHarmlessAndAStrayDigestIsReported() async throws {
    let directory = TemporaryDirectory()
    let manager = try manager(directory)
    try await count(manager, by: 4)
    let fingerprint = Tally.fingerprint
    try await manager.perform(.rewind) { _, command in command.record(CheckpointMark(fingerprint: fingerprint)) }
    let mark = manager.lastSequence
    try await count(manager, by: 5)
    let live = manager.state
    manager.close()

    let report = try Replay.verify(Tally.self, directory: directory.path)
    #expect(report.unfinishedCheckpoints == [mark])
    #expect(report.checkpointsVerified == 0)
    #expect(report.firstDivergence == nil)
    #expect(report.strayCheckpointDigests.isEmpty)
    #expect(try Replay.rebuild(Tally.self, directory: directory.path).state == live)
    #expect(
      try Replay.events(of: Tally.self, directory: directory.path).map(\.envelope.name) == [Counted.name, Counted.name])

    // A digest naming the first record, a `Counted`, not a mark.
    let reopened = try self.manager(directory)
    let state = reopened.state
    try await reopened.perform(.rewind) { _, command in
      command.record(CheckpointDigest(mark: 1, digest: try StateDigest.of(state), fingerprint: fingerprint))
    }
    let stray = reopened.lastSequence
    reopened.close()
    let again = try Replay.verify(Tally.self, directory: directory.path)
    #expect(again.strayCheckpointDigests == [stray])
    #expect(again.unfinishedCheckpoints == [mark])
  }

  /// Replay holds the state of at most `maximumHeldMarks` marks waiting for their digests (marks
  /// left by writers that stopped would otherwise each hold one to the end): beyond, the oldest is
  /// given up, and a digest that names it after all is counted as not compared, not as stray.
  @Test func replayHoldsTheStatesOfBoundedlyManyMarks() async throws {
    let directory = TemporaryDirectory()
    let manager = try manager(directory)
    let fingerprint = Tally.fingerprint
    var marks: [UInt64] = []
    var states: [Tally] = []
    for _ in 0...Replay.maximumHeldMarks {
      try await count(manager, by: 1)
      let state = manager.state
      try await manager.perform(.rewind) { _, command in command.record(CheckpointMark(fingerprint: fingerprint)) }
      marks.append(manager.lastSequence)
      states.append(state)
    }
    // Digests of the first mark (given up by now) and of the last, both right.
    for index in [0, marks.count - 1] {
      let digest = try StateDigest.of(states[index])
      try await manager.perform(.rewind) { _, command in
        command.record(CheckpointDigest(mark: marks[index], digest: digest, fingerprint: fingerprint))
      }
    }
    manager.close()

    let report = try Replay.verify(Tally.self, directory: directory.path)
    #expect(report.checkpointsVerified == 1)
    #expect(report.checkpointsSkipped == 1)
    #expect(report.firstDivergence == nil)
    #expect(report.strayCheckpointDigests.isEmpty)
    #expect(report.unfinishedCheckpoints == Array(marks.dropFirst().dropLast()))
  }

  /// Checkpoints of format 1, as a manager wrote them before marks (the digest computed in the
  /// command body), verify as before: compared when the fingerprint matches, the first that
  /// disagrees named, those of other code counted and not compared.
  @Test func formatOneCheckpointsStillVerify() async throws {
    let directory = TemporaryDirectory()
    let manager = try manager(directory)
    let fingerprint = Tally.fingerprint
    // As `recordCheckpoint()` wrote them: the digest of the state the command body sees.
    func formatOne(_ digest: StateDigest?, by code: StateDigest) async throws {
      try await manager.perform(.rewind) { state, command in
        command.record(Checkpoint(digest: try digest ?? StateDigest.of(state), fingerprint: code))
      }
    }
    try await count(manager, by: 1)
    try await formatOne(nil, by: fingerprint)
    try await count(manager, by: 2)
    try await formatOne(StateDigest(bytes: SHA256.hash([9])), by: fingerprint)
    let bad = manager.lastSequence
    try await formatOne(nil, by: StateDigest(bytes: SHA256.hash([8])))
    try await manager.recordCheckpoint()
    try await formatOne(nil, by: fingerprint)
    manager.close()

    let report = try Replay.verify(Tally.self, directory: directory.path)
    #expect(report.checkpointsVerified == 4)
    #expect(report.checkpointsSkipped == 1)
    #expect(report.firstDivergence?.sequence == bad)
    #expect(report.firstDivergence?.digestSequence == nil)
    #expect(report.firstDivergence?.description.hasPrefix("checkpoint at sequence \(bad) recorded digest") == true)
  }

  /// The fingerprint is the one SNAPSHOTS.md describes, with `rewind.checkpoint` among the
  /// registered events and the mark and digest not: listing them would change every model's
  /// fingerprint, and the checkpoints and snapshots written before them would no longer be
  /// compared or used.
  @Test func theFingerprintLeavesTheMarkAndDigestOut() throws {
    var writer = FieldBytesWriter()
    writer.appendString("rewind.fingerprint.v1")
    writer.appendString(String(reflecting: Tally.self))
    writer.appendVarint(1)
    let lines = ["rewind.checkpoint@1<-", "tally.counted@1<-"]
    writer.appendVarint(UInt64(lines.count))
    for line in lines { writer.appendString(line) }
    writer.bytes += try CanonicalEncoding.encode(Tally())
    #expect(Tally.fingerprint == StateDigest(bytes: SHA256.hash(writer.bytes)))
  }
}
