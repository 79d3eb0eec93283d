public import Rewind
internal import Synchronization

/// A seeded Notebook workload: user commands, the sync job, the auto-tagger and the reading list,
/// driven through a `NotebookManager` with many commands in flight, reproducibly.
///
/// Determinism: the same seed gives the same commands, events, payloads and timestamps whatever the
/// durability policy or how group commit batches them, and a run to fewer events is an exact
/// prefix of a longer one. That holds because
/// - commands are decided by one driver from the seed and from what earlier commands returned, and
///   it only reads results of commands issued `commandsInFlight` commands earlier (waiting for them
///   if needed), never whichever happen to have finished;
/// - commands reach the manager in the order they were issued (see `SerialTaskExecutor`), so ids
///   and times, drawn from `ids` and `clock` in that order, follow the seed; a command that arrives
///   out of order fails the run instead of silently changing it;
/// - the driver knows how many events each command records (it mirrors the records it touches), and
///   stops after the first command that brings the total to the target.
///
/// Create the manager with the workload's `clock` and `ids`, then call `run` once:
/// ```swift
/// let workload = NotebookWorkload(seed: 1)
/// let manager = try NotebookManager(directory: path, clock: workload.clock, ids: workload.ids)
/// let summary = try await workload.run(manager, events: 10_000)
/// ```
public final class NotebookWorkload: Sendable {
  /// How many commands the driver keeps in flight: part of what a seed means, so fixed.
  public static let commandsInFlight = 64

  public let seed: UInt64
  /// The manager's clock: every command reads it once, in arrival order.
  public let clock: TimeSource
  /// The manager's identifier source.
  public let ids: IdentifierSource
  private let order = CommandOrder()

  /// - Parameters:
  ///   - seed: decides every command and, unless given, every identifier and time.
  ///   - clock: the manager's clock; by default a simulated one from 2026-01-01T00:00:00Z that
  ///     moves 0.1–5 s (from the seed) per command.
  ///   - ids: the manager's identifiers; by default `IdentifierSource.seeded` from the seed.
  public init(seed: UInt64, clock: TimeSource? = nil, ids: IdentifierSource? = nil) {
    self.seed = seed
    let time = clock ?? Self.simulatedClock(seed: seed)
    let order = order
    self.clock = TimeSource {
      order.arrived()
      return time.now()
    }
    self.ids = ids ?? .seeded(seed ^ 0x1D5)
  }

  /// A clock that starts at 2026-01-01T00:00:00Z and moves 0.1–5 s per reading, from the seed.
  public static func simulatedClock(seed: UInt64) -> TimeSource {
    let state = Mutex((random: SeededRandom(seed: seed ^ 0xC10C), now: Int64(1_767_225_600_000_000_000)))
    return TimeSource {
      state.withLock { state in
        state.now += 100_000_000 + Int64(state.random.next() % 4_900_000_000)
        return state.now
      }
    }
  }

  /// Runs commands through `manager` until they have recorded at least `events` events in all
  /// (the last command may take it a few past), and returns once every one is committed.
  /// - Throws: `WorkloadError` if run twice or if a command arrived out of order; the error of a
  ///   failed command (after the commands in flight have finished), which comes first.
  public func run(_ manager: NotebookManager, events target: Int) async throws -> WorkloadSummary {
    try order.start()
    let executor = SerialTaskExecutor(name: "notebook-workload")
    let seed = seed
    let driving = Task(executorPreference: executor) {
      var driver = WorkloadDriver(manager: manager, executor: executor, seed: seed)
      return try await driver.run(events: target)
    }
    let result = await driving.result
    executor.shutdown()
    // A failed command is the news, and the order check cannot judge what follows it: the gate
    // holder that recovers from a failed append suspends holding the gate, so the commands issued
    // meanwhile wait there and it stages them on its own task, whose ticket the clock then reads.
    if case .failure(let error) = result { throw error }
    if let problem = order.problem { throw WorkloadError(problem) }
    return try result.get()
  }
}

/// What a workload run did.
public struct WorkloadSummary: Sendable, Equatable {
  /// Commands issued, including those that found nothing to change.
  public var commands: Int
  /// Events the commands recorded (the journal grew by exactly this many).
  public var events: Int
  /// Commands that recorded at least one event, per origin, by origin name.
  public var committedByOrigin: [String: Int]
}

/// A workload run that could not go on.
public struct WorkloadError: Error, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}

/// The issue number of the workload command running in the current task.
enum CommandTicket {
  @TaskLocal static var current: Int?
}

/// Checks that the workload's commands reach the manager (read its clock) in issue order.
final class CommandOrder: Sendable {
  private struct State {
    var started = false
    var next = 0
    var problem: String?
  }

  private let state = Mutex(State())

  func start() throws(WorkloadError) {
    let first = state.withLock { state in
      defer { state.started = true }
      return !state.started
    }
    guard first else { throw WorkloadError("a NotebookWorkload runs once; make a new one for another run") }
  }

  func arrived() {
    guard let ticket = CommandTicket.current else { return }
    state.withLock { state in
      if state.problem == nil && ticket != state.next {
        state.problem =
          "command \(ticket) reached the manager when command \(state.next) was due: the run is not reproducible"
      }
      state.next += 1
    }
  }

  var problem: String? { state.withLock { $0.problem } }
}
