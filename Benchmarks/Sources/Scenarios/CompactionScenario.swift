internal import Foundation
internal import Glibc
internal import RewindJournal

/// Compaction of the corpus journal's sealed segments (`Journal.compactSealedSegments()`), on a
/// copy so that every other scenario reads the journal as the manager wrote it: bytes per event
/// before and after, compaction speed, and a cold read and replay of the compacted copy (as a
/// live writer keeps it) next to the same of the journal as written. The whole copy's size is
/// measured twice: as a live writer keeps it (its sealed segments compacted, the active one as
/// written, the index), then, after the reads, at rest,
/// compacted whole (reopened with `JournalOptions.sealsLastSegmentOnOpening` and compacted again,
/// as `rewind compact --all` does), on which the size target is judged. Then, on the first sealed
/// segment alone, the LZ4HC level and frame size curve the default was chosen from.
struct CompactionScenario: Scenario {
  let name = "compaction"
  let summary = "the corpus journal's sealed segments rewritten into large LZ4HC frames: size, speed, cold reads"

  /// The configuration of the figures for a corpus of `events` events.
  static func configuration(_ events: Int) -> String { "\(events) events" }
  /// The configuration when the corpus journal has no sealed segment (the small mode), and the
  /// same records are re-appended into small segments to have some.
  static func reappendedConfiguration(_ events: Int) -> String {
    configuration(events) + ", re-appended one per append into 256 KiB segments"
  }
  static let sealedBytesPerEvent = "bytes/event, sealed segments compacted"
  /// Every byte of the compacted copy (its active segment as written, index and manifest too).
  static let wholeBytesPerEvent = "journal bytes/event after (active segment as written)"
  /// Every byte of the copy compacted whole, its last segment too (index and manifest too).
  static let atRestBytesPerEvent = "journal bytes/event at rest (compacted whole)"

  func run(in context: BenchContext) async throws {
    let events = context.corpus.count
    var source = context.corpusDirectory
    var configuration = Self.configuration(events)
    let segmentCount = try FileManager.default.contentsOfDirectory(atPath: source).filter { $0.hasSuffix(".lz4") }.count
    if segmentCount < 2 {
      // A corpus smaller than one segment (the small mode) has nothing sealed: the same records,
      // one per append, into 256 KiB segments, so that the smoke test compacts something.
      source = context.path("corpus-journal-small-segments")
      var options = JournalOptions(durability: .none)
      options.segmentTargetBytes = 256 << 10
      let small = try Journal(directory: source, options: options)
      for record in context.corpus { try small.appendAndWait([record]) }
      small.close()
      configuration = Self.reappendedConfiguration(events)
    }
    let directory = context.path("corpus-journal-compacted")
    try Self.copyJournal(source, to: directory)
    let journal = try Journal(directory: directory, options: JournalOptions(durability: .none))
    let (seconds, report) = try timed { try journal.compactSealedSegments() }
    journal.close()
    guard !report.compacted.isEmpty else { throw BenchError("compaction found no sealed segment in \(source)") }
    let records = Double(report.records)
    let decoded = Double(report.compacted.reduce(0) { $0 + $1.decodedBytes })
    context.record(name, configuration, "sealed segments", Double(report.compacted.count), "")
    context.record(name, configuration, "events in sealed segments", records, "")
    context.record(
      name, configuration, "bytes/event, sealed segments as written", Double(report.bytesBefore) / records, "B")
    context.record(name, configuration, Self.sealedBytesPerEvent, Double(report.bytesAfter) / records, "B")
    context.record(name, configuration, Self.wholeBytesPerEvent, Double(bytesOnDisk(directory)) / Double(events), "B")
    context.record(name, configuration, "events/s", records / seconds, "ev/s")
    context.record(
      name, configuration, "input MB/s (segment bytes)", Double(report.bytesBefore) / seconds / 1e6, "MB/s")
    context.record(name, configuration, "decoded MB/s", decoded / seconds / 1e6, "MB/s")
    for (label, path) in [("as written", source), ("compacted", directory)] {
      let read = try ChildProcess.fastest(
        of: 3, .read, directory: path, limit: events, events: events,
        resultPath: context.path("compaction-read-\(label).json"), cold: true)
      context.record(name, "\(configuration), \(label)", "cold read events/s", Double(events) / read.seconds, "ev/s")
      let replay = try ChildProcess.fastest(
        of: 3, .replay, directory: path, limit: events, events: events,
        resultPath: context.path("compaction-replay-\(label).json"), cold: true)
      context.record(
        name, "\(configuration), \(label)", "cold replay events/s", Double(events) / replay.seconds, "ev/s")
    }
    // Then at rest, compacted whole (after the reads: those read the copy as a live writer keeps
    // it, the configuration they measured before the at-rest figure existed).
    var sealing = JournalOptions(durability: .none)
    sealing.sealsLastSegmentOnOpening = true
    let atRest = try Journal(directory: directory, options: sealing)
    let last = try atRest.compactSealedSegments()
    atRest.close()
    guard last.compacted.count == 1 else {
      throw BenchError("compacting the last segment of \(directory) at rest compacted \(last.compacted.count)")
    }
    context.record(name, configuration, Self.atRestBytesPerEvent, Double(bytesOnDisk(directory)) / Double(events), "B")
    try? FileManager.default.removeItem(atPath: directory)
    try curve(in: context, source: source)
  }

