internal import Rewind

/// Decides and issues the workload's commands, one at a time, keeping up to
/// `NotebookWorkload.commandsInFlight` of them in flight.
///
/// It mirrors the records it may name (known notebooks, notes, reading items, settings) as every
/// issued command leaves them, so it knows each command's event count before issuing it. A record a
/// command creates becomes known when that command is harvested: always `commandsInFlight`
/// commands later, whether or not it finished sooner.
struct WorkloadDriver {
  /// What a command's task returns: the identifier it made, if any.
  enum Outcome: Sendable {
    case none
    case notebook(NotebookID)
    case note(NoteID)
    case readingItem(ReadingItemID)
  }

  /// What a command will add to the mirror once its outcome is known.
  enum Pending {
    case nothing
    case notebook(title: String)
    case note(notebook: NotebookID, title: String, body: String, tags: [NoteTag])
    case readingItem
  }

  private let manager: NotebookManager
  private let executor: SerialTaskExecutor
  private let server = InMemoryNoteServer()
  private var random: SeededRandom
  private var inFlight: [(task: Task<Outcome, any Error>, pending: Pending)] = []
  private var issued = 0
  private var events = 0
  private var committedByOrigin: [String: Int] = [:]

  // The mirror.
  private var notebooks = PickList<NotebookID>()
  private var notebookTitles: [NotebookID: String] = [:]
  private var notes: [NoteID: Note] = [:]
  private var noteList = PickList<NoteID>()
  /// Notes created or edited by users since the auto-tagger last ran.
  private var touched = PickList<NoteID>()
  private var readingItems: [ReadingItemID: Bool] = [:]
  private var readingList = PickList<ReadingItemID>()
  private var settings = EditorSettings()

  init(manager: NotebookManager, executor: SerialTaskExecutor, seed: UInt64) {
    self.manager = manager
    self.executor = executor
    self.random = SeededRandom(seed: seed)
    // The mirror starts as the journal's state, so that a run on a journal that already holds
    // events (an unseeded demo run again in its directory) predicts its event counts right. A
    // seeded run starts from an empty journal, so this changes nothing of what it issues.
    let state = manager.state
    for notebook in state.notebooks.all() {
      notebooks.append(notebook.id)
      notebookTitles[notebook.id] = notebook.title
    }
    for note in state.notes.all() {
      notes[note.id] = note
      noteList.append(note.id)
    }
    for item in state.readingList.all() {
      readingItems[item.id] = item.isRead
      readingList.append(item.id)
    }
    settings = state.settings.value
  }

  mutating func run(events target: Int) async throws -> WorkloadSummary {
    do {
      while events < target { try await step() }
      while !inFlight.isEmpty { try await harvestOldest() }
    } catch {
      for command in inFlight { _ = try? await command.task.value }
      throw error
    }
    return WorkloadSummary(commands: issued, events: events, committedByOrigin: committedByOrigin)
  }

  // MARK: Issuing

  /// Starts one command that will record `count` events.
  private mutating func issue(
    _ count: Int, _ origin: Origin, pending: Pending = .nothing,
    _ body: @escaping @Sendable (NotebookManager, Origin) async throws -> Outcome
  ) async throws {
    while inFlight.count >= NotebookWorkload.commandsInFlight { try await harvestOldest() }
    let ticket = issued
    issued += 1
    events += count
    if count > 0 { committedByOrigin[origin.name, default: 0] += 1 }
    let manager = manager
    let task = Task(executorPreference: executor) {
      try await CommandTicket.$current.withValue(ticket) { try await body(manager, origin) }
    }
    inFlight.append((task, pending))
  }

  /// Waits for the oldest command in flight and learns what it created.
  private mutating func harvestOldest() async throws {
    let (task, pending) = inFlight.removeFirst()
    let outcome = try await task.value
    switch (pending, outcome) {
    case (.notebook(let title), .notebook(let id)):
      notebooks.append(id)
      notebookTitles[id] = title
    case (.note(let notebook, let title, let body, let tags), .note(let id)):
      notes[id] = Note(id: id, notebook: notebook, title: title, body: body, tags: tags)
      noteList.append(id)
      touched.append(id)
    case (.readingItem, .readingItem(let id)):
      readingItems[id] = false
      readingList.append(id)
    default:
      break
    }
  }

  // MARK: Deciding

