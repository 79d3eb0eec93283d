internal import RewindJournal

/// The corpus in a SQLite table (in sequence order), scanned cold with `SELECT … ORDER BY seq`,
/// each payload copied out as the journal's reader hands it out; the fastest of three scans.
struct SQLiteReadScenario: Scenario {
  let name = "sqlite.read"
  let summary = "SQLite: cold scan of the same records"

  func run(in context: BenchContext) async throws {
    let path = context.path("sqlite-corpus.db")
    try Self.load(context.corpus, into: path)
    var seconds = Double.infinity
    var events = 0
    var bytes = 0
    // The fastest of three cold scans, as the journal's cold read it is compared with.
    for _ in 0..<3 {
      let scan = try Self.scanCold(path, in: context)
      guard scan.events == context.corpus.count else {
        throw BenchError("SQLite returned \(scan.events) rows, expected \(context.corpus.count)")
      }
      if scan.seconds < seconds { (seconds, events, bytes) = scan }
    }
    let configuration = "\(events) events, cold"
    let rewind = (scenario: "journal.read", configuration: configuration)
    context.record(
      baseline: "sqlite", name, configuration, "events/s", Double(events) / seconds, "ev/s",
      comparedWith: (rewind.scenario, rewind.configuration, "events/s"))
    context.record(
      baseline: "sqlite", name, configuration, "payload MB/s", Double(bytes) / seconds / 1e6, "MB/s",
      comparedWith: (rewind.scenario, rewind.configuration, "payload MB/s"))
  }

  /// One scan of the table in `path` after its pages are dropped from the page cache: its time,
  /// rows and payload bytes.
  private static func scanCold(_ path: String, in context: BenchContext) throws -> (
    seconds: Double, events: Int, bytes: Int
  ) {
    evictFromPageCache(context.work, prefix: path)
    let database = try SQLiteDatabase(path: path)
    let select = try database.prepare("SELECT seq, ts, payload FROM events ORDER BY seq")
    var events = 0
    var bytes = 0
    let (seconds, _) = try timed {
      while try select.step() {
        let payload = select.bytes(at: 2)
        events += 1
        bytes += payload.count
        guard select.int64(at: 0) == Int64(events) else { throw BenchError("SQLite skipped sequence \(events)") }
      }
    }
    return (seconds, events, bytes)
  }

  /// Creates `path` with the corpus in one transaction.
  static func load(_ corpus: [NewRecord], into path: String) throws {
    let database = try SQLiteDatabase(path: path)
    try database.execute(
      """
      PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;
      CREATE TABLE events(seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, payload BLOB NOT NULL);
      BEGIN;
      """)
    let insert = try database.prepare("INSERT INTO events(seq, ts, payload) VALUES (?, ?, ?)")
    for (offset, record) in corpus.enumerated() {
      insert.bind(Int64(offset + 1), at: 1)
      insert.bind(record.timestamp, at: 2)
      insert.bind(record.payload, at: 3)
      _ = try insert.step()
      insert.reset()
    }
    try database.execute("COMMIT; PRAGMA wal_checkpoint(TRUNCATE);")
  }
}
