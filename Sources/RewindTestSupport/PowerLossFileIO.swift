import Foundation
package import RewindJournal

/// A `FileIO` that keeps, beside the real files, what a power cut would leave of them, and takes
/// that image (`PowerCut`) at every step that makes something durable or changes a name: before
/// and after each sync, before each rename, removal and cut.
///
/// The model: a file's bytes (and size) are durable as they were at its last `fsync`/`fdatasync`;
/// a directory's entries (new names, renames, removals) as they were at the directory's last
/// sync. It keeps a cut, removal or rename undone until the next sync (POSIX also allows one to
/// reach the disk earlier, which it does not model). What was written since is lost, or, in a torn
/// image, partly kept (`Tearing`: in order, or any of the dirty pages). A name not yet durable is gone,
/// whatever its file holds, and a name removed but not yet durably so is still there, with what
/// its file held at its last sync. Files are known by their inode, so a synced temporary file
/// renamed into place is what the new name durably holds once the directory is synced.
///
/// Only what lies under `root` is modelled; the root itself is taken as durable.
package final class PowerLossFileIO: ForwardingFileIO {
  package let base: any FileIO = PosixFileIO()
  package let root: String
  private let model: Locked<Model>
  /// The cuts taken so far, oldest first, each with the test's `acknowledged()` at that instant.
  private let cuts = Locked<[PowerCut]>([])
  /// What the caller has acknowledged (sequence number to payload), read at each cut: every
  /// acknowledgement given before a cut must survive it.
  private let acknowledged: @Sendable () -> [UInt64: [UInt8]]

  private typealias Entry = PowerCut.Entry

  private struct Model {
    /// A file's bytes as of its last sync, by inode.
    var content: [UInt64: [UInt8]] = [:]
    /// A directory's entries as of its last sync, by the directory's inode.
    var entries: [UInt64: [String: Entry]] = [:]
    /// When the bytes or entries each inode holds above were taken: a sync that began earlier
    /// but returned later (two threads syncing one directory) makes nothing older durable again.
    var stamps: [UInt64: Int] = [:]
    var captures = 0
  }

  /// - Parameters:
  ///   - root: the directory under which files are modelled (a test's temporary directory).
  ///   - acknowledged: what the test has acknowledged so far, read at each cut.
  ///   - durable: whether what `root` holds now is durable (an image a cut left, opened again to
  ///     see a cut during its recovery), or nothing is (a new test directory).
  package init(root: String, durable: Bool = false, acknowledged: @escaping @Sendable () -> [UInt64: [UInt8]]) {
    self.root = root
    self.acknowledged = acknowledged
    var model = Model()
    if let inode = Self.inode(root) { model.entries[inode] = durable ? Self.liveEntries(root) : [:] }
    if durable {
      Self.walk(root) { path, entry in
        if entry.isDirectory {
          model.entries[entry.inode] = Self.liveEntries(path)
        } else if let file = Self.read(path: path) {
          model.content[file.inode] = file.bytes
        }
      }
    }
    self.model = Locked(model)
  }

  /// Every cut taken so far.
  package var taken: [PowerCut] { cuts.withLock { $0 } }

  // MARK: Steps

  package func sync(_ fd: Int32, metadata: Bool, path: String) throws {
    cut("before a sync of \(path)")
    // What the sync makes durable is what was there when it began: taken before it, kept once it
    // returns. (Taken after, a rename by another thread in between would count as synced.)
    let synced = capture(fd)
    try base.sync(fd, metadata: metadata, path: path)
    if let synced { model.withLock { synced(&$0) } }
    cut("after a sync of \(path)")
  }

  package func rename(_ from: String, to: String) throws {
    cut("before a rename to \(to)")
    try base.rename(from, to: to)
  }

  package func removeFile(_ path: String) throws {
    cut("before removing \(path)")
    try base.removeFile(path)
  }

  package func truncate(_ fd: Int32, to length: Int64, path: String) throws {
    cut("before cutting \(path) to \(length)")
    try base.truncate(fd, to: length, path: path)
  }

  // MARK: The model

  /// What `fd` holds now, a file's bytes or a directory's entries, as a change to the model that
  /// makes it durable; nil for what lies outside `root`.
  private func capture(_ fd: Int32) -> ((inout Model) -> Void)? {
    var info = stat()
    guard fstat(fd, &info) == 0, let path = Self.path(of: fd), path == root || path.hasPrefix(root + "/") else {
      return nil
    }
    let inode = UInt64(info.st_ino)
    // Taken under the lock, so that captures are ordered as their stamps are.
    return model.withLock { model -> ((inout Model) -> Void)? in
      model.captures += 1
      let stamp = model.captures
      if info.st_mode & S_IFMT == S_IFDIR {
        let entries = Self.liveEntries(path)
        return { model in
          guard stamp > model.stamps[inode] ?? 0 else { return }
          model.entries[inode] = entries
          model.stamps[inode] = stamp
        }
      }
      guard info.st_mode & S_IFMT == S_IFREG, let bytes = Self.read(path: "/proc/self/fd/\(fd)", following: true)?.bytes
      else {
        return nil
      }
      return { model in
        guard stamp > model.stamps[inode] ?? 0 else { return }
        model.content[inode] = bytes
        model.stamps[inode] = stamp
      }
    }
  }

  /// The image a power cut now would leave, with what was acknowledged before it.
  private func cut(_ moment: String) {
    let acknowledged = acknowledged()
    // The live files are read under the lock, as the durable image is taken: no sync of another
    // thread completes in between, so nothing written after a sync this image does not hold (an
    // index entry naming a segment whose name is not durable yet) is in the live bytes it tears.
    let (durable, entries, live) = model.withLock { model in
      var live: [UInt64: [UInt8]] = [:]
      Self.walk(root) { path, entry in
        if !entry.isDirectory, let file = Self.read(path: path) { live[file.inode] = file.bytes }
      }
      return (model.content, model.entries, live)
    }
    cuts.withLock {
      $0.append(
        PowerCut(
          moment: moment, rootInode: Self.inode(root) ?? 0, content: durable, entries: entries, live: live,
          acknowledged: acknowledged))
    }
  }

  private static func inode(_ path: String) -> UInt64? {
    var info = stat()
    return lstat(path, &info) == 0 ? UInt64(info.st_ino) : nil
  }

  private static func path(of fd: Int32) -> String? {
    try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")
  }

  private static func liveEntries(_ directory: String) -> [String: Entry] {
    var entries: [String: Entry] = [:]
    for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
      var info = stat()
      guard lstat(directory + "/" + name, &info) == 0 else { continue }
      entries[name] = Entry(inode: UInt64(info.st_ino), isDirectory: info.st_mode & S_IFMT == S_IFDIR)
    }
    return entries
  }

  /// The inode and bytes of the file at `path`, read through one descriptor (of its own: the
  /// writer's may be write-only), so that the two belong to one file even while another thread
  /// renames one over it.
  /// `following`: `path` may be a symbolic link (a descriptor's name under `/proc/self/fd`).
  private static func read(path: String, following: Bool = false) -> (inode: UInt64, bytes: [UInt8])? {
    let fd = Glibc.open(path, O_RDONLY | (following ? 0 : O_NOFOLLOW))
    guard fd >= 0 else { return nil }
    defer { Glibc.close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
      let got = chunk.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress!, $0.count, off_t(bytes.count)) }
      if got <= 0 { break }
      bytes += chunk.prefix(got)
    }
    return (UInt64(info.st_ino), bytes)
  }

  /// Calls `visit` with the path and entry of everything under `directory`, a directory before
  /// what it holds.
  private static func walk(_ directory: String, _ visit: (String, Entry) -> Void) {
    for (name, entry) in liveEntries(directory) {
      let path = directory + "/" + name
      visit(path, entry)
      if entry.isDirectory { walk(path, visit) }
    }
  }
}

