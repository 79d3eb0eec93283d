import Foundation
import Rewind
import RewindJournal

// What the replay-level commands share: events on one line or as JSON, and replay errors that
// name the model.

/// `#SEQ TIME NAME vVERSION ORIGIN`: an event's envelope on one line, made `visible`.
func envelopeLine(_ envelope: Envelope) -> String {
  visible(
    "#\(envelope.sequence) \(isoTime(envelope.timestamp)) \(envelope.name) v\(envelope.version) "
      + "origin \(envelope.origin) command \(envelope.commandID)")
}

/// The version of `recorded`'s event as decoded, when an upcaster brought it there from the
/// version it was written with (the envelope's); nil when it was decoded as written.
func upcastVersion(_ recorded: RecordedEvent) -> UInt32? {
  let decoded = type(of: recorded.event).version
  return decoded == recorded.envelope.version ? nil : decoded
}

/// `envelopeLine`, followed by ` (upcast to vN)` when the event was upcast: its fields, shown
/// decoded, are version N's.
func envelopeLine(_ recorded: RecordedEvent) -> String {
  envelopeLine(recorded.envelope) + (upcastVersion(recorded).map { " (upcast to v\($0))" } ?? "")
}

/// An event's envelope and fields as one JSON object. "version" is the version the event was
/// written with, as `rewind log --json` says it; the fields are decoded, upcast to the current
/// version: when that is another, "upcastTo" says which.
func eventJSON(_ recorded: RecordedEvent) -> String {
  let envelope = recorded.envelope
  let upcast = upcastVersion(recorded).map { #""upcastTo":\#($0),"# } ?? ""
  return
    #"{"seq":\#(envelope.sequence),"time":"\#(isoTime(envelope.timestamp))","name":\#(StateInspector.json(envelope.name)),"#
    + #""version":\#(envelope.version),\#(upcast)"origin":\#(StateInspector.json(envelope.origin.description)),"#
    + #""command":"\#(envelope.commandID)","payload":\#(StateInspector.json(recorded.event))}"#
}

/// A journal record the chosen model cannot read: exit 3, with where and what to do.
struct UnreadableByModel: Error, CustomStringConvertible {
  var model: String
  var directory: String
  var underlying: ReplayError

  var description: String {
    "model \(model) cannot replay \(directory): \(underlying). If this is another app's journal, use that app's "
      + "rewind or --model NAME; `rewind log \(shellWord(directory)) --from \(underlying.sequence) --limit 1` shows the record"
  }
}

/// Runs `body`, turning a `ReplayError` into an `UnreadableByModel` that names the model.
func replaying<T>(_ model: ModelRegistration, _ directory: String, _ body: () throws -> T) throws -> T {
  do {
    return try body()
  } catch let error as ReplayError {
    throw UnreadableByModel(model: model.name, directory: directory, underlying: error)
  }
}

/// Damage met by a command that read the records before it: damage that hides the journal's end,
/// after `blame` or `bisect` wrote out what the records before it hold, or damage a replay or a
/// seek met on its way to its target (`replay`, `diff`, `namingTheLastIntactRecord`). The
/// journal's error, which locates the damage and names the sequences it took, and the last record
/// read intact before it (as `rewind debug` names it at its start), with what that serves. Exit
/// 3, as for any journal that cannot be read whole, so that an answer about part of the history
/// cannot pass for one about all of it.
struct EndHidden: Error, CustomStringConvertible {
  /// The journal's error locating the damage (`TimeMachine.endHiddenBy`).
  var error: JournalError
  /// The last sequence number read intact before it (`TimeMachine.lastIntactSequence`).
  var readThrough: UInt64
  /// What was written out of the records read, and what that leaves unsaid; or what the command
  /// can do with them.
  var written: String

  var description: String {
    errorSentence(error) + "The records through sequence \(readThrough), the last before the damage, read intact: "
      + written
  }
}

/// Runs `body`; damage it meets part way (`JournalError.isDamage`) after the first record is
/// thrown as an `EndHidden`, with `served(last)` saying what the records through the one before
/// it serve. Other errors, and damage at the first record, pass unchanged.
func namingTheLastIntactRecord<T>(_ served: (UInt64) -> String, _ body: () throws -> T) throws -> T {
  do {
    return try body()
  } catch let error as JournalError where error.isDamage {
    guard let first = error.sequences?.lowerBound, first > 1 else { throw error }
    throw EndHidden(error: error, readThrough: first - 1, written: served(first - 1))
  }
}
