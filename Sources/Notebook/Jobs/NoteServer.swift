/// A note as a sync server sends it.
public struct RemoteNote: Sendable, Equatable, Codable {
  public var id: NoteID
  public var title: String
  public var body: String
  public var tags: [NoteTag]

  public init(id: NoteID, title: String, body: String, tags: [NoteTag] = []) {
    self.id = id
    self.title = title
    self.body = body
    self.tags = tags
  }
}

/// Where the sync job pulls notes from. Implementations must honour task cancellation.
public protocol NoteServer: Sendable {
  func fetchNotes(in notebook: NotebookID) async throws -> [RemoteNote]
}

/// A simulated server: an in-process feed of notes per notebook.
public actor InMemoryNoteServer: NoteServer {
  private var feeds: [NotebookID: [RemoteNote]] = [:]
  public private(set) var fetches = 0

  public init() {}

  public func publish(_ notes: [RemoteNote], in notebook: NotebookID) { feeds[notebook] = notes }

  public func fetchNotes(in notebook: NotebookID) async throws -> [RemoteNote] {
    try Task.checkCancellation()
    fetches += 1
    return feeds[notebook] ?? []
  }
}

/// The background job that pulls one notebook's notes. It runs off the funnel; its result lands
/// through the dedicated command `NotebookManager.applySyncedNotes(_:into:)`.
struct PullNotesJob: Sendable {
  let notebook: NotebookID

  func perform(server: some NoteServer) async throws -> [RemoteNote] {
    try await server.fetchNotes(in: notebook)
  }
}
