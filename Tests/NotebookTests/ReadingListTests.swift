import Glibc
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

@Test func validationPreventsAWrite() async throws {
  let temporary = TemporaryDirectory()
  let manager = try makeNotebookManager(temporary.appending("journal"))
  let id = try await manager.addReadingItem(title: "  Protocols  ")
  #expect(ReadingItem.all(in: manager.state) == [ReadingItem(id: id, title: "Protocols", isRead: false)])
  let written = manager.lastSequence

  let error = await #expect(throws: NotebookError.self) { try await manager.addReadingItem(title: " \n\t ") }
  #expect(error?.code == .blankTitle)
  #expect(manager.lastSequence == written)
  #expect(ReadingItem.all(in: manager.state).count == 1)
  manager.close()
}

@Test func rejectedSaveKeepsVisibleAndStoredStateAndALaterChangeRecovers() async throws {
  let temporary = TemporaryDirectory()
  let directory = temporary.appending("journal")
  let io = FaultInjectingFileIO()
  let manager = try makeNotebookManager(directory, io: io)
  let first = try await manager.addReadingItem(title: "Protocols")
  try await manager.toggleReadingItem(first)
  let visible = ReadingItem.all(in: manager.state)
  #expect(visible.map(\.isRead) == [true])

  // The first failure strikes the frames, written over zeros preallocated by the first append.
  io.arm(.writeError(EIO))
  await #expect(throws: ManagerError.self) { try await manager.toggleReadingItem(first) }
  #expect(ReadingItem.all(in: manager.state) == visible)
  #expect(io.struck == 1)
  // It cut those zeros with the frames it failed to write, so the next append preallocates
  // again: the second failure strikes the zeros (the frames then grow the file) and the frames.
  let input = "Generics"
  io.arm(.writeError(ENOSPC))
  io.arm(.writeError(ENOSPC))
  await #expect(throws: ManagerError.self) { try await manager.addReadingItem(title: input) }
  #expect(ReadingItem.all(in: manager.state) == visible)
  #expect(io.struck == 3 && io.unstruck == 0)
  io.disarm()

  // The input is still there for another attempt, which succeeds.
  let second = try await manager.addReadingItem(title: input)
  #expect(ReadingItem.all(in: manager.state).map(\.id) == [first, second].sorted())
  #expect(ReadingItem.item(id: first, in: manager.state)?.isRead == true)
  manager.close()
  // What is stored is what was visible: the failed saves left nothing behind.
  let stored = try Replay.rebuild(Workspace.self, directory: directory).state
  #expect(stored == manager.state)
}

@Test func togglingOneItemNeverChangesAnother() async throws {
  let temporary = TemporaryDirectory()
  let manager = try makeNotebookManager(temporary.appending("journal"))
  let a = try await manager.addReadingItem(title: "Same")
  let b = try await manager.addReadingItem(title: "Same")
  try await manager.toggleReadingItem(b)
  #expect(ReadingItem.item(id: a, in: manager.state)?.isRead == false)
  #expect(ReadingItem.item(id: b, in: manager.state)?.isRead == true)
  manager.close()
}

@Test func deletingOneOfTwoSameTitledItemsRemovesExactlyThatOneAndAgainWritesNothing() async throws {
  let temporary = TemporaryDirectory()
  let manager = try makeNotebookManager(temporary.appending("journal"))
  let first = try await manager.addReadingItem(title: "Same title")
  let second = try await manager.addReadingItem(title: "Same title")
  try await manager.toggleReadingItem(second)
  #expect(ReadingItem.items(titled: "Same title", in: manager.state).count == 2)

  try await manager.removeReadingItem(first)
  #expect(ReadingItem.all(in: manager.state) == [ReadingItem(id: second, title: "Same title", isRead: true)])
  let written = manager.lastSequence

  let error = await #expect(throws: NotebookError.self) { try await manager.removeReadingItem(first) }
  #expect(error?.code == .notFound)
  #expect(manager.lastSequence == written)
  #expect(ReadingItem.all(in: manager.state).map(\.id) == [second])
  manager.close()
}

@Test func storedDataWithDuplicateIdentifiersIsRejectedBeforeAcceptance() async throws {
  let temporary = TemporaryDirectory()
  let manager = try makeNotebookManager(temporary.appending("journal"))
  let kept = try await manager.addReadingItem(title: "Kept")
  let before = manager.state
  let twice = ReadingItemID(Identifier(high: 7, low: 7))
  let error = await #expect(throws: NotebookError.self) {
    try await manager.importReadingList([ReadingItem(id: twice, title: "A"), ReadingItem(id: twice, title: "B")])
  }
  #expect(error?.code == .duplicateIdentifiers)
  #expect(manager.state == before)

  try await manager.importReadingList([ReadingItem(id: twice, title: " A ", isRead: true)])
  #expect(ReadingItem.all(in: manager.state) == [ReadingItem(id: twice, title: "A", isRead: true)])
  #expect(ReadingItem.item(id: kept, in: manager.state) == nil)
  manager.close()
}
