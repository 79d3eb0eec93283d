public import Foundation

/// Reads of a child's pipe that a signal cannot end: Foundation's `FileHandle.availableData` and
/// `readDataToEndOfFile()` stop the process with a fatal error when `read` fails with `EINTR`
/// (a signal delivered to the reading thread meanwhile, as the tests' children come and go).
public enum PipeReads {
  /// The bytes one `read` of `handle` returns, retried while interrupted: empty at the end of the
  /// pipe, or when the read fails otherwise.
  public static func some(_ handle: FileHandle) -> Data {
    var buffer = [UInt8](repeating: 0, count: 64 << 10)
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(handle.fileDescriptor, $0.baseAddress, $0.count) }
      if count >= 0 { return Data(buffer[..<count]) }
      if errno != EINTR { return Data() }
    }
  }

  /// Every byte until the end of the pipe (or a read that fails other than by an interrupt).
  public static func toEnd(_ handle: FileHandle) -> Data {
    var all = Data()
    while true {
      let next = some(handle)
      if next.isEmpty { return all }
      all.append(next)
    }
  }
}
