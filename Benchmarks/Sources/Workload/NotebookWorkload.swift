internal import Notebook
internal import Rewind
internal import Synchronization

/// One Notebook command, planned before it runs: notebooks and notes by their index in the lists
/// `NotebookHistory` keeps of the identifiers the manager returned.
enum PlannedCommand {
  case createNotebook(title: String)
  case createNote(notebook: Int, title: String, body: String, tags: [NoteTag])
  case editBody(note: Int, body: String)
  case retitleNote(note: Int, title: String)
  case tagNote(note: Int, tag: NoteTag)
  case untagNote(note: Int, tag: NoteTag)
  /// Also moves the last note into this one's place in the list.
  case deleteNote(note: Int)
}

/// A seeded stream of Notebook commands shaped like a person's use of a notes app: mostly body
/// edits and new notes, some retitling and tagging, a few deletions, a new notebook now and then.
/// Texts are drawn from the word list of Notebook's `WorkloadText`, so events are 100–300 bytes and
/// compress like prose. (`rewind demo` runs Notebook's pipelined `NotebookWorkload`; this one issues
/// one command at a time, which the corpus scenario times per command.)
///
/// Commands are planned (`next()`) apart from running them (`NotebookHistory.run`), so that a
/// timed loop runs only the manager's commands, not the making of their texts: the texts cost
/// about 2,900 instructions each, a command about 19,000.
struct NotebookWorkload {
  private var random: SeededRandom
  private var notebooks = 0
  /// The notes that exist, by a number given when each was planned, in `NotebookHistory`'s order.
  private var notes: [Int] = []
  private var notesPlanned = 0
  private var tagsByNote: [Int: [NoteTag]] = [:]

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

  /// Plans the next command, assuming every command planned before it succeeds.
  mutating func next() -> PlannedCommand {
    if notebooks == 0 || random.next() % 2_000 == 0 {
      notebooks += 1
      return .createNotebook(title: words(2...4))
    }
    let roll = random.next() % 100
    if notes.count < 50 || roll < 25 {
      let notebook = Int(random.next() % UInt64(notebooks))
      let tags = (0..<Int(random.next() % 3)).map { _ in pickTag() }
      let command = PlannedCommand.createNote(notebook: notebook, title: words(2...7), body: words(8...30), tags: tags)
      notes.append(notesPlanned)
      tagsByNote[notesPlanned] = Array(Set(tags)).sorted()
      notesPlanned += 1
      return command
    }
    let index = Int(random.next() % UInt64(notes.count))
    let note = notes[index]
    switch roll {
    case 25..<60:
      return .editBody(note: index, body: words(8...35))
    case 60..<75:
      return .retitleNote(note: index, title: words(2...7))
    case 75..<88:
      let tag = pickTag()
      if tagsByNote[note, default: []].contains(tag) == false { tagsByNote[note, default: []].append(tag) }
      return .tagNote(note: index, tag: tag)
    case 88..<95:
      if let tag = tagsByNote[note]?.popLast() { return .untagNote(note: index, tag: tag) }
      return .retitleNote(note: index, title: words(2...7))
    default:
      notes.swapAt(index, notes.count - 1)
      notes.removeLast()
      tagsByNote[note] = nil
      return .deleteNote(note: index)
    }
  }

  /// Between `range` words of prose, capitalized (the shared workload's vocabulary).
  mutating func words(_ range: ClosedRange<Int>) -> String { WorkloadText.words(range, using: &random) }

  private mutating func pickTag() -> NoteTag { WorkloadText.tag(using: &random) }

  static var tags: [String] { WorkloadText.tags }
}

/// Runs planned commands through a manager, keeping the identifiers its commands return in the
/// order the plan refers to them.
struct NotebookHistory {
  private var notebooks: [NotebookID] = []
  private var notes: [NoteID] = []

  mutating func run(_ command: PlannedCommand, on manager: NotebookManager) async throws {
    switch command {
    case .createNotebook(let title):
      notebooks.append(try await manager.createNotebook(title: title))
    case .createNote(let notebook, let title, let body, let tags):
      notes.append(try await manager.createNote(in: notebooks[notebook], title: title, body: body, tags: tags))
    case .editBody(let note, let body):
      try await manager.editBody(of: notes[note], to: body)
    case .retitleNote(let note, let title):
      try await manager.retitleNote(notes[note], to: title)
    case .tagNote(let note, let tag):
      try await manager.tagNote(notes[note], with: tag)
    case .untagNote(let note, let tag):
      try await manager.untagNote(notes[note], removing: tag)
    case .deleteNote(let note):
      try await manager.deleteNote(notes[note])
      notes.swapAt(note, notes.count - 1)
      notes.removeLast()
    }
  }
}
