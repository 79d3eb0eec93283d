internal import Notebook
internal import Rewind
internal import RewindJournal

/// Queries on a notebook of many notes: answered from the notes store's tag cache, against the
/// same answer recomputed from every note.
struct QueryScenario: Scenario {
  let name = "queries"
  let summary = "notes(taggedWith:) and the tag index, cached vs recomputed from all notes"

  func run(in context: BenchContext) async throws {
    let count = context.options.mode == .full ? 100_000 : 2_000
    let manager = try NotebookManager(
      directory: context.path("queries-journal"), options: JournalOptions(durability: .none),
      ids: NotebookWorkload.identifiers(seed: context.options.seed ^ 0x0E))
    let notebook = try await manager.createNotebook(title: "Everything")
    var texts = NotebookWorkload(seed: context.options.seed ^ 0x0E)
    var random = SeededRandom(seed: context.options.seed ^ 0x0F)
    for _ in 0..<count {
      let tags = (0..<Int(random.next() % 3)).map { _ in
        NoteTag(NotebookWorkload.tags[Int(random.next() % UInt64(NotebookWorkload.tags.count))])
      }
      try await manager.createNote(in: notebook, title: texts.words(2...7), body: texts.words(8...30), tags: tags)
    }
    let workspace = manager.state
    manager.close()
    let tags = NotebookWorkload.tags.map { NoteTag($0) }
    let rounds = 5
    let configuration = "\(count) notes, \(tags.count) tags"

    var cachedTotal = 0
    var recomputedTotal = 0
    let cached = timed {
      for _ in 0..<rounds { for tag in tags { cachedTotal += Note.notes(taggedWith: tag, in: workspace).count } }
    }
    let recomputed = timed {
      for _ in 0..<rounds {
        for tag in tags { recomputedTotal += Note.all(in: workspace).filter { $0.tags.contains(tag) }.count }
      }
    }
    guard cachedTotal == recomputedTotal else {
      throw BenchError("the tag cache answered \(cachedTotal) notes, recomputing \(recomputedTotal)")
    }
    let queries = Double(rounds * tags.count)
    context.record(name, configuration, "notes(taggedWith:) per query", cached.seconds / queries * 1e3, "ms")
    context.record(
      baseline: "recomputed", name, configuration, "notes(taggedWith:) per query", recomputed.seconds / queries * 1e3,
      "ms", comparedWith: (name, configuration, "notes(taggedWith:) per query"))

    let index = timed { (0..<rounds).map { _ in NoteTag.index(in: workspace).count } }
    let recount = timed {
      (0..<rounds).map { _ in
        var counts: [NoteTag: Int] = [:]
        for note in Note.all(in: workspace) { for tag in note.tags { counts[tag, default: 0] += 1 } }
        return counts.count
      }
    }
    guard index.result == recount.result else { throw BenchError("the tag index disagrees with a recount") }
    context.record(name, configuration, "tag index per query", index.seconds / Double(rounds) * 1e3, "ms")
    context.record(
      baseline: "recomputed", name, configuration, "tag index per query", recount.seconds / Double(rounds) * 1e3, "ms",
      comparedWith: (name, configuration, "tag index per query"))
  }
}
