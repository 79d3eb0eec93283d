import Foundation
import RewindJournal

enum CompactCommand: RewindCommand {
  static let name = "compact"
  static let summary = "rewrite sealed segments into large LZ4HC frames (smaller, read the same way)"
  static let help = """
    Usage: rewind compact DIR [--all] [--frame BYTES]

    Rewrites every sealed segment of the journal (every one but the last) that is not compacted
    yet into large frames compressed with LZ4's high-compression mode: typically 2-3x smaller,
    read by the same readers (and by lz4 -dc). Each new segment is written to a temporary file,
    synced, and read back and checked to hold exactly the original's records before it replaces
    the original; an interruption leaves either. A damaged segment is reported with its byte
    offset and left as it is. Takes the journal's writer lock, so run it while no writer has the
    journal open (an app can compact as it writes: JournalOptions.compactsSealedSegments).

    --all then seals the last segment, if it holds a record (synced, and a new empty segment
    started after it, JournalOptions.sealsLastSegmentOnOpening), and compacts it too: the whole
    journal, for one at rest (an archive, a finished session). Only once the sealed segments are
    compacted without damage: damage stops it first, with nothing sealed. The next writer appends
    to the new segment. Each --all that finds records in the last segment leaves one more segment.

    A compacted frame gathers whole frames while their decoded records stay within 1 MiB
    (--frame BYTES: within BYTES, from 1 to 1048576; a frame already larger stays as it is, never
    split; a frame larger than 1 MiB reads no faster nor much smaller). An app
    that reads its journal with smaller limits (JournalLimits.maxBatchBytes under 1 MiB) refuses
    larger frames, at opening too: give its maxBatchBytes as --frame, or let the app compact
    (Journal.compactSealedSegments() keeps to its own limits).

    Damage that hides the journal's end (committed records gone from the last segment, as
    `rewind verify` reports) stops it before anything is changed: a writer's opening would move
    that part aside, which is `rewind repair`'s to do once you have seen its plan.

    Exit 0 when done, also when there was nothing to compact; 1 when damage stopped it (the
    segments before the damaged one may be compacted); 3 when the journal cannot be opened (a
    writer holds it, or it is not a journal).

    Examples:
      rewind compact /tmp/notes
      rewind compact /tmp/notes --all
      rewind compact /tmp/notes --frame 65536

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let output = context.output
    let args = try Arguments(arguments, options: ["frame"], flags: ["all"])
    let directory = try args.directory()
    let frameBytes = try args.integer(
      "frame", default: SegmentCompactor.defaultFrameContentBytes, range: 1...SegmentCompactor.defaultFrameContentBytes)
    // Reading first: a directory that is not a journal is refused before anything is written there.
    // So is damage that hides the end (committed records gone from the last segment, a frame the
    // index names cut short): a writer's opening would move it aside and drop the index entries
    // that name what is lost, a repair made without asking, after which `verify` finds nothing.
    // A stray file named like a segment at the end holds nothing committed: opening moves it aside.
    if case .failure(let damage) = try openJournal(directory).readableEnd(), !damage.isStrayFile {
      output.err(visible("rewind compact: \(damage); nothing was compacted or changed") + "\n")
      return .findings
    }
    // With the largest limits, as every command reads: a journal written with larger limits than
    // the default holds committed records that compaction must read, not refuse. It does not make
    // compacted frames larger: they gather 1 MiB of decoded content (or `--frame`).
    var options = RepairCommand.readingAnyLimits(JournalOptions(durability: .always))
    options.createIfMissing = false
    let all = args.flag("all")
    var report = CompactionReport()
    do {
      // The sealed segments first, the last one left as it is: damage found in them (opening walks
      // only their batch headers; compaction reads every frame) stops here, before `--all` seals
      // anything, so that the damaged segment and every one after it stay as they were.
      report = try compact(directory, options: options, frameBytes: frameBytes, output: output)
      if all {
        // Segments compacted before are passed over unread: damage in one (a frame changed since)
        // would be sealed over. Every frame is read once before the last segment is sealed.
        if let damage = try openJournal(directory).verify().problems.first(where: { !$0.strayFile }) {
          output.err(
            visible(
              "rewind compact: \(damage); the last segment was not sealed (segments before the damage may be compacted)"
            )
              + "\n")
          return .findings
        }
        // Then the last one (checked frame by frame when the journal was opened, and again now):
        // sealed at this opening, and compacted as the others were.
        options.sealsLastSegmentOnOpening = true
        let done = Set(report.compacted.map(\.segment) + report.alreadyCompacted)
        let last = try compact(directory, options: options, frameBytes: frameBytes, output: output)
        report.compacted += last.compacted
        report.alreadyCompacted += last.alreadyCompacted.filter { !done.contains($0) }
      }
    } catch let error as JournalError where error.code == .corrupt || error.code == .sequenceBreak {
      output.err(visible("rewind compact: \(error)") + "\n")
      return .findings
    }
    var summary =
      report.compacted.isEmpty
      ? "nothing to compact"
      : "compacted \(report.compacted.count) segment\(report.compacted.count == 1 ? "" : "s"): "
        + "\(report.bytesBefore) -> \(report.bytesAfter) bytes (\(percent(report.bytesAfter, of: report.bytesBefore)))"
    if !report.alreadyCompacted.isEmpty { summary += "; \(report.alreadyCompacted.count) compacted before" }
    output.out(
      summary
        + (all
          ? "; the last segment holds no record yet, for the next writer to append to\n"
          : "; the last segment is left for the next writer to append to\n"))
    return .success
  }

  /// Opens the journal with `options` (for `--all`'s second pass, sealing the last segment) and
  /// compacts its sealed segments, saying what opening moved aside and each segment compacted.
  private static func compact(
    _ directory: String, options: JournalOptions, frameBytes: Int, output: RewindTool.Output
  ) throws -> CompactionReport {
    // Opening checks the segments as any writer does; compaction reads every frame it rewrites.
    let journal = try Journal(directory: directory, options: options)
    defer { journal.close() }
    for moved in journal.recovery.movedAside {
      // Each entry says why (a torn tail, a stray file, an unfinished segment creation).
      output.out(visible("opening moved aside: \(moved)") + "\n")
    }
    if let missing = journal.recovery.missingRecords { output.out(visible("opening found \(missing)") + "\n") }
    return try journal.compactSealedSegments(frameContentBytes: frameBytes) { done in
      // Each as it is done: a failure later leaves these compacted.
      output.out(
        "compacted \(done.segment): \(counted(done.records, "record")), \(done.framesBefore) -> "
          + "\(counted(done.framesAfter, "frame")), "
          + "\(done.bytesBefore) -> \(done.bytesAfter) bytes (\(percent(done.bytesAfter, of: done.bytesBefore)))\n")
    }
  }

  private static func percent(_ part: Int64, of whole: Int64) -> String {
    whole == 0 ? "-" : String(format: "%.1f%%", Double(part) * 100 / Double(whole))
  }
}
