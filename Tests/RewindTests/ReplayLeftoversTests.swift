import Dispatch
import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import Rewind

/// What an apply leaves in its event (it gets the event `inout`, and may swap the model's old
/// value into it) is destroyed once, after the apply: in a replay by the reading thread once the
/// batch is applied, through the manager with the command's copy, never in the event the
/// command keeps for its observers.
@Suite struct ReplayLeftoversTests {
  /// Counts the tokens of one test (by the tag their text starts with) that were decoded and
  /// that were destroyed, and by which threads (`pthread_self`).
  final class Tally: @unchecked Sendable {
    private static let tallies = Locked<[String: Tally]>([:])
    let tag = UUID().uuidString
    private let counts = Locked<(made: Int, destroyed: [UInt: Int])>((0, [:]))

    init() { Self.tallies.withLock { $0[tag] = self } }
    deinit { Self.tallies.withLock { $0[tag] = nil } }

    static func made(_ text: String) { tally(of: text)?.counts.withLock { $0.made += 1 } }

    static func destroyed(_ text: String) {
      let thread = UInt(pthread_self())
      tally(of: text)?.counts.withLock { $0.destroyed[thread, default: 0] += 1 }
    }

    private static func tally(of text: String) -> Tally? {
      tallies.withLock { $0[String(text.prefix(36))] }
    }

    var made: Int { counts.withLock { $0.made } }
    var destroyedByThread: [UInt: Int] { counts.withLock { $0.destroyed } }
    var destroyed: Int { destroyedByThread.values.reduce(0, +) }
  }

  /// A value whose instances are counted: made only by decoding (or `init(_:)`), destroyed when
  /// the last reference goes.
  final class Token: Codable, Sendable, Equatable {
    let text: String

    init(_ text: String) {
      self.text = text
      Tally.made(text)
    }

    init(from decoder: any Decoder) throws {
      text = try decoder.singleValueContainer().decode(String.self)
      Tally.made(text)
    }

    func encode(to encoder: any Encoder) throws {
      var container = encoder.singleValueContainer()
      try container.encode(text)
    }

    deinit { Tally.destroyed(text) }

    static func == (left: Token, right: Token) -> Bool { left.text == right.text }
  }

  /// Puts `token` in the locker; the apply swaps the token it held into the event. Larger than
  /// an existential's inline buffer (three words), as most events are: an `any Event` holding it
  /// keeps it in a box its copies share, which an apply lent the box in place would change.
  struct TokenStored: Event {
    static let name = "token.stored"
    var token: Token
    var label = "stored"
    var count = 1
  }

  /// One token held at a time.
  struct Locker: Model {
    var held = ValueStore<Token?>(name: "held", initial: nil)

    static func registerEvents(in registry: inout EventRegistry<Locker>) {
      registry.register(TokenStored.self) { locker, event, context in
        let incoming = event.token
        // The old token is left in the event, for whoever destroys the event.
        if let old = locker.held.value { event.token = old }
        locker.held.set(incoming, context: &context)
        // Slow, so that a replay's reading thread keeps ahead and decodes every batch.
        usleep(300)
      }
    }
  }

  private static func write(_ count: Int, tagged tag: String, to directory: String) throws {
    let journal = try Journal(directory: directory)
    defer { journal.close() }
    let payloads = try (0..<count).map { index in
      try EventRecord.encode(
        TokenStored(token: Token("\(tag)-\(index)")), origin: .user, commandID: Identifier(high: 0, low: 1))
    }
    try journal.appendAndWait(payloads.map { NewRecord(timestamp: 1, payload: $0) })
  }