  /// Size and speed of compacting the first sealed segment at each LZ4HC level (1 MiB frames),
  /// and at the chosen level with other frame sizes.
  private func curve(in context: BenchContext, source: String) throws {
    let segments = try FileManager.default.contentsOfDirectory(atPath: source).filter { $0.hasSuffix(".lz4") }.sorted()
    guard segments.count >= 2 else {
      throw BenchError("the compaction curve needs two segments in \(source), found \(segments.count)")
    }
    let settings: [(level: Int32, frame: Int)] =
      [0, 3, 6, 9, 12].map { ($0, SegmentCompactor.defaultFrameContentBytes) }
      + [256 << 10, 4 << 20].map { (SegmentCompactor.defaultLevel, $0) }
    for (level, frame) in settings {
      let directory = context.path("compaction-curve")
      try? FileManager.default.removeItem(atPath: directory)
      try Self.copyJournal(source, to: directory, segments: Array(segments.prefix(2)))
      let compactor = SegmentCompactor(
        directory: try JournalDirectory(path: directory, io: PosixFileIO()), options: JournalOptions(),
        indexGate: IndexFileGate(), level: level)
      let first = Layout.firstSequence(ofSegmentNamed: segments[0])!
      let second = Layout.firstSequence(ofSegmentNamed: segments[1])!
      let (seconds, outcome) = try timed {
        try compactor.compact(segment: first, next: second, frameContentBytes: frame)
      }
      compactor.close()
      try? FileManager.default.removeItem(atPath: directory)
      guard case .compacted(let done) = outcome else {
        throw BenchError("compacting \(segments[0]) at level \(level), \(frame >> 10) KiB frames: \(outcome)")
      }
      let configuration = "\(segments[0]) (\(done.records) events), level \(level), \(frame >> 10) KiB frames"
      context.record(name + ".curve", configuration, "bytes/event", Double(done.bytesAfter) / Double(done.records), "B")
      context.record(name + ".curve", configuration, "decoded MB/s", Double(done.decodedBytes) / seconds / 1e6, "MB/s")
    }
  }

  /// A copy of the journal in `source` (only `segments` when given): the segments as hard links
  /// (compaction renames a new file over a segment and never writes into one), the rest copied.
  static func copyJournal(_ source: String, to directory: String, segments: [String]? = nil) throws {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let names = try FileManager.default.contentsOfDirectory(atPath: source).sorted()
    let all = names.filter { $0.hasSuffix(".lz4") }
    for name in names where name != "LOCK" && !name.hasSuffix(".tmp") {
      let isSegment = name.hasSuffix(".lz4")
      if isSegment, let segments, !segments.contains(name) { continue }
      if segments != nil && name == "index" { continue }
      // The last segment is copied: a writer opening the copy may append to it.
      if isSegment && name != all.last {
        guard link(source + "/" + name, directory + "/" + name) == 0 else {
          throw BenchError("cannot link \(source)/\(name): \(String(cString: strerror(errno)))")
        }
      } else {
        try FileManager.default.copyItem(atPath: source + "/" + name, toPath: directory + "/" + name)
      }
    }
  }
}
