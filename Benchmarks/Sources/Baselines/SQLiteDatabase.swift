internal import CSQLite

/// A minimal libsqlite3 connection for the baselines: execute SQL, prepare statements, step rows.
/// The only file that imports `CSQLite`.
///
/// Not `Sendable`: one thread uses a connection at a time (the appender's writer thread, or the
/// scenario's task).
final class SQLiteDatabase {
  private var handle: OpaquePointer?

  init(path: String) throws {
    let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
    guard code == SQLITE_OK else {
      let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
      sqlite3_close(handle)
      throw BenchError("sqlite3_open \(path): \(message)")
    }
  }

  deinit { sqlite3_close_v2(handle) }  // _v2: closes once the statements are finalized too

  /// Runs one or more statements that return no rows.
  func execute(_ sql: String) throws {
    var error: UnsafeMutablePointer<CChar>?
    guard sqlite3_exec(handle, sql, nil, nil, &error) == SQLITE_OK else {
      let message = error.map { String(cString: $0) } ?? "unknown error"
      sqlite3_free(error)
      throw BenchError("sqlite3_exec \(sql): \(message)")
    }
  }

  func prepare(_ sql: String) throws -> Statement {
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
      throw BenchError("sqlite3_prepare \(sql): \(String(cString: sqlite3_errmsg(handle)))")
    }
    return Statement(statement, database: handle)
  }

  /// A prepared statement; bind, step, reset, read columns.
  final class Statement {
    private let statement: OpaquePointer
    private let database: OpaquePointer?

    fileprivate init(_ statement: OpaquePointer, database: OpaquePointer?) {
      self.statement = statement
      self.database = database
    }

    deinit { sqlite3_finalize(statement) }

    func bind(_ value: Int64, at index: Int32) { sqlite3_bind_int64(statement, index, value) }

    func bind(_ bytes: [UInt8], at index: Int32) {
      bytes.withUnsafeBufferPointer { buffer in
        _ = rewind_sqlite3_bind_blob_copy(statement, index, buffer.baseAddress, Int32(buffer.count))
      }
    }

    /// Steps once: true when a row is ready, false when done.
    func step() throws -> Bool {
      switch sqlite3_step(statement) {
      case SQLITE_ROW: return true
      case SQLITE_DONE: return false
      default: throw BenchError("sqlite3_step: \(String(cString: sqlite3_errmsg(database)))")
      }
    }

    /// Makes the statement ready to step again; its bindings stay (every user binds each
    /// parameter before each step, so clearing them would be wasted work).
    func reset() { sqlite3_reset(statement) }

    func int64(at column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    func bytes(at column: Int32) -> [UInt8] {
      let count = Int(sqlite3_column_bytes(statement, column))
      guard count > 0, let base = sqlite3_column_blob(statement, column) else { return [] }
      return Array(UnsafeRawBufferPointer(start: base, count: count))
    }
  }
}
