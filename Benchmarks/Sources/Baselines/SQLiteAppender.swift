internal import Foundation
internal import RewindJournal

/// SQLite used the way a developer would use it for an event log: one table
/// `events(seq INTEGER PRIMARY KEY, ts, payload BLOB)`, WAL, a prepared INSERT, one connection
/// owned by one writer thread (SQLite has one writer).
///
/// `grouped` hands appends to a writer thread that commits everything waiting in one transaction,
/// as the journal's group commit does. `eachAppend` is the plain way: the caller takes a lock and
/// commits its append in a transaction of its own, on its own thread; callers waiting for the lock
/// are suspended in arrival order (`AsyncFIFOLock`), not blocking the cooperative pool's threads,
/// so that each one's latency includes its wait in the queue.
///
/// `@unchecked Sendable`: `pending` and `closed` are guarded by `condition`. The connection and its
/// statements are touched only by the writer thread (`grouped`) or by the caller holding `callers`
/// (`eachAppend`).
final class SQLiteAppender: @unchecked Sendable {
  enum Commit { case grouped, eachAppend }

  private struct Pending {
    var records: [NewRecord]
    var done: CheckedContinuation<Void, any Error>
  }

  private let condition = NSCondition()
  /// Held by the caller committing under `eachAppend` (a test holds it to see callers queue).
  let callers = AsyncFIFOLock()
  private var pending: [Pending] = []
  private var closed = false
  private let database: SQLiteDatabase
  private let insert: SQLiteDatabase.Statement
  /// BEGIN and COMMIT, prepared once as the INSERT is (`sqlite3_exec` would parse them each time).
  private let begin: SQLiteDatabase.Statement
  private let end: SQLiteDatabase.Statement
  private let commit: Commit
  private var thread: Thread?
  private let finished = DispatchSemaphore(value: 0)

  /// Creates the database at `path` with `synchronous` (OFF, NORMAL or FULL).
  init(path: String, synchronous: String, commit: Commit) throws {
    database = try SQLiteDatabase(path: path)
    try database.execute(
      """
      PRAGMA journal_mode=WAL; PRAGMA synchronous=\(synchronous);
      CREATE TABLE IF NOT EXISTS events(seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, payload BLOB NOT NULL);
      """)
    insert = try database.prepare("INSERT INTO events(ts, payload) VALUES (?, ?)")
    begin = try database.prepare("BEGIN")
    end = try database.prepare("COMMIT")
    self.commit = commit
    guard commit == .grouped else { return }
    let thread = Thread { [unowned self] in self.writeLoop() }
    thread.name = "sqlite-writer"
    self.thread = thread
    thread.start()
  }

  /// Inserts `records` in one transaction (with whatever else is waiting, when grouped) and
  /// returns once it is committed.
  func append(_ records: [NewRecord]) async throws {
    if commit == .eachAppend {
      try await callers.withLock { try insertInTransaction(records) }
      return
    }
    try await withCheckedThrowingContinuation { continuation in
      condition.lock()
      pending.append(Pending(records: records, done: continuation))
      condition.signal()
      condition.unlock()
    }
  }

  /// `append` of one record, which makes no array for it where none is needed (committing on the
  /// caller's thread), as the journal's one-record append makes none. The grouped writer's queue
  /// holds arrays, as the journal's queue does.
  func append(_ record: NewRecord) async throws {
    guard commit == .eachAppend else { return try await append([record]) }
    try await callers.withLock { try insertInTransaction(CollectionOfOne(record)) }
  }

  /// Commits what is waiting, stops the writer thread and checkpoints the WAL.
  func close() {
    if commit == .eachAppend {
      try? database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
      return
    }
    condition.lock()
    closed = true
    condition.signal()
    condition.unlock()
    finished.wait()
  }

  private func writeLoop() {
    while true {
      condition.lock()
      while pending.isEmpty && !closed { condition.wait() }
      if pending.isEmpty && closed {
        condition.unlock()
        break
      }
      let batch = pending
      pending.removeAll(keepingCapacity: true)
      condition.unlock()
      do {
        try insertInTransaction(batch.flatMap(\.records))
        for item in batch { item.done.resume() }
      } catch {
        for item in batch { item.done.resume(throwing: error) }
      }
    }
    try? database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finished.signal()
  }

  /// BEGIN, the INSERT per record, COMMIT, all prepared; ROLLBACK on failure.
  private func insertInTransaction(_ records: some Collection<NewRecord>) throws {
    do {
      defer { begin.reset() }
      _ = try begin.step()
      for record in records {
        defer { insert.reset() }
        insert.bind(record.timestamp, at: 1)
        insert.bind(record.payload, at: 2)
        _ = try insert.step()
      }
      defer { end.reset() }
      _ = try end.step()
    } catch {
      try? database.execute("ROLLBACK")
      throw error
    }
  }
}
