internal import Foundation
internal import Notebook
internal import Rewind
internal import RewindJournal

/// The Notebook state rebuilt from the same records kept in SQLite: a cold `SELECT … ORDER BY
/// seq`, the rows decoded and applied by `Replay.rebuild(_:records:)` (a batch at a time, through
/// the same decoding and type-specialized apply code as a journal replay), against the journal's
/// own cold replay (which runs in a child process; this runs in the benchmark's). One difference
/// stays: SQLite's rows are read, decoded and applied on one thread, where a journal's replay
/// reads and decompresses on a second one. Best of three cold runs, as the replay's. Uses the
/// table `sqlite.read` loads (loading it if that did not run); checks that both give the same
/// state.
struct SQLiteRebuildScenario: Scenario {
  let name = "sqlite.rebuild"
  let summary = "SQLite: rebuild the Notebook state from the same records"

  func run(in context: BenchContext) async throws {
    let path = context.path("sqlite-corpus.db")
    if !FileManager.default.fileExists(atPath: path) { try SQLiteReadScenario.load(context.corpus, into: path) }
    let total = context.corpus.count
    // Best of three cold runs, as the journal's replay it is compared with.
    var seconds = Double.infinity
    var rebuilt: Replay.Result<Workspace>?
    for _ in 0..<3 {
      evictFromPageCache(context.work, prefix: path)
      let database = try SQLiteDatabase(path: path)
      let select = try database.prepare("SELECT seq, ts, payload FROM events ORDER BY seq")
      let rows = AnyIterator<JournalRecord> {
        guard (try? select.step()) == true else { return nil }
        return JournalRecord(
          sequence: UInt64(select.int64(at: 0)), timestamp: select.int64(at: 1), payload: select.bytes(at: 2))
      }
      let (run, result) = try timed { try Replay.rebuild(Workspace.self, records: rows) }
      guard result.lastSequence == UInt64(total) else {
        throw BenchError("rebuilding from SQLite stopped at \(result.lastSequence) of \(total)")
      }
      seconds = min(seconds, run)
      rebuilt = result
    }
    guard let rebuilt else { throw BenchError("no SQLite rebuild ran") }
    let replayed = try Replay.rebuild(Workspace.self, directory: context.corpusDirectory)
    guard try StateDigest.of(replayed.state) == StateDigest.of(rebuilt.state) else {
      throw BenchError("the state rebuilt from SQLite differs from the journal's replay")
    }
    let configuration = "\(total) events, cold"
    context.record(
      baseline: "sqlite", name, configuration, "events/s", Double(total) / seconds, "ev/s",
      comparedWith: ("replay", configuration, "events/s"))
  }
}
