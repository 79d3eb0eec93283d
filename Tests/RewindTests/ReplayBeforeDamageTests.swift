import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// Replay to a target before damage that hides the journal's end: it asked the journal for its
/// end first (`lastSequence()`, which reads to the end) and so refused every target. Now only
/// the records up to the target need to be intact; a target at or past the damage still fails
/// with the journal's located error, never with a state short of it.
@Suite struct ReplayBeforeDamageTests {
  enum Damage: String, CaseIterable, CustomTestStringConvertible {
    /// The last segment cut short after its first frame, before batches the index names.
    case atTheEnd
    /// A byte flipped in the data of a frame in the middle of the last segment, after the last
    /// index entry (one before an entry, or in a sealed segment, hides no end: the end is looked
    /// for from the last entry, in sealed segments by batch headers).
    case flipped
    var testDescription: String { rawValue }
  }

  /// 90 crates placed, one frame each, over several small segments (with dense index entries
  /// for `atTheEnd`, which they witness; one a segment for `flipped`), damaged as `damage` says;
  /// with the last sequence number read intact before the damage.
  static func damaged(_ damage: Damage, _ temporary: TemporaryDirectory) throws -> (directory: String, intact: UInt64) {
    let directory = temporary.appending("journal")
    var options = JournalOptions(durability: .none)
    options.segmentTargetBytes = 1024
    options.indexIntervalBytes = damage == .atTheEnd ? 64 : 1 << 20
    try TimeMachineRefreshTests.placeCrates(directory, ids: 1...90, options: options)
    try #require(Files.list(directory).filter { $0.hasSuffix(".lz4") }.count > 3)
    try damageLastSegment(in: directory, cut: damage == .atTheEnd)
    // What a reader gets before the damage; the end is hidden.
    let reader = try JournalReader(directory: directory)
    let (intact, stoppedBy) = try intactPrefix(of: directory)
    let error = try #require(stoppedBy, "the journal reads whole")
    #expect(error.code == .corrupt || error.code == .sequenceBreak, "\(error)")
    #expect(throws: JournalError.self) { try reader.lastSequence() }
    try #require(intact > 10 && intact < 88)
    return (directory, intact)
  }

  /// The state after `sequence`, replayed from an intact copy of the records (crates 1...sequence).
  static func expectCrates(_ state: Shelves, through sequence: UInt64, _ comment: Comment? = nil) {
    #expect(state.crates.count == Int(sequence), comment)
  }

