public import Rewind
public import RewindJournal

/// The one place the Notebook model changes. Every source (the user's commands, the sync job, the
/// auto-tagger, imports) converges here; each command records its origin.
///
/// Commands validate against the current state and throw `NotebookError` without writing anything
/// when they are rejected; a journal failure throws `ManagerError` and changes nothing. Reads skip
/// the manager: query `state` with the static queries (`Note.notes(taggedWith:in:)`, …).
public final class NotebookManager: Sendable {
  private let manager: Manager<Workspace>

  /// Opens (or creates) the journal in `directory` and rebuilds the workspace from it.
  public init(
    directory: String, options: JournalOptions = JournalOptions(), clock: TimeSource = .system,
    ids: IdentifierSource = .random
  ) throws {
    manager = try Manager(directory: directory, options: options, clock: clock, ids: ids)
  }

  /// What opening found and did (see `Manager.recovery`): a torn tail or snapshots past the
  /// journal's end moved aside, committed records found missing.
  public var recovery: RecoveryReport { manager.recovery }

  /// The current workspace, a value.
  public var state: Workspace { manager.state }
  public var lastSequence: UInt64 { manager.lastSequence }
  /// The workspace with the sequence number of its last event, read together (see
  /// `Manager.current`): what to write a snapshot of.
  public var current: (state: Workspace, lastSequence: UInt64) { manager.current }
  /// One settled change per committed command, buffered without bound (see `Manager.changes()`).
  public func changes() -> AsyncStream<CommittedChange> { manager.changes() }
  /// One settled change per committed command, at most `limit` of them waiting unread: a reader
  /// that falls behind further gets `ChangeStreamError` (see `Manager.changes(bufferingAtMost:)`).
  /// - Precondition: `limit` is at least 1.
  public func changes(bufferingAtMost limit: Int) -> AsyncThrowingStream<CommittedChange, any Error> {
    manager.changes(bufferingAtMost: limit)
  }
  public func close() { manager.close() }

  /// Records a checkpoint of the workspace (see `Manager.recordCheckpoint()`).
  @discardableResult
  public func recordCheckpoint() async throws -> StateDigest { try await manager.recordCheckpoint() }

  // MARK: Notebooks

  @discardableResult
  public func createNotebook(title: String, origin: Origin = .user) async throws -> NotebookID {
    try await manager.perform(origin) { workspace, command in
      let title = try nonblank(title)
      let id = NotebookID(command.newID())
      guard !workspace.notebooks.contains(id: id) else { throw idInUse(id) }
      command.record(NotebookCreated(id: id, title: title))
      return id
    }
  }

  public func renameNotebook(_ id: NotebookID, to title: String, origin: Origin = .user) async throws {
    try await manager.perform(origin) { workspace, command in
      let title = try nonblank(title)
      guard let notebook = workspace.notebooks.find(id: id) else { throw notFound("notebook", id) }
      if notebook.title != title { command.record(NotebookRenamed(id: id, title: title)) }
    }
  }

  // MARK: Notes

  @discardableResult
  public func createNote(
    in notebook: NotebookID, title: String, body: String = "", tags: [NoteTag] = [], origin: Origin = .user
  ) async throws -> NoteID {
    try await manager.perform(origin) { workspace, command in
      guard workspace.notebooks.contains(id: notebook) else { throw notFound("notebook", notebook) }
      let id = NoteID(command.newID())
      guard !workspace.notes.contains(id: id) else { throw idInUse(id) }
      command.record(
        NoteCreated(id: id, notebook: notebook, title: title.trimmed, body: body, tags: Note.recorded(tags)))
      return id
    }
  }

  public func retitleNote(_ id: NoteID, to title: String, origin: Origin = .user) async throws {
    try await manager.perform(origin) { workspace, command in
      guard let note = workspace.notes.find(id: id) else { throw notFound("note", id) }
      if note.title != title.trimmed { command.record(NoteRetitled(id: id, title: title.trimmed)) }
    }
  }

  public func editBody(of id: NoteID, to body: String, origin: Origin = .user) async throws {
    try await manager.perform(origin) { workspace, command in
      guard let note = workspace.notes.find(id: id) else { throw notFound("note", id) }
      if note.body != body { command.record(NoteBodyEdited(id: id, body: body)) }
    }
  }

  public func tagNote(_ id: NoteID, with tag: NoteTag, origin: Origin = .user) async throws {
    try await manager.perform(origin) { workspace, command in
      guard let note = workspace.notes.find(id: id) else { throw notFound("note", id) }
      guard !tag.isEmpty else { throw NotebookError(.blankTitle, "a tag needs a name") }
      if !note.tags.contains(tag) { command.record(NoteTagged(id: id, tag: tag)) }
    }
  }

