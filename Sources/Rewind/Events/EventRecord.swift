internal import RewindJournal

#if canImport(Glibc)
  internal import Glibc
#elseif canImport(Darwin)
  internal import Darwin
#endif

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

  /// `encode(_:origin:commandID:)` of an event lent where it lies, which it does not change:
  /// `inout` only because a borrowed read through a pointer (the registry's encoders get one)
  /// would be copied first, through the event's value witnesses.
  @usableFromInline static func encode<E: Event>(lent event: inout E, origin: Origin, commandID: Identifier) throws
    -> [UInt8]
  {
    try encode(event, origin: origin, commandID: commandID)
  }

  /// `encodeFields(_:origin:commandID:)` of an event lent where it lies (see `encode(lent:…)`).
  @usableFromInline static func encodeFields<E: Event & FieldCodable>(
    lent event: inout E, origin: Origin, commandID: Identifier
  ) -> [UInt8] {
    encodeFields(event, origin: origin, commandID: commandID)
  }

  private static func header<E: Event>(_ type: E.Type, origin: Origin, commandID: Identifier) -> FieldBytesWriter {
    // Room for the header and most events (Notebook's average 164 bytes, the benchmark's
    // `createNote` payloads up to about 300): one allocation, where 256 bytes made a third of those
    // grow and be copied once (and 128 most). The payload is freed once written.
    var writer = FieldBytesWriter(capacity: 384)
    FieldBytesWriter.withUTF8(of: E.name) { name in
      FieldBytesWriter.withUTF8(of: origin.name) { origin in
        writer.write(atMost: 1 + (10 + name.count) + 10 + (10 + origin.count) + 16) { room in
          room.append(layoutVersion)
          room.appendString(name)
          room.appendVarint(UInt64(E.version))
          room.appendString(origin)
          room.appendFixed64(commandID.high)
          room.appendFixed64(commandID.low)
        }
      }
    }
    return writer
  }

  /// Reads the envelope fields of a record payload.
  /// - Throws: `FieldFormatError` if the payload does not follow the layout.
  public static func header(of payload: [UInt8]) throws(FieldFormatError) -> Header {
    try header(of: payload, names: nil).header
  }

  /// Which of the envelope's texts are not UTF-8 (`header(of:)` shows their ill-formed bytes as
  /// U+FFFD): "name", "origin", in that order; empty when both are, or the payload has no envelope.
  package static func textsNotUTF8(in payload: [UInt8]) -> [String] {
    guard let positions = try? Positions(payload) else { return [] }
    return [("name", positions.name), ("origin", positions.origin)].compactMap { what, range in
      String(validating: payload[range], as: UTF8.self) == nil ? what : nil
    }
  }

  /// Reads the envelope fields of a record payload, matching its name against `names` first: a
  /// known name is neither decoded nor hashed again, and its index in `names` comes back with it.
  static func header(of payload: [UInt8], names: EventNameTable?) throws(FieldFormatError) -> (
    header: Header, nameIndex: Int?
  ) {
    let positions = try Positions(payload)
    return payload.withUnsafeBufferPointer { buffer in
      let nameBytes = UnsafeBufferPointer(rebasing: buffer[positions.name])
      let nameIndex = names?.index(of: nameBytes)
      let name =
        if let nameIndex, let names { names.names[nameIndex] } else {
          String(decoding: nameBytes, as: UTF8.self)
        }
      let originBytes = UnsafeBufferPointer(rebasing: buffer[positions.origin])
      let origin = Origin.wellKnown(originBytes) ?? Origin(String(decoding: originBytes, as: UTF8.self))
      let commandID = Identifier(littleEndianWordsAt: buffer.baseAddress! + positions.commandID)
      let header = Header(
        name: name, version: positions.version, origin: origin, commandID: commandID,
        bodyOffset: positions.commandID + 16)
      return (header, nameIndex)
    }
  }

  /// What replay needs to decode a record's event when its name is in `names`: the name's index
  /// there, the schema version and where the event's fields start. Read without building the name,
  /// origin and command of `Header`; the payload is checked as `header(of:names:)` checks it, and
  /// the same errors are thrown at the same places.
  static func locate(_ payload: [UInt8], names: borrowing EventNameTable) throws(FieldFormatError) -> Location {
    let positions = try Positions(payload)
    let nameIndex = payload.withUnsafeBufferPointer {
      names.index(of: UnsafeBufferPointer(rebasing: $0[positions.name]))
    }
    return Location(nameIndex: nameIndex, version: positions.version, bodyOffset: positions.commandID + 16)
  }

  /// See `locate(_:names:)`.
  struct Location {
    /// The event name's index in the table it was matched against; nil for a name not in it.
    var nameIndex: Int?
    var version: UInt32
    /// Byte offset of the field-encoded event in the payload.
    var bodyOffset: Int
  }

  /// Where each envelope field lies in a payload: the one reading of the layout, which checks it.
  /// The usual envelope (name and origin under 128 bytes, a version under 128) is read in place
  /// behind one bounds check per field; anything else is read by `FieldBytesReader`, which throws
  /// the precise error at its position.
  private struct Positions {
    var name: Range<Int>
    var version: UInt32
    var origin: Range<Int>
    /// Where the command id's 16 bytes start; the event's fields follow them.
    var commandID: Int

    init(_ payload: [UInt8]) throws(FieldFormatError) {
      if let usual = payload.withUnsafeBufferPointer(Self.usual) {
        self = usual
        return
      }
      var reader = FieldBytesReader(payload)
      let layout = try reader.readByte()
      guard layout == layoutVersion else { throw FieldFormatError("unknown record layout \(layout)", at: 0) }
      let (nameStart, nameCount) = try reader.readStringBounds()
      name = nameStart..<nameStart + nameCount
      let versionAt = reader.position
      guard let version = UInt32(exactly: try reader.readVarint()) else {
        throw FieldFormatError("schema version out of range", at: versionAt)
      }
      self.version = version
      let (originStart, originCount) = try reader.readStringBounds()
      origin = originStart..<originStart + originCount
      commandID = reader.position
      _ = try reader.readFixed64()
      _ = try reader.readFixed64()
    }

    private init(name: Range<Int>, version: UInt32, origin: Range<Int>, commandID: Int) {
      self.name = name
      self.version = version
      self.origin = origin
      self.commandID = commandID
    }

    /// The positions when every length and the version is one varint byte and every field is
    /// within `buffer`; nil otherwise.
    private static func usual(_ buffer: UnsafeBufferPointer<UInt8>) -> Positions? {
      let count = buffer.count
      guard count >= 2, buffer[0] == layoutVersion else { return nil }
      let nameCount = Int(buffer[1])
      // After the name: the version and the origin's length, one byte each.
      let versionAt = 2 + nameCount
      guard nameCount < 0x80, versionAt + 2 <= count else { return nil }
      let version = buffer[versionAt]
      let originCount = Int(buffer[versionAt + 1])
      let originStart = versionAt + 2
      guard version < 0x80, originCount < 0x80, originStart + originCount + 16 <= count else { return nil }
      return Positions(
        name: 2..<versionAt, version: UInt32(version), origin: originStart..<originStart + originCount,
        commandID: originStart + originCount)
    }
  }

  /// Renders a record as one JSON object, field by field, without the app's event types:
  /// `{"sequence":…,"timestamp":…,"name":…,"version":…,"origin":…,"command":…,"event":{…}}`,
  /// the fields as `FieldRenderer` shows them.
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