/// What a power cut at one moment would leave under a `PowerLossFileIO`'s root, and what had been
/// acknowledged before it.
package struct PowerCut: Sendable {
  package struct Entry: Sendable {
    var inode: UInt64
    var isDirectory: Bool
  }

  /// Where the writer was: "before a sync of …", "after a rename to …".
  package let moment: String
  let rootInode: UInt64
  let content: [UInt64: [UInt8]]
  let entries: [UInt64: [String: Entry]]
  /// The files' live bytes at the cut, for torn images.
  let live: [UInt64: [UInt8]]
  /// Sequence number to payload, acknowledged before the cut.
  package let acknowledged: [UInt64: [UInt8]]

  /// Writes the image into `directory` (which must exist, empty): the durable names with their
  /// durable bytes; with `tearing`, each file's bytes past what is durable partly kept.
  package func write(into directory: String, tearing: inout Tearing?) throws {
    try write(rootInode, into: directory, tearing: &tearing)
  }

  private func write(_ inode: UInt64, into directory: String, tearing: inout Tearing?) throws {
    for (name, entry) in (entries[inode] ?? [:]).sorted(by: { $0.key < $1.key }) {
      let path = directory + "/" + name
      if entry.isDirectory {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try write(entry.inode, into: path, tearing: &tearing)
        continue
      }
      var bytes = content[entry.inode] ?? []
      if tearing != nil, let now = live[entry.inode] { bytes = tearing!.tear(durable: bytes, live: now) }
      guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
        throw CocoaError(.fileWriteUnknown)
      }
    }
  }
}

/// How a torn image keeps part of what was written since a file's last sync.
package struct Tearing: Sendable {
  package enum Order: Sendable {
    /// The bytes from the first that differs up to a random point: a disk that wrote back part
    /// of the dirty pages, in order.
    case inOrder
    /// Each 4 KiB page that differs kept or not at random: a disk that wrote back any of them, in
    /// any order (POSIX promises no order among unsynced writes).
    case anyPages
  }

  package var random: SeededGenerator
  package let order: Order

  package init(seed: UInt64, order: Order) {
    random = SeededGenerator(seed: seed)
    self.order = order
  }

  mutating func tear(durable: [UInt8], live: [UInt8]) -> [UInt8] {
    let common = zip(durable, live).prefix { $0 == $1 }.count
    guard common < live.count else { return durable }
    var bytes = durable
    switch order {
    case .inOrder:
      let end = Int.random(in: common...live.count, using: &random)
      if bytes.count < end { bytes += [UInt8](repeating: 0, count: end - bytes.count) }
      bytes.replaceSubrange(common..<end, with: live[common..<end])
    case .anyPages:
      let page = 4096
      var end = durable.count
      for start in stride(from: common / page * page, to: live.count, by: page) where Bool.random(using: &random) {
        let stop = min(start + page, live.count)
        if bytes.count < stop { bytes += [UInt8](repeating: 0, count: stop - bytes.count) }
        bytes.replaceSubrange(start..<stop, with: live[start..<stop])
        end = max(end, stop)
      }
      bytes.removeLast(bytes.count - end)
    }
    return bytes
  }
}