  private mutating func step() async throws {
    if notebooks.isEmpty {
      // The very first command: a notebook, known before anything else is issued.
      let title = WorkloadText.words(1...3, using: &random)
      try await issue(1, .user, pending: .notebook(title: title)) {
        .notebook(try await $0.createNotebook(title: title, origin: $1))
      }
      while !inFlight.isEmpty { try await harvestOldest() }
      return
    }
    let roll = random.next() % 1_000
    switch roll {
    case 0..<2: try await createNotebook()
    case 2..<4: try await renameNotebook()
    case 4..<8: try await changeSettings()
    case 8..<28 where !noteList.isEmpty: try await sync()
    case 28..<68 where !touched.isEmpty: try await autoTag()
    case 68..<148: try await readingListCommand()
    default: try await noteCommand()
    }
  }

  private mutating func createNotebook() async throws {
    let title = WorkloadText.words(1...3, using: &random)
    try await issue(1, .user, pending: .notebook(title: title)) {
      .notebook(try await $0.createNotebook(title: title, origin: $1))
    }
  }

  private mutating func renameNotebook() async throws {
    let id = notebooks.pick(using: &random)
    let title = WorkloadText.words(1...3, using: &random)
    let count = notebookTitles[id] == title ? 0 : 1
    notebookTitles[id] = title
    try await issue(count, .user) {
      try await $0.renameNotebook(id, to: title, origin: $1)
      return .none
    }
  }

  private mutating func changeSettings() async throws {
    let themes = ["light", "dark", "sepia", "solarized"]
    let new = EditorSettings(
      fontSize: 11 + Int(random.next() % 8), theme: themes[Int(random.next() % UInt64(themes.count))],
      spellCheck: random.next() % 4 != 0)
    let count = new == settings ? 0 : 1
    settings = new
    try await issue(count, .user) {
      try await $0.updateSettings(new, origin: $1)
      return .none
    }
  }

  private mutating func readingListCommand() async throws {
    let roll = random.next() % 100
    if readingList.count < 20 || roll < 40 {
      let title = WorkloadText.words(3...9, using: &random)
      try await issue(1, .user, pending: .readingItem) {
        .readingItem(try await $0.addReadingItem(title: title, origin: $1))
      }
    } else if roll < 80 {
      let id = readingList.pick(using: &random)
      readingItems[id]?.toggle()
      try await issue(1, .user) {
        try await $0.toggleReadingItem(id, origin: $1)
        return .none
      }
    } else {
      let id = readingList.pick(using: &random)
      readingList.remove(id)
      readingItems[id] = nil
      try await issue(1, .user) {
        try await $0.removeReadingItem(id, origin: $1)
        return .none
      }
    }
  }

  /// The user's note commands, shaped like a person's use of a notes app: mostly body edits and
  /// new notes, some retitling and tagging, a few deletions.
  private mutating func noteCommand() async throws {
    let roll = random.next() % 100
    if noteList.count < 50 || roll < 25 {
      let notebook = notebooks.pick(using: &random)
      let title = WorkloadText.words(2...7, using: &random)
      let body = self.body()
      let tags = Note.normalized((0..<Int(random.next() % 3)).map { _ in WorkloadText.tag(using: &random) })
      try await issue(1, .user, pending: .note(notebook: notebook, title: title, body: body, tags: tags)) {
        .note(try await $0.createNote(in: notebook, title: title, body: body, tags: tags, origin: $1))
      }
      return
    }
    let id = noteList.pick(using: &random)
    guard var note = notes[id] else { return }
    switch roll {
    case 25..<60:
      let body = self.body()
      let count = note.body == body ? 0 : 1
      note.body = body
      notes[id] = note
      touched.append(id)
      try await issue(count, .user) {
        try await $0.editBody(of: id, to: body, origin: $1)
        return .none
      }
    case 60..<75:
      try await retitle(&note)
    case 75..<88:
      let tag = WorkloadText.tag(using: &random)
      let count = note.tags.contains(tag) ? 0 : 1
      note.tags = Note.normalized(note.tags + [tag])
      notes[id] = note
      try await issue(count, .user) {
        try await $0.tagNote(id, with: tag, origin: $1)
        return .none
      }
    case 88..<95:
      guard let tag = note.tags.last else { return try await retitle(&note) }
      note.tags.removeLast()
      notes[id] = note
      try await issue(1, .user) {
        try await $0.untagNote(id, removing: tag, origin: $1)
        return .none
      }
    default:
      notes[id] = nil
      noteList.remove(id)
      touched.remove(id)
      try await issue(1, .user) {
        try await $0.deleteNote(id, origin: $1)
        return .none
      }
    }
  }

