internal import Notebook
internal import Rewind
internal import RewindJournal

/// What keeping the tag cache coherent costs per event.
///
/// Through replay: two journals share the same base (a notebook of many untagged notes); one
/// continues with retitles, which touch no group, the other with tag events, which file a note
/// under a group of the cache. Replaying each tail (full replay minus the base's replay) gives a
/// cost per event of each kind; their difference mixes the upkeep with everything else that
/// differs between the two (decoding, the events' sizes), and moves between runs by more than
/// the upkeep.
///
/// The upkeep alone: the same changes applied to the base's notes in the notes store
/// (`Store<Note>`, which files each note under its tags) and in a store of the same notes without
/// groups (`UngroupedNote`), as replay applies them (nothing recorded). Each round changes both
/// stores in place, forward and then back (so every round starts from the same state), one store
/// after the other; the upkeep per change is the median over the rounds of the difference.
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
      let whole = try fastest(of: 3) { _ = try Replay.rebuild(Workspace.self, directory: directory) }
      let prefix = try fastest(of: 3) {
        _ = try Replay.rebuild(Workspace.self, directory: directory, through: base)
      }
      perEvent[kind] = max(whole - prefix, 0) / Double(tail) * 1e6
    }
    let configuration = "\(notes) notes, \(tail) events after them"
    for (kind, micros) in perEvent.sorted(by: { $0.key < $1.key }) {
      context.record(name, configuration, "replay per \(kind) event", micros, "µs")
    }
    if let moving = perEvent["tag"], let still = perEvent["retitle"] {
      context.record(name, configuration, "replay difference, tag − retitle", moving - still, "µs")
    }

    // The upkeep alone, on the base's notes (untagged, as the tag journal's replay leaves them).
    let based = try Replay.rebuild(Workspace.self, directory: context.path("upkeep-tag"), through: base).state
    let rounds = context.options.mode == .full ? 7 : 3
    let direct = "\(based.notes.count) notes in a store, \(tail) changes, median of \(rounds) rounds"
    for kind in ["tag", "retitle"] {
      let changes = Self.changes(kind, of: based.notes.all(), count: tail)
      let (grouped, upkeep) = Self.upkeep(of: changes, notes: based.notes.all(), rounds: rounds)
      context.record(name, direct, "store change per \(kind)", grouped, "µs")
      context.record(name, direct, "upkeep per \(kind)", upkeep, "µs")
    }
  }

  /// A note as the notes store holds it, but filed under no group: a store of these keeps no cache.
  struct UngroupedNote: HoldingNote {
    var note: Note
    var id: NoteID { note.id }
  }

  /// One change of one note: its tags or title before and after.
  struct Change {
    var id: NoteID
    var before: Note
    var after: Note
  }

  /// `count` changes of `kind` ("tag": a note gains a tag; "retitle": a note's title changes),
  /// note after note (cycling), each from the note as the changes before it left it.
  static func changes(_ kind: String, of notes: [Note], count: Int) -> [Change] {
    var current = notes
    let tags = NotebookWorkload.tags.map { NoteTag($0) }
    return (0..<count).map { index in
      let slot = index % current.count
      let before = current[slot]
      var after = before
      if kind == "tag" {
        after.tags = Array(Set(before.tags + [tags[index % tags.count]])).sorted()
      } else {
        after.title = before.title + " (\(index))"
      }
      current[slot] = after
      return Change(id: before.id, before: before, after: after)
    }
  }

  /// The median time per change of `changes` in the notes store, and the median over the rounds
  /// of what the grouped store took more than the ungrouped one per change, in microseconds.
  static func upkeep(of changes: [Change], notes: [Note], rounds: Int) -> (grouped: Double, upkeep: Double) {
    var grouped = Store<Note>(name: "notes")
    var ungrouped = Store<UngroupedNote>(name: "notes")
    var context = ApplyContext(recording: false)
    for note in notes {
      grouped.insert(note, context: &context)
      ungrouped.insert(UngroupedNote(note: note), context: &context)
    }
    var groupedTimes: [Double] = []
    var differences: [Double] = []
    let perChange = 1e6 / Double(2 * changes.count)
    for round in 0..<rounds {
      // Ungrouped first in every other round, so neither store always runs on caches the other warmed.
      var without = 0.0
      if round % 2 == 1 { without = Self.pass(changes, over: &ungrouped) }
      let withCache = Self.pass(changes, over: &grouped)
      if round % 2 == 0 { without = Self.pass(changes, over: &ungrouped) }
      groupedTimes.append(withCache * perChange)
      differences.append((withCache - without) * perChange)
    }
    precondition(grouped.all() == notes, "the rounds should leave the notes as they found them")
    return (median(groupedTimes), median(differences))
  }

  /// Seconds taken to apply `changes` to `store` and to undo them again: the same code for both
  /// stores, so their difference is the stores' alone.
  private static func pass<Record: HoldingNote>(_ changes: [Change], over store: inout Store<Record>) -> Double {
    timed {
      var context = ApplyContext(recording: false)
      for change in changes { store.update(id: change.id, context: &context) { $0.note = change.after } }
      for change in changes.reversed() { store.update(id: change.id, context: &context) { $0.note = change.before } }
    }.seconds
  }

  private static func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
  }
}

/// A store record that is a note, or holds one: what `InvalidationScenario.pass` changes.
protocol HoldingNote: StoreRecord where ID == NoteID {
  var note: Note { get set }
}

extension Note: HoldingNote {
  var note: Note {
    get { self }
    set { self = newValue }
  }
}
