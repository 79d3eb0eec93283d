public import Rewind

/// The workspace's stores, written field by field for digests, snapshots and the time machine.
extension Workspace: SnapshotModel {
  private enum CodingKeys: String, CodingKey {
    case notebooks, notes, readingList, settings
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(notebooks, forKey: .notebooks)
    try container.encode(notes, forKey: .notes)
    try container.encode(readingList, forKey: .readingList)
    try container.encode(settings, forKey: .settings)
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    self.init()
    notebooks = try container.decode(Store<Notebook>.self, forKey: .notebooks)
    notes = try container.decode(Store<Note>.self, forKey: .notes)
    readingList = try container.decode(Store<ReadingItem>.self, forKey: .readingList)
    settings = try container.decode(ValueStore<EditorSettings>.self, forKey: .settings)
  }
}
