import Foundation
import Rewind
package import RewindJournal

/// Bytes decoded per byte on disk, two decimals; "-" for an empty journal. The bytes on disk are
/// those the segments hold, not counting the zeros a live writer preallocated after the last frame
/// (which would make a young journal look uncompressed).
package func ratio(_ report: VerificationReport) -> String {
  let written = report.bytesOnDisk - report.preallocatedBytes
  // Nothing decoded (no records): a ratio of 0.00 would read as a journal that compresses to nothing.
  return written <= 0 || report.bytesDecoded == 0
    ? "-" : String(format: "%.2f", Double(report.bytesDecoded) / Double(written))
}

/// `count` and `noun`, in the plural unless `count` is 1: "1 segment", "0 segments", "3 frames".
package func counted(_ count: some BinaryInteger, _ noun: String) -> String {
  "\(count) \(noun)\(count == 1 ? "" : "s")"
}

/// "1 record that is not a Rewind event", "3 records that are not Rewind events" (`verify`, `stats`).
package func notRewindEvents(_ count: some BinaryInteger) -> String {
  count == 1 ? "1 record that is not a Rewind event" : "\(count) records that are not Rewind events"
}

/// ISO 8601 with nanoseconds, UTC; any Int64 (1677-09-21T00:12:43.145224192Z to
/// 2262-04-11T23:47:16.854775807Z).
package func isoTime(_ nanoseconds: Int64) -> String {
  // Floor division, so a time before 1970 has a fraction in 0..<1e9, without overflow at Int64.min.
  var (seconds, fraction) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
  if fraction < 0 {
    seconds -= 1
    fraction += 1_000_000_000
  }
  var time = time_t(seconds)
  var parts = tm()
  gmtime_r(&time, &parts)
  return String(
    format: "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
    parts.tm_hour,
    parts.tm_min, parts.tm_sec, fraction)
}

/// `text` as a JSON string literal.
package func jsonString(_ text: String) -> String {
  var out = ""
  FieldRenderer.appendQuoted(text, to: &out)
  return out
}

/// The journal cannot be opened or read (exit 3); the message says what to do.
struct JournalUnreadable: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// A reader of the journal in `directory`, with a plain message when the directory is missing
/// or is a file. It reads with the largest limits (`JournalLimits.largest`), so that a journal
/// written with larger limits than the default reads too.
func openJournal(_ directory: String) throws -> JournalReader {
  try requireDirectory(directory)
  return try JournalReader(directory: directory, limits: .largest)
}

/// What to do when every segment belongs to journal `id` and only `manifest.json` names another:
/// `rewind repair` refuses such a journal, so the advice is to fix the manifest.
func onlyTheManifestDisagrees(_ id: JournalID) -> String {
  "Every segment belongs to journal \(id) and only manifest.json names another: `rewind repair` "
    + "refuses such a journal and moves nothing. If these segments are this journal's, set the "
    + "manifest's journalID to \(id)."
}

/// The message of damage found reading a journal whose segments all belong to one journal and
/// whose manifest alone names another, with `onlyTheManifestDisagrees` in place of the library's
/// advice (`rewind repair`, which refuses it). Nil for any other error.
func foreignManifestMessage(_ error: JournalError) -> String? {
  guard error.code == .corrupt || error.code == .sequenceBreak, let directory = error.directory,
    let id = (try? JournalDirectory(path: directory, io: PosixFileIO()))?.journalIDOfEverySegmentButTheManifest()
  else { return nil }
  // The same place and message, under a code that carries no advice of its own.
  let plain = JournalError(
    .badManifest, error.message, directory: directory, file: error.file, offset: error.offset,
    sequences: error.sequences, errno: error.errno)
  return "\(plain). " + onlyTheManifestDisagrees(id)
}

