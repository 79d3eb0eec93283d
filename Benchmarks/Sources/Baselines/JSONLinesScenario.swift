internal import Foundation
internal import Notebook
internal import Rewind

/// The corpus's events as JSON lines (Foundation JSONEncoder/JSONDecoder, uncompressed): encode
/// and write (into the page cache, without an fsync, as the manager's `none` appends), size on
/// disk, read and decode. Compared with the manager's append (which encodes
/// the same events), the journal's size, and replay (which decodes them, and applies them too).
struct JSONLinesScenario: Scenario {
  let name = "json.lines"
  let summary = "JSON lines via Foundation Codable on the same events"

  func run(in context: BenchContext) async throws {
    let recorded = try Replay.events(of: Workspace.self, directory: context.corpusDirectory)
    let lines = recorded.map(JSONLine.init)
    let path = context.path("events.jsonl")
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    guard let output = FileHandle(forWritingAtPath: path) else { throw BenchError("cannot create \(path)") }
    let encoder = JSONEncoder()
    let (writeSeconds, _) = try timed {
      var buffer = Data()
      buffer.reserveCapacity(4 << 20)
      for line in lines {
        buffer.append(try encoder.encode(line))
        buffer.append(0x0A)
        if buffer.count >= 4 << 20 {
          try output.write(contentsOf: buffer)
          buffer.removeAll(keepingCapacity: true)
        }
      }
      try output.write(contentsOf: buffer)
    }
    // Outside the timed part: the journal's `none` appends it is compared with never sync either.
    // (The sync puts the file on disk before its pages are dropped for the cold read below.)
    try output.synchronize()
    try output.close()
    let size = bytesOnDisk(context.work, prefix: path)
    let count = lines.count
    let configuration = "\(count) events"
    context.record(
      baseline: "json", name, "\(count) events, encode+write", "events/s", Double(count) / writeSeconds, "ev/s",
      comparedWith: ("manager.append", CorpusScenario.managerConfiguration, "events/s"))
    context.record(
      baseline: "json", name, configuration, "bytes/event on disk", Double(size) / Double(count), "B",
      comparedWith: ("manager.append", CorpusScenario.managerConfiguration, "bytes/event on disk"))

    // Best of three cold runs, as the replay it is compared with.
    let decoder = JSONDecoder()
    var readSeconds = Double.infinity
    for _ in 0..<3 {
      evictFromPageCache(context.work, prefix: path)
      let (seconds, decoded) = try timed {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        var decoded = 0
        var start = data.startIndex
        while let end = data[start...].firstIndex(of: 0x0A) {
          _ = try decoder.decode(JSONLine.self, from: data[start..<end])
          decoded += 1
          start = end + 1
        }
        return decoded
      }
      guard decoded == count else { throw BenchError("decoded \(decoded) JSON lines, wrote \(count)") }
      readSeconds = min(readSeconds, seconds)
    }
    context.record(
      baseline: "json", name, "\(count) events, cold, read+decode", "events/s", Double(count) / readSeconds, "ev/s",
      comparedWith: ("replay", "\(count) events, cold", "events/s"))
  }
}