  /// A replay with the reading thread ahead: every token decoded is destroyed once, the model's
  /// last one when the state goes, and the tokens the applies left in their events were, most of
  /// them, destroyed off the applying thread (by the reading thread while it ran: the batches
  /// applied after it ended, and any it handed over undecoded, go with the applying thread).
  ///
  /// The counts are taken on the applying thread, and no token leaves it: a token returned from
  /// it was still referenced, now and then, by that thread's copy of the result after the test
  /// had dropped its own (entry 205).
  @Test(.timeLimit(.minutes(10))) func leftoversAreDestroyedOnceByTheReadingThread() async throws {
    let temporary = TemporaryDirectory()
    let directory = temporary.appending("journal")
    let tally = Tally()
    let count = 2_000
    try Self.write(count, tagged: tally.tag, to: directory)
    #expect(tally.made == count && tally.destroyed == count, "writing made and let go of \(tally.made)")
    let written = tally.destroyedByThread

    var options = ReplayOptions()
    options.recordsPerBatch = 16
    options.batchesInFlight = 8
    let chosen = options
    let outcome = try await onOwnThread {
      () -> (applier: UInt, applied: Int, held: String?, destroyedWithState: Int, destroyedAfter: Int) in
      var records: DecodedRecords<Locker>? = try DecodedRecords(
        registry: Locker.makeRegistry(), reader: JournalReader(directory: directory), first: 1, last: UInt64(count),
        options: chosen, applyOnly: true)
      records?.waitForReadAhead()
      var state = Locker()
      var context = ApplyContext(recording: false)
      let applied = try records?.applyAll(to: &state, context: &context, after: 0)
      // Dropped: its reading thread is done, and what it was handed back destroyed.
      records = nil
      let destroyedWithState = tally.destroyed
      let held = state.held.value?.text
      state = Locker()
      return (UInt(pthread_self()), applied?.count ?? 0, held, destroyedWithState, tally.destroyed)
    }
    #expect(outcome.applied == count)
    #expect(outcome.held == "\(tally.tag)-\(count - 1)")
    #expect(tally.made == 2 * count, "the replay decoded \(tally.made - count) tokens")
    // Every token but the one the state holds is destroyed once the replay is.
    #expect(outcome.destroyedWithState == 2 * count - 1, "destroyed: \(tally.destroyedByThread)")
    let byApplier = tally.destroyedByThread[outcome.applier, default: 0] - written[outcome.applier, default: 0]
    #expect(byApplier < count / 2, "\(byApplier) of \(count - 1) leftovers destroyed by the applying thread")
    #expect(outcome.destroyedAfter == 2 * count, "destroyed: \(tally.destroyedByThread)")
  }

  /// Through the manager, the apply gets a copy of the event: the event the command keeps, which
  /// its observers see, is the one recorded, not what the apply left in its copy.
  @Test(.timeLimit(.minutes(10))) func theCommandKeepsTheEventItRecorded() async throws {
    let temporary = TemporaryDirectory()
    let tally = Tally()
    let manager = try Manager<Locker>(
      directory: temporary.path, options: JournalOptions(durability: .none),
      clock: .stepping(from: 1_800_000_000_000_000_000), ids: .sequential())
    var changes = manager.changes().makeAsyncIterator()
    for index in 0..<3 {
      try await manager.perform(.user) { _, command in
        command.record(TokenStored(token: Token("\(tally.tag)-\(index)")))
      }
      let change = try #require(await changes.next())
      let event = try #require(change.events.first?.event as? TokenStored)
      #expect(event.token.text == "\(tally.tag)-\(index)", "the observers' event of command \(index)")
    }
    #expect(manager.state.held.value?.text == "\(tally.tag)-2")
    #expect(tally.made == 3, "the commands made three tokens, nothing else one")
    manager.close()
  }

  // MARK: Every path, every event destroyed once

  /// A record named as `TokenStored` whose token is a number: it does not decode.
  struct TokenStoredMisshapen: Event {
    static let name = TokenStored.name
    var token: Int
  }

  /// How a replay of the leftovers' journal ends.
  enum Ending: String, CaseIterable, Sendable {
    /// Every record applied.
    case whole
    /// The replay dropped after a few records, its reading thread still going.
    case droppedPartWay
    /// A record that does not decode, part way through a batch.
    case undecodable
    /// A frame of the journal damaged: the reader's error.
    case damaged
  }

