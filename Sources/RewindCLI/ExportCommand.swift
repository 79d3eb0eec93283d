import Foundation
import Rewind
import RewindJournal

enum ExportCommand: RewindCommand {
  static let name = "export"
  /// The progress line's label, which an interrupt's message clears (`ExportInterrupts`).
  static let progressLabel = "exporting"
  static let summary = "every event, or those log's options select, as JSON lines for jq"
  static let help = """
    Usage: rewind export DIR --jsonl [--from SEQ] [--to SEQ] [--since TIME] [--until TIME]
                                     [--type NAME] [--origin ORIGIN] [--entity ID] [-o FILE]

    Writes every event, or those the options select, to standard output, one JSON object per line,
    in order: {"seq":..,"time":..,"name":..,"version":..,"origin":..,"command":..,"payload":{..}}
    with the event's fields rendered without the app's types, as `rewind log --json` does. The
    options select as `rewind log`'s do (see `rewind log --help`), so an export prints the same
    lines as `rewind log --json` with the same options, and reads the journal as it ended when the
    export began (events appended meanwhile are left out). A record that is not a Rewind event, or
    an event whose fields do not decode, also has "problem" (what is wrong) and its bytes as
    "payload", with "payloadEncoding" saying how: "text" (UTF-8) or "hex"; its envelope's fields
    are null only when the envelope does not decode either. An event whose fields are shown
    otherwise than stored has "problem" saying how: of two entries with one key, only the first,
    the one replay reads; a string or key that is not UTF-8, with U+FFFD for its ill-formed bytes,
    as replay reads it (so two such strings can show alike), and so an event name or origin; a
    number that is NaN or infinite, as the string "nan", "inf" or "-inf" (JSON has no such number).
    Shows progress on standard error when it is a terminal and standard output is not (with -o,
    when it is a terminal).

    -o FILE, --output FILE (one option, given once) writes the export to FILE instead, whole or
    not at all: to a new hidden file beside it (.NAME.export-XXXXXXXX.tmp, in FILE's directory),
    synced, then renamed over FILE (an existing FILE is replaced at once, keeping its mode, and
    its owner and group where the user may give them; a new one gets 0666 less the umask, as a
    redirect makes it), and the directory synced. When the export fails (damage met, even read
    past: the export would miss its records; a write that fails, a full disk; a selection no
    event matches), the temporary file is removed, FILE is left as it was (or not made), and the
    message says so. A FILE in a directory that does not exist, a directory, a symbolic link
    (name the file it points to), a device, or a FILE inside the journal's own directory (DIR,
    where it could replace a segment or the manifest) is a usage error, with nothing read or
    written.
    Interrupted (Ctrl-C, SIGTERM, SIGHUP), it removes its temporary file, leaves FILE as it was,
    says so and ends by the signal (status 128 + its number: 130 for Ctrl-C, and a script that ran
    it stops; a signal ignored when it started, as under nohup, stays ignored). Killed (kill -9),
    it leaves FILE as it was and its temporary file, which no later export removes (nothing proves
    it abandoned: its process may run on another machine): remove .NAME.export-*.tmp files yourself
    once no export to FILE is running. -o - is standard output, as without -o (a file named - is
    -o ./-).

    Exit 0; 2 for a bad option or a selection outside the journal (a --from past its end, a
    --since after its last event, an --until before its first, a --type, --origin or --entity
    that no event has, or options that no event matches together; a --to or --until past it reads
    to the end); 3 when the journal cannot be read, or -o's FILE cannot be written (a full disk,
    a directory not writable; FILE is left as it was). On damage, as `rewind log`: every event it
    does not hold is written, up to damage that cannot be read past, and standard error
    locates the damage and names the sequences not read, with exit 3. Standard output
    redirected to a file then holds the intact events, every line of them whole, so it can pass
    for a whole export: check the exit status (in a pipeline, set -o pipefail), or use -o FILE,
    which leaves none. A selection that ends before the damage is whole, and so is one whose
    times leave out every record of a damaged frame, as its batch header stamps them.

    Examples:
      rewind export /tmp/notes --jsonl -o events.jsonl
      rewind export /tmp/notes --jsonl | jq -c 'select(.origin == "sync") | .payload.id'
      rewind export /tmp/notes --jsonl --type 'note.*' --origin sync > synced-notes.jsonl

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let args = try Arguments(arguments, options: EventFilter.options.union(["output", "o"]), flags: ["jsonl"])
    let directory = try args.directory()
    guard args.flag("jsonl") else { throw UsageError("name the format: --jsonl (JSON lines) is the one there is") }
    if let short = args.value("o"), let long = args.value("output") {
      throw UsageError("-o and --output are one option, given twice ('\(short)' and '\(long)'); give it once")
    }
    // `-o -` is standard output, as for most tools that take an output file; `./-` names a file.
    let named = args.value("output") ?? args.value("o")
    let file = try named.flatMap { (path) throws(UsageError) in path == "-" ? nil : try ExportFile(path) }
    if let file, ResolvedPath.lies(file.path, within: directory) {
      // Its rename would replace the file of that name: a segment, the manifest, the index.
      throw UsageError(
        "--output \(file.path) lies inside the journal's own directory \(directory), among the files it could "
          + "replace; write the export elsewhere")
    }
    let filter = try EventFilter(args)
    let reader = try openJournal(directory)
    guard let file else {
      let output = BufferedOutput(context.output)
      defer { output.flush() }
      try export(filter, reader, directory, context: context, streaming: true) {
        output.write($0)
      } flush: {
        output.flush()
      }
      return .success
    }
    try file.write(io: context.fileIO, interrupts: context.output.ownsProcess ? context.output : nil) { append in
      var buffer = ""
      func flush() throws {
        guard !buffer.isEmpty else { return }
        try buffer.withUTF8 { try append(UnsafeRawBufferPointer($0)) }
        buffer = ""
      }
      try export(filter, reader, directory, context: context, streaming: false) { text in
        buffer += text
        if buffer.utf8.count >= 65_536 { try flush() }
      } flush: {
        // Standard error's messages need not follow the file's lines: kept until the end.
      }
      try flush()
    }
    return .success
  }

  /// Writes the events `filter` selects through `write`; `flush` writes out what `write` holds
  /// back before a message on standard error. Shows progress, `streaming` as `ProgressLine` takes it.
  private static func export(
    _ filter: EventFilter, _ reader: JournalReader, _ directory: String, context: RewindTool.Context,
    streaming: Bool, write: (String) throws -> Void, flush: () throws -> Void
  ) throws {
    // Damage may hide the end; then no progress is shown, and the read reports the damage.
    let total = min(try readableEnd(reader) ?? 0, filter.to)
    let progress = ProgressLine(ExportCommand.progressLabel, context: context, streaming: streaming)
    defer { progress.finish() }  // an error then starts a line of its own
    try filter.forEachEvent(
      in: reader, directory: directory,
      // Progress follows every record read, matching or not.
      reading: { progress.update($0.sequence, of: total) },
      readingOn: { damage, resume in
        try? flush()
        progress.finish()
        context.output.err(
          "rewind export: " + visible(DamageMet.readOnMessage(damage, from: resume, through: filter.to)) + "\n")
      }
    ) { _, event in
      try write(event.json + "\n")
    }
    try flush()
    progress.finish()
  }
}

/// The file `export --output FILE` writes: checked before the journal is read (a bad FILE is a
/// usage error, with nothing written), then written aside and renamed over FILE only when the
/// whole export succeeded.
struct ExportFile: Sendable {
  let path: String
  /// The directory FILE is in, where the temporary file is made (on FILE's file system).
  let directory: String
  let name: String
  /// The permission bits of the file FILE names now, kept for the export that replaces it; nil
  /// when there is none.
  let replacedPermissions: UInt32?
  /// The user and group of the file FILE names now, kept (where the process may) for the export
  /// that replaces it; nil when there is none.
  let replacedOwner: (user: UInt32, group: UInt32)?
  /// What a failed export says of FILE.
  var untouched: String { replacedPermissions == nil ? "\(path) was not made" : "\(path) was left as it was" }

  init(_ path: String) throws(UsageError) {
    guard !path.isEmpty else { throw UsageError("--output needs a file name, not ''") }
    let slash = path.lastIndex(of: "/")
    name = slash.map { String(path[path.index(after: $0)...]) } ?? path
    guard !name.isEmpty, name != ".", name != ".." else {
      throw UsageError(
        "--output \(path) names a directory; name a file (in it: \(path.hasSuffix("/") ? path : path + "/")events.jsonl)"
      )
    }
    directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    self.path = path
    var info = stat()
    if lstat(path, &info) == 0 {
      switch info.st_mode & S_IFMT {
      case S_IFREG:
        replacedPermissions = UInt32(info.st_mode & 0o777)
        replacedOwner = (info.st_uid, info.st_gid)
      case S_IFDIR:
        throw UsageError("--output \(path) is a directory; name a file (in it: \(path)/events.jsonl)")
      case S_IFLNK:
        throw UsageError(
          "--output \(path) is a symbolic link; name the file itself (the export replaces the file --output names)")
      default:
        throw UsageError(
          "--output \(path) is not a regular file (a device, FIFO or socket); --output writes a file: "
            + "for anything else, leave it out and redirect standard output")
      }
    } else if errno == ENOENT || errno == ENOTDIR {
      replacedPermissions = nil
      replacedOwner = nil
    } else {
      throw UsageError("--output \(path): \(String(cString: strerror(errno)))")
    }
    // Through symbolic links: the directory is the user's to reach as they like.
    let why: String? =
      stat(directory, &info) != 0
      ? (errno == ENOENT
        ? "does not exist" : errno == ENOTDIR ? "is not a directory" : String(cString: strerror(errno)))
      : info.st_mode & S_IFMT != S_IFDIR ? "is not a directory" : nil
    if let why { throw UsageError("--output \(path): its directory \(directory) \(why); nothing was written") }
  }

  /// Writes the export `body` makes (through `append`) to a new hidden temporary file in FILE's
  /// directory (`.NAME.export-XXXXXXXX.tmp`, made with `O_EXCL`, mode 0666 less the umask as a
  /// redirect makes it, or FILE's own mode, user and group when it replaces one), syncs it,
  /// renames it over FILE and syncs the directory. When anything fails before the rename (`body`
  /// throws, a write or the sync fails), the temporary file is removed and FILE is left as it was.
  /// - Parameter interrupts: the process's own standard error, when the process is the tool's
  ///   (`RewindTool.Output.ownsProcess`): then SIGINT, SIGTERM and SIGHUP remove the temporary
  ///   file and end the process (`ExportInterrupts`), saying so there.
  /// - Throws: `UsageError` (what `body` threw) or `ExportNotWritten`, saying FILE was left as it
  ///   was; `ExportNotWritten` saying FILE was replaced when only the directory's sync failed.
  func write(
    io: any FileIO, interrupts: RewindTool.Output? = nil,
    _ body: (_ append: (UnsafeRawBufferPointer) throws -> Void) throws -> Void
  ) throws {
    if let interrupts { ExportInterrupts.watch(self, output: interrupts) }
    defer { if interrupts != nil { ExportInterrupts.end() } }
    var attempts = 0
    while true {
      let temporary =
        directory + "/." + ResolvedPath.temporaryStem(name) + ".export-"
        + String(format: "%08x", UInt32.random(in: 0...UInt32.max)) + ".tmp"
      do {
        try io.replaceFile(
          path, temporary: temporary, exclusive: true, mode: 0o666, permissions: replacedPermissions,
          owner: replacedOwner,
          step: { step, run in
            guard interrupts != nil else { return try run() }
            try ExportInterrupts.step(step == .create ? .writing(temporary: temporary) : .replaced, of: self, run)
          }, writing: body)
        break
      } catch let error as SystemCallError where error.errno == EEXIST && error.operation == "open" && attempts < 8 {
        attempts += 1  // another's file of that name, left alone: another name
      } catch var error as UsageError {
        error.description += "; " + untouched
        throw error
      } catch let damage as DamageMet {
        let places =
          damage.passed.isEmpty ? "" : " (damaged in \(counted(damage.passed.count, "place")), each located above)"
        throw ExportNotWritten(
          errorMessage(damage.passed.first ?? damage.error) + places + ". " + untouched + ": --output "
            + "writes a whole export or none, and this one would miss the records the damage holds (without "
            + "--output, every event the damage does not hold is written out)")
      } catch {
        throw ExportNotWritten("cannot write the export to \(path): \(errorMessage(error)); " + untouched)
      }
    }
    do {
      try io.syncDirectory(directory)
    } catch {
      throw ExportNotWritten(
        "the export was written to \(path), but syncing its directory failed: \(errorMessage(error)); "
          + "a crash now could lose the rename")
    }
  }
}

/// Why `export --output` failed: exit 3 with this message.
struct ExportNotWritten: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}
