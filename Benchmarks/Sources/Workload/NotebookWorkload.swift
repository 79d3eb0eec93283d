internal import Notebook
internal import Rewind
internal import Synchronization

/// A seeded stream of Notebook commands shaped like a person's use of a notes app: mostly body
/// edits and new notes, some retitling and tagging, a few deletions, a new notebook now and then.
/// Texts are drawn from the word list of Notebook's `WorkloadText`, so events are 100–300 bytes and
/// compress like prose. (`rewind demo` runs Notebook's pipelined `NotebookWorkload`; this one issues
/// one command at a time, which the corpus scenario times per command.)
struct NotebookWorkload {
  private var random: SeededRandom
  private var notebooks: [NotebookID] = []
  private var notes: [NoteID] = []
  private var tagsByNote: [NoteID: [NoteTag]] = [:]

  init(seed: UInt64) { random = SeededRandom(seed: seed) }

  /// Identifiers as an app would make them (random 128 bits), but from the seed.
  static func identifiers(seed: UInt64) -> IdentifierSource { .seeded(seed ^ 0x1D5) }

  /// A clock that advances a few seconds per command from a fixed start.
  static func clock(seed: UInt64) -> TimeSource {
    let generator = Mutex(SeededRandom(seed: seed ^ 0xC10C))
    let now = Mutex<Int64>(1_767_225_600_000_000_000)  // 2026-01-01T00:00:00Z
    return TimeSource {
      let step = generator.withLock { Int64($0.next() % 5_000_000_000) }
      return now.withLock { now in
        now += step
        return now
      }
    }
  }

  /// Runs the next command through `manager`.
  mutating func step(_ manager: NotebookManager) async throws {
    if notebooks.isEmpty || random.next() % 2_000 == 0 {
      notebooks.append(try await manager.createNotebook(title: words(2...4)))
      return
    }
    let roll = random.next() % 100
    if notes.count < 50 || roll < 25 {
      let notebook = notebooks[Int(random.next() % UInt64(notebooks.count))]
      let tags = (0..<Int(random.next() % 3)).map { _ in pickTag() }
      let id = try await manager.createNote(in: notebook, title: words(2...7), body: words(8...30), tags: tags)
      notes.append(id)
      tagsByNote[id] = Array(Set(tags)).sorted()
      return
    }
    let index = Int(random.next() % UInt64(notes.count))
    let note = notes[index]
    switch roll {
    case 25..<60:
      try await manager.editBody(of: note, to: words(8...35))
    case 60..<75:
      try await manager.retitleNote(note, to: words(2...7))
    case 75..<88:
      let tag = pickTag()
      try await manager.tagNote(note, with: tag)
      if tagsByNote[note, default: []].contains(tag) == false { tagsByNote[note, default: []].append(tag) }
    case 88..<95:
      if let tag = tagsByNote[note]?.popLast() {
        try await manager.untagNote(note, removing: tag)
      } else {
        try await manager.retitleNote(note, to: words(2...7))
      }
    default:
      try await manager.deleteNote(note)
      notes.swapAt(index, notes.count - 1)
      notes.removeLast()
      tagsByNote[note] = nil
    }
  }

  /// Between `range` words of prose, capitalized (the shared workload's vocabulary).
  mutating func words(_ range: ClosedRange<Int>) -> String { WorkloadText.words(range, using: &random) }

  private mutating func pickTag() -> NoteTag { WorkloadText.tag(using: &random) }

  static var tags: [String] { WorkloadText.tags }
}
