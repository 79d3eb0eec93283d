public import RewindJournal

/// Why a manager did not commit a command. After any of these, the model, its queries and its
/// observers show no change from the command.
public struct ManagerError: Error, Sendable, Equatable, CustomStringConvertible {
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }
    public var description: String { name }

    /// The journal refused the append (I/O error, disk full…). Nothing was written; the same
    /// command can be retried, unless the journal accepts no appends any more: the manager then
    /// stops (`Manager.stopReason`) and later commands throw `stopped`.
    public static let appendFailed = Code("appendFailed")
    /// The journal can no longer guarantee durability (an fsync failed, or a failed write could
    /// not be cut off again). This command may or may not be on disk; the manager accepts no
    /// further commands. Reopen once the disk is fixed.
    public static let durabilityLost = Code("durabilityLost")
    /// The manager refuses commands since an earlier `durabilityLost`, or since the journal
    /// stopped accepting appends (`Journal.failure`).
    public static let stopped = Code("stopped")
    /// The manager was closed.
    public static let closed = Code("closed")
    /// A command recorded an event type its model does not register.
    public static let unregisteredEvent = Code("unregisteredEvent")
    /// An event could not be encoded.
    public static let encodingFailed = Code("encodingFailed")
    /// The command's events are larger than the journal accepts (`JournalLimits`): one event
    /// over `maxRecordBytes`, or all of them over `maxBatchBytes`. Nothing was written, and the
    /// same command will fail the same way; the commands around it are unaffected.
    public static let tooLarge = Code("tooLarge")
  }

  public var code: Code
  public var message: String
  /// The journal's own report, when the journal failed.
  public var journalError: JournalError?

  public init(_ code: Code, _ message: String, journalError: JournalError? = nil) {
    self.code = code
    self.message = message
    self.journalError = journalError
  }

  public var description: String {
    var text = message
    if let journalError { text += ": \(journalError)" }
    return text
  }
}
