package import RewindJournal

/// A `FileIO` that notes, in order, what makes a journal's files and names durable: every sync
/// (`"sync <path>"`; a directory's sync, `syncDirectory`, shows as the directory's path), every
/// rename's destination (`"rename <path>"`), every removal of a file that was there
/// (`"remove <path>"`) and every cut (`"truncate <path>"`), for tests of what is made durable
/// before what. Tests add their own marks between them with `note(_:)` (an acknowledgement, say).
package final class SyncRecordingFileIO: ForwardingFileIO {
  package let base: any FileIO = PosixFileIO()
  private let noted = Locked<[String]>([])

  package init() {}

  /// What happened so far, oldest first.
  package var events: [String] { noted.withLock { $0 } }

  /// Adds a test's own mark after what happened so far.
  package func note(_ event: String) {
    noted.withLock { $0.append(event) }
  }

  package func sync(_ fd: Int32, metadata: Bool, path: String) throws {
    try base.sync(fd, metadata: metadata, path: path)
    note("sync " + path)
  }

  package func makeDirectory(_ path: String) throws {
    try base.makeDirectory(path)
    note("mkdir " + path)
  }

  package func rename(_ from: String, to: String) throws {
    try base.rename(from, to: to)
    note("rename " + to)
  }

  package func removeFile(_ path: String) throws {
    let existed = base.fileExists(path)
    try base.removeFile(path)
    if existed { note("remove " + path) }
  }

  package func truncate(_ fd: Int32, to length: Int64, path: String) throws {
    try base.truncate(fd, to: length, path: path)
    note("truncate " + path)
  }
}
