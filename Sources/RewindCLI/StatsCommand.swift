import Foundation
import Rewind
import RewindJournal

enum StatsCommand: RewindCommand {
  static let name = "stats"
  static let summary = "events per name and origin, time span, sizes, compression, snapshots, checkpoints"
  static let help = """
    Usage: rewind stats DIR [--json]

    Reads the whole journal once and reports: events and the commands that recorded them (a
    command is counted by the run of records carrying its id; one that found nothing to change
    recorded none, so the journal holds no trace of it), events per name and per origin, the
    time span (ISO 8601; when a clock was set back, how many records are stamped before the one
    preceding them, and the earliest and latest stamps), segments and frames (with the records
    per frame on average: every record a frame holds, a Rewind event or not), bytes on disk (and
    how many of them are zeros a live writer preallocated) and decoded, the compression ratio
    (without those zeros), snapshots in DIR/snapshots, checkpoints, and anything quarantined. A
    checkpoint is a `rewind.checkpoint` record, or a mark whose digest record follows it; a mark
    whose digest never came (the writer stopped first; harmless) is counted apart as
    unfinished. Shows progress on standard error when it is a terminal. With --json, one object
    with the same figures (the sequences run from 1 to events; commandsWithEvents the commands
    that recorded events; records every record of the frames, whose mean per frame the text
    shows; times in ISO 8601: first and last are the first and last records', earliest and
    latest the extremes, stampedBeforePrevious the records stamped before the one preceding
    them; counts by name and origin as objects, a key per spelling the journal holds, by its
    bytes, in their order; checkpoints and unfinishedCheckpoints as arrays of sequence numbers).
    A snapshot after the journal's last sequence is flagged (snapshotsPastTheEnd in JSON): its
    records were made durable before it was written, so records were lost; the line says which,
    and to restore the journal from a backup if there is one.

    In a damaged journal, the counts read from its records (events, commands, the time span,
    checkpoints, by name and by origin) cover its intact part, up to the first damage, and say
    so ("partial" in JSON names those fields; it is empty for a sound journal); segments, frames,
    records per frame and bytes cover every segment file on disk, past the damage too.

    Exit 0; 1 when the journal is damaged or a snapshot is past its end; 3 when it cannot be
    read. `rewind verify` locates the damage.

    Examples:
      rewind stats /tmp/notes
      rewind stats /tmp/notes --json | jq .byOrigin

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let args = try Arguments(arguments, options: [], flags: ["json"])
    let directory = try args.directory()
    let reader = try openJournal(directory)
    let checking = ProgressLine("checking", context: context)
    defer { checking.finish() }  // an error then starts a line of its own
    // Damage may hide the end; then no progress is shown rather than failing before the check.
    let expected = (try? reader.lastSequence()) ?? 0
    let report = try reader.verify { checking.update($0, of: expected) }
    checking.finish()
    let total = report.lastSequence
    let progress = ProgressLine("counting", context: context)
    defer { progress.finish() }  // an error then starts a line of its own

    // By bytes: two spellings of one text (composed or not) are two names, as in `export`.
    var byName: [ExactText: Int] = [:]
    var byOrigin: [ExactText: Int] = [:]
    var commands = 0
    var lastCommand: Identifier?
    var foreign = 0
    var checkpoints = CheckpointTally()
    var first: Int64?
    var last: Int64?
    // Timestamps need not increase (a clock set back): the extremes, and how often they went back.
    var earliest: Int64?
    var latest: Int64?
    var stampedBeforePrevious = 0
    // The intact part, also when the index names records that are gone (the report says so).
    let cursor = report.lastSequence > 0 ? try reader.records(from: 1, reportingLoss: false) : nil
    while let record = try cursor?.next() {
      if first == nil { first = record.timestamp }
      if let last, record.timestamp < last { stampedBeforePrevious += 1 }
      last = record.timestamp
      earliest = min(earliest ?? record.timestamp, record.timestamp)
      latest = max(latest ?? record.timestamp, record.timestamp)
      if let header = try? EventRecord.header(of: record.payload) {
        byName[ExactText(header.name), default: 0] += 1
        byOrigin[ExactText(header.origin.name), default: 0] += 1
        if header.commandID != lastCommand { commands += 1 }
        lastCommand = header.commandID
        if Checkpoint.recordNames.contains(header.name) {
          checkpoints.count(header.name, sequence: record.sequence, payload: record.payload, body: header.bodyOffset)
        }
      } else {
        foreign += 1
        lastCommand = nil
      }
      progress.update(record.sequence, of: total)
      if record.sequence >= report.lastSequence { break }
    }
    progress.finish()

    let events = report.lastSequence
    let store = SnapshotStore(journal: directory)
    // A snapshot is written after its records are made durable: one past the end shows records
    // lost. The end as read now if the journal grew while it was counted (a live writer's snapshot
    // of records appended meanwhile is none).
    let (snapshots, end, pastTheEnd) = store.pastTheEnd(lastSequence: report.lastSequence)
    let sound = report.isSound && pastTheEnd.isEmpty
    let quarantined = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/quarantine")) ?? []
    if args.flag("json") {
      func counts(_ table: [ExactText: Int]) -> String {
        "{" + table.sorted { $0.key < $1.key }.map { "\(jsonString($0.key.text)):\($0.value)" }.joined(separator: ",")
          + "}"
      }
      var fields = [
        "\"journal\":\(jsonString(directory))", "\"id\":\"\(try reader.id)\"", "\"events\":\(events)",
        "\"commandsWithEvents\":\(commands)", "\"notRewindEvents\":\(foreign)",
        "\"first\":" + (first.map { "\"\(isoTime($0))\"" } ?? "null"),
        "\"last\":" + (last.map { "\"\(isoTime($0))\"" } ?? "null"),
        "\"earliest\":" + (earliest.map { "\"\(isoTime($0))\"" } ?? "null"),
        "\"latest\":" + (latest.map { "\"\(isoTime($0))\"" } ?? "null"),
        "\"stampedBeforePrevious\":\(stampedBeforePrevious)", "\"segments\":\(report.segments)",
        "\"frames\":\(report.batches)", "\"records\":\(report.records)", "\"bytesOnDisk\":\(report.bytesOnDisk)",
        "\"bytesPreallocated\":\(report.preallocatedBytes)", "\"bytesDecoded\":\(report.bytesDecoded)",
        "\"snapshots\":[\(snapshots.map(String.init).joined(separator: ","))]",
        "\"snapshotsPastTheEnd\":[\(pastTheEnd.map(String.init).joined(separator: ","))]",
        "\"checkpoints\":[\(checkpoints.finished.map(String.init).joined(separator: ","))]",
        "\"unfinishedCheckpoints\":[\(checkpoints.unfinished.map(String.init).joined(separator: ","))]",
        "\"quarantined\":\(quarantined.count)", "\"byName\":\(counts(byName))", "\"byOrigin\":\(counts(byOrigin))",
      ]
      let partial = report.isSound ? [] : Self.partialFields
      fields.append("\"partial\":[\(partial.map(jsonString).joined(separator: ","))]")
      fields.append("\"sound\":\(sound)")
      context.output.out("{" + fields.joined(separator: ",") + "}\n")
      return sound ? .success : .findings
    }
    // Damaged, the counts read from records cover the intact part, the rest every file: say which.
    let intact = report.isSound ? "" : "; intact part"
    let everyFile = report.isSound ? "" : "; every segment file, past the damage too"
    // The directory and the names and origins (in `table`) are made `visible`, each once.
    var lines = [
      visible("journal      \(directory) (id \(try reader.id))"),
      "events       \(events) (sequences \(events == 0 ? "-" : "1-\(events)")\(intact)), recorded by \(commands) command\(commands == 1 ? "" : "s")"
        + (foreign > 0 ? ", " + notRewindEvents(foreign) : ""),
    ]
    if let first, let last {
      // A clock set back can stamp the last record before the first: say so, not "0 s". Stamps
      // are any `Int64`, so their distance takes 64 unsigned bits (a wrapping difference holds it).
      let length =
        last >= first
        ? span(UInt64(bitPattern: last &- first))
        : "the last record is stamped \(span(UInt64(bitPattern: first &- last))) before the first"
      lines.append("time span    \(isoTime(first)) to \(isoTime(last)) (\(length)\(intact))")
      if stampedBeforePrevious > 0, let earliest, let latest {
        let records = stampedBeforePrevious == 1 ? "1 record is" : "\(stampedBeforePrevious) records are"
        lines.append(
          "             \(records) stamped before the one preceding it (a clock set back): "
            + "stamps from \(isoTime(earliest)) to \(isoTime(latest))")
      }
    } else {
      lines.append("time span    - (no events\(intact))")
    }
    // Every record of every frame that decodes (Rewind events or not), as the frames are counted.
    let perFrame = report.batches == 0 ? 0 : Double(report.records) / Double(report.batches)
    let records = perFrame == perFrame.rounded() ? String(Int(perFrame)) : String(format: "%.1f", perFrame)
    lines.append(
      "segments     \(report.segments), \(report.batches) frame\(report.batches == 1 ? "" : "s") (\(records) record\(records == "1" ? "" : "s") per frame on average\(everyFile))"
    )
    lines.append(
      "bytes        \(report.bytesOnDisk) on disk"
        + (report.preallocatedBytes > 0
          ? " (\(report.preallocatedBytes) of them zeros preallocated after the last frame)" : "")
        + ", \(report.bytesDecoded) decoded" + (report.isSound ? "" : " (every segment file)"))
    lines.append("compression  ratio \(ratio(report)) (decoded / on disk, without preallocated zeros)")
    lines.append(
      "snapshots    "
        + (snapshots.isEmpty
          ? "none"
          : "\(snapshots.count), after sequences \(snapshots.suffix(5).map(String.init).joined(separator: ", "))"
            + (snapshots.count > 5 ? " (the last 5)" : "")))
    if let newest = pastTheEnd.last {
      // Its records were made durable before it was written: they were on disk, and are not now.
      let one = pastTheEnd.count == 1
      let (it, what) = (one ? "it" : "the newest", report.isSound ? "the journal's end" : "the intact part's end")
      lines.append(
        visible(
          "             \(pastTheEnd.count) of them \(one ? "lies" : "lie") past \(what) (sequence \(end)): "
            + "records \(end + 1) to \(newest) were on disk when \(it) was written, and "
            + (report.isSound
              ? "are lost. Restore the journal from a backup if there is one; the next writer moves "
                + "\(one ? "the snapshot" : "these snapshots") aside. `rewind verify \(shellWord(directory))` reports the loss."
              : "are lost or lie past the damage (below).")))
    }
    lines.append("checkpoints  " + checkpoints.summary + (report.isSound ? "" : " (intact part)"))
    if !quarantined.isEmpty {
      lines.append(visible("quarantined  \(counted(quarantined.count, "file")) in \(directory)/quarantine"))
    }
    lines.append("by name" + (report.isSound ? "" : " (intact part)"))
    lines += table(byName)
    lines.append("by origin" + (report.isSound ? "" : " (intact part)"))
    lines += table(byOrigin)
    if !report.isSound {
      lines.append(
        visible(
          "damaged      \(counted(report.problems.count, "problem")); the counts of events, commands, the time span, "
            + "checkpoints, names and origins cover the intact part, up to sequence \(report.lastSequence); "
            + "segments, frames and bytes every segment file. `rewind verify \(shellWord(directory))` locates them."))
    }
    context.output.out(lines.joined(separator: "\n") + "\n")
    return sound ? .success : .findings
  }

  /// The fields of `--json` counted from the records read, which cover only the intact part of a
  /// damaged journal (the others, from `verify`'s report, every segment file).
  static let partialFields = [
    "events", "commandsWithEvents", "notRewindEvents", "first", "last", "earliest", "latest", "stampedBeforePrevious",
    "checkpoints", "unfinishedCheckpoints", "byName", "byOrigin",
  ]

  /// Rows of "name  count  percent", most frequent first, then by name (its bytes); names made
  /// `visible` (and padded as they are shown).
  static func table(_ counts: [ExactText: Int]) -> [String] {
    let total = max(1, counts.values.reduce(0, +))
    let width = max(12, visibleWidth(counts.keys.map(\.text)) + 2)
    return counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { name, count in
      "  " + visible(name.text, paddedTo: width)
        + String(count).leftPadded(to: 9) + String(format: "  %5.1f%%", Double(count) * 100 / Double(total))
    }
  }

  /// A duration for people: "3 d 4 h 5 min 6 s".
  static func span(_ nanoseconds: UInt64) -> String {
    var seconds = nanoseconds / 1_000_000_000
    var parts: [String] = []
    for (unit, size) in [("d", UInt64(86_400)), ("h", 3_600), ("min", 60)] where seconds >= size {
      parts.append("\(seconds / size) \(unit)")
      seconds %= size
    }
    if parts.isEmpty || seconds > 0 { parts.append("\(seconds) s") }
    return parts.joined(separator: " ")
  }
}

/// The checkpoints a journal holds: `rewind.checkpoint` records, which carry their digest, and
/// marks, finished by a later digest record naming them or left unfinished.
struct CheckpointTally {
  private var complete: [UInt64] = []
  private var marks: [UInt64] = []
  private var digested: Set<UInt64> = []

  /// Counts one record named by `Checkpoint.recordNames`. A digest whose fields do not decode
  /// finishes nothing (`rewind verify` reports it).
  mutating func count(_ name: String, sequence: UInt64, payload: [UInt8], body: Int) {
    switch name {
    case Checkpoint.name: complete.append(sequence)
    case CheckpointMark.name: marks.append(sequence)
    default:
      if let digest = try? FieldDecoder().decode(CheckpointDigest.self, from: Array(payload[body...])) {
        digested.insert(digest.mark)
      }
    }
  }

  /// Sequence numbers of the finished checkpoints, ascending.
  var finished: [UInt64] { (complete + marks.filter { digested.contains($0) }).sorted() }
  /// Sequence numbers of the marks no digest names, ascending.
  var unfinished: [UInt64] { marks.filter { !digested.contains($0) } }

  /// "none", or the count and the last one, and the unfinished marks if any.
  var summary: String {
    let finished = finished
    let unfinished = unfinished
    var parts: [String] = []
    if let last = finished.last { parts.append("\(finished.count), the last at sequence \(last)") }
    if let last = unfinished.last {
      parts.append(
        "\(unfinished.count) unfinished (a mark without its digest; the last at sequence \(last))")
    }
    return parts.isEmpty ? "none" : parts.joined(separator: "; ")
  }
}

extension String {
  func leftPadded(to width: Int) -> String {
    count >= width ? self : String(repeating: " ", count: width - count) + self
  }
}
