import Foundation
import RewindTestSupport
import Synchronization
import Testing

@testable import RewindJournal

/// Readers following the tail see every committed record exactly once, in order, also across
/// segment rolls.
@Suite struct FollowTests {
  /// How far a follower got, for its watchdog.
  private final class Progress: Sendable {
    let seen = Atomic<Int>(0)
    let finished = Atomic<Bool>(false)
  }

  /// Follows `directory` from `start` until `count` records were seen, then cancels itself.
  /// A watchdog cancels it once it has seen no new record for two minutes, so a lost record fails
  /// the test instead of hanging it. (Not a limit on the whole run: on a loaded machine, with
  /// every suite running at once, a follower that keeps up may take longer than that.)
  static func follow(_ directory: String, from start: UInt64, count: Int) throws -> Task<[JournalRecord], any Error> {
    let reader = try JournalReader(directory: directory)
    let progress = Progress()
    let task = Task {
      defer { progress.finished.store(true, ordering: .releasing) }
      var seen: [JournalRecord] = []
      for try await record in reader.follow(from: start, pollInterval: .milliseconds(1)) {
        seen.append(record)
        progress.seen.store(seen.count, ordering: .relaxed)
        if seen.count == count { withUnsafeCurrentTask { $0?.cancel() } }
      }
      return seen
    }
    Task {
      var last = -1
      var quietSeconds = 0
      while !progress.finished.load(ordering: .acquiring) {
        try await Task.sleep(for: .seconds(5))
        let seen = progress.seen.load(ordering: .relaxed)
        quietSeconds = seen == last ? quietSeconds + 5 : 0
        last = seen
        if quietSeconds >= 120 {
          task.cancel()
          return
        }
      }
    }
    return task
  }

  /// A follower that starts between a new journal's manifest and its first segment (a writer
  /// creating it) sees the records appended once the segment exists.
  @Test func aFollowerStartedBeforeTheFirstSegmentSeesItsRecords() async throws {
    let dir = TemporaryDirectory("follow")
    try Files.write(Manifest(journalID: .random()).encoded(), to: dir.path + "/" + Layout.manifestName)
    let follower = try Self.follow(dir.path, from: 1, count: 3)
    try await Task.sleep(for: .milliseconds(50))
    let journal = try Journal(directory: dir.path)
    try journal.appendAndWait((1...3).map { NewRecord(timestamp: 1, payload: [UInt8($0)]) })
    journal.close()
    #expect(try await follower.value.map(\.sequence) == [1, 2, 3])
  }

  @Test(arguments: [Durability.none, .batched])
  func aFollowerSeesEveryRecordOnceWhileAWriterAppends(durability: Durability) async throws {
    let dir = TemporaryDirectory("follow")
    let options = JournalFixtures.options(durability, segmentBytes: 2 << 10, frameBytes: 512)
    let journal = try Journal(directory: dir.path, options: options)
    let batches = 150
    // Concurrent appenders, so frames hold several batches; the follower starts first. Each on a
    // thread of its own, so that the appenders interleave with one another and with the
    // followers without a `Task.yield()` after each append (a turn of the shared threads each,
    // minutes in a loaded parallel run).
    var random = SeededGenerator(seed: 61)
    let plan = (0..<batches).map { _ in Int.random(in: 1...6, using: &random) }
    let total = plan.reduce(0, +)
    let follower = try Self.follow(dir.path, from: 1, count: total)
    let lateFollower = try Self.follow(dir.path, from: UInt64(total / 2), count: total - total / 2 + 1)
    try await withThrowingTaskGroup(of: Void.self) { group in
      for lane in 0..<4 {
        group.addTask {
          try await onOwnThread {
            for (index, count) in plan.enumerated() where index % 4 == lane {
              let batch = (0..<count).map { NewRecord(timestamp: Int64(index), payload: Array("b\(index)r\($0)".utf8)) }
              _ = try journal.appendAndWait(batch)
            }
          }
        }
      }
      try await group.waitForAll()
    }
    #expect(journal.lastSequence == UInt64(total))
    #expect(JournalFixtures.segments(dir.path).count > 3, "the follower should cross segment rolls")
    let written = try JournalFixtures.readAll(dir.path)
    #expect(try await follower.value == written)
    #expect(try await lateFollower.value == Array(written[(total / 2 - 1)...]))
    journal.close()
  }

