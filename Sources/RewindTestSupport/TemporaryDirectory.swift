import Foundation

/// A fresh directory under the system's temporary folder, removed when the value is deinitialized.
public final class TemporaryDirectory: Sendable {
  public let path: String

  /// - Parameter inMemory: under `/dev/shm` (tmpfs, where a sync costs nothing) when there is
  ///   one, for tests that model durability themselves and sync thousands of times.
  public init(_ label: String = "rewind", inMemory: Bool = false) {
    var isDirectory: ObjCBool = false
    let folder =
      inMemory && FileManager.default.fileExists(atPath: "/dev/shm", isDirectory: &isDirectory) && isDirectory.boolValue
      ? "/dev/shm/" : NSTemporaryDirectory()
    let base = folder + "\(label)-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
    path = base
  }

  /// A path inside the directory (not created).
  public func appending(_ component: String) -> String { path + "/" + component }

  deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Small file helpers for tests that damage journals on purpose.
public enum Files {
  public static func read(_ path: String) throws -> [UInt8] {
    Array(try Data(contentsOf: URL(fileURLWithPath: path)))
  }

  public static func write(_ bytes: [UInt8], to path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
  }

  /// Flips the bits of `mask` in the byte at the middle of the file at `path`: damage inside a
  /// segment's frames, for tests of what finds it.
  public static func flipMiddleByte(of path: String, with mask: UInt8) throws {
    var bytes = try read(path)
    bytes[bytes.count / 2] ^= mask
    try write(bytes, to: path)
  }

  public static func list(_ path: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
  }

  public static func size(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? -1
  }

  /// Copies a directory tree (for tests that damage a copy of a journal).
  public static func copyDirectory(_ source: String, to destination: String) throws {
    try? FileManager.default.removeItem(atPath: destination)
    try FileManager.default.copyItem(atPath: source, toPath: destination)
  }
}

/// The files under `directory` this process holds open (from /proc/self/fd), for tests that check
/// a journal, reader or manager let go of its descriptors: other tests running at the same time
/// open files of their own, never these.
package func openFiles(under directory: String) -> [String] {
  let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
  return entries.compactMap { entry in
    guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry) else {
      return nil
    }
    return target.hasPrefix(directory + "/") ? target : nil
  }
}