  public func untagNote(_ id: NoteID, removing tag: NoteTag, origin: Origin = .user) async throws {
    try await manager.perform(origin) { workspace, command in
      guard let note = workspace.notes.find(id: id) else { throw notFound("note", id) }
      if note.tags.contains(tag) { command.record(NoteUntagged(id: id, tag: tag)) }
    }
  }

  public func deleteNote(_ id: NoteID, origin: Origin = .user) async throws {
    try await manager.perform(origin) { workspace, command in
      guard workspace.notes.contains(id: id) else { throw notFound("note", id) }
      command.record(NoteDeleted(id: id))
    }
  }

  /// Replaces a notebook's notes with `notes`: the one command that replaces a whole collection,
  /// recorded as an explicit import event. The notes are recorded as they land: in `notebook`
  /// (whatever notebook each names), titles trimmed and tags normalized, as the other commands
  /// record theirs.
  public func importNotes(_ notes: [Note], into notebook: NotebookID, origin: Origin = .import) async throws {
    try await manager.perform(origin) { workspace, command in
      guard workspace.notebooks.contains(id: notebook) else { throw notFound("notebook", notebook) }
      try rejectDuplicates(notes.map(\.id))
      for note in notes {
        if let existing = workspace.notes.find(id: note.id), existing.notebook != notebook {
          throw NotebookError(.identifierInUse, "note \(note.id) belongs to another notebook")
        }
      }
      command.record(
        NotesImported(
          notebook: notebook,
          notes: notes.map {
            Note(id: $0.id, notebook: notebook, title: $0.title.trimmed, body: $0.body, tags: Note.recorded($0.tags))
          }))
    }
  }

  // MARK: Settings

  public func updateSettings(_ settings: EditorSettings, origin: Origin = .user) async throws {
    try await manager.perform(origin) { workspace, command in
      if workspace.settings.value != settings { command.record(EditorSettingsChanged(settings: settings)) }
    }
  }

  // MARK: Reading list

  /// Adds an item with a trimmed, nonblank title. On any error nothing is written, and the
  /// caller's input is untouched for another attempt.
  @discardableResult
  public func addReadingItem(title: String, origin: Origin = .user) async throws -> ReadingItemID {
    try await manager.perform(origin) { workspace, command in
      let title = try nonblank(title)
      let id = ReadingItemID(command.newID())
      guard !workspace.readingList.contains(id: id) else { throw idInUse(id) }
      command.record(ReadingItemAdded(id: id, title: title))
      return id
    }
  }

  /// Flips one item's read status; no other item changes.
  public func toggleReadingItem(_ id: ReadingItemID, origin: Origin = .user) async throws {
    try await manager.perform(origin) { workspace, command in
      guard let item = workspace.readingList.find(id: id) else { throw notFound("reading item", id) }
      command.record(ReadingItemToggled(id: id, isRead: !item.isRead))
    }
  }

  /// Removes exactly the item with `id`; an unknown id throws `.notFound` and writes nothing.
  public func removeReadingItem(_ id: ReadingItemID, origin: Origin = .user) async throws {
    try await manager.perform(origin) { workspace, command in
      guard workspace.readingList.contains(id: id) else { throw notFound("reading item", id) }
      command.record(ReadingItemRemoved(id: id))
    }
  }

  /// Replaces the reading list with stored data, which is rejected before anything is written if
  /// it names an identifier twice or has a blank title.
  public func importReadingList(_ items: [ReadingItem], origin: Origin = .import) async throws {
    try await manager.perform(origin) { _, command in
      try rejectDuplicates(items.map(\.id))
      for item in items { _ = try nonblank(item.title) }
      command.record(
        ReadingListImported(items: items.map { ReadingItem(id: $0.id, title: $0.title.trimmed, isRead: $0.isRead) }))
    }
  }

  // MARK: Sync and automation

  /// Pulls a notebook's notes from `server` and lands them through `applySyncedNotes`. The fetch
  /// runs off the funnel (other commands proceed meanwhile) as part of the caller's task, so
  /// cancelling the caller cancels the fetch. A pull cancelled before its command is validated
  /// throws `CancellationError` and writes nothing; one cancelled later (its notes being
  /// journaled) is committed and returns its count, as any command (see `Manager.perform`).
  @discardableResult
  public func pullNotes(from server: some NoteServer, into notebook: NotebookID) async throws -> Int {
    let notes = try await PullNotesJob(notebook: notebook).perform(server: server)
    try Task.checkCancellation()
    return try await applySyncedNotes(notes, into: notebook)
  }