/// What to do about a journal whose `manifest.json` is missing or is not a manifest while
/// segments remain: the library's advice for a directory without one (create a journal) would
/// loop, as a writer refuses a directory with segments. Names the journal id every segment's
/// header names, when they agree. A manifest that is not one beside no segments gets advice too
/// (restore it, or remove it so that a writer creates a journal there), and a missing manifest
/// beside no segments a plain "not a Rewind journal". Nil for any other error, also for a
/// manifest of an unknown format or naming another journal (their messages say what to do).
/// Reads with the journal's own file layer and manifest parser.
func manifestAdvice(_ error: JournalError) -> String? {
  let io = PosixFileIO()
  guard error.code == .notAJournal || error.code == .badManifest, error.file == Layout.manifestName,
    let directory = error.directory, let segments = try? JournalDirectory.listSegments(directory, io: io)
  else { return nil }
  let path = directory + "/" + Layout.manifestName
  let missing = !io.fileExists(path)
  if missing, segments.isEmpty {
    // The library's advice serves a writer too (about a directory with segments): say only what
    // is wrong with the path given, and what a command takes.
    return "\(directory) is not a Rewind journal: it holds no \(Layout.manifestName) and no segment. Check the "
      + "path (rewind COMMAND DIR takes a journal directory)."
  }
  // A manifest the journal's parser reads (a format and a well-formed id) is refused for another reason.
  if !missing, let bytes = try? Manifest.readBytes(directory: directory, io: io), Manifest.decode(bytes) != nil {
    return nil
  }
  let problem =
    missing
    ? "no \(Layout.manifestName)" : "\(Layout.manifestName) is not a manifest (JSON with a format and a journalID)"
  if segments.isEmpty {
    return problem + " in journal \(directory), which holds no segments, so no records. Restore "
      + "\(Layout.manifestName) from a backup, or remove it: a writer then creates a new journal there."
  }
  var ids: Set<String> = []
  for first in segments {
    guard case .success(let header)? = try? SegmentFile(directory: directory, firstSequence: first, io: io).header()
    else { continue }
    ids.insert(header.journalID.description)
  }
  let written =
    ids.count == 1
    ? #"{"format": 1, "journalID": "\#(ids.first!)"} (the id every segment's header names)"#
    : "format 1 and the journal id of its segments' headers (they name \(ids.isEmpty ? "none that can be read" : "several: \(ids.sorted().joined(separator: ", "))"))"
  return problem
    + " in journal \(directory), which holds \(counted(segments.count, "segment")): its records are there, but no command "
    + "reads them, and a writer will not create a manifest beside them. Restore \(Layout.manifestName) from a backup, "
    + "or write it as Journal/FORMAT.md describes: \(written)."
}

/// Throws `JournalUnreadable` unless `directory` exists and is a directory; `UsageError` for an
/// empty path, a mistake on the command line (an unset variable in `rewind stats "$J"`), not a
/// journal that cannot be read.
func requireDirectory(_ directory: String) throws {
  guard !directory.isEmpty else {
    throw UsageError("the journal directory is empty (''): name one (rewind COMMAND DIR takes a journal directory)")
  }
  // Only a path that is not there "does not exist": one too long for the system, or behind a
  // directory that cannot be searched, is said as the system says it (helper-222, Dec 7: a name
  // over 255 bytes was reported missing).
  var status = stat()
  guard stat(directory, &status) == 0 else {
    let code = errno
    guard code == ENOENT || code == ENOTDIR else {
      throw JournalUnreadable(
        "\(directory) cannot be looked at: \(String(cString: strerror(code))) (errno \(code)); check the path "
          + "(rewind COMMAND DIR takes a journal directory)")
    }
    throw JournalUnreadable(
      "\(directory) does not exist: check the path (rewind COMMAND DIR takes a journal directory)")
  }
  guard (status.st_mode & S_IFMT) == S_IFDIR else {
    throw JournalUnreadable("\(directory) is a file, not a journal directory: name the directory that holds it")
  }
}

