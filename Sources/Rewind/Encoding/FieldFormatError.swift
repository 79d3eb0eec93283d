/// Encoded field data that does not follow the format, with the byte offset where it went wrong.
public struct FieldFormatError: Error, Sendable, Equatable, CustomStringConvertible {
  public var message: String
  public var offset: Int

  init(_ message: String, at offset: Int) {
    self.message = message
    self.offset = offset
  }

  public var description: String { "malformed field data: \(message) at byte \(offset)" }
}
