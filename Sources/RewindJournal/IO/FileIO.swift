import Glibc

/// A failed system call: which one, on what, and the `errno` it returned.
package struct SystemCallError: Error, Equatable, CustomStringConvertible {
  package var operation: String
  package var path: String
  package var errno: Int32

  package init(_ operation: String, path: String, errno: Int32) {
    self.operation = operation
    self.path = path
    self.errno = errno
  }

  package var description: String {
    "\(operation) \(path): \(String(cString: strerror(errno))) (errno \(errno))"
  }
}

/// The one seam every system call of the journal goes through. `PosixFileIO` is the real one;
/// tests substitute a wrapper that injects short writes, EIO, ENOSPC, failed fsyncs or torn tails.
///
/// Descriptors are plain `Int32`s; paths are plain strings.
package protocol FileIO: Sendable {
  func open(_ path: String, flags: Int32, mode: UInt32) throws -> Int32
  func close(_ fd: Int32)
  /// Writes some prefix of `bytes` at `offset`; returns how many bytes were written (maybe fewer).
  func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws -> Int
  /// Reads up to `buffer.count` bytes at `offset`; returns how many (0 at end of file).
  func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws
    -> Int
  /// Makes the file's data (and, for `metadata`, its attributes) durable.
  func sync(_ fd: Int32, metadata: Bool, path: String) throws
  func truncate(_ fd: Int32, to length: Int64, path: String) throws
  func size(_ fd: Int32, path: String) throws -> Int64
  func rename(_ from: String, to: String) throws
  func makeDirectory(_ path: String) throws
  /// Removes an empty directory (`rmdir`).
  func removeDirectory(_ path: String) throws
  func contentsOfDirectory(_ path: String) throws -> [String]
  func fileExists(_ path: String) -> Bool
  /// Whether `path` names the file `fd` has open (by device and inode): not when that file was
  /// renamed or removed since, or another now has its name. A reader holding a segment open
  /// learns by it that the journal's segment of that name is gone or is another file.
  func isFile(_ fd: Int32, at path: String) -> Bool
  /// How many directory entries name the file `fd` has open (`st_nlink`), or nil if `fstat`
  /// fails: 0 once it was removed (alone, or with its directory), though still open.
  func linkCount(_ fd: Int32) -> Int?
  /// Which file `path` names, its size and when it last changed (`lstat`), or nil if there is none
  /// or `lstat` fails: a reader keeps what it derived from a file while its stamp stays the same.
  func stamp(_ path: String) -> FileStamp?
  /// Removes a file (only derived data is ever removed: the index, temporary files).
  func removeFile(_ path: String) throws
  /// Takes an exclusive, non-blocking advisory lock (flock). Returns false if another holder has it.
  func tryLock(_ fd: Int32, path: String) throws -> Bool
  /// Takes a shared advisory lock (flock), waiting while another holder has it exclusively.
  func lockShared(_ fd: Int32, path: String) throws
  /// Releases the lock taken by `tryLock` or `lockShared`. Closing the descriptor is not enough: a child forked
  /// by any thread shares the open file description (and so the lock) until it execs.
  func unlock(_ fd: Int32, path: String)
  /// Allocates the file's blocks for `length` bytes at `offset`, growing the file to
  /// `offset + length` if it is shorter; new space reads as zeros (Linux `fallocate(2)`, mode 0).
  /// Throws `EOPNOTSUPP` (or `ENOSYS`) where the file system or platform cannot, and never writes
  /// zeros itself instead (as glibc's `posix_fallocate` does there). Throws `EOPNOTSUPP` too on
  /// file systems not known to write allocated space in place (`allocatesInPlace`): on others
  /// (btrfs, copy-on-write) a store into it through a mapping may still need free space, and
  /// raises SIGBUS on a full disk.
  func allocate(_ fd: Int32, at offset: Int64, length: Int64, path: String) throws
  /// Maps `length` bytes of the file at `offset` (a multiple of `pageSize`) shared, readable and
  /// writable: stores through it go to the file's pages in the page cache, as `pwrite` would.
  /// Storing beyond the file's allocated blocks raises SIGBUS, so only allocated space is written.
  func map(_ fd: Int32, at offset: Int64, length: Int, path: String) throws -> UnsafeMutableRawPointer
  /// Removes a mapping made by `map` (`length` as mapped).
  func unmap(_ address: UnsafeMutableRawPointer, length: Int)
  /// Makes `length` bytes at `address` (page aligned, inside a mapping) read only.
  func protectReadOnly(_ address: UnsafeMutableRawPointer, length: Int, path: String) throws
  /// Copies `bytes` to `address`, inside a mapping made by `map`: a plain memory copy, whose
  /// bytes other threads and processes may see stored in any order (glibc's `memcpy` can store
  /// a copy's last bytes first). The writer stores each frame of a group of several through it;
  /// a group of one frame, the usual case, it copies directly.
  func store(_ bytes: UnsafeRawBufferPointer, at address: UnsafeMutableRawPointer)
}

