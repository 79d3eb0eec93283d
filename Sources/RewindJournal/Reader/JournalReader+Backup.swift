import Glibc

/// What `JournalReader.backUp(to:)` copied.
public struct BackupReport: Sendable, Equatable {
  /// The last sequence number copied: the journal's end when the copy began.
  public var lastSequence: UInt64
  /// The records copied: every one of the journal from 1 through `lastSequence` (0 when empty).
  public var records: UInt64 { lastSequence }
  /// The frames (atomic batches) the copy holds: one for each frame read.
  public var frames: Int
  /// The bytes of the copy's files.
  public var bytes: Int64
}

extension JournalReader {
  /// Copies the journal into `destination`, a directory that does not exist yet or is empty,
  /// also while a writer appends to it: the copy is the journal as it stood when the copy began,
  /// with the same journal id and every record from the first through the last one then (the
  /// same sequence numbers, timestamps and payloads), each frame's records again in one frame.
  /// Records appended meanwhile are not copied, however fast they come.
  /// A file-by-file copy of a journal being written can miss records (when the writer seals a
  /// segment while the copy runs); this reads records as any reader does, so it cannot.
  ///
  /// The copy's files are written anew (its segments hold the same frames, the index is
  /// derived) into a hidden directory, fsynced with it, and read back and verified there; only
  /// then does the copy become `destination`, so that no partial copy passes for a backup, also
  /// when the process is killed or the machine stops part way:
  /// - a new `destination`: the copy is made in `.NAME.backup-XXXXXXXX` beside it (`NAME` its
  ///   last component), renamed to `destination` once verified, and the parent directory synced;
  /// - an empty `destination` (a mount point, a directory with permissions of its own): the copy
  ///   is made in `destination/.backup-XXXXXXXX`, its files then moved into `destination`, the
  ///   manifest last, so that `destination` is a journal only once it holds every file.
  /// A copy cut off so leaves that hidden directory (and, in an empty `destination`, files
  /// without a manifest, which no reader takes for a journal); nothing removes it later (`rewind
  /// backup` removes it when a signal interrupts it: `backUp(to:step:)`).
  /// Snapshots are not copied: they are derived, and an app that opens the copy replays from its
  /// start or writes new ones. Nor is `quarantine/`, where `repair` moved damaged data aside.
  /// - Returns: what was copied.
  /// - Throws: `JournalError`: `.invalidArgument` when `destination` holds anything, is not a
  ///   directory, has no parent directory, or lies inside this journal's directory (nothing there
  ///   is changed); damage in
  ///   this journal, located, or `.io`. On any error, what it wrote is removed and `destination`
  ///   is left as it was (or is not made).
  public func backUp(to destination: String) throws -> BackupReport {
    try backUp(to: destination) { _, run in try run() }
  }

  /// A change `backUp(to:step:)` is about to make: one that a process interrupted meanwhile
  /// would leave behind.
  package enum BackupStep: Sendable, Equatable {
    /// The hidden directory the copy is made in: the step's `run` makes it and opens the copy's
    /// journal there (its manifest, lock and first segment). Later files of the copy are made
    /// inside it, outside any step: once it is removed, they fail, and nothing makes it again.
    case staging(String)
    /// The copy renamed to DEST, a new directory: it is the backup from then on.
    case renamed
    /// A file of the copy moved into DEST, an empty directory; the manifest moves last, and
    /// makes DEST a journal.
    case moved(String)
  }

