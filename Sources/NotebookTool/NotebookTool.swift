import Notebook
import Rewind
public import RewindCLI

/// The Notebook app's `rewind`: the generic tool with the Notebook workspace registered (for the
/// replay-level commands) and the Notebook demo added. An app builds its own the same way.
public enum NotebookTool {
  /// The Notebook model, as the replay-level commands know it, with invariants for
  /// `rewind bisect` and queries for `query NAME` in `rewind debug`.
  public static let models = [
    ModelRegistration(
      Workspace.self, name: "workspace",
      invariants: [
        Invariant("notes belong to notebooks", everyRecordOf: \.notes, reading: [\.notebooks]) { note, state in
          state.notebooks.contains(id: note.notebook)
        },
        // Reads the notebook alone: a change to another store is no reason to check it again
        // (helper-221, Dec 7: every note command checked every notebook in `bisect --linear`).
        Invariant("notebook titles are not blank", everyRecordOf: \.notebooks, reading: []) { notebook, _ in
          !notebook.title.allSatisfy(\.isWhitespace)
        },
      ],
      queries: [
        ModelQuery("notebooks") { state in state.notebooks.all().map(\.title) },
        ModelQuery("titles") { state in state.notes.all().map(\.title) },
      ])
  ]

  /// Notebook's own commands.
  public static var commands: [any RewindCommand.Type] { [NotebookDemoCommand.self] }

  /// `rewind` with Notebook's models and commands.
  public static var tool: RewindTool { RewindTool(models: models, commands: commands) }
}