  /// The dedicated command a sync result lands through: record-level events for each remote note
  /// that is new or differs (notes absent from the feed are left alone). Returns how many events.
  /// A remote note this notebook no longer has is new to it: one deleted here since the server's
  /// feed was made is created again (the example keeps no record of deletions for a sync to
  /// consult; an app whose server does not learn of them needs one).
  @discardableResult
  public func applySyncedNotes(_ remote: [RemoteNote], into notebook: NotebookID, origin: Origin = .sync) async throws
    -> Int
  {
    try await manager.perform(origin) { workspace, command in
      guard workspace.notebooks.contains(id: notebook) else { throw notFound("notebook", notebook) }
      try rejectDuplicates(remote.map(\.id))
      for incoming in remote {
        let tags = Note.recorded(incoming.tags)
        guard let local = workspace.notes.find(id: incoming.id) else {
          command.record(
            NoteCreated(
              id: incoming.id, notebook: notebook, title: incoming.title.trimmed, body: incoming.body, tags: tags))
          continue
        }
        guard local.notebook == notebook else {
          throw NotebookError(.identifierInUse, "note \(incoming.id) belongs to another notebook")
        }
        if local.title != incoming.title.trimmed {
          command.record(NoteRetitled(id: local.id, title: incoming.title.trimmed))
        }
        if local.body != incoming.body { command.record(NoteBodyEdited(id: local.id, body: incoming.body)) }
        for tag in tags where !local.tags.contains(tag) { command.record(NoteTagged(id: local.id, tag: tag)) }
        for tag in local.tags where !tags.contains(tag) { command.record(NoteUntagged(id: local.id, tag: tag)) }
      }
      return command.recorded.count
    }
  }

  /// Runs the auto-tagger over every note (or only `notes`), as one command with origin
  /// `.automation`; or, when its tags are more than one command may hold (the journal's
  /// `maxBatchBytes`: about 170,000 tags by default), as several, each over a run of the notes in
  /// id order (halved until each fits). Returns how many tags it added.
  @discardableResult
  public func runAutoTagger(_ tagger: AutoTagger, on notes: Set<NoteID>? = nil, origin: Origin = .automation)
    async throws -> Int
  {
    try await tag(tagger, on: notes, origin: origin).count
  }

  /// `runAutoTagger`, with the ids of the commands that recorded the tags (none when it added none).
  /// A pass too large for one command (`tooLarge`: nothing was written) failed every time, so a
  /// tagger catching up on a large notebook never ran; it is split instead.
  private func tag(_ tagger: AutoTagger, on notes: Set<NoteID>?, origin: Origin) async throws -> (
    count: Int, commands: [Identifier]
  ) {
    do {
      return try await tagOnce(tagger, origin: origin) { workspace in
        notes.map { ids in ids.sorted().compactMap { workspace.notes.find(id: $0) } } ?? workspace.notes.all()
      }
    } catch let error as ManagerError where error.code == .tooLarge {
      let ids = notes.map { $0.sorted() } ?? manager.state.notes.all().map(\.id)
      guard ids.count > 1 else { throw error }
      return try await tag(tagger, inHalves: ids[...], origin: origin)
    }
  }

  /// The tags of the notes `ids` names (in id order), in one command, or in two halves, each split
  /// again, when their tags are more than one command may hold.
  private func tag(_ tagger: AutoTagger, inHalves ids: ArraySlice<NoteID>, origin: Origin) async throws -> (
    count: Int, commands: [Identifier]
  ) {
    do {
      return try await tagOnce(tagger, origin: origin) { workspace in ids.compactMap { workspace.notes.find(id: $0) } }
    } catch let error as ManagerError where error.code == .tooLarge && ids.count > 1 {
      let middle = ids.startIndex + ids.count / 2
      let first = try await tag(tagger, inHalves: ids[..<middle], origin: origin)
      let second = try await tag(tagger, inHalves: ids[middle...], origin: origin)
      return (first.count + second.count, first.commands + second.commands)
    }
  }

  /// One command recording the tags `tagger` gives the notes `candidates` picks from the state.
  private func tagOnce(_ tagger: AutoTagger, origin: Origin, _ candidates: @escaping (Workspace) -> [Note])
    async throws -> (count: Int, commands: [Identifier])
  {
    try await manager.perform(origin) { workspace, command in
      for note in candidates(workspace) {
        for tag in tagger.missingTags(for: note) { command.record(NoteTagged(id: note.id, tag: tag)) }
      }
      return (command.recorded.count, command.recorded.isEmpty ? [] : [command.id])
    }
  }

