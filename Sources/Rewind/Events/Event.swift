/// One schema version of an event: what the journal may hold under `name` at `version`.
/// Old versions only need to decode; an upcaster turns them into the next version.
public protocol EventVersion: Decodable, Sendable {
  /// The stable name, such as `note.created`: not empty (registering an event without one is a
  /// precondition failure). Never reused for a different meaning.
  static var name: String { get }
  /// The schema version this type decodes, from 1.
  static var version: UInt32 { get }
}

extension EventVersion {
  public static var version: UInt32 { 1 }
}

/// A typed fact, named in the past tense (`NoteCreated`), in its current schema version.
///
/// An event carries everything that was nondeterministic when it was made (identifiers, times,
/// choices), so applying it is a pure function of the state and the event.
///
/// A `Set` or `Dictionary` field is written sorted (by element, by key), so that equal events
/// encode alike: its elements or keys must be `Comparable`. One of anything else, holding two or
/// more, has only its hash order, which changes from process to process: encoding it throws.
public protocol Event: EventVersion, Encodable, Equatable {}

extension Event {
  /// Whether `other` is the same event (same type, equal values).
  public func isEqual(to other: any Event) -> Bool {
    guard let other = other as? Self else { return false }
    return self == other
  }
}
