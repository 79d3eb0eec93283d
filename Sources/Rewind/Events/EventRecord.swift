internal import RewindJournal

/// The layout of one journal record's payload: one event and its envelope, minus what the journal
/// itself stores (sequence and timestamp).
///
/// ```
/// u8      layout version (1)
/// string  event name          (varint byte count + UTF-8)
/// varint  schema version
/// string  origin
/// 16 B    command id          (high, low; little-endian u64 each)
/// value   the event's fields  (field encoding, see FieldTag)
/// ```
///
/// This is the one place that reads and writes it.
public enum EventRecord {
  static let layoutVersion: UInt8 = 1

  /// The envelope fields and where the event's fields start.
  public struct Header: Sendable, Equatable {
    public var name: String
    public var version: UInt32
    public var origin: Origin
    public var commandID: Identifier
    /// Byte offset of the field-encoded event in the payload.
    public var bodyOffset: Int
  }

  /// The payload bytes of `event`, through `Codable`.
  static func encode<E: Event>(_ event: E, origin: Origin, commandID: Identifier) throws -> [UInt8] {
    var writer = header(E.self, origin: origin, commandID: commandID)
    try FieldEncoder().encode(event, appendingTo: &writer.bytes)
    return writer.bytes
  }

  /// The payload bytes of `event`, through its hand-written field coding.
  static func encodeFields<E: Event & FieldCodable>(_ event: E, origin: Origin, commandID: Identifier) -> [UInt8] {
    var writer = header(E.self, origin: origin, commandID: commandID)
    FieldEncoder().encodeFields(event, appendingTo: &writer.bytes)
    return writer.bytes
  }

  private static func header<E: Event>(_ type: E.Type, origin: Origin, commandID: Identifier) -> FieldBytesWriter {
    var writer = FieldBytesWriter(capacity: 128)
    writer.append(layoutVersion)
    writer.appendString(E.name)
    writer.appendVarint(UInt64(E.version))
    writer.appendString(origin.name)
    writer.appendFixed64(commandID.high)
    writer.appendFixed64(commandID.low)
    return writer
  }

  /// Reads the envelope fields of a record payload.
  /// - Throws: `FieldFormatError` if the payload does not follow the layout.
  public static func header(of payload: [UInt8]) throws(FieldFormatError) -> Header {
    var reader = FieldBytesReader(payload)
    let layout = try reader.readByte()
    guard layout == layoutVersion else { throw FieldFormatError("unknown record layout \(layout)", at: 0) }
    let name = try reader.readString()
    let versionAt = reader.position
    let version = try reader.readVarint()
    guard let version = UInt32(exactly: version) else {
      throw FieldFormatError("schema version out of range", at: versionAt)
    }
    let origin = try reader.readString()
    let high = try reader.readFixed64()
    let low = try reader.readFixed64()
    return Header(
      name: name, version: version, origin: Origin(origin), commandID: Identifier(high: high, low: low),
      bodyOffset: reader.position)
  }

  /// Renders a record as one JSON object, field by field, without the app's event types:
  /// `{"sequence":…,"timestamp":…,"name":…,"version":…,"origin":…,"command":…,"event":{…}}`.
  public static func json(sequence: UInt64, timestamp: Int64, payload: [UInt8]) throws(FieldFormatError) -> String {
    let header = try header(of: payload)
    var output = "{\"sequence\":\(sequence),\"timestamp\":\(timestamp),\"name\":"
    FieldRenderer.appendQuoted(header.name, to: &output)
    output += ",\"version\":\(header.version),\"origin\":"
    FieldRenderer.appendQuoted(header.origin.name, to: &output)
    output += ",\"command\":\"\(header.commandID)\",\"event\":"
    output += try FieldRenderer.json(payload, from: header.bodyOffset)
    output += "}"
    return output
  }
}
