public import Rewind

/// The Notebook app's model: notebooks, notes (with the tag cache), the reading list and the
/// editor settings. Changed only by applying its events; read through the static queries.
public struct Workspace: Model {
  public internal(set) var notebooks = Store<Notebook>(name: "notebooks")
  public internal(set) var notes = Store<Note>(name: "notes")
  public internal(set) var readingList = Store<ReadingItem>(name: "readingList")
  public internal(set) var settings = ValueStore(name: "settings", initial: EditorSettings())

  public init() {}

  public static func registerEvents(in registry: inout EventRegistry<Workspace>) {
    registry.register(NotebookCreated.self) { $0.apply($1, &$2) }
    registry.register(NotebookRenamed.self) { $0.apply($1, &$2) }
    registry.register(NoteCreated.self) { $0.apply(&$1, &$2) }
    registry.registerUpcaster(from: NoteCreatedV1.self, to: NoteCreated.self) {
      NoteCreated(id: $0.id, notebook: $0.notebook, title: $0.title, body: $0.body, tags: [])
    }
    registry.register(NoteRetitled.self) { $0.apply(&$1, &$2) }
    registry.register(NoteBodyEdited.self) { $0.apply(&$1, &$2) }
    registry.register(NoteTagged.self) { $0.apply($1, &$2) }
    registry.register(NoteUntagged.self) { $0.apply($1, &$2) }
    registry.register(NoteDeleted.self) { $0.apply($1, &$2) }
    registry.register(NotesImported.self) { $0.apply($1, &$2) }
    registry.register(EditorSettingsChanged.self) { $0.apply($1, &$2) }
    registry.register(ReadingItemAdded.self) { $0.apply($1, &$2) }
    registry.register(ReadingItemToggled.self) { $0.apply($1, &$2) }
    registry.register(ReadingItemRemoved.self) { $0.apply($1, &$2) }
    registry.register(ReadingListImported.self) { $0.apply($1, &$2) }
  }

  // MARK: Apply functions: pure, total, touching only what the event names.

  mutating func apply(_ event: NotebookCreated, _ context: inout ApplyContext) {
    notebooks.insert(Notebook(id: event.id, title: event.title), context: &context)
  }

  mutating func apply(_ event: NotebookRenamed, _ context: inout ApplyContext) {
    notebooks.update(id: event.id, context: &context) { $0.title = event.title }
  }

  // A creation takes its event `inout` (the registry lends each decoded event to its apply) and
  // moves the event's strings and tags into the note, through locals it then consumes. Copied
  // out of the event instead, each was retained for the note and released with the event (about
  // 110 instructions a creation in replay).
  mutating func apply(_ event: inout NoteCreated, _ context: inout ApplyContext) {
    var title = ""
    swap(&title, &event.title)
    var body = ""
    swap(&body, &event.body)
    var tags: [NoteTag] = []
    swap(&tags, &event.tags)
    notes.insert(
      Note(id: event.id, notebook: event.notebook, title: consume title, body: consume body, tags: consume tags),
      context: &context)
  }

  // A retitle or a body edit takes its event `inout` and swaps the new string into the note: the
  // event keeps the old one, which replay frees on its reading thread with the event, off the
  // thread that applies. Assigned instead, the string was retained for the note and released
  // again with the event, and the old one freed here.

  mutating func apply(_ event: inout NoteRetitled, _ context: inout ApplyContext) {
    notes.update(id: event.id, context: &context) { swap(&$0.title, &event.title) }
  }

  mutating func apply(_ event: inout NoteBodyEdited, _ context: inout ApplyContext) {
    notes.update(id: event.id, context: &context) { swap(&$0.body, &event.body) }
  }

  mutating func apply(_ event: NoteTagged, _ context: inout ApplyContext) {
    notes.update(id: event.id, context: &context) { Note.insert(event.tag, into: &$0.tags) }
  }

  mutating func apply(_ event: NoteUntagged, _ context: inout ApplyContext) {
    notes.update(id: event.id, context: &context) { $0.tags.removeAll { $0 == event.tag } }
  }

  mutating func apply(_ event: NoteDeleted, _ context: inout ApplyContext) {
    notes.remove(id: event.id, context: &context)
  }

  /// Makes the notebook hold exactly the imported notes, touching only the notes that differ.
  mutating func apply(_ event: NotesImported, _ context: inout ApplyContext) {
    let incoming = Set(event.notes.map(\.id))
    for note in notes.all() where note.notebook == event.notebook && !incoming.contains(note.id) {
      notes.remove(id: note.id, context: &context)
    }
    for var note in event.notes {
      note.notebook = event.notebook
      note.tags = Note.normalized(note.tags)
      notes.insert(note, context: &context)
    }
  }

  mutating func apply(_ event: EditorSettingsChanged, _ context: inout ApplyContext) {
    settings.set(event.settings, context: &context)
  }

  mutating func apply(_ event: ReadingItemAdded, _ context: inout ApplyContext) {
    readingList.insert(ReadingItem(id: event.id, title: event.title), context: &context)
  }

  mutating func apply(_ event: ReadingItemToggled, _ context: inout ApplyContext) {
    readingList.update(id: event.id, context: &context) { $0.isRead = event.isRead }
  }

  mutating func apply(_ event: ReadingItemRemoved, _ context: inout ApplyContext) {
    readingList.remove(id: event.id, context: &context)
  }

  mutating func apply(_ event: ReadingListImported, _ context: inout ApplyContext) {
    let incoming = Set(event.items.map(\.id))
    for item in readingList.all() where !incoming.contains(item.id) {
      readingList.remove(id: item.id, context: &context)
    }
    for item in event.items { readingList.insert(item, context: &context) }
  }
}