  @Test func aFollowerStartedOnAnEmptyJournalSeesTheFirstRecords() async throws {
    let dir = TemporaryDirectory("follow-empty")
    let journal = try Journal(directory: dir.path, options: JournalFixtures.options(segmentBytes: 1 << 10))
    let follower = try Self.follow(dir.path, from: 1, count: 30)
    for index in 0..<30 {
      try await journal.append([
        NewRecord(timestamp: Int64(index), payload: [UInt8](repeating: UInt8(index), count: 60))
      ])
    }
    let seen = try await follower.value
    #expect(seen.map(\.sequence) == Array(1...30))
    #expect(seen.map { $0.payload.first } == (0..<30).map { UInt8($0) })
    journal.close()
  }

  @Test func aFollowerNeverSeesPartOfAGroupWrittenInOneCall() async throws {
    // Big records from concurrent appenders: one write call holds several frames, and a
    // follower polling meanwhile may see any prefix of it.
    let dir = TemporaryDirectory("follow-big")
    let journal = try Journal(
      directory: dir.path, options: JournalFixtures.options(segmentBytes: 256 << 10, frameBytes: 8 << 10))
    let total = 8 * 40
    let follower = try Self.follow(dir.path, from: 1, count: total)
    try await withThrowingTaskGroup(of: Void.self) { group in
      for lane in 0..<8 {
        group.addTask {
          var random = SeededGenerator(seed: UInt64(lane))
          for index in 0..<40 {
            try await journal.append([
              NewRecord(timestamp: Int64(index), payload: [UInt8(lane)] + random.bytes(3_000 + lane * 500))
            ])
          }
        }
      }
      try await group.waitForAll()
    }
    let written = try JournalFixtures.readAll(dir.path)
    #expect(written.count == total)
    #expect(try await follower.value == written)
    journal.close()
  }

  /// Records 1-3 appended to a new journal in `directory` and returned by a follower, then the
  /// last frame damaged and moved aside by repair (the journal cut back to 2): the follower,
  /// the segment's name and its bytes before the repair.
  static func followThreeThenCutToTwo(_ directory: String) async throws -> (
    iterator: JournalFollower.AsyncIterator, segment: String, bytes: [UInt8]
  ) {
    let journal = try Journal(directory: directory)
    for n in 1...3 { try journal.appendAndWait([NewRecord(timestamp: Int64(n), payload: Array("record \(n)".utf8))]) }
    journal.close()
    var iterator = try JournalReader(directory: directory).follow(pollInterval: .milliseconds(1)).makeAsyncIterator()
    for n in 1...3 { #expect(try await iterator.next()?.sequence == UInt64(n)) }
    let segment = try #require(JournalFixtures.segments(directory).first)
    var bytes = try Files.read(directory + "/" + segment)
    bytes[bytes.count - 6] ^= 0x20  // in the last frame
    try Files.write(bytes, to: directory + "/" + segment)
    try #require(try Journal.repair(directory: directory).lastSequence == 2)
    return (iterator, segment, bytes)
  }

  /// A follower that returned records 1-3 of a journal that repair then cut back to 2, and that
  /// a writer then wrote again to 4 (record 3 as long as the one moved aside, so record 4 starts
  /// where the follower stopped reading): it says the journal was cut instead of going on with
  /// record 4 of the other history.
  @Test(.timeLimit(.minutes(10))) func aFollowerReportsAJournalCutAndWrittenAgain() async throws {
    let dir = TemporaryDirectory("follow")
    let (followed, segment, bytes) = try await Self.followThreeThenCutToTwo(dir.path)
    var iterator = followed
    let again = try Journal(directory: dir.path)
    try again.appendAndWait([NewRecord(timestamp: 3, payload: Array("RECORD 3".utf8))])
    try again.appendAndWait([NewRecord(timestamp: 4, payload: Array("record 4".utf8))])
    again.close()
    try #require(try Files.read(dir.path + "/" + segment).count > bytes.count)

    let error = await #expect(throws: JournalError.self) { _ = try await iterator.next() }
    #expect(error?.code == .shortened, "\(String(describing: error))")
    #expect(error?.sequences == 3...3, "\(String(describing: error))")
    #expect(error?.description.contains("was cut, and perhaps written again") == true, "\(String(describing: error))")
  }

  /// A follower that returned records 1-3 of a journal that repair then cut back to 2, and that
  /// a writer then wrote again with a record 3 longer than the one moved aside: the follower's
  /// next read, where record 3 ended, lands inside the new record 3's frame. With record 4
  /// after it (`appended` 2) that read is not a batch, followed by one: damage, had the journal
  /// not been cut; with nothing after it (1) it is what a frame still being written looks like.
  /// Not written again (0), the segment ends before that place. Each time the follower says the
  /// journal was cut, instead of calling it damaged or waiting for ever.
  @Test(arguments: [0, 1, 2]) func aFollowerReportsAJournalCutBeforeWhereItStopped(appended: Int)
    async throws
  {
    let dir = TemporaryDirectory("follow")
    let (iterator, segment, bytes) = try await Self.followThreeThenCutToTwo(dir.path)
    if appended > 0 {
      let again = try Journal(directory: dir.path)
      var random = SeededGenerator(seed: 94)
      try again.appendAndWait([NewRecord(timestamp: 3, payload: random.bytes(200))])
      if appended > 1 { try again.appendAndWait([NewRecord(timestamp: 4, payload: Array("record 4".utf8))]) }
      again.close()
      let record3 = try JournalReader(directory: dir.path).records(from: 3)
      _ = try record3.next()
      let place = try #require(record3.lastBatch)
      try #require(
        place.offset < bytes.count && place.offset + place.header.totalLength > bytes.count + Layout.batchHeaderSize,
        "the new record 3 reaches past where the follower stopped")
    }
    try #require(try JournalFixtures.readAll(dir.path).count == 2 + appended)

    // A follower that misses the cut waits for ever: a watchdog ends it.
    let next = Self.nextWithinPatience(iterator)
    let error = await #expect(throws: JournalError.self) { _ = try await next.value }
    #expect(error?.code == .shortened, "\(String(describing: error))")
    #expect(error?.sequences == 3...3, "\(String(describing: error))")
    #expect(error?.file == segment, "\(String(describing: error))")
    #expect(error?.description.contains("was cut, and perhaps written again") == true, "\(String(describing: error))")
  }

