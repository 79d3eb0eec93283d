internal import Foundation

/// The scratch directory of a run, and the marker file that says the benchmark made it: `--work
/// DIR` empties DIR first, which is safe only for a directory an earlier run made (or an empty or
/// new one), never for one that holds someone's files.
enum ScratchDirectory {
  /// The file the benchmark writes into every scratch directory it creates.
  static let marker = ".rewind-bench-scratch"

  /// Makes `path` an empty scratch directory holding only the marker: creates it when it does not
  /// exist, empties it when it is empty or holds the marker; refuses anything else (a file, a
  /// directory of other files) with an error that names it.
  static func prepare(_ path: String) throws {
    let manager = FileManager.default
    var isDirectory: ObjCBool = false
    if manager.fileExists(atPath: path, isDirectory: &isDirectory) {
      guard isDirectory.boolValue else {
        throw BenchError("--work \(path): exists and is not a directory; give a new or empty directory")
      }
      let names = try manager.contentsOfDirectory(atPath: path)
      guard names.isEmpty || names.contains(marker) else {
        throw BenchError(
          "--work \(path): a directory rewind-bench did not make (no \(marker) in it) and not empty;"
            + " give a new or empty directory, or one an earlier run made")
      }
      for name in names { try manager.removeItem(atPath: path + "/" + name) }
    } else {
      try manager.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    guard manager.createFile(atPath: path + "/" + marker, contents: Data("rewind-bench scratch directory\n".utf8))
    else { throw BenchError("--work \(path): cannot write \(marker) in it") }
  }
}
