internal import Notebook
internal import Rewind
internal import RewindJournal

/// What keeping the tag cache coherent costs per event. Two journals share the same base (a
/// notebook of many untagged notes); one continues with retitles, which touch no group, the other
/// with tag events, which file a note under a group of the cache. Replaying each tail
/// (full replay minus the base's replay) gives a cost per event; the difference is, roughly, the
/// cache's upkeep (the events also differ a little in size).
struct InvalidationScenario: Scenario {
  let name = "cache.upkeep"
  let summary = "replay cost per event: tag (updates the tag cache) vs retitle (does not)"

  func run(in context: BenchContext) async throws {
    let notes = context.options.mode == .full ? 100_000 : 2_000
    let tail = context.options.mode == .full ? 100_000 : 2_000
    var base: UInt64 = 0
    var perEvent: [String: Double] = [:]
    for kind in ["retitle", "tag"] {
      let directory = context.path("upkeep-\(kind == "retitle" ? "retitle" : "tag")")
      let manager = try NotebookManager(
        directory: directory, options: JournalOptions(durability: .none),
        ids: NotebookWorkload.identifiers(seed: context.options.seed ^ 0x1A))
      let notebook = try await manager.createNotebook(title: "Everything")
      var texts = NotebookWorkload(seed: context.options.seed ^ 0x1A)
      var ids: [NoteID] = []
      for _ in 0..<notes {
        ids.append(try await manager.createNote(in: notebook, title: texts.words(2...7), body: texts.words(8...30)))
      }
      base = manager.lastSequence
      for index in 0..<tail {
        let note = ids[index % ids.count]
        if kind == "retitle" {
          try await manager.retitleNote(note, to: texts.words(2...7))
        } else {
          try await manager.tagNote(note, with: NoteTag(NotebookWorkload.tags[index % NotebookWorkload.tags.count]))
        }
      }
      let total = manager.lastSequence
      manager.close()
      guard total == base + UInt64(tail) else {
        throw BenchError("\(kind): \(total - base) tail events recorded, expected \(tail)")
      }
      let whole = try Self.fastest(of: 3) { _ = try Replay.rebuild(Workspace.self, directory: directory) }
      let prefix = try Self.fastest(of: 3) {
        _ = try Replay.rebuild(Workspace.self, directory: directory, through: base)
      }
      perEvent[kind] = max(whole - prefix, 0) / Double(tail) * 1e6
    }
    let configuration = "\(notes) notes, \(tail) events after them"
    for (kind, micros) in perEvent.sorted(by: { $0.key < $1.key }) {
      context.record(name, configuration, "replay per \(kind) event", micros, "µs")
    }
    if let moving = perEvent["tag"], let still = perEvent["retitle"] {
      context.record(name, configuration, "upkeep per event (difference)", moving - still, "µs")
    }
  }

  /// The fastest of `runs` timings of `body`, in seconds.
  private static func fastest(of runs: Int, _ body: () throws -> Void) throws -> Double {
    var best = Double.infinity
    for _ in 0..<runs { best = min(best, try timed(body).seconds) }
    return best
  }
}
