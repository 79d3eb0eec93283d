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
    /// Written by model code with another fingerprint (other events, schema or `stateVersion`).
    case stale(fingerprint: String)
    /// Claims a sequence number the journal does not reach (the journal was replaced or cut).
    case beyondJournal(lastSequence: UInt64)
    /// The state does not decode, or decodes to a state with another digest than recorded.
    case inconsistent(String)

    public var description: String {
      switch self {
      case .unreadable(let why): "unreadable: \(why)"
      case .corrupt(let why): "corrupt: \(why)"
      case .unknownFormat(let version): "snapshot format \(version) is unknown to this code"
      case .foreign(let id): "belongs to another journal (\(id))"
      case .stale(let fingerprint): "written by other model code (fingerprint \(fingerprint))"
      case .beyondJournal(let last): "is beyond the journal's last sequence number \(last)"
      case .inconsistent(let why): "inconsistent: \(why)"
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