  enum Consumer: String, CaseIterable, Sendable {
    case applyAll, applyNext, records
  }

  /// Writes `count` tokens in appends of 40 records (a batch of the journal each), the one
  /// numbered `misshapen` (if any) as a record that does not decode.
  private static func writeInBatches(
    _ count: Int, tagged tag: String, misshapen: Int? = nil, to directory: String
  ) throws {
    let journal = try Journal(directory: directory, options: JournalOptions(durability: .none))
    defer { journal.close() }
    let command = Identifier(high: 0, low: 1)
    for start in stride(from: 0, to: count, by: 40) {
      let payloads = try (start..<min(count, start + 40)).map { index in
        index == misshapen
          ? try EventRecord.encode(TokenStoredMisshapen(token: index), origin: .user, commandID: command)
          : try EventRecord.encode(TokenStored(token: Token("\(tag)-\(index)")), origin: .user, commandID: command)
      }
      try journal.appendAndWait(payloads.map { NewRecord(timestamp: 1, payload: $0) })
    }
  }

  /// Flips a byte in the middle of the journal's middle frame.
  private static func damage(_ directory: String) throws {
    let segments = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".lz4") }
    let path = directory + "/" + (try #require(segments.sorted().first))
    var bytes = [UInt8](try #require(FileManager.default.contents(atPath: path)))
    let frames = segmentFrames(in: bytes)
    try #require(frames.count > 4, "\(frames.count) frames")
    bytes[frames[frames.count / 2].middleOfData] ^= 0x5A
    try Data(bytes).write(to: URL(fileURLWithPath: path))
  }

  /// Whatever the options, the consumer and the way the replay ends (whole, dropped part way, a
  /// record that does not decode, a damaged frame), every token a replay decoded is destroyed
  /// once: none kept by a batch handed back, or by a queue, once the replay and its state are
  /// gone, and none twice (a double free would crash, a second count show).
  @Test(.timeLimit(.minutes(10)), arguments: [0, 1, 2, 8])
  func everyTokenDecodedIsDestroyedOnce(batchesInFlight: Int) async throws {
    let temporary = TemporaryDirectory()
    let tally = Tally()
    let count = 400
    let intact = temporary.appending("intact")
    let misshapen = temporary.appending("misshapen")
    let damaged = temporary.appending("damaged")
    try Self.writeInBatches(count, tagged: tally.tag, to: intact)
    try Self.writeInBatches(count, tagged: tally.tag, misshapen: 217, to: misshapen)
    try Self.writeInBatches(count, tagged: tally.tag, to: damaged)
    try Self.damage(damaged)
    var options = ReplayOptions()
    options.recordsPerBatch = 16
    options.batchesInFlight = batchesInFlight
    let chosen = options
    for ending in Ending.allCases {
      for consumer in Consumer.allCases {
        for ahead in [false, true] {
          let before = (made: tally.made, destroyed: tally.destroyed)
          let what = "\(ending), \(consumer), ahead \(ahead), \(batchesInFlight) in flight"
          let directory = ending == .undecodable ? misshapen : ending == .damaged ? damaged : intact
          // How many records were applied (the number of the token the state holds, plus one), and
          // whether the replay failed.
          let outcome = try await onOwnThread { () -> (applied: Int, failed: Bool) in
            let registry = Locker.makeRegistry()
            var records: DecodedRecords<Locker>? = try DecodedRecords(
              registry: registry, reader: JournalReader(directory: directory), first: 1, last: UInt64(count),
              options: chosen, applyOnly: consumer != .records)
            if ahead { records?.waitForReadAhead() }
            var state: Locker? = Locker()
            var context = ApplyContext(recording: false)
            var applied = 0
            var failed = false
            do {
              switch consumer {
              case .applyAll:
                if ending == .droppedPartWay {
                  while applied < 37, try records?.applyNext(to: &state!, context: &context) != nil { applied += 1 }
                } else {
                  applied = try records!.applyAll(to: &state!, context: &context, after: 0).count
                }
              case .applyNext:
                while ending != .droppedPartWay || applied < 37,
                  try records?.applyNext(to: &state!, context: &context) != nil
                {
                  context.touched.removeAll(keepingCapacity: true)
                  applied += 1
                }
              case .records:
                while ending != .droppedPartWay || applied < 37, let record = try records?.next() {
                  if case .event(let recorded) = record {
                    registry.tables.apply(recorded.event, to: &state!, context: &context)
                  }
                  context.touched.removeAll(keepingCapacity: true)
                  applied += 1
                }
              }
            } catch {
              failed = true
            }
            records = nil
            let held = state?.held.value.map { Int($0.text.dropFirst(tally.tag.count + 1)) ?? -1 } ?? -1
            state = nil
            return (held + 1, failed)
          }
          switch ending {
          case .whole: #expect(outcome.applied == count && !outcome.failed, "\(what)")
          case .droppedPartWay: #expect(outcome.applied == 37 && !outcome.failed, "\(what)")
          case .undecodable: #expect(outcome.applied == 217 && outcome.failed, "\(what)")
          case .damaged:
            #expect(outcome.applied > 0 && outcome.applied < count && outcome.failed, "\(what): \(outcome.applied)")
          }
          let made = tally.made - before.made
          #expect(made >= outcome.applied, "\(what): \(made) tokens decoded")
          // A queue dropped part way is freed once its reading thread lets go of it (within a
          // second on a loaded machine).
          for _ in 0..<1_000 where tally.destroyed - before.destroyed < made {
            try await Task.sleep(for: .milliseconds(10))
          }
          let destroyed = tally.destroyed - before.destroyed
          guard destroyed == made else {
            Issue.record("\(what): \(made) tokens decoded, \(destroyed) destroyed")
            return
          }
        }
      }
    }
  }

  // MARK: The queue's way back

  /// A list of events (of no type) whose end is seen: its deinit waits `delay` microseconds,
  /// then calls `destroyed`.
  final class WatchedEvents: DecodedEvents, @unchecked Sendable {
    private let delay: UInt32
    private let destroyed: @Sendable () -> Void

    init(delay: UInt32 = 0, _ destroyed: @escaping @Sendable () -> Void) {
      self.delay = delay
      self.destroyed = destroyed
    }

    deinit {
      if delay > 0 { usleep(delay) }
      destroyed()
    }
  }

  /// An applied batch whose end `note` sees: the thread that destroyed it.
  private static func retiring(delay: UInt32 = 0, noting note: Locked<[UInt]>) -> ApplicableBatch {
    ApplicableBatch(lists: [WatchedEvents(delay: delay) { note.withLock { $0.append(UInt(pthread_self())) } }])
  }

  /// A batch retired while the reading thread reads on is destroyed by that thread, before the
  /// read after its next one (the reading thread may have just looked for batches to destroy
  /// when it was retired).
  @Test(.timeLimit(.minutes(10))) func aBatchRetiredWhileTheReaderReadsIsDestroyedByIt() async throws {
    try await offThePool {
      let queue = RecordQueue(capacity: 4)
      let reads = Locked(0)
      let reader = Locked<UInt>(0)
      // The thread that destroyed the batch, and how many reads had begun then.
      let destroyed = Locked<[(thread: UInt, reads: Int)]>([])
      let producerEnded = queue.startNumberedReader(upTo: 20, counting: reads, thread: reader)
      _ = try queue.take()
      queue.retire(
        ApplicableBatch(lists: [
          WatchedEvents {
            let seen = (UInt(pthread_self()), reads.withLock { $0 })
            destroyed.withLock { $0.append(seen) }
          }
        ]))
      // Read after the retire: at most as many reads had begun when it was retired.
      let readsWhenRetired = reads.withLock { $0 }
      while try queue.take() != nil {}
      try producerEnded.wait(for: "the reading thread to end")
      queue.cancel()
      let seen = destroyed.withLock { $0 }
      try #require(seen.count == 1, "destroyed \(seen.count) times")
      #expect(seen[0].thread == reader.withLock { $0 }, "destroyed by the reading thread")
      #expect(
        seen[0].reads <= readsWhenRetired + 1,
        "retired after \(readsWhenRetired) reads began, destroyed after \(seen[0].reads)")
    }
  }

  /// Once the reading thread has ended, a batch retired is destroyed by the caller, before
  /// `retire` returns: nothing is left for a thread that will not come back.
  @Test(.timeLimit(.minutes(10))) func aBatchRetiredAfterTheReaderEndedIsDestroyedAtOnce() async throws {
    try await offThePool {
      let queue = RecordQueue(capacity: 4)
      let destroyed = Locked<[UInt]>([])
      let producerEnded = queue.startNumberedReader(upTo: 2)
      try producerEnded.wait(for: "the reading thread to end")
      _ = try queue.take()
      queue.retire(Self.retiring(noting: destroyed))
      #expect(destroyed.withLock { $0 } == [UInt(pthread_self())], "destroyed by the caller, at once")
      queue.cancel()
    }
  }

  /// `cancel` returns only once the batches retired before it are destroyed (a replay dropped
  /// part way leaves nothing behind being freed), by the reading thread: here one retired while
  /// that thread waits on a full queue, slow to destroy.
  @Test(.timeLimit(.minutes(10))) func cancelReturnsOnceTheRetiredBatchesAreDestroyed() async throws {
    try await offThePool {
      let queue = RecordQueue(capacity: 4)
      let destroyed = Locked<[UInt]>([])
      let reader = Locked<UInt>(0)
      let reads = Locked(0)
      let producerEnded = queue.startNumberedReader(counting: reads, thread: reader)
      queue.waitUntilFull()
      // Four batches wait; the fifth is read and its reader waits for room.
      for _ in 0..<30_000 where reads.withLock({ $0 }) < 5 { usleep(1_000) }
      usleep(50_000)
      // Down to three: not enough to wake the reader (it waits for two).
      _ = try queue.take()
      queue.retire(Self.retiring(delay: 200_000, noting: destroyed))
      queue.cancel()
      #expect(
        destroyed.withLock { $0 } == [reader.withLock { $0 }], "destroyed by the reading thread, before cancel returned"
      )
      try producerEnded.wait(for: "the reading thread to end")
    }
  }

  /// The batches retired take the places of those taken: the batches waiting in the queue, those
  /// retired and the one each thread holds stay within `capacity` + 2 whatever the two threads'
  /// speeds, as without handing batches back, so replay's memory bound stays what
  /// `ReplayOptions.batchesInFlight` says.
  @Test(.timeLimit(.minutes(10)), arguments: [1, 2, 3, 8])
  func retiredBatchesStayWithinTheQueuesBound(capacity: Int) async throws {
    try await offThePool {
      let queue = RecordQueue(capacity: capacity)
      let alive = Locked((now: 0, most: 0))
      let producerEnded = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        var random = SeededRandom(seed: UInt64(capacity))
        var made = 0
        queue.produce { _ in
          if random.next() % 5 == 0 { usleep(UInt32(random.next() % 300)) }
          guard made < 2_000 else { return nil }
          made += 1
          alive.withLock { alive in
            alive.now += 1
            alive.most = max(alive.most, alive.now)
          }
          return .applicable(ApplicableBatch(lists: [WatchedEvents { alive.withLock { $0.now -= 1 } }]))
        }
        producerEnded.signal()
      }
      var random = SeededRandom(seed: UInt64(capacity) &+ 100)
      var taken = 0
      while case .applicable(let batch)? = try queue.take() {
        if random.next() % 5 == 0 { usleep(UInt32(random.next() % 300)) }
        queue.retire(batch)
        taken += 1
      }
      try producerEnded.wait(for: "the reading thread to end")
      queue.cancel()
      #expect(taken == 2_000)
      let most = alive.withLock { $0.most }
      #expect(most <= capacity + 2, "\(most) batches at once")
      #expect(alive.withLock { $0.now } == 0, "every batch destroyed")
    }
  }
}
