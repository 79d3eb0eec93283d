internal import Dispatch
public import RewindJournal
internal import RewindLocking
internal import Synchronization

#if canImport(Glibc)
  internal import Glibc
#elseif canImport(Darwin)
  internal import Darwin
#endif

/// The `snapshots/` folder of a journal directory: shortcuts for replay, never a source of truth.
///
/// Files are named `NNNNNNNNNNNNNNNNNNNN.snapshot` (20 decimal digits: the sequence number of the
/// last record the state includes), are owner-only (`0600`) and are written atomically (temporary
/// file, fsync, rename, directory fsync), so a crash leaves either the whole file or none.
/// Reading never trusts a file: see `latest(_:atOrBefore:lastSequence:)`.
public struct SnapshotStore: Sendable {
  /// The journal directory.
  public let directory: String
  let io: any FileIO
  /// The state size from which reading hashes a state on a second core while decoding it: below
  /// it (1 MiB unless a test says otherwise), handing the hash over costs more than it saves.
  let hashAlongsideBytes: Int
  /// The largest file written or read: `maxFileBytes` unless a test says otherwise.
  let fileLimit: Int64

  public init(journal directory: String) {
    self.init(journal: directory, io: PosixFileIO())
  }

  init(
    journal directory: String, io: any FileIO, hashAlongsideBytes: Int = 1 << 20,
    fileLimit: Int64 = SnapshotStore.maxFileBytes
  ) {
    self.directory = directory
    self.io = io
    self.hashAlongsideBytes = hashAlongsideBytes
    self.fileLimit = fileLimit
  }

  /// The folder's name in the journal directory.
  package static let folderName = "snapshots"

  var folder: String { directory + "/" + SnapshotStore.folderName }

  /// The cause `write` gives its `EncodingError` for a state whose snapshot would serve no reader:
  /// its file would be larger than `maxFileBytes`, or the state read back from it would not be
  /// the state. A manager's maintenance stops taking snapshots on it, and goes on.
  package struct WouldNotServe: Error {}

  /// The largest snapshot file read (1 GiB): a larger one is skipped as unreadable, so no file
  /// can make a reader allocate without bound; `write` refuses a state whose file would be larger.
  public static let maxFileBytes: Int64 = 1 << 30

  public static func fileName(_ sequence: UInt64) -> String {
    let digits = String(sequence)
    return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".snapshot"
  }

  /// The sequence numbers of the snapshot files present, ascending (whatever their contents):
  /// files named as `fileName` names them, nothing else.
  public func sequences() -> [UInt64] {
    // A `snapshots` that is a link to elsewhere is not this journal's: its files are not read.
    guard io.isRealDirectory(folder), let names = try? io.contentsOfDirectory(folder) else { return [] }
    return names.compactMap { name -> UInt64? in
      // Twenty ASCII digits, as `fileName` writes them: `UInt64("+000…300")` would read a sign.
      guard name.hasSuffix(".snapshot"), name.utf8.count == 29,
        name.utf8.prefix(20).allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
      else { return nil }
      return UInt64(name.prefix(20))
    }.sorted()
  }

  /// The size in bytes of the snapshot file after record `sequence`, or nil if it cannot be opened:
  /// what reading it would cost, without reading it.
  package func fileBytes(_ sequence: UInt64) -> Int64? {
    let path = folder + "/" + SnapshotStore.fileName(sequence)
    guard let fd = try? io.open(path, flags: 0, mode: 0) else { return nil }
    defer { io.close(fd) }
    return try? io.size(fd, path: path)
  }

