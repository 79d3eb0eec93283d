import Foundation

/// The package's documentation as the tests read it: a code block of the README, found by the
/// heading above it. The one reader of the README's blocks that both the library's tests (its
/// Swift samples) and the tool's (its command synopses) use.
public enum DocumentationFile {
  /// The package's root directory.
  public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

  /// What a test looked for in a documentation file and did not find there.
  public struct Missing: Error, CustomStringConvertible {
    public var description: String
  }

  /// The lines of the first code block fenced as ` ```language ` (a bare ` ``` ` for an empty
  /// `language`) after the line `heading` in the file at `path` (relative to the package's root),
  /// without its fences.
  /// - Throws: `Missing` naming the file and heading when there is no such heading or block, or
  ///   the block is not closed.
  public static func codeBlock(in path: String, after heading: String, language: String = "") throws -> [Substring] {
    let text = try String(contentsOfFile: root + "/" + path, encoding: .utf8)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    guard let title = lines.firstIndex(where: { $0 == heading }) else {
      throw Missing(description: "\(path) has no heading \(heading)")
    }
    // Fences pair up in order, so a block of another language is passed over whole.
    var open: Int?
    for index in lines.indices.dropFirst(title + 1) where lines[index].hasPrefix("```") {
      if let start = open {
        if lines[start] == "```" + language { return Array(lines[(start + 1)..<index]) }
        open = nil
      } else {
        open = index
      }
    }
    throw Missing(description: "\(path) has no closed ```\(language) block after \(heading)")
  }
}