/// Event names by their UTF-8 bytes, in a small open-addressed table: replay finds a record's
/// registered name (and its decoder) from the payload's bytes, without building a `String` and
/// hashing it for a dictionary. Built once per registry; read-only afterwards.
struct EventNameTable: Sendable {
  /// The names, in the order they were added; `index(of:)` answers positions in this array.
  private(set) var names: [String] = []
  private var utf8: [[UInt8]] = []
  /// Slots of name indices (-1 for empty); the count is a power of two at least four times the
  /// names', so probes are short.
  private var slots: [Int32] = [Int32](repeating: -1, count: 8)

  /// Adds `name` (once) and returns its index.
  @discardableResult
  mutating func add(_ name: String) -> Int {
    let bytes = Array(name.utf8)
    if let existing = bytes.withUnsafeBufferPointer({ index(of: $0) }) { return existing }
    names.append(name)
    utf8.append(bytes)
    if slots.count < names.count * 4 {
      slots = [Int32](repeating: -1, count: slots.count * 2)
      for (index, bytes) in utf8.enumerated() { place(Int32(index), hash: bytes.withUnsafeBufferPointer(Self.hash)) }
    } else {
      place(Int32(names.count - 1), hash: bytes.withUnsafeBufferPointer(Self.hash))
    }
    return names.count - 1
  }

  private mutating func place(_ index: Int32, hash: UInt64) {
    var slot = Int(truncatingIfNeeded: hash) & (slots.count - 1)
    while slots[slot] >= 0 { slot = (slot + 1) & (slots.count - 1) }
    slots[slot] = index
  }

  /// The index of the name whose UTF-8 bytes are `bytes`, or nil.
  func index(of bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    let mask = slots.count - 1
    var slot = Int(truncatingIfNeeded: Self.hash(bytes)) & mask
    while true {
      let index = Int(slots[slot])
      if index < 0 { return nil }
      let equal = utf8[index].withUnsafeBufferPointer { known in
        known.count == bytes.count
          && (known.isEmpty || memcmp(known.baseAddress!, bytes.baseAddress!, known.count) == 0)
      }
      if equal { return index }
      slot = (slot + 1) & mask
    }
  }

  /// FNV-1a: a few instructions per byte of a short name; hash order never leaves this table.
  private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
    return hash ^ (hash >> 29)
  }
}