  /// Writes the snapshot of `state` after record `sequence`, replacing one with the same number.
  /// `state` must be exactly the records through `sequence` applied: every check of the file
  /// trusts the pair, and replay from it applies the records after `sequence` only. For a running
  /// manager, pass the two halves of one `Manager.current` (its `state` and `lastSequence` read
  /// apart can straddle a commit).
  /// First makes the journal's records through `sequence` durable (`JournalReader.makeDurable`),
  /// whatever the writer's policy: a snapshot never outlives the records it stands for, which a
  /// power loss could otherwise take (under `none`) and the next writer number new records over.
  /// - Throws: `EncodingError` if the state does not encode, or holds the double -0.0 (a snapshot
  ///   holds the canonical encoding, which writes it as 0.0: a state read back would differ from
  ///   the one replay gives, see `CanonicalEncoding.encodeExactly`), or if its file would be larger
  ///   than the `maxFileBytes` every reader skips, or if the state read back from its encoding is
  ///   not the state (a property the model's `Codable` form leaves out: `SnapshotFidelity`);
  ///   nothing is written then. `JournalError` if the journal cannot be synced or read, or does
  ///   not reach `sequence` (`.invalidArgument`: the file would stand for records no one wrote);
  ///   `SystemCallError` from the disk.
  ///
  /// The file also names record `sequence` as the journal holds it when this reads it, after the
  /// state was made (`SnapshotFile.recordDigest(of:)`): readers skip it once the journal holds
  /// another record there. A state rebuilt by a replay in another process than the journal's
  /// writer is best written with the digest of the record the replay applied (as
  /// `Snapshots.take` and `update` do): a writer whose group failed can cut it off and number new
  /// records over it between the replay and this read.
  @discardableResult
  public func write<M: SnapshotModel>(_ state: M, at sequence: UInt64) throws -> StateDigest {
    try write(state, at: sequence, lastRecord: nil)
  }

  /// `write(_:at:)`, with the digest of the last record the state includes as the replay that
  /// built it read the record (`RecordDigests`), or nil to read the record again.
  @discardableResult
  func write<M: SnapshotModel>(_ state: M, at sequence: UInt64, lastRecord: [UInt8]?) throws -> StateDigest {
    // The largest limits, as every reader of snapshots reads the record: a journal written with
    // records over the default limits is this journal too.
    let reader = try JournalReader(directory: directory, limits: .largest, io: io)
    let journalID = try reader.id
    let bytes = try CanonicalEncoding.encodeExactly(state)
    let digest = StateDigest(bytes: SHA256.hash(bytes))
    // A file no reader takes would cost its writing at every interval and serve nothing.
    let fileBytes = SnapshotFile.headerSize + bytes.count + 4
    guard fileBytes <= fileLimit else {
      throw EncodingError.invalidValue(
        state,
        EncodingError.Context(
          codingPath: [],
          debugDescription: "the snapshot after record \(sequence) would be \(fileBytes) bytes, more than the "
            + "\(fileLimit) a snapshot file may have (SnapshotStore.maxFileBytes): not written; replays start from an "
            + "earlier snapshot or the journal's first record",
          underlyingError: WouldNotServe()))
    }
    try Self.checkReadBack(state, from: bytes)
    try reader.makeDurable(through: sequence)
    let file = SnapshotFile(
      sequence: sequence, journalID: journalID.bytes, fingerprint: M.fingerprint, digest: digest,
      lastRecord: try lastRecord ?? recordDigest(sequence, reader: reader), state: bytes)
    let encoded = file.encoded()
    try io.makeJournalFolder(folder)
    try whileWriting {
      try io.writeFileAtomically(
        encoded, to: folder + "/" + SnapshotStore.fileName(sequence), directory: folder,
        temporary: folder + "/" + SnapshotStore.temporaryName(sequence))
    }
    return digest
  }

  /// The digest of record `sequence` as the journal holds it (`SnapshotFile.noRecord` for 0).
  /// - Throws: `JournalError` if the journal does not reach it or cannot be read there.
  private func recordDigest(_ sequence: UInt64, reader: JournalReader) throws -> [UInt8] {
    guard sequence > 0 else { return SnapshotFile.noRecord }
    guard let record = try reader.record(sequence, readingAroundMissingSegments: true) else {
      throw JournalError(
        .invalidArgument, "no snapshot after record \(sequence): the journal does not reach it",
        directory: directory)
    }
    return SnapshotFile.recordDigest(of: record)
  }

  /// The writes this process has begun: each write's temporary file is named by the next.
  private static let writesBegun = Atomic<UInt64>(0)

  /// A name for the temporary file of a new write of the snapshot after record `sequence`, which
  /// no other write under way has: `fileName` then `.<process id>-<write number>.tmp`. Two writes
  /// of one snapshot can run at once (a manager's policy and `rewind snapshot`, or two threads):
  /// through one temporary file, one would truncate what the other is writing, rename it half
  /// written, and leave the other's rename failing. It ends in `.tmp`, as
  /// `removeAbandonedTemporaries` and FORMAT.md expect, and `sequences` never reads it as a snapshot.
  static func temporaryName(_ sequence: UInt64) -> String {
    let number = writesBegun.wrappingAdd(1, ordering: .relaxed).newValue
    return fileName(sequence) + ".\(getpid())-\(number).tmp"
  }

