/// A snapshot that replay did not use, and why. Never an error: a skipped snapshot only costs time.
public struct SnapshotProblem: Sendable, Equatable, CustomStringConvertible {
  public enum Reason: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file could not be read.
    case unreadable(String)
    /// Bad magic, wrong length or checksum mismatch: cut short or damaged.
    case corrupt(String)
    /// Written in a snapshot format this code does not know.
    case unknownFormat(UInt32)
    /// Written for another journal.
    case foreign(journalID: String)
    /// Written by model code with another fingerprint (other events, event versions, stores or
    /// `stateVersion`; see `SnapshotModel.fingerprint`).
    case stale(fingerprint: String)
    /// Claims a sequence number the journal does not reach (the journal was replaced or cut).
    case beyondJournal(lastSequence: UInt64)
    /// Stands for another history than the journal's: the record the journal holds at its
    /// sequence number is not the last record its state includes (the journal was cut there and
    /// written again, or replaced by another copy of itself). Files of format 1, which name no
    /// record, are not checked.
    case otherHistory(String)
    /// The state does not decode, or decodes to a state with another digest than recorded.
    case inconsistent(String)
    /// Cannot be checked against the journal (its id could not be read): it might be another
    /// journal's, so it is not used.
    case unverifiable(String)

    public var description: String {
      switch self {
      case .unreadable(let why): "unreadable: \(why)"
      case .corrupt(let why): "corrupt: \(why)"
      case .unknownFormat(let version): "snapshot format \(version) is unknown to this code"
      case .foreign(let id): "belongs to another journal (\(id))"
      case .stale(let fingerprint): "written by other model code (fingerprint \(fingerprint))"
      case .beyondJournal(let last): "is beyond the journal's last sequence number \(last)"
      case .otherHistory(let why): "of another history: \(why)"
      case .inconsistent(let why): "inconsistent: \(why)"
      case .unverifiable(let why): "unverifiable: \(why)"
      }
    }
  }

  /// The file name in the `snapshots/` folder.
  public var file: String
  /// The sequence number in its name.
  public var sequence: UInt64
  public var reason: Reason

  public var description: String { "snapshot \(file) skipped: \(reason)" }
}

/// A snapshot whose file is whole and whose state hashes to its recorded digest, but whose state
/// is not the one replay rebuilds from the journal at its sequence number: written by a faulty
/// build of the same model code, or altered with its digest and checksum made to match. Replay and
/// time travel would start from it; deleting it loses nothing (a snapshot is only a shortcut).
public struct SnapshotDivergence: Sendable, Equatable, CustomStringConvertible {
  /// The file name in the `snapshots/` folder.
  public var file: String
  /// The sequence number of the last record its state includes.
  public var sequence: UInt64
  /// The digest the file records, which its state bytes hash to.
  public var recorded: StateDigest
  /// The digest of the state replay rebuilt through `sequence`.
  public var replayed: StateDigest

  public init(file: String, sequence: UInt64, recorded: StateDigest, replayed: StateDigest) {
    self.file = file
    self.sequence = sequence
    self.recorded = recorded
    self.replayed = replayed
  }

  public var description: String {
    "snapshots/\(file) holds a state with digest \(recorded) for the records through \(sequence), but replay of the "
      + "journal rebuilt \(replayed) there: replay and time travel starting from it give a state the journal does not. "
      + "Delete it (a snapshot is only a shortcut)"
  }
}
