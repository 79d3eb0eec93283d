/// A model whose state can be written down: what digests, snapshots, checkpoints and the time
/// machine need on top of `Model`.
///
/// The `Codable` form must be lossless: every stored property an apply function sets is written
/// and read back (a hand-written form that leaves one out would restore another state than
/// replay builds; `SnapshotStore.write` reads each state back first, and refuses such a one).
/// It must be deterministic too: equal states must encode alike in every process.
/// `Store` and `ValueStore` are, so the synthesized conformance of a model made of stores is. A
/// `Set` or `Dictionary` in a record or value is written sorted, so its elements or keys must be
/// `Comparable`: one of anything else, holding two or more, has only its hash order, which changes
/// from process to process (and with it the digests of equal states), and encoding it throws.
public protocol SnapshotModel: Model, Codable {
  /// Bump this whenever the meaning of the state or of an apply function changes without a new
  /// event version: it is part of the fingerprint, so snapshots written by older code are skipped
  /// as stale instead of being trusted. Default 1. Bump it too whenever the encoded form of a
  /// record or value changes: a field added (with a default, or optional), removed, renamed or
  /// retyped. The fingerprint sees a store's name, not its records' fields: without the bump, an
  /// older snapshot is read with the new field empty or fails to decode, and every checkpoint
  /// written before is compared with a state that encodes differently, so `Replay.verify` and
  /// `rewind verify` report a divergence that is no fault of replay.
  static var stateVersion: UInt32 { get }
}

extension SnapshotModel {
  public static var stateVersion: UInt32 { 1 }

  /// Identifies the code that wrote a snapshot or checkpoint: a SHA-256 over the model's type
  /// name, `stateVersion`, every registered event name and version with the versions its
  /// upcasters read, and the canonical encoding of the empty state (which names its stores and
  /// the fields of its value stores' initial values, but no record's fields: an empty store has
  /// no records). Code that changes any of these gets a different fingerprint.
  public static var fingerprint: StateDigest {
    var writer = FieldBytesWriter()
    writer.appendString("rewind.fingerprint.v1")
    writer.appendString(typeNameForFingerprint)
    writer.appendVarint(UInt64(stateVersion))
    let schema = makeRegistry().schema
    writer.appendVarint(UInt64(schema.count))
    for line in schema { writer.appendString(line) }
    if let empty = try? CanonicalEncoding.encode(Self()) { writer.bytes.append(contentsOf: empty) }
    return StateDigest(bytes: SHA256.hash(writer.bytes))
  }

  /// The model's type name as the fingerprint takes it: its qualified name, with the address the
  /// runtime puts in that of a `private`, `fileprivate` or local type ("(unknown context at
  /// $55d0c3a1f2bc)"), which changes from process to process, left out. With it, such a model's
  /// snapshots and checkpoints were skipped by every later process as other code's.
  static var typeNameForFingerprint: String {
    String(reflecting: Self.self).replacing(/\(unknown context at \$[0-9a-fA-F]+\)/, with: "(unknown context)")
  }
}

extension Model {
  /// The model's event registry (its events, their versions and upcasters), for tools that ask
  /// which events a model reads (`EventRegistry.canDecode(name:version:)`).
  public static var eventRegistry: EventRegistry<Self> { makeRegistry() }
}
