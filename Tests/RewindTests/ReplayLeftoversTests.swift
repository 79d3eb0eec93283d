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
        usleep(100)
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
}