  /// The folder's lock file. Writers hold it shared while their temporary file exists, `prune`
  /// exclusively while it removes temporary files (see `removeAbandonedTemporaries`).
  package static let lockName = "LOCK"

  /// Runs `body` (which makes and removes or renames a temporary file in the folder) holding the
  /// folder's lock shared: writers, in this process or others, do not wait for each other, and
  /// `prune` leaves their temporary files alone.
  private func whileWriting(_ body: () throws -> Void) throws {
    let path = folder + "/" + SnapshotStore.lockName
    let fd = try io.open(path, flags: O_RDWR | O_CREAT, mode: 0o600)
    defer { io.close(fd) }
    try io.lockShared(fd, path: path)
    defer { io.unlock(fd, path: path) }
    try body()
  }

  /// The newest usable snapshot at or before `limit`, and every file skipped on the way (newer
  /// ones up to `limit`, and any beyond `lastSequence`), with the reason. A file is usable when it parses, has a good checksum,
  /// this journal's id, this code's fingerprint, a sequence number the journal reaches, a last
  /// record the journal holds there (format 2: `otherHistory` otherwise), and a state that decodes
  /// to the digest it records. If the journal's id cannot be read, no file is usable (each is
  /// skipped as `unverifiable`): none can be told from another journal's. A file of other model
  /// code (`stale`) or of another history is skipped after reading its header alone. `lastSequence` is the
  /// journal's end as the caller read it; a file past it is judged against the end read again
  /// after the files are listed (a live writer may have appended its records and written it
  /// since). A file removed after it was listed (pruned meanwhile) is passed over, no problem.
  public func latest<M: SnapshotModel>(_ type: M.Type, atOrBefore limit: UInt64, lastSequence: UInt64) -> (
    snapshot: (state: M, sequence: UInt64)?, problems: [SnapshotProblem]
  ) {
    var problems: [SnapshotProblem] = []
    let journalID = self.journalID()
    let fingerprint = M.fingerprint
    let listed = sequences()
    let lastSequence = journalEnd(lastSequence, listing: listed)
    for sequence in listed.reversed() where sequence <= limit || sequence > lastSequence {
      let name = SnapshotStore.fileName(sequence)
      if sequence > lastSequence {
        problems.append(
          SnapshotProblem(file: name, sequence: sequence, reason: .beyondJournal(lastSequence: lastSequence)))
        continue
      }
      do throws(SnapshotProblem.Reason) {
        let state: M = try load(
          name, sequence: sequence, journalID: journalID, fingerprint: fingerprint, lastSequence: lastSequence)
        return ((state, sequence), problems)
      } catch {
        if !removedSinceListed(name, error) {
          problems.append(SnapshotProblem(file: name, sequence: sequence, reason: error))
        }
      }
    }
    return (nil, problems)
  }

  /// Each snapshot file's problem that needs no model, in sequence order: a sequence number past
  /// `lastSequence` (the journal's end), then what reading and `SnapshotFile.parse` find (length,
  /// magic, format, checksum), a sequence number other than its name's, another journal's id, a
  /// last record the journal does not hold there (`otherHistory`), a state whose bytes do not hash
  /// to the recorded digest.
  /// Reads every file whole; moves nothing (`setAside` does, for a writer or repair). If the
  /// journal's id cannot be read, every file is `unverifiable`. As in `latest`, a file past
  /// `lastSequence` is judged against the end read after the listing, and one removed after it
  /// was listed is no problem.
  package func fileProblems(lastSequence: UInt64) -> [SnapshotProblem] {
    let journalID = self.journalID()
    let listed = sequences()
    let lastSequence = journalEnd(lastSequence, listing: listed)
    return listed.compactMap { sequence in
      let name = SnapshotStore.fileName(sequence)
      do throws(SnapshotProblem.Reason) {
        guard sequence <= lastSequence else { throw .beyondJournal(lastSequence: lastSequence) }
        _ = try hashedFile(name, sequence: sequence, journalID: journalID)
        return nil
      } catch {
        return removedSinceListed(name, error) ? nil : SnapshotProblem(file: name, sequence: sequence, reason: error)
      }
    }
  }

  /// The snapshots on disk (`listed`, ascending, one listing) and those of them past the
  /// journal's `end`, a sign of records lost (a snapshot is written once the records through it
  /// are durable). The end is `lastSequence`, read by the caller before this lists the folder,
  /// or the end read after the listing when the journal has grown since (`journalEnd`): a live
  /// writer's snapshot written in between is none. For `rewind stats` and `snapshot --keep`,
  /// which read the end long before.
  package func pastTheEnd(lastSequence: UInt64) -> (listed: [UInt64], end: UInt64, past: [UInt64]) {
    let listed = sequences()
    let end = journalEnd(lastSequence, listing: listed)
    return (listed, end, listed.filter { $0 > end })
  }

