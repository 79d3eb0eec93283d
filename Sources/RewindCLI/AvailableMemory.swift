import Foundation

/// The memory this process may use: the machine's, or less where its control group limits it.
///
/// `ProcessInfo.physicalMemory` is the machine's memory, also inside a container whose control
/// group allows far less; a default sized from it alone gets the process killed there. Both
/// versions of control groups are read, as `/proc/self/cgroup` names them:
///
/// - version 2 (`0::/path`): `memory.max` of the process's group and of each group above it,
///   the smallest one (a group's limit also bounds the groups under it; `max` means none);
/// - version 1 (a `memory` hierarchy): `hierarchical_memory_limit` in `memory.stat` of the
///   deepest of those groups the mount shows, which already takes the groups above it into
///   account (no limit reads as a number near 2^63).
///
/// Inside a container the group's path may not exist under the mount (the container sees its
/// own group as the root): walking up to the root finds the limit there.
enum AvailableMemory {
  /// The memory this process may use, in bytes.
  static var bytes: UInt64 {
    bytes(physical: ProcessInfo.processInfo.physicalMemory) { try? String(contentsOfFile: $0, encoding: .utf8) }
  }

  /// The smaller of `physical` and the limits the control group files give, read by `read`
  /// (a path to its text, or `nil` where there is no such file).
  static func bytes(physical: UInt64, read: (String) -> String?) -> UInt64 {
    var smallest = physical
    for line in (read("/proc/self/cgroup") ?? "").split(separator: "\n") {
      let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
      guard parts.count == 3 else { continue }
      let (controllers, path) = (parts[1], parts[2])
      if parts[0] == "0" && controllers.isEmpty {
        for group in groupAndAncestors(path) {
          if let limit = read("/sys/fs/cgroup\(group)memory.max").flatMap(number) { smallest = min(smallest, limit) }
        }
      } else if controllers.split(separator: ",").contains("memory") {
        for group in groupAndAncestors(path) {
          guard let stats = read("/sys/fs/cgroup/memory\(group)memory.stat") else { continue }
          if let limit = hierarchicalLimit(stats) { smallest = min(smallest, limit) }
          break
        }
      }
    }
    return smallest
  }

  /// `/a/b` as `/a/b/`, `/a/` and `/`: each group's directory, deepest first, with a slash after it.
  private static func groupAndAncestors(_ path: Substring) -> [String] {
    var components = path.split(separator: "/")
    var groups: [String] = []
    while true {
      groups.append("/" + components.map { $0 + "/" }.joined())
      if components.popLast() == nil { return groups }
    }
  }

  /// The value of `memory.stat`'s `hierarchical_memory_limit` line.
  private static func hierarchicalLimit(_ stats: String) -> UInt64? {
    let prefix = "hierarchical_memory_limit "
    return stats.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { number($0.dropFirst(prefix.count)) }
  }

  /// A file's number, without the line's end; `nil` for `max` or anything else.
  private static func number<Text: StringProtocol>(_ text: Text) -> UInt64? {
    UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines))
  }
}
