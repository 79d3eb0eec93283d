internal import Notebook
internal import Rewind
internal import Synchronization

/// A seeded stream of Notebook commands shaped like a person's use of a notes app: mostly body
/// edits and new notes, some retitling and tagging, a few deletions, a new notebook now and then.
/// Texts are drawn from a word list, so events are 100–300 bytes and compress like prose.
struct NotebookWorkload {
  private var random: SeededRandom
  private var notebooks: [NotebookID] = []
  private var notes: [NoteID] = []
  private var tagsByNote: [NoteID: [NoteTag]] = [:]

  init(seed: UInt64) { random = SeededRandom(seed: seed) }

  /// Identifiers as an app would make them (random 128 bits), but from the seed.
  static func identifiers(seed: UInt64) -> IdentifierSource {
    let generator = Mutex(SeededRandom(seed: seed ^ 0x1D5))
    return IdentifierSource {
      generator.withLock { Identifier(high: $0.next(), low: $0.next()) }
    }
  }

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

  /// Between `range` words of prose, capitalized.
  mutating func words(_ range: ClosedRange<Int>) -> String {
    let count = range.lowerBound + Int(random.next() % UInt64(range.count))
    var text = ""
    for index in 0..<count {
      if index > 0 { text += " " }
      text += Self.vocabulary[Int(random.next() % UInt64(Self.vocabulary.count))]
    }
    return text.prefix(1).uppercased() + text.dropFirst()
  }

  private mutating func pickTag() -> NoteTag {
    // A few popular tags and a long tail, as people tag.
    let skew = random.next() % 100
    let pool = skew < 70 ? Self.tags.prefix(8) : Self.tags[...]
    return NoteTag(pool[pool.startIndex + Int(random.next() % UInt64(pool.count))])
  }

  static let tags = [
    "work", "home", "ideas", "todo", "reading", "travel", "recipes", "meeting", "draft", "urgent", "later",
    "project-atlas", "project-birch", "books", "health", "finance", "garden", "music", "family", "review",
    "archive", "questions", "people", "swift", "design",
  ]

  static let vocabulary: [String] = """
    the a of and to in is for on with that this it as at by from be are was or an not we you they
    note meeting plan call email draft list idea review follow up next week today tomorrow morning
    project budget design team client report notes summary action item owner deadline friday monday
    book chapter read page quote author library coffee lunch dinner recipe garden water trip flight
    hotel train ticket museum city weekend family birthday gift doctor appointment gym run walk
    swift code bug fix release build test branch merge journal event replay model store query cache
    apple orange bread milk eggs butter cheese pasta rice tomato onion garlic pepper salt olive oil
    remember ask check send write update finish start move cancel confirm share print sign pay
    quarterly numbers slides agenda minutes decision risk issue question answer feedback priority
    house rent car insurance tax bank invoice receipt phone charger laptop screen keyboard backup
    """.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
}