  /// Starts the auto-tagger as a background automation. It first catches up: the notes committed
  /// before it started (by a run that closed or crashed before its tagger answered them, or a pull
  /// at launch) get their tags, in one command (or several, when they are many), as
  /// `runAutoTagger(_:)` gives them. Then, after
  /// every committed change that touched notes, whatever made it (another automation of the app, or another tagger, too) but its own
  /// (known by their command ids), it tags those notes through `runAutoTagger`. Two automations
  /// that undo each other's changes (one removing the tags this one adds) answer each other for
  /// as long as they run, as any two such rules would. Subscribed before this returns; runs until the
  /// returned task is cancelled or the manager closes, and holds the manager until then (a
  /// manager dropped without `close()` stays open while it runs). A close ends it without an
  /// error, also one that comes while it tags a change (tags already handed to the journal are
  /// written, as the close settles them; those not yet recorded are not); cancelling ends it with
  /// `CancellationError`, or without an error if it was waiting for a change. Any other error of
  /// its command (a failed append) ends it and is thrown.
  ///
  /// It follows the changes through a bounded stream (`Manager.changes(bufferingAtMost:)`, at most
  /// 1,024 changes waiting), so a burst of commands while it tags costs no memory beyond that.
  /// When it falls behind it cannot tell which notes the changes it missed touched (their keys
  /// are not in the journal), so it subscribes again and then runs over every note, as
  /// `runAutoTagger(_:)` without `notes`: every note it would have tagged gets its
  /// tags, and so do notes the rules tag that no change touched since it started.
  public func startAutoTagger(_ tagger: AutoTagger) -> Task<Void, any Error> {
    startAutoTagger(tagger, following: AutoTaggerFollowing())
  }

  /// `startAutoTagger(_:)`, following the changes as `following` says (tests shrink its buffer
  /// and hold the tagger).
  func startAutoTagger(_ tagger: AutoTagger, following: AutoTaggerFollowing) -> Task<Void, any Error> {
    let subscribed = manager.changes(bufferingAtMost: following.limit)
    // The notes to catch up on: those committed before the subscription (read after it, so that
    // none falls between; one committed in between comes on the stream too, and tagging a note
    // again adds nothing). Later ones come on the stream, answered as they come.
    let before = Set(manager.state.notes.all().lazy.map(\.id))
    return Task { [self] in
      var changes = subscribed
      // Its own commands' ids, until their change comes (each is one change, in commit order).
      var own: Set<Identifier> = []
      if !before.isEmpty {
        do {
          own.formUnion(try await tag(tagger, on: before, origin: .automation).commands)
        } catch let error as ManagerError where error.code == .closed {
          return  // closed before it caught up: the end it waits for
        }
      }
      while true {
        do {
          for try await change in changes {
            guard own.remove(change.commandID) == nil else { continue }
            let touched = Set(
              change.keys.compactMap { key in
                key.store == "notes" && key.kind == .record ? Identifier(key.key).map(NoteID.init) : nil
              })
            guard !touched.isEmpty else { continue }
            try Task.checkCancellation()
            await following.beforeTagging()
            own.formUnion(try await tag(tagger, on: touched, origin: .automation).commands)
          }
          return  // the manager closed
        } catch let error as ManagerError where error.code == .closed {
          return  // closed while it tagged a change: the same end
        } catch is ChangeStreamError {
          // Fell behind: subscribe again first, so that what the scan below does not see comes
          // on the new stream (what it does see may come too: tagging a note again adds nothing).
          changes = manager.changes(bufferingAtMost: following.limit)
          following.resubscribed()
          try Task.checkCancellation()
          do {
            own.formUnion(try await tag(tagger, on: nil, origin: .automation).commands)
          } catch let error as ManagerError where error.code == .closed {
            return  // closed meanwhile: the end it waits for
          }
        }
      }
    }
  }
}

/// How `NotebookManager.startAutoTagger` follows the manager's changes: the public entry uses the
/// defaults; tests shrink the buffer to make the tagger fall behind, and hold it.
struct AutoTaggerFollowing: Sendable {
  /// The most changes the tagger's stream keeps waiting unread.
  var limit = 1_024
  /// Awaited before the tagger tags the notes of a change.
  var beforeTagging: @Sendable () async -> Void = {}
  /// Called each time the tagger fell behind, once it has subscribed again (before it runs over
  /// every note).
  var resubscribed: @Sendable () -> Void = {}
}

private func nonblank(_ title: String) throws -> String {
  let trimmed = title.trimmed
  guard !trimmed.isEmpty else { throw NotebookError(.blankTitle, "enter a title: it cannot be blank") }
  return trimmed
}

private func notFound(_ kind: String, _ id: some CustomStringConvertible) -> NotebookError {
  NotebookError(.notFound, "no \(kind) \(id): it may have been removed")
}

private func idInUse(_ id: some CustomStringConvertible) -> NotebookError {
  NotebookError(.identifierInUse, "the identifier source produced \(id), which is already in use")
}

private func rejectDuplicates<ID: Hashable & CustomStringConvertible>(_ ids: [ID]) throws {
  var seen = Set<ID>()
  for id in ids where !seen.insert(id).inserted {
    throw NotebookError(.duplicateIdentifiers, "the data names \(id) more than once; it was not accepted")
  }
}
