extension Notebook {
  public static func notebook(id: NotebookID, in workspace: Workspace) -> Notebook? { workspace.notebooks.find(id: id) }
  public static func all(in workspace: Workspace) -> [Notebook] { workspace.notebooks.all() }
}

extension Note {
  public static func note(id: NoteID, in workspace: Workspace) -> Note? { workspace.notes.find(id: id) }

  public static func all(in workspace: Workspace) -> [Note] { workspace.notes.all() }

  /// The notes tagged `tag`, in id order; answered from the notes store's tag cache.
  public static func notes(taggedWith tag: NoteTag, in workspace: Workspace) -> [Note] {
    workspace.notes.records(inGroup: tag)
  }

  /// The notes of one notebook, in id order.
  public static func notes(inNotebook notebook: NotebookID, in workspace: Workspace) -> [Note] {
    workspace.notes.all().filter { $0.notebook == notebook }
  }
}

/// A tag and how many notes carry it.
public struct TagCount: Hashable, Sendable, CustomStringConvertible {
  public var tag: NoteTag
  public var count: Int
  public init(tag: NoteTag, count: Int) {
    self.tag = tag
    self.count = count
  }
  public var description: String { "\(tag)×\(count)" }
}

extension NoteTag {
  /// Every tag in use with its note count, in tag order; answered from the tag cache. A tag that
  /// notes write in two Unicode forms that compare equal is one tag, named as the first of its
  /// notes (in id order) writes it.
  public static func index(in workspace: Workspace) -> [TagCount] {
    workspace.notes.groupCounts().map { TagCount(tag: $0.key, count: $0.count) }
  }
}

extension ReadingItem {
  public static func item(id: ReadingItemID, in workspace: Workspace) -> ReadingItem? {
    workspace.readingList.find(id: id)
  }
  public static func all(in workspace: Workspace) -> [ReadingItem] { workspace.readingList.all() }
  public static func items(titled title: String, in workspace: Workspace) -> [ReadingItem] {
    workspace.readingList.all().filter { $0.title == title }
  }
}

extension EditorSettings {
  public static func current(in workspace: Workspace) -> EditorSettings { workspace.settings.value }
}