/// A file's identity (device and inode), size and last modification and status change times, as
/// `lstat` gives them: a write, truncation, replacement or rename over the file between two
/// stamps changes the second, unless the file system's clock did not tick between two changes
/// (some tick once a second), which is why `JournalReader` keeps nothing derived from files that
/// changed in the last two seconds.
package struct FileStamp: Equatable, Sendable {
  package var device: UInt64
  package var inode: UInt64
  package var size: Int64
  /// Nanoseconds since 1970.
  package var modified: Int64
  package var changed: Int64

  init(_ info: stat) {
    device = UInt64(info.st_dev)
    inode = UInt64(info.st_ino)
    size = Int64(info.st_size)
    modified = info.st_mtim.nanoseconds
    changed = info.st_ctim.nanoseconds
  }
}

extension timespec {
  /// The time in nanoseconds (since 1970 on the real-time clock): the one conversion the
  /// journal's clocks and file stamps share.
  var nanoseconds: Int64 { Int64(tv_sec) * 1_000_000_000 + Int64(tv_nsec) }
}

/// The size of a memory page, for mappings (`FileIO.map`).
package let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

/// Linux's `fallocate(2)`, looked up once: Swift's Glibc module does not declare it (it needs
/// `_GNU_SOURCE`). nil where the C library has none.
private let fallocateFunction: (@convention(c) (Int32, Int32, Int64, Int64) -> Int32)? = {
  guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "fallocate64") else { return nil }
  return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32, Int64, Int64) -> Int32).self)
}()

/// Linux's `fstatfs(2)`, looked up once: Swift's Glibc module does not declare it either.
private let fstatfsFunction: (@convention(c) (Int32, UnsafeMutableRawPointer) -> Int32)? = {
  guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "fstatfs64") else { return nil }
  return unsafeBitCast(symbol, to: (@convention(c) (Int32, UnsafeMutableRawPointer) -> Int32).self)
}()

/// The type (`f_type`, the file system's magic number) of the file system holding `fd`; nil if
/// it cannot be told. `struct statfs` starts with it, a `long`, on every 64-bit Linux; the buffer
/// is larger than the whole struct (120 bytes).
func fileSystemType(_ fd: Int32) -> Int64? {
  guard let fstatfs = fstatfsFunction else { return nil }
  let buffer = UnsafeMutableRawPointer.allocate(byteCount: 512, alignment: 16)
  defer { buffer.deallocate() }
  guard fstatfs(fd, buffer) == 0 else { return nil }
  return Int64(buffer.load(as: Int.self))
}