  /// The journal's end to judge the files of `listing` against: `lastSequence` (the end the
  /// caller read, before the listing), or the end read now if a file lies past it and the
  /// journal has grown since. A live writer appends records and then writes their snapshot (its
  /// records made durable first), so a file listed lies within the end read after the listing
  /// unless records were lost: judged against the end read before, a snapshot written in between
  /// would pass for one past the end (for `rewind verify`, a loss of committed records).
  private func journalEnd(_ lastSequence: UInt64, listing: [UInt64]) -> UInt64 {
    guard let newest = listing.last, newest > lastSequence,
      let now = try? JournalReader(directory: directory, limits: .largest, io: io).lastSequence()
    else { return lastSequence }
    return max(lastSequence, now)
  }

  /// Whether reading file `name` failed because it is gone: removed after it was listed (pruned
  /// by a snapshot policy or `rewind snapshot` while this read), which is no problem of the file.
  private func removedSinceListed(_ name: String, _ reason: SnapshotProblem.Reason) -> Bool {
    guard case .unreadable = reason else { return false }
    return !io.fileExists(folder + "/" + name)
  }

  /// The snapshots of model code `fingerprint` after `start` and through `last`, ascending, each
  /// with the digest it records: those whose file is whole, names this journal and a last record
  /// it holds, and holds state bytes that hash to that digest (the others are `fileProblems`, and replay skips them). For
  /// verification, which compares each with the state replay rebuilds there. Reads every such
  /// file whole (files of other model code only to the end of their header); decodes no state.
  /// None if the journal's id cannot be read.
  package func recordedDigests(fingerprint: StateDigest, after start: UInt64, through last: UInt64) -> [(
    sequence: UInt64, digest: StateDigest
  )] {
    let journalID = self.journalID()
    return sequences().compactMap { sequence in
      guard sequence > start, sequence <= last else { return nil }
      let name = SnapshotStore.fileName(sequence)
      guard
        let file = try? hashedFile(name, sequence: sequence, journalID: journalID, fingerprint: fingerprint),
        file.fingerprint == fingerprint
      else { return nil }
      return (sequence, file.digest)
    }
  }

  /// Why a reader of model `M` would skip snapshot `sequence` (the file read whole, its state
  /// decoded and checked as `latest` checks it), or nil when it would start from it. For
  /// verification, which must not take a file every reader skips (a state that does not encode
  /// back to its digest, say) for one holding a state the journal does not give.
  package func problem<M: SnapshotModel>(_ type: M.Type, at sequence: UInt64) -> SnapshotProblem? {
    let name = SnapshotStore.fileName(sequence)
    do throws(SnapshotProblem.Reason) {
      let _: M = try load(
        name, sequence: sequence, journalID: journalID(), fingerprint: M.fingerprint, lastSequence: .max)
      return nil
    } catch {
      return SnapshotProblem(file: name, sequence: sequence, reason: error)
    }
  }

  /// The sequence number of the newest snapshot file whose header names model code `fingerprint`,
  /// its own sequence number and a last record the journal holds, or nil if there is none. Reads
  /// each file's header alone (and that record), newest first, and checks nothing else: what
  /// `Manager.maintain` counts its next snapshot from, where a file of other model code (all of
  /// them, after a change of model code) or of another history stands for no state.
  package func newestSequence(fingerprint: StateDigest) -> UInt64? {
    sequences().reversed().first { headerNames($0, fingerprint: fingerprint, journalID: nil) }
  }

  /// The newest `count` (at most) of `candidates` (ascending) whose headers name them, this
  /// journal, model code `fingerprint` and a last record the journal holds, newest first: each
  /// file's header alone read (and that record), from the newest down. What `Snapshots.update`
  /// chooses the multiples it writes by, before the pruning reads the files it keeps whole: a
  /// stale or foreign file, or one of another history, counts for nothing in either.
  package func newestOfCode(_ count: Int, among candidates: [UInt64], fingerprint: StateDigest) -> [UInt64] {
    guard case .success(let journalID) = journalID() else { return [] }
    var found: [UInt64] = []
    for sequence in candidates.reversed() where found.count < count {
      if headerNames(sequence, fingerprint: fingerprint, journalID: journalID) { found.append(sequence) }
    }
    return found
  }