/// `path` as one word a POSIX shell reads back as `path`, for a command the tools suggest
/// (`rewind repair DIR`): as it is when it holds only letters, digits and `_@%+=:,./-`; else in
/// single quotes (a quote inside written `'"'"'`: with no backslash, which `visible` would
/// double, so the word is pasted as shown). One that starts with `-` is given as `./-…`, which
/// the tool takes for a path, not an option (helper-222, Dec 7: `rewind repair paths/dm g` split
/// in two, and a `$(…)` in a path ran when the line was pasted).
package func shellWord(_ path: String) -> String {
  let word = path.hasPrefix("-") ? "./" + path : path
  let plain =
    !word.isEmpty
    && word.unicodeScalars.allSatisfy { scalar in
      scalar.isASCII
        && (("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
          || ("0"..."9").contains(scalar) || "_@%+=:,./-".unicodeScalars.contains(scalar))
    }
  return plain ? word : "'" + word.replacing("'", with: #"'"'"'"#) + "'"
}

/// `text` made safe for a terminal, and unambiguous: each scalar a terminal would act on
/// (`FieldRenderer.isTerminalControl`: C0 including tab, newline and carriage return; DEL; C1;
/// the line and paragraph separators; the bidirectional marks, embeddings, overrides and
/// isolates; the invisible soft hyphen, zero width space, word joiner and byte order mark, but
/// not the zero width non-joiner and joiner that scripts and emoji need) written as a visible escape in Swift's spelling, `\u{1B}`, with uppercase hex
/// digits, and each backslash doubled, `\\`, so that text spelling an escape (the six characters
/// `\u{1B}`, shown as `\\u{1B}`) cannot pass for one. Everything else is kept as is: text without
/// controls or backslashes comes back unchanged.
///
/// A journal is untrusted input for an audit tool: a note title holding ESC [ 2 J or a carriage
/// return must neither drive the terminal nor forge a line of output, nor may it imitate a control,
/// and neither may a word typed on the command line and echoed in an error. Every text (not JSON)
/// output of strings from a journal or a user goes through here, one line at a time, so a newline
/// inside them cannot start a line of its own; a path is such a string too (a backslash in it is
/// shown doubled). JSON output escapes the same scalars its own way (`\u001b`, in
/// `FieldRenderer.appendQuoted`), and JSON within a line of text (an event's fields) is written as
/// is, not through here: it is already safe, and its backslashes already unambiguous. Apply once,
/// to text that is not yet escaped: a second pass doubles the backslashes of the first.
package func visible(_ text: String) -> String {
  guard text.unicodeScalars.contains(where: { $0 == "\\" || FieldRenderer.isTerminalControl($0) }) else {
    return text
  }
  var out = String.UnicodeScalarView()
  for scalar in text.unicodeScalars {
    if scalar == "\\" {
      out.append(contentsOf: #"\\"#.unicodeScalars)
    } else if FieldRenderer.isTerminalControl(scalar) {
      out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
    } else {
      out.append(scalar)
    }
  }
  return String(out)
}

/// The width (in characters) of the widest of `texts` as `visible` shows them: a column of names
/// from a journal or a model is measured as it is shown, since `visible` lengthens a control
/// (`\u{1B}`) and a backslash (`\\`). 0 for none.
func visibleWidth(_ texts: some Sequence<String>) -> Int {
  texts.lazy.map { visible($0).count }.max() ?? 0
}

/// `visible(text)` followed by spaces up to `width` characters (none when it is as wide or wider;
/// nothing is cut): a cell of a column measured with `visibleWidth`.
func visible(_ text: String, paddedTo width: Int) -> String {
  let shown = visible(text)
  return shown + String(repeating: " ", count: max(0, width - shown.count))
}

/// A journal's text (an event name, an origin) compared, hashed and ordered by its UTF-8 bytes, as
/// the journal stores it and a JSON reader compares it. Swift's `String` equality is canonical
/// equivalence: as a dictionary key, "caf\u{E9}" and "cafe\u{301}" would count as one, and their
/// order would follow the dictionary's, which differs from one process to the next.
struct ExactText: Hashable, Comparable {
  var text: String

  init(_ text: String) { self.text = text }

  static func == (left: ExactText, right: ExactText) -> Bool { left.text.utf8.elementsEqual(right.text.utf8) }

  func hash(into hasher: inout Hasher) {
    hasher.combine(text.utf8.count)
    for byte in text.utf8 { hasher.combine(byte) }
  }

  static func < (left: ExactText, right: ExactText) -> Bool {
    left.text.utf8.lexicographicallyPrecedes(right.text.utf8)
  }
}