  /// `backUp(to:)`, running each `BackupStep` through `step` (which must call `run` once, and
  /// may hold a lock around it): `rewind backup` removes what an interrupt would leave (the
  /// hidden copy, files moved into an empty DEST) knowing exactly which changes were made.
  package func backUp(
    to destination: String, step: (BackupStep, () throws -> Void) throws -> Void
  ) throws -> BackupReport {
    let id = try self.id
    var status = stat()
    let looked = lstat(destination, &status) == 0
    let lookError = errno
    let made = !looked && lookError == ENOENT
    if !made {
      guard io.isRealDirectory(destination) else {
        // Say what stands there: a refusal that only restated the rule left the reason to guess.
        let what =
          switch looked ? status.st_mode & S_IFMT : 0 {
          case _ where !looked: "it cannot be looked at (\(String(cString: strerror(lookError))), errno \(lookError))"
          case S_IFLNK: "it is a symbolic link"
          case S_IFREG: "it is a file"
          case S_IFDIR: "it is a directory that cannot be read"
          default: "it is neither a directory nor a file"
          }
        throw JournalError(
          .invalidArgument, "\(what): a backup goes into a new or empty directory", directory: destination)
      }
      let contents = try JournalError.wrapping(directory: destination) { try io.contentsOfDirectory(destination) }
      guard contents.isEmpty else {
        throw JournalError(
          .invalidArgument,
          "it holds \(contents.count) file\(contents.count == 1 ? "" : "s"): a backup goes into a new or empty directory",
          directory: destination)
      }
    }
    if ResolvedPath.lies(destination, within: directory) {
      throw JournalError(
        .invalidArgument,
        "it lies inside the journal's own directory, where the backup would be lost with the journal: "
          + "a backup goes outside it", directory: destination)
    }
    let suffix = ".backup-" + String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)
    let (parent, name) = ResolvedPath.split(destination)
    var parentStatus = stat()
    if made, stat(parent, &parentStatus) != 0 || (parentStatus.st_mode & S_IFMT) != S_IFDIR {
      throw JournalError(
        .invalidArgument, "its parent directory \(parent) does not exist: a backup makes DEST, not its parents",
        directory: destination)
    }
    let staging = made ? parent + "/." + ResolvedPath.temporaryStem(name) + suffix : destination + "/" + suffix
    // What became the destination's so far: the whole copy (a new destination), or these files.
    var renamed = false
    var moved: [String] = []
    do {
      var opened: Journal?
      try step(.staging(staging)) { opened = try openCopy(in: staging, id: id) }
      guard let copy = opened else {
        throw JournalError(.invalidArgument, "the backup's step did not run", directory: destination)
      }
      let report = try copyAndVerify(copy, into: staging)
      if made {
        try JournalError.wrapping(directory: destination) {
          try step(.renamed) { try io.rename(staging, to: destination) }
          renamed = true
          try io.syncDirectory(parent)
        }
      } else {
        // The manifest last, once the other names are durable: without it, no reader takes the
        // directory for a journal.
        let names = try JournalError.wrapping(directory: staging) { try io.contentsOfDirectory(staging) }
        for name in names.filter({ $0 != Layout.manifestName }) + [Layout.manifestName] {
          if name == Layout.manifestName {
            try JournalError.wrapping(directory: destination) { try io.syncDirectory(destination) }
          }
          try JournalError.wrapping(directory: destination, file: name) {
            try step(.moved(name)) { try io.rename(staging + "/" + name, to: destination + "/" + name) }
          }
          moved.append(name)
        }
        try JournalError.wrapping(directory: destination) {
          // Gone already: a signal's handler (`rewind backup`) removed it once the manifest had
          // moved. That is no failure to take the moved files back for.
          do { try io.removeDirectory(staging) } catch let error as SystemCallError where error.errno == ENOENT {}
          try io.syncDirectory(destination)
        }
      }
      return report
    } catch {
      if renamed {
        _ = io.removeDirectoryAndFiles(destination)
      } else {
        // The manifest first: a crash part way leaves no journal of a part of the copy.
        for name in moved.reversed() { try? io.removeFile(destination + "/" + name) }
        _ = io.removeDirectoryAndFiles(staging)
      }
      throw error
    }
  }

  /// Makes the hidden directory `destination` and opens the copy's journal there, with this
  /// journal's id.
  private func openCopy(in destination: String, id: JournalID) throws -> Journal {
    var options = JournalOptions(durability: .none)
    options.limits = .largest
    options.newJournalID = id
    options.io = io
    // `none` syncs a segment only as it is sealed and nothing at closing: every file is synced below.
    return try Journal(directory: destination, options: options)
  }

  /// Copies the records into `copy`, the journal opened in the hidden directory `destination`,
  /// closes it, syncs its files and verifies them.
  private func copyAndVerify(_ copy: Journal, into destination: String) throws -> BackupReport {
    var report = BackupReport(lastSequence: 0, frames: 0, bytes: 0)
    do {
      // The moment the copy stands at: the end now. A writer that appends faster than the copy
      // reads would otherwise keep it reading for ever. A frame ended there (a frame compaction
      // merges later may go on past it: the copy's last frame ends there all the same).
      let end = try lastSequence()
      let cursor = try records(from: 1)
      var frame: [NewRecord] = []
      while report.lastSequence < end, let record = try cursor.next() {
        frame.append(NewRecord(timestamp: record.timestamp, payload: record.payload))
        report.lastSequence = record.sequence
        guard cursor.isAtBatchEnd || record.sequence == end else { continue }
        let written = try copy.appendAndWait(frame)
        guard written.upperBound == report.lastSequence else {
          throw JournalError(
            .sequenceBreak,
            "the copy numbered records \(written.lowerBound)-\(written.upperBound) where the journal holds them "
              + "through \(report.lastSequence)", directory: destination)
        }
        report.frames += 1
        frame.removeAll(keepingCapacity: true)
      }
      copy.close()
      guard report.lastSequence == end else {
        throw JournalError(
          .sequenceBreak,
          "the journal ended at sequence \(report.lastSequence) while it was copied, at \(end) when the copy began",
          directory: directory)
      }
    } catch {
      copy.close()
      throw error
    }
    report.bytes = try syncCopy(destination)
    let verification = try JournalReader(directory: destination, limits: .largest, io: io).verify()
    guard verification.isSound, verification.records == report.lastSequence,
      verification.lastSequence == report.lastSequence
    else {
      throw JournalError(
        .corrupt,
        "the copy did not verify as the journal read (\(verification.records) records, through "
          + "\(verification.lastSequence); problems: \(verification.problems))", directory: destination)
    }
    return report
  }

  /// Fsyncs every file of the copy and then its directory; returns the files' bytes.
  private func syncCopy(_ destination: String) throws -> Int64 {
    var bytes: Int64 = 0
    for name in try JournalError.wrapping(directory: destination, { try io.contentsOfDirectory(destination) }).sorted()
    where name != Layout.lockName {
      let path = destination + "/" + name
      try JournalError.wrapping(directory: destination, file: name) {
        let fd = try io.open(path, flags: O_RDONLY, mode: 0)
        defer { io.close(fd) }
        try io.sync(fd, metadata: true, path: path)
        bytes += try io.size(fd, path: path)
      }
    }
    try JournalError.wrapping(directory: destination) { try io.syncDirectory(destination) }
    return bytes
  }
}