  /// Whether the header of the file of `sequence` names that sequence number, model code
  /// `fingerprint`, (unless nil) journal `journalID`, and a last record the journal holds (format
  /// 2, `checkHistory`): one read of the header and of that record, nothing else.
  private func headerNames(_ sequence: UInt64, fingerprint: StateDigest, journalID: JournalID?) -> Bool {
    let name = SnapshotStore.fileName(sequence)
    guard let fd = try? io.open(folder + "/" + name, flags: 0, mode: 0) else { return false }
    defer { io.close(fd) }
    guard let size = try? io.size(fd, path: name),
      let bytes = try? io.read(fd, count: Int(min(max(size, 0), Int64(SnapshotFile.headerSize))), at: 0, path: name),
      let (header, lastRecord) = SnapshotFile.header(bytes)
    else { return false }
    guard header.fingerprint == fingerprint, header.sequence == sequence,
      journalID.map({ header.journalID == $0.bytes }) ?? true
    else { return false }
    return (try? checkHistory(sequence, lastRecord)) != nil
  }

  /// The journal's id, which every file read is checked against, or why it cannot be: then no
  /// file can be told from another journal's, and none is usable.
  private func journalID() -> Result<JournalID, SnapshotProblem.Reason> {
    do {
      return .success(try JournalReader(directory: directory, io: io).id)
    } catch {
      return .failure(
        .unverifiable(
          "the journal's id could not be read, so the snapshot cannot be told from another journal's: \(error)")
      )
    }
  }

  /// The parse of file `name` (see `parsedFile`), once its state bytes are seen to hash to the
  /// digest it records.
  private func hashedFile(
    _ name: String, sequence: UInt64, journalID: Result<JournalID, SnapshotProblem.Reason>,
    fingerprint: StateDigest? = nil
  ) throws(SnapshotProblem.Reason) -> SnapshotFile.Parsed {
    let (bytes, file) = try parsedFile(name, sequence: sequence, journalID: journalID, fingerprint: fingerprint)
    let digest = bytes.withUnsafeBytes { SHA256.hash(UnsafeRawBufferPointer(rebasing: $0[file.state])) }
    guard StateDigest(bytes: digest) == file.digest else {
      throw .inconsistent("the state bytes do not hash to the recorded digest")
    }
    return file
  }

  /// The bytes of file `name` and their parse, checked against the name's `sequence` and the
  /// journal's id (a file is not read when that id could not be). With `fingerprint`, a file of
  /// other model code is `stale` as soon as its header says so: after a change of model code every
  /// snapshot is, and reading each whole (tens of megabytes for a large model) only to skip it
  /// would cost a start-up that much more.
  private func parsedFile(
    _ name: String, sequence: UInt64, journalID: Result<JournalID, SnapshotProblem.Reason>,
    fingerprint: StateDigest? = nil
  ) throws(SnapshotProblem.Reason) -> (bytes: [UInt8], file: SnapshotFile.Parsed) {
    let journalID = try journalID.get()
    let bytes: [UInt8]
    var historyChecked = false
    do {
      let fd = try io.open(folder + "/" + name, flags: 0, mode: 0)
      defer { io.close(fd) }
      let size = try io.size(fd, path: name)
      // The size comes from the file system (a sparse file can claim any): check it before allocating.
      guard size <= fileLimit else {
        throw SnapshotProblem.Reason.unreadable("\(size) bytes, more than the \(fileLimit) a snapshot file may have")
      }
      if let fingerprint, size > SnapshotFile.formatOneHeaderSize {
        // The header is not checksummed apart from the rest: a header that does not parse here is
        // left for the whole file's checks to name.
        let header = try io.read(
          fd, count: Int(min(size, Int64(SnapshotFile.headerSize))), at: 0, path: name)
        if let (fields, lastRecord) = SnapshotFile.header(header) {
          try check(fields.sequence, fields.journalID, against: sequence, journalID)
          guard fields.fingerprint == fingerprint else {
            throw SnapshotProblem.Reason.stale(fingerprint: fields.fingerprint.description)
          }
          // Of another history: skipped, as a stale file is, without reading its state.
          try checkHistory(sequence, lastRecord)
          historyChecked = true
        }
      }
      bytes = try io.read(fd, count: Int(size), at: 0, path: name)
    } catch let reason as SnapshotProblem.Reason {
      throw reason
    } catch {
      throw .unreadable(String(describing: error))
    }
    let file = try SnapshotFile.parse(bytes)
    try check(file.sequence, file.journalID, against: sequence, journalID)
    // Checked by the header above, which is these bytes' beginning (the file read once more).
    if !historyChecked { try checkHistory(file.sequence, file.lastRecord) }
    return (bytes, file)
  }