  @Test(arguments: Damage.allCases)
  func replayToATargetBeforeTheDamage(damage: Damage) throws {
    let temporary = TemporaryDirectory()
    let (directory, intact) = try Self.damaged(damage, temporary)
    for target in [1, intact / 2, intact] {
      let rebuilt = try Replay.rebuild(Shelves.self, directory: directory, through: target)
      #expect(rebuilt.lastSequence == target)
      Self.expectCrates(rebuilt.state, through: target)
      let outcome = try Replay.run(Shelves.self, directory: directory, to: .sequence(target))
      #expect(outcome.report.lastSequence == target)
      Self.expectCrates(outcome.state, through: target)
      // Crate N is stamped N. At `intact`, the time's end lies in the damage (the records after
      // it might be stamped at it): that fails below.
      guard target < intact else { continue }
      let byTime = try Replay.run(Shelves.self, directory: directory, to: .time(Int64(target)))
      #expect(byTime.report.lastSequence == target)
    }
    // At and past the damage, and to the end: the journal's error, located.
    let past: [ReplayTarget] = [.sequence(intact + 1), .sequence(90), .sequence(.max), .end, .time(Int64(intact))]
    for target in past {
      let error = #expect(throws: JournalError.self, "\(target)") {
        _ = try Replay.run(Shelves.self, directory: directory, to: target)
      }
      #expect(error?.code == .corrupt || error?.code == .sequenceBreak, "\(String(describing: error))")
      #expect(error?.file != nil, "located: \(String(describing: error))")
    }
    #expect(throws: JournalError.self) { try Replay.rebuild(Shelves.self, directory: directory, through: intact + 1) }
  }

  /// A snapshot after the damage is no start for a target before it; one before it is used. A
  /// target after a snapshot past a damaged frame is served from it, the frame stepped over by its
  /// header (records gone at the end are not); the end stays hidden.
  @Test(arguments: Damage.allCases)
  func snapshotsAroundTheDamage(damage: Damage) throws {
    let temporary = TemporaryDirectory()
    let (directory, intact) = try Self.damaged(damage, temporary)
    let store = SnapshotStore(journal: directory)
    try store.write(Replay.rebuild(Shelves.self, directory: directory, through: intact / 2).state, at: intact / 2)
    // Not the state at 89 (no replay reaches it): one that would show if it were used. It names
    // record 89 where the journal can read it (`write(_:at:)` reads it, and refuses a record in
    // the damage); where the damage holds it, readers cannot check it, and it names none.
    let record = try? JournalReader(directory: directory).record(89, readingAroundMissingSegments: true)
    try store.write(
      Replay.rebuild(Shelves.self, directory: directory, through: intact).state, at: 89,
      lastRecord: record.map(SnapshotFile.recordDigest(of:)) ?? SnapshotFile.noRecord)
    let outcome = try Replay.run(Shelves.self, directory: directory, to: .sequence(intact - 1))
    #expect(outcome.report.snapshotSequence == intact / 2)
    #expect(outcome.report.skippedSnapshots.isEmpty, "\(outcome.report.skippedSnapshots)")
    Self.expectCrates(outcome.state, through: intact - 1)
    switch damage {
    case .atTheEnd:
      #expect(throws: JournalError.self) { _ = try Replay.run(Shelves.self, directory: directory, to: .sequence(90)) }
    case .flipped:
      // It threw the frame's checksum error: the cursor to record 90 checked the frame on its way.
      let past = try Replay.run(Shelves.self, directory: directory, to: .sequence(90))
      #expect(past.report.snapshotSequence == 89 && past.report.lastSequence == 90)
      Self.expectCrates(past.state, through: intact + 1, "the snapshot's state, and crate 90")
    }
    #expect(throws: JournalError.self) { _ = try Replay.run(Shelves.self, directory: directory, to: .end) }
  }

  /// A time machine opens on such a journal: jumps before the damage are served, one at or past
  /// it (and `prepare()`) throw the journal's error.
  @Test(arguments: Damage.allCases)
  func timeMachineBeforeAndAfterTheDamage(damage: Damage) throws {
    let temporary = TemporaryDirectory()
    let (directory, intact) = try Self.damaged(damage, temporary)
    let machine = try TimeMachine<Shelves>(directory: directory, keyframeInterval: 8)
    #expect(machine.endHiddenBy != nil)
    Self.expectCrates(try machine.jump(to: intact), through: intact)
    Self.expectCrates(try machine.jump(to: 3), through: 3)
    Self.expectCrates(try machine.jump(toTime: Int64(intact - 1)), through: intact - 1)
    #expect(try machine.diff(from: 2, to: 5).collections.first?.inserted.count == 3)
    for target in [intact + 1, 90] {
      let error = #expect(throws: JournalError.self) { try machine.jump(to: target) }
      #expect(error?.file != nil, "located: \(String(describing: error))")
      #expect(machine.position == intact - 1, "left where it stood")
    }
    #expect(throws: JournalError.self) { try machine.prepare() }
    #expect(throws: JournalError.self) { try machine.refresh() }
    #expect(machine.endHiddenBy != nil, "left as it was")
    // A repair moves the damage aside: the end can be read again.
    _ = try Journal.repair(directory: directory)
    try machine.refresh()
    #expect(machine.endHiddenBy == nil)
    #expect(machine.lastSequence == intact)
    Self.expectCrates(try machine.jump(to: 90), through: intact)
    Self.expectCrates(try machine.jump(to: intact - 2), through: intact - 2)
  }

  /// The passes over the history (`blame`, `bisect`, `firstFailure`, `commandEnd`, `prepare`) read
  /// to the end, and so throw the damage; given `through: lastIntactSequence`, they answer for
  /// the records before it (what `rewind blame`, `bisect` and `debug` serve).
  @Test(arguments: Damage.allCases)
  func passesOverTheHistoryStopWhereTheyAreTold(damage: Damage) throws {
    let temporary = TemporaryDirectory()
    let (directory, intact) = try Self.damaged(damage, temporary)
    let machine = try TimeMachine<Shelves>(directory: directory, keyframeInterval: 8)
    #expect(machine.lastSequence == .max && machine.lastIntactSequence == intact)
    let holds = Invariant<Shelves>("always") { _ in true }
    let fewCrates = Invariant<Shelves>("fewer than 5 crates") { $0.crates.count < 5 }
    #expect(throws: JournalError.self) { try machine.blame(entity: "3") }
    #expect(throws: JournalError.self) { try machine.bisect(holds) }
    #expect(throws: JournalError.self) { try machine.firstFailure(of: holds) }
    #expect(throws: JournalError.self) { try machine.commandEnd(from: 3) }
    let blamed = try machine.blame(entity: "3", through: intact)
    #expect(blamed.map(\.event.envelope.sequence) == [3] && blamed.first?.store == "crates")
    #expect(try machine.blame(entity: String(intact + 1), through: intact).isEmpty)
    #expect(try machine.bisect(holds, through: intact) == nil)
    #expect(try machine.firstFailure(of: holds, through: intact) == nil)
    // Every crate is placed under one command id: the command runs to the last intact record.
    #expect(try machine.commandEnd(from: 3, through: intact) == intact)
    #expect(try machine.bisect(fewCrates, through: intact) == intact)
    #expect(try machine.firstFailure(of: fewCrates, through: intact) == intact)
    let coverage = try machine.prepare(through: intact)
    #expect(coverage.through <= intact && !coverage.stoppedByLimit)
    _ = try Journal.repair(directory: directory)
    try machine.refresh()
    #expect(machine.lastIntactSequence == machine.lastSequence && machine.lastSequence == intact)
  }
}
