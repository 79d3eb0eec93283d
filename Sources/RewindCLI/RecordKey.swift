internal import Rewind

/// How the tool reads a record id a user typed, in one place for every command that takes one:
/// `blame`, `log --entity`, and debug's `print`, `watch`, `unwatch`, `find entity` and `blame`;
/// and refuses one typed where a sequence number goes.
///
/// Stores key a record by its id's description, and an `Identifier` describes itself as 32
/// lowercase hex digits; users copy ids from other tools in capitals too. The library looks an
/// id up as typed first, so an app whose keys are not identifiers (or are spelled otherwise)
/// loses nothing; then, when it reads as an identifier, as the lowercase digits
/// (`StateInspector.record(_:in:)`, `TimeMachine.blame(entity:through:)`).
enum RecordKey {
  /// The lowercase digits of `typed` when it reads as an `Identifier` (32 hex digits in either
  /// case); nil for any other text (a value collection's name, say).
  static func identifier(_ typed: String) -> String? { Identifier(typed)?.description }

  /// Refuses an id typed where a sequence number is expected. The tool prints record and command
  /// ids as 32 hex digits; an id with no letter among them (as `IdentifierSource.sequential`
  /// makes: 0000…0021) also reads as a whole number, and `show`, `replay --to` or `log --from`
  /// would silently take it for sequence 21.
  /// - Throws: `UsageError` naming `what` was expected, when `text` reads as an identifier.
  static func refuseAsSequence(_ text: String, _ what: String) throws(UsageError) {
    guard identifier(text) != nil else { return }
    throw UsageError(
      "\(what) '\(text)' is a record or command id (32 hex digits), not a sequence number; "
        + "`rewind log DIR --entity ID` lists the events that mention a record id")
  }

  /// Whether two typed ids name the same record (an identifier in capitals and in lowercase do).
  static func same(_ a: String, _ b: String) -> Bool { (identifier(a) ?? a) == (identifier(b) ?? b) }
}
