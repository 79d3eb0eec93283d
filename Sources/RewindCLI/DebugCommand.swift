import Foundation
import Rewind
import RewindJournal

enum DebugCommand: RewindCommand {
  static let name = "debug"
  static let summary = "interactive time travel: step, goto, find, print, diff, watch"
  static let help = """
    Usage: rewind debug DIR [--model NAME]

    An interactive, read-only time-travel session over the journal in DIR, starting at the empty
    state (sequence 0). Reads one command per line from standard input: at a terminal with a
    prompt, from a pipe or file without one, so sessions can be scripted. Type `help` for the
    commands. A script's failing command is reported on stderr and the session goes on; the exit
    code is then 2, or 3 if a command could not read the journal (damage found while seeking, or
    a `refresh` that found it shorter than the session had read: later commands are refused).
    When damage hides the journal's end (a frame that fails its checksum among the last records
    written, past the sparse index's last entry; committed records gone), the session serves the
    records before it: one line on stderr at the start locates the damage (segment, byte offset,
    sequences) and names the last sequence read intact, where the session ends. `goto` past it
    (or `goto end`) is refused, saying so; `step` stops there; `check` in the command of the
    last record read says where that command ends cannot be told (its later events may lie in
    the damage).
    From a script, the exit code is then 3 (as `rewind log` exits for a journal it read only in
    part).
    An event is shown as replay applied it: one written in an older schema version, upcast to
    the current one, says so at the end of its line ("... (upcast to v2)"), as blame and bisect do.

    Examples:
      rewind debug /tmp/j
      printf 'goto 120\\nprint notes\\nmark\\nstep 5\\ndiff\\n' | rewind debug /tmp/j

    """

  static let commands = """
    Commands (SEQ is a sequence number, TIME an ISO 8601 time, ID a record id, 32 hex digits in
    capitals or not, or a value collection):
      step [N]            move N records forward (default 1), up to    alias: s, next
                          the journal's end (it says when it is there)
      back [N]            move N records back (default 1), down to 0   alias: b
      goto SEQ|TIME       move to the state after SEQ, or at TIME      also: goto start, goto end
      where               where the session stands, and the event there
      event [SEQ]         the event at SEQ (default: here), with its fields
      find name NAME      move forward to the next record named NAME, as log names it
                          (rewind.checkpoint.mark and the like too)
      find entity ID      move forward to the next event that touched ID, in any
                          collection (replayed on from here)
      print               a summary: records per collection, digest
      print json          the whole state as JSON
      print COLLECTION    every record of one collection
      print ID            one record, from the first collection that holds it (a note
                          names the others that hold a record of that id)
      print COLLECTION ID one record of that collection
      query NAME          a registered query's answer, as JSON (`query` lists them)
      check NAME          whether a registered invariant holds here (`check` lists them);
                          inside a command of several events, after its last one, as
                          readers never see a state between them (the answer says where)
      mark                remember this position
      diff [A B]          changes from the mark (or A) to here (or B)
      watch [COLLECTION] ID
                          show the record now, and again after each move whenever it
                          changed (without COLLECTION, from the first that holds it)
      unwatch [COLLECTION] ID
                          stop watching it
      blame [COLLECTION] ID
                          every event that touched the record (without COLLECTION, in
                          the collection the first such event touched; a note names
                          the others)
      prepare [SIZE]      lay keyframes over the whole history (one replay), so that
                          every later move is quick; they stop at the first one that
                          takes the session's keyframes past SIZE: megabytes, or 500K,
                          300M, 2G (default: a quarter of the memory this process may
                          use, the machine's or its control group's limit; they take
                          about 1.5 KB per event of the Notebook demo's history). Moves
                          keep keyframes too, as without prepare: up to 1,024 in all,
                          never pushing out those prepare laid
      refresh             see records appended since the session started (until then,
                          every command sees the journal as it was; goto refuses a later
                          sequence number or time). A journal found shorter than the
                          session has read (a repair moved records aside) ends its use:
                          start `rewind debug` again. Any command that reads records
                          finds a journal cut and written again under the session, and
                          ends its use likewise
      help                this list                                    alias: ?
      quit                end the session (as does end of input)       alias: q, exit

    Also g for goto and p for print. A line starting with # is a comment. Commands that take
    no arguments (where, mark, refresh, help, quit) refuse any.

    """

  static func run(_ arguments: [String], context: RewindTool.Context) async throws -> RewindTool.ExitCode {
    let args = try Arguments(arguments, options: ["model"], flags: [])
    let directory = try args.directory()
    // A missing directory or a file is named plainly before the model is looked for.
    _ = try openJournal(directory)
    let model = try context.registration(for: directory, named: args.value("model"))
    // A long seek shows progress at a terminal; the line is cleared before anything else is written.
    let progress = ProgressLine("replaying", context: context)
    let machine = try model.open(directory, .interactive)
    machine.progress = progress.callback
    let output = RewindTool.Output(
      out: { text in
        progress.finish()
        context.output.out(text)
      },
      err: { text in
        progress.finish()
        context.output.err(text)
      })
    let session = DebugSession(
      machine, model: model.name, directory: directory, output: output, interactive: isatty(STDIN_FILENO) == 1)
    defer { progress.finish() }
    return session.run { readLine(strippingNewline: true) }
  }
}