/// The real file system, through POSIX calls.
package struct PosixFileIO: FileIO {
  package init() {}

  package func open(_ path: String, flags: Int32, mode: UInt32) throws -> Int32 {
    // Files of a journal are never symbolic links: one planted in a journal (say, one sent from
    // an untrusted device for audit) must not make Rewind read or write outside it. Directories
    // may be reached through links (the journal's own path is the user's business).
    let isFile = flags & O_DIRECTORY == 0
    // Nor are they directories, FIFOs, sockets or devices: opening a FIFO to read would wait for
    // a writer for ever. O_NONBLOCK makes that open return at once (it changes nothing for a
    // regular file), and the check after it refuses whatever is not a regular file.
    let fileFlags = isFile ? O_NOFOLLOW | O_NONBLOCK : 0
    let fd = path.withCString { Glibc.open($0, flags | O_CLOEXEC | fileFlags, mode_t(mode)) }
    if fd < 0 { throw SystemCallError("open", path: path, errno: Glibc.errno) }
    if isFile {
      var status = stat()
      guard fstat(fd, &status) == 0 else {
        let error = SystemCallError("fstat", path: path, errno: Glibc.errno)
        Glibc.close(fd)
        throw error
      }
      let type = status.st_mode & S_IFMT
      guard type == S_IFREG else {
        Glibc.close(fd)
        let kind =
          switch type {
          case S_IFDIR: "a directory"
          case S_IFIFO: "a FIFO"
          case S_IFSOCK: "a socket"
          default: "a device"
          }
        throw SystemCallError("open", path: "\(path) (\(kind), not a regular file)", errno: EINVAL)
      }
    }
    return fd
  }

  package func close(_ fd: Int32) { _ = Glibc.close(fd) }

  package func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws
    -> Int
  {
    while true {
      let n = Glibc.pwrite(fd, bytes.baseAddress, bytes.count, off_t(offset))
      if n >= 0 { return n }
      if Glibc.errno == EINTR { continue }
      throw SystemCallError("write", path: path, errno: Glibc.errno)
    }
  }

  package func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String)
    throws -> Int
  {
    while true {
      let n = Glibc.pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
      if n >= 0 { return n }
      if Glibc.errno == EINTR { continue }
      throw SystemCallError("read", path: path, errno: Glibc.errno)
    }
  }

  package func sync(_ fd: Int32, metadata: Bool, path: String) throws {
    let result = metadata ? Glibc.fsync(fd) : Glibc.fdatasync(fd)
    if result != 0 { throw SystemCallError(metadata ? "fsync" : "fdatasync", path: path, errno: Glibc.errno) }
  }

  package func truncate(_ fd: Int32, to length: Int64, path: String) throws {
    if Glibc.ftruncate(fd, off_t(length)) != 0 { throw SystemCallError("ftruncate", path: path, errno: Glibc.errno) }
  }

  package func size(_ fd: Int32, path: String) throws -> Int64 {
    var info = stat()
    if Glibc.fstat(fd, &info) != 0 { throw SystemCallError("fstat", path: path, errno: Glibc.errno) }
    return Int64(info.st_size)
  }

  package func rename(_ from: String, to: String) throws {
    if Glibc.rename(from, to) != 0 { throw SystemCallError("rename", path: "\(from) -> \(to)", errno: Glibc.errno) }
  }

  package func makeDirectory(_ path: String) throws {
    if Glibc.mkdir(path, 0o700) != 0 && Glibc.errno != EEXIST {
      throw SystemCallError("mkdir", path: path, errno: Glibc.errno)
    }
  }

  package func removeDirectory(_ path: String) throws {
    if Glibc.rmdir(path) != 0 { throw SystemCallError("rmdir", path: path, errno: Glibc.errno) }
  }

  package func contentsOfDirectory(_ path: String) throws -> [String] {
    guard let dir = opendir(path) else { throw SystemCallError("opendir", path: path, errno: Glibc.errno) }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
      let name = withUnsafePointer(to: entry.pointee.d_name) {
        $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
  }

  package func fileExists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
  }

  package func isFile(_ fd: Int32, at path: String) -> Bool {
    var open = stat()
    var named = stat()
    guard Glibc.fstat(fd, &open) == 0, lstat(path, &named) == 0 else { return false }
    return open.st_dev == named.st_dev && open.st_ino == named.st_ino
  }

  package func linkCount(_ fd: Int32) -> Int? {
    var info = stat()
    return Glibc.fstat(fd, &info) == 0 ? Int(info.st_nlink) : nil
  }

  package func stamp(_ path: String) -> FileStamp? {
    var info = stat()
    return lstat(path, &info) == 0 ? FileStamp(info) : nil
  }

  package func removeFile(_ path: String) throws {
    if unlink(path) != 0 && Glibc.errno != ENOENT { throw SystemCallError("unlink", path: path, errno: Glibc.errno) }
  }

  package func tryLock(_ fd: Int32, path: String) throws -> Bool {
    while true {
      if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
      switch Glibc.errno {
      case EINTR: continue
      case EWOULDBLOCK: return false
      default: throw SystemCallError("flock", path: path, errno: Glibc.errno)
      }
    }
  }

  package func lockShared(_ fd: Int32, path: String) throws {
    while flock(fd, LOCK_SH) != 0 {
      if Glibc.errno == EINTR { continue }
      throw SystemCallError("flock", path: path, errno: Glibc.errno)
    }
  }

  package func unlock(_ fd: Int32, path: String) {
    while flock(fd, LOCK_UN) != 0 && Glibc.errno == EINTR {}
  }

  package func allocate(_ fd: Int32, at offset: Int64, length: Int64, path: String) throws {
    guard let fallocate = fallocateFunction else { throw SystemCallError("fallocate", path: path, errno: ENOSYS) }
    guard let type = fileSystemType(fd), Self.allocatesInPlace(fileSystem: type) else {
      throw SystemCallError("fallocate", path: path, errno: EOPNOTSUPP)
    }
    while fallocate(fd, 0, offset, length) != 0 {
      if Glibc.errno == EINTR { continue }
      throw SystemCallError("fallocate", path: path, errno: Glibc.errno)
    }
  }

  /// Whether the file system of this `statfs` type writes into allocated space in place, so that
  /// a store through a mapping never needs free space there: ext2/3/4, XFS and tmpfs. Not btrfs
  /// (or other copy-on-write file systems): its page fault reserves space for the store, and fails
  /// it with SIGBUS when the disk is full, allocated or not.
  package static func allocatesInPlace(fileSystem type: Int64) -> Bool {
    [0xEF53, 0x5846_5342, 0x0102_1994].contains(type)
  }

  package func map(_ fd: Int32, at offset: Int64, length: Int, path: String) throws -> UnsafeMutableRawPointer {
    let address = Glibc.mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(offset))
    guard let address, address != MAP_FAILED else {
      throw SystemCallError("mmap", path: path, errno: Glibc.errno)
    }
    return address
  }

  package func unmap(_ address: UnsafeMutableRawPointer, length: Int) {
    _ = Glibc.munmap(address, length)
  }

  package func protectReadOnly(_ address: UnsafeMutableRawPointer, length: Int, path: String) throws {
    if Glibc.mprotect(address, length, PROT_READ) != 0 {
      throw SystemCallError("mprotect", path: path, errno: Glibc.errno)
    }
  }

  package func store(_ bytes: UnsafeRawBufferPointer, at address: UnsafeMutableRawPointer) {
    address.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
  }
}

