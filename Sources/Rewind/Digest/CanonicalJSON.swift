/// JSON text of a value's canonical encoding (see `CanonicalEncoding`): object fields sorted by
/// name, store records in id order, identifiers as 32 hex digits, on one line. Equal values render
/// to equal text in every process, so the output can be compared and diffed as text.
public enum CanonicalJSON {
  /// The canonical JSON of `value`.
  /// - Throws: `EncodingError` if the value does not encode.
  public static func render<T: Encodable>(_ value: T) throws -> String {
    try FieldRenderer.json(CanonicalEncoding.encode(value))
  }
}