  /// How long a follower test waits for the follower before it gives up: the follower's task
  /// runs on the cooperative pool, which the full suite's blocking tests can hold for minutes on
  /// two cores (a wait of two minutes once ended before the follower resumed from a 1 ms sleep).
  /// Forty one-record appends of 100 seeded random bytes under `none`, in segments of 2 KiB (four
  /// of them), into `directory`: the options they were written with, and the generator, for
  /// more records like them.
  static func fortyRecordsInSmallSegments(_ directory: String, seed: UInt64) throws -> (
    JournalOptions, SeededGenerator
  ) {
    var options = JournalOptions(durability: .none)
    options.segmentTargetBytes = 2048
    let journal = try Journal(directory: directory, options: options)
    var random = SeededGenerator(seed: seed)
    for n in 1...40 { try journal.appendAndWait([NewRecord(timestamp: Int64(n), payload: random.bytes(100))]) }
    journal.close()
    return (options, random)
  }

  static let patience: Duration = .seconds(600)

  /// A task for `iterator`'s next record, which a watchdog cancels after `patience` (the
  /// follower then returns nil): a follower that would wait for ever fails the test instead of
  /// hanging it.
  static func nextWithinPatience(_ iterator: sending JournalFollower.AsyncIterator) -> Task<JournalRecord?, any Error> {
    let next = Task { [iterator] in
      var iterator = iterator
      return try await iterator.next()
    }
    let watchdog = Task {
      try await Task.sleep(for: patience)
      next.cancel()
    }
    return Task {
      defer { watchdog.cancel() }
      return try await next.value
    }
  }

