package import RewindJournal

/// A `FileIO` that notes, in order, the path of every sync and every rename's destination
/// (`"sync <path>"`, `"rename <path>"`), for tests of what is made durable before what.
package final class SyncRecordingFileIO: ForwardingFileIO {
  package let base: any FileIO = PosixFileIO()
  private let noted = Locked<[String]>([])

  package init() {}

  /// What happened so far, oldest first.
  package var events: [String] { noted.withLock { $0 } }

  package func sync(_ fd: Int32, metadata: Bool, path: String) throws {
    try base.sync(fd, metadata: metadata, path: path)
    noted.withLock { $0.append("sync " + path) }
  }

  package func rename(_ from: String, to: String) throws {
    try base.rename(from, to: to)
    noted.withLock { $0.append("rename " + to) }
  }
}