  private mutating func retitle(_ note: inout Note) async throws {
    let id = note.id
    let title = WorkloadText.words(2...7, using: &random)
    let count = note.title == title ? 0 : 1
    note.title = title
    notes[id] = note
    touched.append(id)
    try await issue(count, .user) {
      try await $0.retitleNote(id, to: title, origin: $1)
      return .none
    }
  }

  /// Mostly a few lines; one note in twenty is a long one.
  private mutating func body() -> String {
    random.next() % 20 == 0 ? WorkloadText.words(60...200, using: &random) : WorkloadText.words(8...35, using: &random)
  }

  /// The sync job: the server's feed for one notebook (changes to some of its notes, a few new
  /// ones) is fetched off the funnel, then lands through `applySyncedNotes`.
  private mutating func sync() async throws {
    let anchor = noteList.pick(using: &random)
    guard let notebook = notes[anchor]?.notebook else { return }
    var feed: [RemoteNote] = []
    var named = Set<NoteID>()
    var count = 0
    for _ in 0..<(1 + random.next() % 4) {
      let id = noteList.pick(using: &random)
      guard let old = notes[id], old.notebook == notebook, named.insert(id).inserted else { continue }
      var note = old
      switch random.next() % 4 {
      case 0: note.title = WorkloadText.words(2...7, using: &random)
      case 1: note.body = body()
      case 2: note.tags = Note.normalized(note.tags + [WorkloadText.tag(using: &random)])
      default: note.tags = Array(note.tags.dropFirst())
      }
      count += (old.title != note.title ? 1 : 0) + (old.body != note.body ? 1 : 0)
      count += Set(note.tags).symmetricDifference(old.tags).count
      notes[id] = note
      feed.append(RemoteNote(id: id, title: note.title, body: note.body, tags: note.tags))
    }
    for _ in 0..<(random.next() % 4) {
      let id = NoteID(Identifier(high: random.next(), low: random.next()))
      let tags = Note.normalized([WorkloadText.tag(using: &random)])
      let note = Note(
        id: id, notebook: notebook, title: WorkloadText.words(2...7, using: &random), body: body(), tags: tags)
      notes[id] = note
      noteList.append(id)
      count += 1
      feed.append(RemoteNote(id: id, title: note.title, body: note.body, tags: note.tags))
    }
    await server.publish(feed, in: notebook)
    let remote = try await server.fetchNotes(in: notebook)
    try await issue(count, .sync) {
      try await $0.applySyncedNotes(remote, into: notebook, origin: $1)
      return .none
    }
  }

  /// The automation: the auto-tagger over the notes users created or edited since it last ran.
  private mutating func autoTag() async throws {
    let ids = Set(touched.items)
    touched = PickList()
    let tagger = WorkloadText.autoTagger
    var count = 0
    for id in ids.sorted() {
      guard var note = notes[id] else { continue }
      let missing = tagger.missingTags(for: note)
      count += missing.count
      note.tags = Note.normalized(note.tags + missing)
      notes[id] = note
    }
    try await issue(count, .automation) {
      try await $0.runAutoTagger(tagger, on: ids, origin: $1)
      return .none
    }
  }
}

/// Identifiers in a stable order, for seeded picks, with removal in constant time.
struct PickList<ID: Hashable> {
  private(set) var items: [ID] = []
  private var positions: [ID: Int] = [:]

  var count: Int { items.count }
  var isEmpty: Bool { items.isEmpty }

  /// Adds `id` at the end unless it is there already.
  mutating func append(_ id: ID) {
    guard positions[id] == nil else { return }
    positions[id] = items.count
    items.append(id)
  }

  /// Removes `id` by moving the last one into its place.
  mutating func remove(_ id: ID) {
    guard let position = positions.removeValue(forKey: id) else { return }
    let last = items.removeLast()
    if position < items.count {
      items[position] = last
      positions[last] = position
    }
  }

  /// One of the items, drawn from `random`. - Precondition: not empty.
  func pick(using random: inout SeededRandom) -> ID { items[Int(random.next() % UInt64(items.count))] }
}