/// The two steps of `FileIO.replaceFile` a caller can run under a lock of its own.
package enum ReplaceStep: Sendable { case create, rename }

extension FileIO {
  /// Whether `path` is a directory itself, not a symbolic link to one (nor anything else).
  /// Folders inside a journal (`quarantine/`, `snapshots/`) are used only when this holds.
  package func isRealDirectory(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
  }

  /// Removes `directory` and the files in it (one level: what a journal's copy holds), listing
  /// them again while new ones appear (a writer still making files there, in another thread),
  /// at most `attempts` times. Failures are not thrown: this cleans up after something that
  /// already failed or was interrupted. Whether the directory is gone (or was never there).
  package func removeDirectoryAndFiles(_ directory: String, attempts: Int = 1) -> Bool {
    for _ in 0..<max(1, attempts) {
      for name in (try? contentsOfDirectory(directory)) ?? [] { try? removeFile(directory + "/" + name) }
      do {
        try removeDirectory(directory)
        return true
      } catch let error as SystemCallError where error.errno == ENOENT {
        return true
      } catch {}
    }
    return false
  }

  /// Creates the directory `path` (mode 0700) unless something stands there already, and then
  /// syncs its parent directory, whose new entry a power loss could otherwise take with
  /// everything made durable inside it since (fsyncing a directory makes its own entries
  /// durable, not its name in its parent). A directory found there is taken as it is.
  /// - Throws: `SystemCallError` when the directory cannot be made, or its parent cannot be
  ///   synced (it is then removed again: found by a later call, it would be taken as made).
  package func makeDirectoryDurably(_ path: String) throws {
    guard !fileExists(path) else { return }
    try makeDirectory(path)
    let parent = ResolvedPath.split(path).parent
    do {
      try syncDirectory(parent)
    } catch {
      try? removeDirectory(path)
      throw SystemCallError(
        "fsync of the parent directory \(parent) for", path: path, errno: (error as? SystemCallError)?.errno ?? EIO)
    }
  }

