internal import Foundation
internal import Glibc

/// What the C allocator (glibc's malloc) has handed out and not taken back, as opposed to the
/// resident set, which also holds memory freed earlier and kept by the allocator for reuse.
enum Heap {
  /// Bytes in use: each arena's memory less its free chunks, plus the chunks mapped on their own,
  /// from `malloc_info`'s totals; nil where the allocator does not say (not glibc).
  static func inUseBytes() -> Int? {
    typealias MallocInfo = @convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32
    guard let symbol = dlsym(nil, "malloc_info") else { return nil }
    var buffer: UnsafeMutablePointer<CChar>?
    var size = 0
    guard let stream = open_memstream(&buffer, &size) else { return nil }
    let status = unsafeBitCast(symbol, to: MallocInfo.self)(0, stream)
    fclose(stream)
    defer { free(buffer) }
    guard status == 0, let buffer else { return nil }
    return inUse(malloc: String(cString: buffer))
  }

  /// The bytes in use by `malloc_info`'s totals (after the last arena's `</heap>`): system bytes
  /// (`<system type="current">`) less free chunks (`fast`, `rest`), plus `mmap`.
  static func inUse(malloc info: String) -> Int? {
    guard let end = info.range(of: "</heap>", options: .backwards)?.upperBound else { return nil }
    let totals = info[end...]
    func size(_ element: String) -> Int? {
      guard let start = totals.range(of: element)?.upperBound,
        let size = totals[start...].range(of: "size=\"")?.upperBound,
        let close = totals[size...].firstIndex(of: "\"")
      else { return nil }
      return Int(totals[size..<close])
    }
    guard let system = size("<system type=\"current\""), let fast = size("<total type=\"fast\""),
      let rest = size("<total type=\"rest\""), let mapped = size("<total type=\"mmap\"")
    else { return nil }
    return system - fast - rest + mapped
  }
}
