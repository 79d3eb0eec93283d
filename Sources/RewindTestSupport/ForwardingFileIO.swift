package import RewindJournal

/// A `FileIO` that passes every call to `base`: test wrappers that intercept a few calls (faults,
/// holds, hooks that play a concurrent writer) implement only those, and the rest forward.
package protocol ForwardingFileIO: FileIO {
  /// Where the calls the wrapper does not implement go (usually `PosixFileIO()`).
  var base: any FileIO { get }
}

extension ForwardingFileIO {
  package func open(_ path: String, flags: Int32, mode: UInt32) throws -> Int32 {
    try base.open(path, flags: flags, mode: mode)
  }
  package func close(_ fd: Int32) { base.close(fd) }
  package func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws -> Int {
    try base.pwrite(fd, bytes, at: offset, path: path)
  }
  package func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String)
    throws -> Int
  {
    try base.pread(fd, into: buffer, at: offset, path: path)
  }
  package func sync(_ fd: Int32, metadata: Bool, path: String) throws {
    try base.sync(fd, metadata: metadata, path: path)
  }
  package func truncate(_ fd: Int32, to length: Int64, path: String) throws {
    try base.truncate(fd, to: length, path: path)
  }
  package func size(_ fd: Int32, path: String) throws -> Int64 { try base.size(fd, path: path) }
  package func rename(_ from: String, to: String) throws { try base.rename(from, to: to) }
  package func makeDirectory(_ path: String) throws { try base.makeDirectory(path) }
  package func removeDirectory(_ path: String) throws { try base.removeDirectory(path) }
  package func contentsOfDirectory(_ path: String) throws -> [String] { try base.contentsOfDirectory(path) }
  package func fileExists(_ path: String) -> Bool { base.fileExists(path) }
  package func isFile(_ fd: Int32, at path: String) -> Bool { base.isFile(fd, at: path) }
  package func linkCount(_ fd: Int32) -> Int? { base.linkCount(fd) }
  package func stamp(_ path: String) -> FileStamp? { base.stamp(path) }
  package func removeFile(_ path: String) throws { try base.removeFile(path) }
  package func tryLock(_ fd: Int32, path: String) throws -> Bool { try base.tryLock(fd, path: path) }
  package func lockShared(_ fd: Int32, path: String) throws { try base.lockShared(fd, path: path) }
  package func unlock(_ fd: Int32, path: String) { base.unlock(fd, path: path) }
  package func allocate(_ fd: Int32, at offset: Int64, length: Int64, path: String) throws {
    try base.allocate(fd, at: offset, length: length, path: path)
  }
  package func map(_ fd: Int32, at offset: Int64, length: Int, path: String) throws -> UnsafeMutableRawPointer {
    try base.map(fd, at: offset, length: length, path: path)
  }
  package func unmap(_ address: UnsafeMutableRawPointer, length: Int) { base.unmap(address, length: length) }
  package func protectReadOnly(_ address: UnsafeMutableRawPointer, length: Int, path: String) throws {
    try base.protectReadOnly(address, length: length, path: path)
  }
  package func store(_ bytes: UnsafeRawBufferPointer, at address: UnsafeMutableRawPointer) {
    base.store(bytes, at: address)
  }
}
