internal import RewindLocking

/// A command waiting at the gate: the work that validates, encodes and stages it, which the gate
/// holder runs on the command's behalf.
///
/// `@unchecked Sendable`: `stage` is set before the ticket is queued and taken (once) only by the
/// task that holds the gate; the command's own task is suspended in `SerialGate.enter` meanwhile.
final class GateTicket: @unchecked Sendable {
  /// Stages the command; returns its completion (nil if it failed or recorded nothing).
  private var stage: (() async -> Completion?)?
  private let wake = Lock<CheckedContinuation<GateRole, Never>?>(nil)

  init(stage: @escaping () async -> Completion?) { self.stage = stage }

  /// Runs the staging work and drops it (it may capture a closure that must not outlive the
  /// command's call). Gate holder only.
  func runStage() async -> Completion? {
    let work = stage
    stage = nil
    return await work?()
  }

  fileprivate func suspend(_ continuation: CheckedContinuation<GateRole, Never>) {
    wake.withLock { $0 = continuation }
  }

  /// Resumes the command's task, as the new holder or with its outcome settled.
  func resume(_ role: GateRole) {
    let continuation = wake.withLock { wake in
      defer { wake = nil }
      return wake
    }
    continuation?.resume(returning: role)
  }
}

/// What a task learns when it leaves `SerialGate.enter`.
enum GateRole: Sendable {
  /// It holds the gate: it stages its own command and every command waiting, then leaves.
  case hold
  /// Another holder staged its command, and the command's outcome is settled.
  case done
}

/// A first-come, first-served gate for commands, that serves every command waiting in one turn.
///
/// At most one task holds it, across suspension points. The holder takes the whole queue of
/// commands waiting at that moment and stages them one after another, in arrival order, on its
/// own task; the tasks of those commands stay suspended until their outcome is settled (one
/// wake-up per command, not one task hand-off per command for the gate and another for the
/// outcome). When it leaves, the gate passes to the longest waiter, which serves the queue
/// that formed meanwhile. A holder whose task is cancelled stops staging other commands (their
/// bodies would see its cancellation): it puts those it took back (`putBack`) and leaves, so the
/// first of them holds the gate next. An actor alone would not do: actors are reentrant at every
/// `await`.
final class SerialGate: Sendable {
  private struct State {
    var busy = false
    var waiters: [GateTicket] = []
    /// Tasks waiting for `waiters` to reach a count (`wait(forWaiters:)`, for tests).
    var watchers: [(atLeast: Int, waiter: BoundedWaiter)] = []
  }

  private let state = Lock(State())

  /// Takes the gate if it is free: true if the caller now holds it (and must call `leave()`).
  func tryEnter() -> Bool {
    state.withLock { state in
      if state.busy { return false }
      state.busy = true
      return true
    }
  }

  /// Takes the gate (`.hold`), or waits until a holder has staged `ticket` and its outcome is
  /// settled (`.done`) or the gate is handed over (`.hold`). A holder must call `leave()`.
  func enter(_ ticket: GateTicket) async -> GateRole {
    // A free gate is taken without suspending.
    if tryEnter() { return .hold }
    return await withCheckedContinuation { (continuation: CheckedContinuation<GateRole, Never>) in
      ticket.suspend(continuation)
      let (holds, reached) = state.withLock { state -> (Bool, [BoundedWaiter]) in
        if state.busy {
          state.waiters.append(ticket)
          if state.watchers.isEmpty { return (false, []) }
          let count = state.waiters.count
          let reached = state.watchers.filter { $0.atLeast <= count }.map(\.waiter)
          state.watchers.removeAll { $0.atLeast <= count }
          return (false, reached)
        }
        state.busy = true
        return (true, [])
      }
      for watcher in reached { watcher.resume(true) }
      if holds { ticket.resume(.hold) }
    }
  }

  /// Returns true once at least `count` tasks wait to enter at the same time: suspended until one
  /// that starts waiting makes them as many, not polling (for tests). Returns false if that did
  /// not happen within `testWaitBound` (or the task was cancelled).
  func wait(forWaiters count: Int) async -> Bool {
    await BoundedWaiter.wait { waiter in
      state.withLock { state -> Bool in
        if state.waiters.count >= count { return true }
        state.watchers.append((count, waiter))
        return false
      }
    } unregister: { waiter in
      state.withLock { $0.watchers.removeAll { $0.waiter === waiter } }
    }
  }

  /// Takes every waiting ticket, in arrival order. Holder only.
  func takeWaiters(max: Int) -> [GateTicket] {
    state.withLock { state in
      // Returning the empty array while keeping its capacity would allocate a new buffer.
      if state.waiters.isEmpty { return [] }
      if state.waiters.count <= max {
        defer { state.waiters.removeAll(keepingCapacity: true) }
        return state.waiters
      }
      defer { state.waiters.removeFirst(max) }
      return Array(state.waiters.prefix(max))
    }
  }

  /// Puts tickets a holder took but will not stage back at the head of the queue, in their order,
  /// ahead of any that arrived since: the next holder serves them first. Holder only, before
  /// `leave()` (which then hands the gate to the first of them).
  func putBack(_ tickets: ArraySlice<GateTicket>) {
    state.withLock { $0.waiters.insert(contentsOf: tickets, at: 0) }
  }

  /// Whether any task is waiting to enter. Only meaningful to the holder, as a hint: a task may
  /// start waiting right after this returns false.
  var hasWaiters: Bool { state.withLock { !$0.waiters.isEmpty } }

  /// How many tasks are waiting to enter.
  var waiterCount: Int { state.withLock { $0.waiters.count } }

  /// Hands the gate to the longest waiter, or frees it.
  func leave() {
    let next = state.withLock { state -> GateTicket? in
      if state.waiters.isEmpty {
        state.busy = false
        return nil
      }
      return state.waiters.removeFirst()
    }
    next?.resume(.hold)
  }
}
