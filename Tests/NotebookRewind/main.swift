// An app's own `rewind`, built as the README shows: the stock tool with the app's model registered,
// with invariants for `rewind bisect` and queries for `rewind debug`. The CLI tests run it.
import Foundation
import Notebook
import Rewind
import RewindCLI

let workspace = ModelRegistration(
  Workspace.self, name: "workspace",
  invariants: [
    Invariant("notes belong to notebooks", everyRecordOf: \.notes, reading: [\.notebooks]) { note, state in
      state.notebooks.contains(id: note.notebook)
    },
    Invariant("no notebook is titled forbidden") { state in
      !state.notebooks.all().contains { $0.title == "forbidden" }
    },
  ],
  queries: [ModelQuery("titles") { state in state.notes.all().map(\.title) }])
exit(await RewindTool(models: [workspace]).runCommandLine())