  /// Checks that the journal holds, at a file's `sequence`, the last record its state includes
  /// (`recorded`; `otherHistory` if not): a journal cut and written again past that number holds
  /// other records there, which replay from this file would build on a state they never
  /// followed. A file of format 1 (nil) names no record and is not checked. Nor is one whose
  /// record lies in damage (a located `JournalError`: `.corrupt`, `.sequenceBreak`, a limit): that
  /// file is all a reader has past such damage, which the journal's readers locate where a read
  /// reaches it. Any other failure to read the record (the process out of descriptors, an I/O
  /// error) is `unreadable`: the check did not run.
  private func checkHistory(_ sequence: UInt64, _ recorded: [UInt8]?) throws(SnapshotProblem.Reason) {
    guard let recorded else { return }
    guard sequence > 0 else {
      guard recorded == SnapshotFile.noRecord else {
        throw .corrupt("names a last record, but the state after sequence 0 includes none")
      }
      return
    }
    let record: JournalRecord?
    do {
      record = try JournalReader(directory: directory, limits: .largest, io: io)
        .record(sequence, readingAroundMissingSegments: true)
    } catch let error as JournalError where [.corrupt, .sequenceBreak, .limitExceeded].contains(error.code) {
      return
    } catch {
      throw .unreadable("the journal's record \(sequence), its last one, could not be read to check it: \(error)")
    }
    guard let record else {
      throw .otherHistory("the journal holds no record \(sequence) now, the last one its state includes")
    }
    guard SnapshotFile.recordDigest(of: record) == recorded else {
      throw .otherHistory(
        "the journal's record \(sequence) is not the last one its state includes (the journal was cut there "
          + "and written again, or is another copy of itself)")
    }
  }

  /// Checks a file's sequence number and journal id against its name's and the journal's.
  private func check(_ fileSequence: UInt64, _ fileJournalID: [UInt8], against sequence: UInt64, _ journalID: JournalID)
    throws(SnapshotProblem.Reason)
  {
    guard fileSequence == sequence else {
      throw .corrupt("holds sequence \(fileSequence) under the name of \(sequence)")
    }
    guard fileJournalID == journalID.bytes else {
      throw .foreign(journalID: JournalID(bytes: fileJournalID).description)
    }
  }

