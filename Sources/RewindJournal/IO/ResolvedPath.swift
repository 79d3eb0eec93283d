import Foundation
import Glibc

/// Paths as the file system resolves them, for commands that must not write into a journal's
/// own directory (a backup, an export): a path reached through a symbolic link, `.` or `..` is
/// still inside it.
package enum ResolvedPath {
  /// `path` with every symbolic link and `.`/`..` resolved, also when its last component does
  /// not exist yet (resolved through its parent); nil when that parent cannot be resolved.
  package static func of(_ path: String) -> String? {
    func real(_ path: String) -> String? {
      guard let pointer = realpath(path, nil) else { return nil }
      defer { free(pointer) }
      return String(cString: pointer)
    }
    if let whole = real(path) { return whole }
    let (parent, name) = split(path)
    return real(parent).map { ($0.hasSuffix("/") ? $0 : $0 + "/") + name }
  }

  /// `path`'s parent directory (`.` when it names none) and last component, a trailing slash
  /// dropped; nothing is resolved.
  package static func split(_ path: String) -> (parent: String, name: String) {
    let trimmed = path.hasSuffix("/") && path.count > 1 ? String(path.dropLast()) : path
    guard let slash = trimmed.lastIndex(of: "/") else { return (".", trimmed) }
    let parent = slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    return (parent, String(trimmed[trimmed.index(after: slash)...]))
  }

  /// Whether `path` is `directory` or lies inside it, both resolved; false when either cannot be.
  /// Judged by the resolved paths, then by identity: `path` or a directory above it that is
  /// `directory` itself, or a folder inside it (the same device and inode), under another path,
  /// as a bind mount shows it (helper-222, Dec 7: `export -o` through a bind mount of the
  /// journal replaced its manifest; through one of its `quarantine/`, a file kept there; and
  /// through one of a folder in that, helper-224). Folders are looked for through
  /// `folderDepth` levels, not through symbolic links.
  package static func lies(_ path: String, within directory: String) -> Bool {
    guard let inner = of(path), let outer = of(directory) else { return false }
    if inner == outer || inner.hasPrefix(outer.hasSuffix("/") ? outer : outer + "/") { return true }
    func identity(_ path: String) -> (dev_t, ino_t)? {
      var status = stat()
      return stat(path, &status) == 0 ? (status.st_dev, status.st_ino) : nil
    }
    var targets: [(dev_t, ino_t)] = []
    if let journal = identity(outer) { targets.append(journal) }
    var folders = [(path: outer, depth: 0)]
    while let (folder, depth) = folders.popLast() {
      guard depth < folderDepth else { continue }
      for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
        var status = stat()
        if lstat(folder + "/" + name, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR {
          targets.append((status.st_dev, status.st_ino))
          folders.append((folder + "/" + name, depth + 1))
        }
      }
    }
    var candidate = inner
    while true {
      if let found = identity(candidate), targets.contains(where: { $0 == found }) { return true }
      guard candidate != "/" else { return false }
      candidate = split(candidate).parent
    }
  }

  /// The levels of folders inside a journal's directory that `lies(_:within:)` looks through: a
  /// journal has `quarantine/` and `snapshots/`, and a user may put folders in them.
  static let folderDepth = 8

  /// `name` for a hidden temporary file beside it (`.NAME.backup-…`, `.NAME.export-….tmp`): whole
  /// up to 200 UTF-8 bytes, else its first whole characters within them. A file name may take 255
  /// bytes, and the temporary name adds up to 22 more: a name near the limit, valid for the file
  /// itself, made the temporary one too long (ENAMETOOLONG), so the command failed.
  package static func temporaryStem(_ name: String) -> String {
    guard name.utf8.count > 200 else { return name }
    var stem = ""
    var bytes = 0
    for character in name {
      bytes += character.utf8.count
      if bytes > 200 { break }
      stem.append(character)
    }
    return stem
  }
}