  /// A follower at the end of the last of four segments, which `repair` then moves aside
  /// (`damage` 0: its segment header damaged, and its first batch header, since a damaged
  /// header over batches that hold is written again, not moved; 1: its first frame), and into
  /// which a writer then
  /// appends again (`appended` records, in a new segment of the same name): it says the journal
  /// was cut. Before, it waited for ever at the end of the file it held open, the one moved into
  /// quarantine. So does a follower that returned no record (`fromTheEnd`), started after the
  /// last one as `rewind tail -f` starts its follower, and waiting there when the repair came.
  @Test(arguments: [(0, 0, false), (0, 3, false), (1, 0, false), (1, 3, false), (0, 0, true), (1, 3, true)])
  func aFollowerReportsTheSegmentItReadMovedAside(damage: Int, appended: Int, fromTheEnd: Bool) async throws {
    let dir = TemporaryDirectory("follow")
    var (options, random) = try Self.fortyRecordsInSmallSegments(dir.path, seed: 122)
    let segments = JournalFixtures.segments(dir.path).sorted()
    try #require(segments.count == 4)
    let last = segments[3]
    let cutAndWriteAgain = {
      var bytes = try Files.read(dir.path + "/" + last)
      bytes[damage == 0 ? 2 : Layout.segmentHeaderSize + Layout.batchHeaderSize + 4] ^= 0x20
      if damage == 0 { bytes[Layout.segmentHeaderSize + 20] ^= 0x20 }
      try Files.write(bytes, to: dir.path + "/" + last)
      try #require(try Journal.repair(directory: dir.path).lastSequence == 30)
      guard appended > 0 else { return }
      let again = try Journal(directory: dir.path, options: options)
      for n in 31...(30 + appended) {
        try again.appendAndWait([NewRecord(timestamp: Int64(n), payload: random.bytes(100))])
      }
      again.close()
      try #require(JournalFixtures.segments(dir.path).sorted() == segments)
    }

    let io = IdlePollCountingFileIO()
    var iterator = try JournalReader(directory: dir.path, io: io)
      .follow(from: fromTheEnd ? 41 : 1, pollInterval: .milliseconds(1)).makeAsyncIterator()
    let next: Task<JournalRecord?, any Error>
    if fromTheEnd {
      next = Self.nextWithinPatience(iterator)
      let deadline = ContinuousClock.now + Self.patience
      while io.idlePolls.load(ordering: .relaxed) == 0 && ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(1))
      }
      try #require(io.idlePolls.load(ordering: .relaxed) > 0, "the follower waits after record 40")
      try cutAndWriteAgain()
    } else {
      for n in 1...40 { #expect(try await iterator.next()?.sequence == UInt64(n)) }
      try cutAndWriteAgain()
      next = Self.nextWithinPatience(iterator)
    }

    let error = await #expect(throws: JournalError.self) { _ = try await next.value }
    #expect(error?.code == .shortened, "\(String(describing: error))")
    #expect(error?.file == last, "\(String(describing: error))")
    #expect(error?.sequences == 40...40, "\(String(describing: error))")
  }

  /// The same from the start of an empty last segment (what `rewind compact --all`, or a writer
  /// opened with `sealsLastSegmentOnOpening`, leaves): the cursor made there had read no batch,
  /// so when `repair` moved that segment and the one before aside and a writer wrote other
  /// records under the same numbers, the follower had nothing to check and served them as if
  /// they went on from what it had read. It now finds the batch before its start once, and
  /// reports the cut.
  @Test(arguments: [0, 15])
  func aFollowerAtTheStartOfAnEmptyLastSegmentReportsACut(appended: Int) async throws {
    let dir = TemporaryDirectory("follow-empty-last")
    var (options, random) = try Self.fortyRecordsInSmallSegments(dir.path, seed: 123)
    var sealing = options
    sealing.sealsLastSegmentOnOpening = true
    try Journal(directory: dir.path, options: sealing).close()
    let segments = JournalFixtures.segments(dir.path).sorted()
    try #require(segments.count == 5 && segments[4] == Layout.segmentName(firstSequence: 41))

    let io = IdlePollCountingFileIO()
    let iterator = try JournalReader(directory: dir.path, io: io)
      .follow(from: 41, pollInterval: .milliseconds(1)).makeAsyncIterator()
    let next = Self.nextWithinPatience(iterator)
    let deadline = ContinuousClock.now + Self.patience
    while io.idlePolls.load(ordering: .relaxed) == 0 && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(1))
    }
    try #require(io.idlePolls.load(ordering: .relaxed) > 0, "the follower waits at the start of segment 41")
    // Damage in the first frame of the segment before: repair moves it and the empty one aside.
    let held = dir.path + "/" + segments[3]
    var bytes = try Files.read(held)
    bytes[Layout.segmentHeaderSize + Layout.batchHeaderSize + 4] ^= 0x20
    try Files.write(bytes, to: held)
    let ends = try Journal.repair(directory: dir.path).lastSequence
    try #require(ends < 40)
    if appended > 0 {
      let again = try Journal(directory: dir.path, options: options)
      for n in 1...appended {
        try again.appendAndWait([NewRecord(timestamp: Int64(100 + n), payload: random.bytes(100))])
      }
      try #require(again.lastSequence > 41, "other records under the numbers the follower waits for")
      again.close()
    }

    let error = await #expect(throws: JournalError.self) { _ = try await next.value }
    #expect(error?.code == .shortened, "\(String(describing: error))")
    #expect(error?.file == segments[3] && error?.sequences == 40...40, "\(String(describing: error))")
  }

  /// A follower whose journal's directory is moved away and another journal made in its place:
  /// it said the journal was cut. It says the directory holds another journal now.
  @Test func aFollowerSaysWhenTheDirectoryHoldsAnotherJournal() async throws {
    let parent = TemporaryDirectory("follow-replaced")
    let path = parent.appending("journal")
    var random = SeededGenerator(seed: 124)
    let journal = try Journal(directory: path, options: JournalOptions(durability: .none))
    for n in 1...10 { try journal.appendAndWait([NewRecord(timestamp: Int64(n), payload: random.bytes(50))]) }
    journal.close()
    var iterator = try JournalReader(directory: path).follow(from: 1, pollInterval: .milliseconds(1))
      .makeAsyncIterator()
    for n in 1...10 { #expect(try await iterator.next()?.sequence == UInt64(n)) }
    let followed = try JournalReader(directory: path).id
    try FileManager.default.moveItem(atPath: path, toPath: parent.appending("old"))
    let other = try Journal(directory: path, options: JournalOptions(durability: .none))
    for n in 1...20 { try other.appendAndWait([NewRecord(timestamp: Int64(n), payload: random.bytes(50))]) }
    other.close()
    let now = try JournalReader(directory: path).id
    try #require(now != followed)
    let next = Self.nextWithinPatience(iterator)
    let error = await #expect(throws: JournalError.self) { _ = try await next.value }
    #expect(error?.code == .shortened, "\(String(describing: error))")
    #expect(
      error?.message.hasPrefix("the directory holds another journal now (\(now), where \(followed) was followed)")
        == true, "\(String(describing: error))")
  }

  /// Counts the polls of a follower that found nothing new (each compares the segment file it
  /// holds open with the journal's file of that name).
  final class IdlePollCountingFileIO: ForwardingFileIO {
    let base: any FileIO = PosixFileIO()
    let idlePolls = Atomic<Int>(0)

    func isFile(_ fd: Int32, at path: String) -> Bool {
      idlePolls.add(1, ordering: .relaxed)
      return base.isFile(fd, at: path)
    }
  }

  /// A follower at the end of a segment that is then replaced by a copy of itself (as a restore
  /// from a backup would): what it read is still there, so it reads on, from the new file, the
  /// records a writer appends to it.
  @Test func aFollowerReadsOnFromASegmentReplacedByACopy() async throws {
    let dir = TemporaryDirectory("follow")
    let journal = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    for n in 1...3 { try journal.appendAndWait([NewRecord(timestamp: Int64(n), payload: Array("record \(n)".utf8))]) }
    journal.close()
    var iterator = try JournalReader(directory: dir.path).follow(pollInterval: .milliseconds(1)).makeAsyncIterator()
    for n in 1...3 { #expect(try await iterator.next()?.sequence == UInt64(n)) }
    let segment = dir.path + "/" + (try #require(JournalFixtures.segments(dir.path).first))
    try Files.write(try Files.read(segment), to: segment + ".copy")
    try #require(rename(segment + ".copy", segment) == 0)
    let more = try Journal(directory: dir.path, options: JournalOptions(durability: .none))
    try more.appendAndWait([NewRecord(timestamp: 4, payload: Array("record 4".utf8))])
    more.close()

    let record = try await Self.nextWithinPatience(iterator).value
    #expect(record?.sequence == 4)
    #expect(record?.payload == Array("record 4".utf8))
  }

  /// A follower whose segment is replaced by a copy of itself, and then cut (an older copy put
  /// back) while it sleeps between the check that found the copy whole and the new cursor it
  /// reads on with, which finds the journal cut: when a writer writes the journal again past
  /// where the follower stopped, it says the journal was cut. Before, the new cursor took its
  /// check point from the journal as it found it, and the follower went on with the other
  /// history's records.
  @Test func aFollowerReportsACutMadeWhileItChangesCursors() async throws {
    let dir = TemporaryDirectory("follow")
    let options = JournalOptions(durability: .none)
    let first = try Journal(directory: dir.path, options: options)
    for n in 1...6 { try first.appendAndWait([NewRecord(timestamp: Int64(n), payload: Array("record \(n)".utf8))]) }
    first.close()
    let segment = dir.path + "/" + (try #require(JournalFixtures.segments(dir.path).first))
    try Files.write(try Files.read(segment), to: segment + ".older")
    let more = try Journal(directory: dir.path, options: options)
    for n in 7...10 { try more.appendAndWait([NewRecord(timestamp: Int64(n), payload: Array("record \(n)".utf8))]) }
    more.close()

    let io = CutWhileChangingCursors(segment: segment, older: segment + ".older", index: dir.path + "/index")
    var iterator = try JournalReader(directory: dir.path, io: io).follow(pollInterval: .milliseconds(1))
      .makeAsyncIterator()
    for n in 1...10 { #expect(try await iterator.next()?.sequence == UInt64(n)) }
    try Files.write(try Files.read(segment), to: segment + ".copy")
    try #require(rename(segment + ".copy", segment) == 0)
    let next = Self.nextWithinPatience(iterator)
    let ended = Atomic<Bool>(false)
    let watcher = Task {
      _ = try? await next.value
      ended.store(true, ordering: .relaxed)
    }
    // Once the journal is cut (as the follower's new cursor opens it), the other history is
    // written, whether that cursor has read the cut journal yet or not: either way the first
    // record it returns, or its failure, must be checked against the batch read before.
    let deadline = ContinuousClock.now + Self.patience
    while !io.state.withLock({ $0.cut }) && !ended.load(ordering: .relaxed) && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(1))
    }
    let state = io.state.withLock { $0 }
    try #require(
      state.cut,
      "the journal was cut as the follower changed cursors: \(state), ended \(ended.load(ordering: .relaxed))")
    let again = try Journal(directory: dir.path, options: options)
    for n in 7...12 {
      try again.appendAndWait([NewRecord(timestamp: Int64(100 + n), payload: Array("other record \(n)".utf8))])
    }
    again.close()
    await watcher.value

    let error = await #expect(throws: JournalError.self) { _ = try await next.value }
    #expect(error?.code == .shortened, "\(String(describing: error))")
    #expect(error?.sequences == 10...10, "\(String(describing: error))")
  }

  /// Puts `older` back as `segment` (and removes the index) as the segment is opened the second
  /// time after a follower found it replaced: the first open checks the batch it read last, the
  /// second is its new cursor's. Counts the follower's polls that find nothing new after that.
  final class CutWhileChangingCursors: ForwardingFileIO {
    struct State {
      var foundReplaced = false
      var opensSince = 0
      var cut = false
      var idlePollsAfterTheCut = 0
    }
    let base: any FileIO = PosixFileIO()
    let segment: String
    let older: String
    let index: String
    let state = Locked(State())

    init(segment: String, older: String, index: String) {
      (self.segment, self.older, self.index) = (segment, older, index)
    }

    func isFile(_ fd: Int32, at path: String) -> Bool {
      let same = base.isFile(fd, at: path)
      state.withLock {
        if !same { $0.foundReplaced = true }
        if $0.cut { $0.idlePollsAfterTheCut += 1 }
      }
      return same
    }

    func open(_ path: String, flags: Int32, mode: UInt32) throws -> Int32 {
      let cutNow =
        path == segment
        && state.withLock { state -> Bool in
          guard state.foundReplaced, !state.cut else { return false }
          state.opensSince += 1
          state.cut = state.opensSince == 2
          return state.cut
        }
      if cutNow {
        guard Glibc.rename(older, segment) == 0 else { throw SystemCallError("rename", path: older, errno: errno) }
        unlink(index)
      }
      return try base.open(path, flags: flags, mode: mode)
    }
  }

  /// Damage where a follower reads on, after the batch it last returned records from, which is
  /// still there as it read it: the journal was not cut, so the follower reports the damage.
  @Test func aFollowerReportsDamageAfterWhatItRead() async throws {
    let dir = TemporaryDirectory("follow")
    let journal = try Journal(directory: dir.path)
    for n in 1...3 { try journal.appendAndWait([NewRecord(timestamp: Int64(n), payload: Array("record \(n)".utf8))]) }
    var iterator = try JournalReader(directory: dir.path).follow(pollInterval: .milliseconds(1)).makeAsyncIterator()
    for n in 1...3 { #expect(try await iterator.next()?.sequence == UInt64(n)) }
    let segment = try #require(JournalFixtures.segments(dir.path).first)
    journal.close()
    let followed = try Files.read(dir.path + "/" + segment).count
    let more = try Journal(directory: dir.path)
    for n in 4...5 { try more.appendAndWait([NewRecord(timestamp: Int64(n), payload: Array("record \(n)".utf8))]) }
    more.close()
    var bytes = try Files.read(dir.path + "/" + segment)
    bytes[followed + Layout.batchHeaderSize + 4] ^= 0x20  // in record 4's frame, where the follower reads on
    try Files.write(bytes, to: dir.path + "/" + segment)

    let error = await #expect(throws: JournalError.self) { _ = try await iterator.next() }
    #expect(error?.code == .corrupt, "\(String(describing: error))")
    #expect(error?.offset == Int64(followed), "\(String(describing: error))")
    #expect(error?.sequences == 4...4, "\(String(describing: error))")
  }

  /// A follower goes on with records appended after the last one it returned, read from disk
  /// later (the batch before them checked, and found where it was).
  @Test(.timeLimit(.minutes(10))) func aFollowerGoesOnWithRecordsAppendedLater() async throws {
    let dir = TemporaryDirectory("follow")
    let journal = try Journal(directory: dir.path)
    try journal.appendAndWait([NewRecord(timestamp: 1, payload: [1])])
    let follower = try JournalReader(directory: dir.path).follow(pollInterval: .milliseconds(1))
    var iterator = follower.makeAsyncIterator()
    #expect(try await iterator.next()?.sequence == 1)
    try journal.appendAndWait([NewRecord(timestamp: 2, payload: [2]), NewRecord(timestamp: 3, payload: [3])])
    try journal.appendAndWait([NewRecord(timestamp: 4, payload: [4])])
    journal.close()
    for n in 2...4 { #expect(try await iterator.next()?.sequence == UInt64(n)) }
  }
}

/// A reader judges a frame cut short by the end of the file on the bytes it saw: bytes a writer
/// appended since (the rest of that frame, the next batch) must not make it look like damage in
/// the middle of committed data.
@Suite struct StaleTailTests {
  @Test func aFrameStillBeingWrittenIsNotDamageWhenMoreArrivesMeanwhile() async throws {
    let original = TemporaryDirectory("stale-tail")
    let journal = try Journal(directory: original.path, options: JournalOptions(durability: .none))
    for index in 0..<3 {
      let payload = [UInt8](repeating: UInt8(index), count: 500)
      try await journal.append([NewRecord(timestamp: Int64(index), payload: payload)])
    }
    journal.close()
    let name = Layout.segmentName(firstSequence: 1)
    let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: original.appending(name))))
    let io = PosixFileIO()
    let whole = try SegmentFile(directory: original.path, firstSequence: 1, io: io)
    guard
      case .batch(let first, _) = try whole.batch(
        at: Int64(Layout.segmentHeaderSize), expecting: 1, checkFrame: true, limits: JournalLimits())
    else {
      Issue.record("the first batch does not read")
      return
    }
    let second = Int64(Layout.segmentHeaderSize + Layout.batchHeaderSize) + Int64(first.frameLength)

    // A reader opens the segment while the second batch's frame is half written...
    let copy = TemporaryDirectory("stale-tail-copy")
    let cut = Int(second) + Layout.batchHeaderSize + 20
    #expect(FileManager.default.createFile(atPath: copy.appending(name), contents: Data(bytes[..<cut])))
    let file = try SegmentFile(directory: copy.path, firstSequence: 1, io: io)
    guard
      case .damaged(let damage) = try file.batch(at: second, expecting: 2, checkFrame: true, limits: JournalLimits())
    else {
      Issue.record("a half-written frame reads whole")
      return
    }
    #expect(damage.kind == .truncatedFrame)
    // ...and the writer finishes it and writes the third before the reader looks for more.
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: copy.appending(name)))
    try handle.seekToEnd()
    try handle.write(contentsOf: Data(bytes[cut...]))
    try handle.close()
    #expect(try !file.hasValidBatchHeader(after: second))
    try file.refreshSize()
    guard case .batch = try file.batch(at: second, expecting: 2, checkFrame: true, limits: JournalLimits())
    else {
      Issue.record("the finished frame does not read")
      return
    }
  }
}
