import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Review of mapped appends (FORMAT.md, "Mapped appends"): paths where the writer's bookkeeping
/// of the space it allocated could fall out of step with the file.
@Suite struct MappedAppendReviewTests {
  @Test func aRollThatFailsAfterCuttingTheSegmentLeavesLaterStoresInsideTheFile() async throws {
    // A roll cuts the segment back to its last frame, then creating the next segment fails (not
    // fatal: the append fails, the journal goes on). A smaller append that needs no roll is
    // stored into the same segment: the writer must allocate again first, as the cut took the
    // space it had allocated; stored past the end of the file it would be lost (in the file's
    // last page) or raise SIGBUS (past it).
    let dir = TemporaryDirectory("mapped-review-roll")
    let faults = FaultInjectingFileIO()
    let target = 64 << 10
    let journal = try Journal(directory: dir.path, options: MappedAppendTests.options(faults, segmentBytes: target))
    var batches: [[NewRecord]] = []
    for batch in MappedAppendTests.batches(400, seed: 41) {
      guard try PreallocationTests.lengths(dir.path).last!.used + 2_500 < target else { break }
      try await journal.append(batch)
      batches.append(batch)
    }
    let (size, used) = try PreallocationTests.lengths(dir.path).last!
    #expect(size > used, "space allocated ahead of the frames")

    faults.arm(.renameError(ENOSPC))
    let large = MappedAppendTests.batches(1, seed: 42, payload: 4_000)[0]
    do {
      try await journal.append(large)
      Issue.record("the roll should have failed")
    } catch let error as JournalError {
      #expect(error.code != .durabilityLost, "\(error)")
    }
    #expect(faults.struck == 1)
    #expect(journal.failure == nil, "a roll that failed before the next segment existed is not fatal")
    #expect(JournalFixtures.segments(dir.path).count == 1)

    let after = MappedAppendTests.batches(4, seed: 43)
    for batch in after { try await journal.append(batch) }
    batches += after
    #expect(JournalFixtures.segments(dir.path).count == 1, "small enough to need no roll")
    let expected = MappedAppendTests.records(batches)
    #expect(try JournalFixtures.readAll(dir.path) == expected, "acknowledged appends are in the file")
    journal.close()
    // The failed rename left the next segment's temporary file, which reopening moves aside.
    for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name.hasSuffix(".tmp") {
      try FileManager.default.removeItem(atPath: dir.appending(name))
    }
    try MappedAppendTests.expectClosed(dir.path, holds: expected)
  }

  /// The largest accepted `preallocationBytes` works under every policy: its window rounds to
  /// whole pages without overflow (above it, `Int.max` trapped there; now refused, see
  /// `JournalOptionsTests`) and allocation stops at the segment's target size.
  @Test(arguments: [Durability.none, .always])
  func theLargestPreallocationAcceptedWorks(durability: Durability) async throws {
    let dir = TemporaryDirectory("mapped-review-large-window")
    let faults = FaultInjectingFileIO()
    var options = MappedAppendTests.options(faults, segmentBytes: 64 << 10)
    options.durability = durability
    options.preallocationBytes = JournalOptions.maximumPreallocationBytes
    #expect(options.problem == nil)
    let journal = try Journal(directory: dir.path, options: options)
    let batches = MappedAppendTests.batches(400, seed: 44)
    for batch in batches { try await journal.append(batch) }
    #expect(JournalFixtures.segments(dir.path).count > 1, "the journal should have rolled")
    for (size, _) in try PreallocationTests.lengths(dir.path) { #expect(size <= 64 << 10 + 1 << 10) }
    if durability == .none { #expect(faults.segmentWrites == 0, "through the mapping") }
    journal.close()
    try MappedAppendTests.expectClosed(dir.path, holds: MappedAppendTests.records(batches))
  }

  /// A follower in this process reads what a writer in another process stores through its
  /// mapping (`journal-crash-child`, `none`, 64 KiB segments: many windows and rolls, groups
  /// mapped and written): the same page cache, and frames caught half stored read as the end
  /// for now, never as damage.
  @Test func aFollowerInThisProcessSeesWhatAWriterInAnotherStoresThroughItsMapping() async throws {
    let dir = TemporaryDirectory("mapped-review-child")
    let child = try ChildProcess(executable: try CrashTests.child(), arguments: ["append", dir.path, "none", "2"])
    #expect(try await child.waitForLine { $0.hasPrefix("open") }, "the child did not open the journal")
    let count = 20_000
    let follower = try FollowTests.follow(dir.path, from: 1, count: count)
    let seen = try await follower.value
    let acknowledged = child.lines
    try await child.kill()
    #expect(seen.count == count)
    #expect(seen.map(\.sequence) == Array(1...UInt64(seen.count)))
    var checked = 0
    for line in acknowledged {
      let parts = line.split(separator: " ")
      guard parts.count == 4, parts[0] == "ack", let first = Int(parts[1]), let last = Int(parts[2]) else { continue }
      for sequence in first...last where sequence <= seen.count {
        let payload = String(decoding: seen[sequence - 1].payload.prefix(while: { $0 != 0x2E }), as: UTF8.self)
        #expect(payload == "\(parts[3])/\(sequence - first)", "record \(sequence)")
        checked += 1
      }
    }
    #expect(checked > count / 2, "acknowledged records were checked")
    #expect(JournalFixtures.segments(dir.path).count > 2, "the child's journal rolled")
  }
}
