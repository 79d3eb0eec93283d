import Notebook
import Rewind
import RewindJournal
import RewindTestSupport

/// Writes a seeded random workload of `commands` Notebook commands into `directory` and returns
/// the manager (still open). Ids are sequential and the clock steps, so the same seed writes the
/// same events whatever the journal's frame and segment sizes. A second workload on the same journal
/// needs `ids` of its own (`.sequential(prefix:)`): the same ids again would replace records.
/// `checkpointEvery` records a checkpoint after every that many commands.
func writeWorkload(
  _ directory: String, seed: UInt64, commands: Int, options: JournalOptions = JournalOptions(durability: .none),
  ids: IdentifierSource = .sequential(), checkpointEvery: Int? = nil,
  plant: (at: Int, action: (NotebookManager) async throws -> Void)? = nil
) async throws -> NotebookManager {
  let manager = try NotebookManager(
    directory: directory, options: options, clock: .stepping(from: 1_700_000_000_000_000_000), ids: ids)
  try await drive(manager, seed: seed, commands: commands, checkpointEvery: checkpointEvery, plant: plant)
  return manager
}

/// Runs `writeWorkload`'s seeded random commands on `manager` (open on a journal that may hold
/// records already).
func drive(
  _ manager: NotebookManager, seed: UInt64, commands: Int, checkpointEvery: Int? = nil,
  plant: (at: Int, action: (NotebookManager) async throws -> Void)? = nil
) async throws {
  var random = SeededGenerator(seed: seed)
  var notebooks = [try await manager.createNotebook(title: "inbox")]
  for step in 0..<commands {
    if let plant, plant.at == step { try await plant.action(manager) }
    if let checkpointEvery, step > 0, step % checkpointEvery == 0 { try await manager.recordCheckpoint() }
    let notes = manager.state.notes.all().map(\.id)
    let items = manager.state.readingList.all().map(\.id)
    let tags: [NoteTag] = ["swift", "linux", "ideas", "todo", "read"]
    switch Int.random(in: 0..<100, using: &random) {
    case 0..<5:
      notebooks.append(try await manager.createNotebook(title: "book \(step)"))
    case 5..<7:
      let book = notebooks.randomElement(using: &random)!
      if manager.state.notebooks.find(id: book)?.title != "forbidden" {
        try await manager.renameNotebook(book, to: "renamed \(step)")
      }
    case 7..<30:
      try await manager.createNote(
        in: notebooks.randomElement(using: &random)!, title: "note \(step)", body: "body \(step)",
        tags: [tags.randomElement(using: &random)!])
    case 30..<45 where !notes.isEmpty:
      try await manager.retitleNote(notes.randomElement(using: &random)!, to: "title \(step)")
    case 45..<60 where !notes.isEmpty:
      try await manager.editBody(of: notes.randomElement(using: &random)!, to: "edited \(step)")
    case 60..<70 where !notes.isEmpty:
      try await manager.tagNote(notes.randomElement(using: &random)!, with: tags.randomElement(using: &random)!)
    case 70..<76 where !notes.isEmpty:
      try await manager.untagNote(notes.randomElement(using: &random)!, removing: tags.randomElement(using: &random)!)
    case 76..<82 where !notes.isEmpty:
      try await manager.deleteNote(notes.randomElement(using: &random)!)
    case 82..<90:
      _ = try await manager.addReadingItem(title: "item \(step)")
    case 90..<95 where !items.isEmpty:
      try await manager.toggleReadingItem(items.randomElement(using: &random)!)
    case 95..<97 where !items.isEmpty:
      try await manager.removeReadingItem(items.randomElement(using: &random)!)
    default:
      try await manager.updateSettings(EditorSettings(fontSize: Int.random(in: 10...20, using: &random)))
    }
  }
}
