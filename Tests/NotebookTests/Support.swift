import Notebook
import Rewind
import RewindJournal
import RewindTestSupport

func makeNotebookManager(_ directory: String, io: FaultInjectingFileIO? = nil) throws -> NotebookManager {
  var options = JournalOptions(durability: .always)
  if let io { options.io = io }
  return try NotebookManager(
    directory: directory, options: options, clock: .stepping(from: 1_700_000_000_000_000_000), ids: .sequential())
}