  private func load<M: SnapshotModel>(
    _ name: String, sequence: UInt64, journalID: Result<JournalID, SnapshotProblem.Reason>, fingerprint: StateDigest,
    lastSequence: UInt64
  ) throws(SnapshotProblem.Reason) -> M {
    let (bytes, file) = try parsedFile(name, sequence: sequence, journalID: journalID, fingerprint: fingerprint)
    guard file.fingerprint == fingerprint else { throw .stale(fingerprint: file.fingerprint.description) }
    guard file.sequence <= lastSequence else { throw .beyondJournal(lastSequence: lastSequence) }
    // The state is read where it lies in the file's bytes. The digest is checked before the
    // decoding's outcome; a large state is hashed on a second core while it decodes (both only
    // read the bytes), a small one first, so that a bad file is not decoded.
    let range = file.state
    let hash: @Sendable () -> [UInt8] = {
      bytes.withUnsafeBytes { SHA256.hash(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }
    let decode: @Sendable () -> Result<M, any Error> = {
      Result { try FieldDecoder().decode(M.self, from: bytes, at: range.lowerBound) }
    }
    var decoded: Result<M, any Error>? = nil
    let digest: [UInt8]
    if range.count >= hashAlongsideBytes {
      let outcome = Lock<(digest: [UInt8], state: Result<M, any Error>?)>(([], nil))
      DispatchQueue.concurrentPerform(iterations: 2) { part in
        if part == 0 {
          let digest = hash()
          outcome.withLock { $0.digest = digest }
        } else {
          let state = decode()
          outcome.withLock { $0.state = state }
        }
      }
      (digest, decoded) = outcome.withLock { ($0.digest, $0.state) }
    } else {
      digest = hash()
    }
    guard StateDigest(bytes: digest) == file.digest else {
      throw .inconsistent("the state bytes do not hash to the recorded digest")
    }
    let state: M
    do {
      state = try (decoded ?? decode()).get()
    } catch {
      throw .inconsistent("the state does not decode: \(error)")
    }
    // The bytes hash to the digest (checked above), so re-encoding to the same bytes is
    // re-encoding to the same digest, without hashing the state a second time. Room for those
    // bytes is made at once: growing into them would copy and fault in every page twice.
    let encoded = try? CanonicalEncoding.encode(state, capacity: file.state.count)
    guard let encoded, Self.same(encoded, bytes, file.state) else {
      throw .inconsistent("the decoded state does not encode back to the recorded digest")
    }
    return state
  }

  /// Reads `state` back from its encoding `bytes`, as a start from its snapshot would.
  /// - Throws: `EncodingError.invalidValue` when it does not decode, or decodes to another state
  ///   (`SnapshotFidelity`): a property the model's `Codable` form leaves out.
  private static func checkReadBack<M: SnapshotModel>(_ state: M, from bytes: [UInt8]) throws {
    let refused = { (description: String) in
      EncodingError.invalidValue(
        state, EncodingError.Context(codingPath: [], debugDescription: description, underlyingError: WouldNotServe()))
    }
    let read = {
      do {
        return try FieldDecoder().decode(M.self, from: bytes)
      } catch {
        throw refused("the state's Codable form does not decode back: \(error)")
      }
    }
    let decoded = try read()
    // Equal states encode alike (`SnapshotModel`): an equal reading encodes back to `bytes`, and
    // the common case costs the decoding and one comparison. Only an unequal one is looked into.
    guard state != decoded else { return }
    let lost = try SnapshotFidelity.lostProperties(state, decoded, again: read)
    guard lost.isEmpty else {
      throw refused(
        "the state's Codable form loses \(lost.joined(separator: ", ")): read back from a snapshot, \(M.self) "
          + "would not be the state replay builds, so none is written. Its encode(to:) and init(from:) must write "
          + "and read every stored property that an apply function sets")
    }
    // Every reader encodes the state it read again and compares the bytes (`load`): a state whose
    // reading does not encode back to them (an optional holding `nil`, written as null, read back
    // as `nil` and then left out) would be skipped by all of them.
    guard (try? CanonicalEncoding.encode(decoded, capacity: bytes.count)) == bytes else {
      throw refused(
        "the state read back from its encoding does not encode to the same bytes (an Optional holding nil, written "
          + "as null, reads back as nil), so every reader would skip its snapshot: none is written")
    }
  }

  /// Whether `encoded` holds exactly `bytes[range]` (compared by `memcmp`, not byte by byte).
  private static func same(_ encoded: [UInt8], _ bytes: [UInt8], _ range: Range<Int>) -> Bool {
    guard encoded.count == range.count else { return false }
    return encoded.withUnsafeBytes { encoded in
      bytes.withUnsafeBytes { bytes in
        range.isEmpty || memcmp(encoded.baseAddress!, bytes.baseAddress! + range.lowerBound, range.count) == 0
      }
    }
  }

  /// Moves every snapshot file past `lastSequence` (the journal's last record) into the journal's
  /// `quarantine/` folder. A writer calls this as it opens, before it appends: such a file holds
  /// the state after records the journal no longer has (a repair cut them, or a power loss took
  /// an unsynced tail), and once new records are numbered over them it would pass every check.
  /// - Returns: what was moved, and where, relative to the journal directory.
  /// - Throws: `JournalError` `.io` naming the file that could not be moved (those before it were).
  @discardableResult
  public func setAside(after lastSequence: UInt64) throws -> [QuarantinedBytes] {
    var moved: [QuarantinedBytes] = []
    for sequence in sequences() where sequence > lastSequence {
      let name = SnapshotStore.fileName(sequence)
      let size: Int64
      let movedTo: String
      do {
        let fd = try io.open(folder + "/" + name, flags: 0, mode: 0)
        size = (try? io.size(fd, path: name)) ?? 0
        io.close(fd)
        movedTo = try Quarantine(directory: directory, io: io).moveFile("snapshots/" + name, as: name)
      } catch {
        throw JournalError(
          .io, "cannot move a snapshot past the journal's end aside: \(error)", directory: directory,
          file: "snapshots/" + name)
      }
      moved.append(
        QuarantinedBytes(
          segment: "snapshots/" + name, offset: 0, length: size, movedTo: movedTo,
          reason: "a snapshot after sequence \(sequence), past the journal's last record \(lastSequence)",
          sequences: nil))
    }
    return moved
  }

  /// Removes every snapshot file at or before `last` older than the newest `count` usable ones
  /// (whose header and checksum hold and that name this journal, and with `fingerprint`, that
  /// model code's: a file among those newest that is not one is left, counting for nothing), and
  /// the temporary
  /// files of writes that were abandoned (a writer that died half-way); never those of a write
  /// under way, in this process or another. Snapshots after `last` are left alone: given the
  /// journal's last sequence number (or the snapshot just written), one past it is a sign of
  /// records lost, for `rewind verify` to report and the next writer to move aside, and must not
  /// push out the snapshot of the journal's last state.
  /// - Parameters:
  ///   - count: how many snapshots to keep among those at or before `last`, the newest: at least 1.
  ///   - last: the newest sequence number whose snapshots count (`UInt64.max`: all).
  ///   - fingerprint: the model code whose snapshots count (`SnapshotModel.fingerprint`); nil:
  ///     any. A reader of that code skips another's files as stale: counted, one kept in place of
  ///     a usable one could leave it none to start from.
  /// - Returns: the sequence numbers removed.
  /// - Throws: `JournalError` `.invalidArgument` when `count` is below 1, before anything is
  ///   removed (keeping none would remove every snapshot, the one just written too). A file that
  ///   cannot be removed throws the system call's error (those before it were removed).
  @discardableResult
  public func prune(keeping count: Int, through last: UInt64 = .max, fingerprint: StateDigest? = nil) throws
    -> [UInt64]
  {
    guard count >= 1 else {
      throw JournalError(
        .invalidArgument, "pruning keeps the newest 1 or more snapshots, not \(count); nothing was removed",
        directory: directory, file: SnapshotStore.folderName)
    }
    // Only files a reader could start from count toward `count`: the newest whose header and
    // checksum hold and that name this journal (`parsedFile`: read whole, not hashed). A damaged
    // file, or another journal's, counted among the newest pushed out a good one (`--keep 2`
    // removed a usable snapshot and kept a corrupt one); those among the newest are left, for
    // `verify` to note. Every file older than the `count`-th usable one goes, unread.
    let candidates = sequences().filter { $0 <= last }
    let kept = newestUsable(count, among: candidates, fingerprint: fingerprint)
    guard kept.count == count, let oldestKept = kept.last else { return [] }
    let doomed = candidates.filter { $0 < oldestKept }
    for sequence in doomed { try io.removeFile(folder + "/" + SnapshotStore.fileName(sequence)) }
    removeAbandonedTemporaries()
    return doomed
  }

  /// The newest `count` (at most) of `candidates` (ascending) whose files are usable, as `prune`
  /// counts them, newest first: each file read from the newest down until `count` are found.
  private func newestUsable(_ count: Int, among candidates: [UInt64], fingerprint: StateDigest?) -> [UInt64] {
    let journalID = self.journalID()
    var found: [UInt64] = []
    for sequence in candidates.reversed() where found.count < count {
      let name = SnapshotStore.fileName(sequence)
      if (try? parsedFile(name, sequence: sequence, journalID: journalID, fingerprint: fingerprint)) != nil {
        found.append(sequence)
      }
    }
    return found
  }

  /// Removes the folder's temporary files if no write is under way: every writer holds the
  /// folder's lock shared from before its temporary file exists until it is renamed or removed
  /// (`whileWriting`), so while this holds it exclusively, a temporary file left there is one
  /// whose writer is gone (the kernel drops a dead process's locks). If a writer holds the lock,
  /// nothing is removed: the next prune tries again. A lock, not the files' age: a write of a
  /// large state on a loaded machine can take any time, and clocks can jump.
  private func removeAbandonedTemporaries() {
    guard io.isRealDirectory(folder), let names = try? io.contentsOfDirectory(folder),
      names.contains(where: { $0.hasSuffix(".tmp") })
    else { return }
    let path = folder + "/" + SnapshotStore.lockName
    guard let fd = try? io.open(path, flags: O_RDWR | O_CREAT, mode: 0o600) else { return }
    defer { io.close(fd) }
    guard (try? io.tryLock(fd, path: path)) == true else { return }
    defer { io.unlock(fd, path: path) }
    // Listed again under the lock: only what is there while no write can be under way is abandoned.
    for name in (try? io.contentsOfDirectory(folder)) ?? [] where name.hasSuffix(".tmp") {
      try? io.removeFile(folder + "/" + name)
    }
  }
}