  /// Creates a folder inside a journal (durably: `makeDirectoryDurably`), or checks that the one
  /// there is a real directory.
  /// - Throws: `SystemCallError` (`ENOTDIR`) when a symbolic link or a file stands in its place.
  package func makeJournalFolder(_ path: String) throws {
    try makeDirectoryDurably(path)
    guard isRealDirectory(path) else {
      // Said as what it is: "mkdir PATH: Not a directory" left a reader looking for a file.
      throw SystemCallError(
        "a journal's folder must be a directory of its own (a symbolic link or a file stands there, and is not "
          + "followed):", path: path, errno: ENOTDIR)
    }
  }

  /// Writes all of `bytes` at `offset`, continuing after short writes. Throws on the first error;
  /// a prefix may then have been written, which the caller truncates away.
  package func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws {
    var done = 0
    while done < bytes.count {
      let n = try pwrite(fd, UnsafeRawBufferPointer(rebasing: bytes[done...]), at: offset + Int64(done), path: path)
      if n == 0 { throw SystemCallError("write", path: path, errno: EIO) }
      done += n
    }
  }

  /// Reads up to `count` bytes at `offset`; fewer only at end of file. `count` must already be
  /// bounded by the caller's limits.
  package func read(_ fd: Int32, count: Int, at offset: Int64, path: String) throws -> [UInt8] {
    // Not zeroed first: only the bytes read are kept.
    try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
      while initialized < count {
        let n = try pread(
          fd, into: UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: buffer[initialized...])),
          at: offset + Int64(initialized),
          path: path)
        if n == 0 { break }
        initialized += n
      }
    }
  }

  /// Writes a whole new file durably and atomically: temporary file, fsync, rename, directory fsync.
  /// If the write, the sync or the rename fails, the temporary file is removed (on a full disk it
  /// would hold on to the space it took) and `path` is as it was.
  /// - Parameter temporary: the temporary file's path, in `directory`; `path + ".tmp"` unless
  ///   given. Writers of the same `path` that can run at once need one each (see `replaceFile`).
  package func writeFileAtomically(_ bytes: [UInt8], to path: String, directory: String, temporary: String? = nil)
    throws
  {
    try replaceFile(path, with: bytes, temporary: temporary)
    try syncDirectory(directory)
  }

  /// `writeFileAtomically` but for the directory fsync, which the caller makes once it has noted
  /// that `path` was replaced (after this returns, it was, even if that sync fails).
  /// The temporary file (`path + ".tmp"` unless `temporary` names another) is opened truncated:
  /// two writers of one temporary path at once would write into one file, the first to rename it
  /// would publish what the other is still writing, and the other's rename would fail. A caller
  /// whose writers can overlap gives each its own.
  package func replaceFile(_ path: String, with bytes: [UInt8], temporary: String? = nil) throws {
    try replaceFile(path, temporary: temporary) { append in try bytes.withUnsafeBytes { try append($0) } }
  }

  /// `replaceFile`, the new content written a piece at a time by `body` through `append` (in
  /// order, each after the last) rather than held whole: `rewind export --output` streams an
  /// export of any size. Whatever `body` throws fails the replacement as a failed write does:
  /// the temporary file is removed, `path` is as it was, and the error is rethrown.
  /// - Parameters:
  ///   - exclusive: the temporary file must be new (`O_EXCL`): the caller chose a name of its
  ///     own, and an `EEXIST` from the open is another's file, left alone. Otherwise it is
  ///     opened truncated.
  ///   - mode: the temporary file's mode as created, the umask applied.
  ///   - permissions: set on the temporary file (`fchmod`, no umask) before it is synced and
  ///     renamed, when given: a replaced file's own, kept.
  ///   - owner: the user and group given to the temporary file (`fchown`, before `permissions`)
  ///     when given: a replaced file's own, kept where the process may (as root; else the group
  ///     alone, when it is one of its user's); `EPERM` leaves the process's own.
  ///   - step: runs the temporary file's creation (`.create`) and its rename over `path`
  ///     (`.rename`), each given as `run`, and may note each when `run` returns: a caller that
  ///     must know at every moment whether the temporary file exists and whether `path` was
  ///     replaced runs them under a lock (`rewind export`'s interrupt handling). By default,
  ///     runs them.
  package func replaceFile(
    _ path: String, temporary: String? = nil, exclusive: Bool = false, mode: UInt32 = 0o600,
    permissions: UInt32? = nil, owner: (user: UInt32, group: UInt32)? = nil,
    step: (_ step: ReplaceStep, _ run: () throws -> Void) throws -> Void = { try $1() },
    writing body: (_ append: (UnsafeRawBufferPointer) throws -> Void) throws -> Void
  ) throws {
    let temporary = temporary ?? path + ".tmp"
    var opened: Int32?
    try step(.create) {
      opened = try open(temporary, flags: O_WRONLY | O_CREAT | (exclusive ? O_EXCL : O_TRUNC), mode: mode)
    }
    guard let fd = opened else { preconditionFailure("replaceFile's step must run the creation it is given") }
    do {
      defer { close(fd) }
      var offset: Int64 = 0
      try body { bytes in
        try writeAll(fd, bytes, at: offset, path: temporary)
        offset += Int64(bytes.count)
      }
      if let owner, fchown(fd, owner.user, owner.group) != 0 {
        guard Glibc.errno == EPERM else { throw SystemCallError("fchown", path: temporary, errno: Glibc.errno) }
        // Only root gives a file another user: the group alone then (uid -1 leaves the user),
        // which the process's user may give when it is one of its groups.
        if fchown(fd, uid_t.max, owner.group) != 0, Glibc.errno != EPERM {
          throw SystemCallError("fchown", path: temporary, errno: Glibc.errno)
        }
      }
      if let permissions, fchmod(fd, mode_t(permissions)) != 0 {
        throw SystemCallError("fchmod", path: temporary, errno: Glibc.errno)
      }
      try sync(fd, metadata: true, path: temporary)
      try step(.rename) { try rename(temporary, to: path) }
    } catch {
      try? removeFile(temporary)
      throw error
    }
  }

  /// Makes a directory's entries (new files, renames) durable.
  package func syncDirectory(_ path: String) throws {
    let fd = try open(path, flags: O_RDONLY | O_DIRECTORY, mode: 0)
    defer { close(fd) }
    try sync(fd, metadata: true, path: path)
  }
}
