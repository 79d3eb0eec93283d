public import Rewind

/// A model registered with the tool, so that replay-level commands (replay, diff, blame, bisect,
/// debug, snapshot, the replay part of verify) can rebuild its state from a journal.
///
/// An app builds its own `rewind` by registering its models:
/// `RewindTool(models: [ModelRegistration(Workspace.self, name: "workspace")])`.
public struct ModelRegistration: Sendable {
  /// The name users type (`--model NAME`) and output shows.
  public let name: String
  /// The fingerprint of the model's code and event schemas (see `SnapshotModel.fingerprint`).
  public let fingerprint: StateDigest

  public init<M: SnapshotModel>(_ type: M.Type, name: String) {
    self.name = name
    self.fingerprint = M.fingerprint
  }
}
