import Notebook
public import RewindCLI

/// The Notebook app's `rewind`: the generic tool with the Notebook workspace registered (for the
/// replay-level commands) and the Notebook demo added. An app builds its own the same way.
public enum NotebookTool {
  /// The Notebook model, as the replay-level commands know it.
  public static let models = [ModelRegistration(Workspace.self, name: "workspace")]

  /// Notebook's own commands.
  public static var commands: [any RewindCommand.Type] { [NotebookDemoCommand.self] }

  /// `rewind` with Notebook's models and commands.
  public static var tool: RewindTool { RewindTool(models: models, commands: commands) }
}
