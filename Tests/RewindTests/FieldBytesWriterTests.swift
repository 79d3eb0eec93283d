import RewindTestSupport
import Testing

@testable import Rewind

/// The field encoding's primitives written the plain way, one `Array.append` per byte: what
/// `FieldBytesWriter` must match byte for byte.
private struct ReferenceWriter {
  var bytes: [UInt8] = []

  mutating func varint(_ value: UInt64) {
    var rest = value
    while rest >= 0x80 {
      bytes.append(UInt8(rest & 0x7F) | 0x80)
      rest >>= 7
    }
    bytes.append(UInt8(rest))
  }

  mutating func zigZag(_ value: Int64) {
    varint(value >= 0 ? UInt64(value) * 2 : UInt64(-(value + 1)) * 2 + 1)
  }

  mutating func fixed64(_ value: UInt64) {
    for index in 0..<8 { bytes.append(UInt8((value >> (8 * UInt64(index))) & 0xFF)) }
  }

  mutating func string(_ value: String, lengthBias: UInt64) {
    let utf8 = Array(value.utf8)
    varint(UInt64(utf8.count) + lengthBias)
    bytes += utf8
  }
}

/// Values around every varint length boundary: 2^(7k) − 1 is the largest of k bytes.
private let varintBoundaries: [UInt64] = {
  var values: [UInt64] = [0, 1, .max - 1, .max]
  for bits in stride(from: 7, through: 63, by: 7) {
    let power: UInt64 = 1 << UInt64(bits)
    values += [power - 1, power]
  }
  return values
}()

@Test func varintsAtEveryLengthBoundary() {
  for value in varintBoundaries {
    var writer = FieldBytesWriter(capacity: 0)
    writer.appendVarint(value)
    var reference = ReferenceWriter()
    reference.varint(value)
    let bytes = writer.bytes
    #expect(bytes == reference.bytes, "\(value)")
    // The length: one byte per started group of seven bits.
    let bits: Int = value == 0 ? 1 : 64 - value.leadingZeroBitCount
    #expect(bytes.count == (bits + 6) / 7, "\(value)")
    var reader = FieldBytesReader(bytes)
    #expect((try? reader.readVarint()) == value)
  }
}

@Test func zigZagExtremes() {
  // ±2^(7k − 1) are the first values whose zigzag form needs k + 1 bytes.
  var values: [Int64] = [0, 1, -1, 63, -64, .max, .min, .max - 1, .min + 1]
  for bits in stride(from: 6, through: 62, by: 7) {
    let power: Int64 = 1 << Int64(bits)
    values += [power - 1, power, -power, -power - 1]
  }
  for value in values {
    var writer = FieldBytesWriter(capacity: 0)
    writer.appendZigZag(value)
    var reference = ReferenceWriter()
    reference.zigZag(value)
    let bytes = writer.bytes
    #expect(bytes == reference.bytes, "\(value)")
    var reader = FieldBytesReader(bytes)
    #expect((try? reader.readZigZag()) == value)
  }
  var writer = FieldBytesWriter(capacity: 0)
  writer.appendZigZag(.min)
  #expect(writer.bytes == [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
}

@Test func fixed64IsLittleEndian() {
  var writer = FieldBytesWriter(capacity: 0)
  writer.appendFixed64(0x0102_0304_0506_0708)
  writer.appendFixed64(0)
  writer.appendFixed64(.max)
  #expect(
    writer.bytes == [8, 7, 6, 5, 4, 3, 2, 1] + [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 0xFF, count: 8))
}

@Test func stringsEmptyASCIIAndMultiByte() {
  let strings = ["", "a", "title", "Héllo ünï", "漢字 and 🎉", String(repeating: "é", count: 100)]
  for string in strings {
    for bias: UInt64 in [0, 1] {
      var writer = FieldBytesWriter(capacity: 0)
      writer.appendString(string, lengthBias: bias)
      var reference = ReferenceWriter()
      reference.string(string, lengthBias: bias)
      #expect(writer.bytes == reference.bytes, "\(string) \(bias)")
    }
  }
  // 200 UTF-8 bytes: the count takes two varint bytes.
  var writer = FieldBytesWriter(capacity: 0)
  writer.appendString(String(repeating: "é", count: 100))
  let bytes = writer.bytes
  #expect(bytes.count == 202 && bytes[0] == 0xC8 && bytes[1] == 0x01)
}

@Test func growsAcrossItsCapacity() {
  // The same mixed writes from every starting room, so each primitive meets the end of the room at
  // each of its offsets.
  var random = SeededGenerator(seed: 0xB17E5)
  var reference = ReferenceWriter()
  var operations: [(inout FieldBytesWriter) -> Void] = []
  for _ in 0..<400 {
    switch Int.random(in: 0..<6, using: &random) {
    case 0:
      let byte = UInt8.random(in: 0...255, using: &random)
      reference.bytes.append(byte)
      operations.append { $0.append(byte) }
    case 1:
      let value = varintBoundaries.randomElement(using: &random)!
      reference.varint(value)
      operations.append { $0.appendVarint(value) }
    case 2:
      let value = Int64.random(in: .min ... .max, using: &random) >> Int64.random(in: 0...63, using: &random)
      reference.zigZag(value)
      operations.append { $0.appendZigZag(value) }
    case 3:
      let value = UInt64.random(in: 0 ... .max, using: &random)
      reference.fixed64(value)
      operations.append { $0.appendFixed64(value) }
    case 4:
      let string = String(repeating: "aé漢", count: Int.random(in: 0...12, using: &random))
      reference.string(string, lengthBias: 1)
      operations.append { $0.appendString(string, lengthBias: 1) }
    default:
      // A key's bytes as `FieldWriter` passes them, from raw memory.
      let bytes = (0..<Int.random(in: 0...40, using: &random)).map { UInt8(truncatingIfNeeded: $0 * 7) }
      reference.varint(UInt64(bytes.count) + 1)
      reference.bytes += bytes
      operations.append { writer in bytes.withUnsafeBytes { writer.appendString($0, lengthBias: 1) } }
    }
  }
  for capacity in [0, 1, 2, 3, 5, 7, 8, 9, 10, 16, 17, 100, 384, reference.bytes.count, reference.bytes.count + 1] {
    var writer = FieldBytesWriter(capacity: capacity)
    for operation in operations { operation(&writer) }
    #expect(writer.count == reference.bytes.count)
    #expect(writer.bytes == reference.bytes, "capacity \(capacity)")
  }
}

@Test func aStringFromRawMemoryMayBeEmptyOrHaveNoAddress() {
  var writer = FieldBytesWriter(capacity: 0)
  writer.appendString(UnsafeRawBufferPointer(start: nil, count: 0))
  [UInt8]().withUnsafeBytes { writer.appendString($0, lengthBias: 1) }
  [UInt8](arrayLiteral: 0x61, 0x62).withUnsafeBytes { writer.appendString($0) }
  #expect(writer.bytes == [0, 1, 2, 0x61, 0x62])
}

@Test func primitivesWrittenIntoOneRoomMatchSeparateWrites() {
  let name = Array("notebook".utf8)
  let long = Array(String(repeating: "ü", count: 90).utf8)  // 180 bytes: a two-byte length
  var reference = ReferenceWriter()
  reference.bytes.append(7)
  reference.varint(.max)
  reference.fixed64(0x0102_0304_0506_0708)
  reference.string("notebook", lengthBias: 1)
  reference.string(String(repeating: "ü", count: 90), lengthBias: 0)
  reference.varint(0)
  for capacity in [0, 1, 9, 200, 400] {
    var writer = FieldBytesWriter(capacity: capacity)
    name.withUnsafeBytes { name in
      long.withUnsafeBytes { long in
        writer.write(atMost: 1 + 10 + 8 + (10 + name.count) + (10 + long.count) + 1) { room in
          room.append(7)
          room.appendVarint(.max)
          room.appendFixed64(0x0102_0304_0506_0708)
          room.appendString(name, lengthBias: 1)
          room.appendString(long)
          room.appendVarint(0)
        }
      }
    }
    #expect(writer.bytes == reference.bytes, "capacity \(capacity)")
  }
}

/// Every kind of field `FieldWriter` writes, at its extremes; its Codable form goes through the
/// writer's separate primitives, its hand-written form through one room per field.
private struct Extremes: Codable, Equatable, FieldCodable {
  var small: Int
  var large: Int
  var huge: UInt64
  var zero: UInt64
  var yes: Bool
  var no: Bool
  var negativeZero: Double
  var infinite: Double
  var id: Identifier
  var empty: String
  var long: String
  var tags: [String]
  var none: [String]

  func encodeFields(into writer: inout FieldWriter) {
    writer.write(small, for: "small")
    writer.write(large, for: "large")
    writer.write(huge, for: "huge")
    writer.write(zero, for: "zero")
    writer.write(yes, for: "yes")
    writer.write(no, for: "no")
    writer.write(negativeZero, for: "negativeZero")
    writer.write(infinite, for: "infinite")
    writer.write(id, for: "id")
    writer.write(empty, for: "empty")
    writer.write(long, for: "long")
    writer.write(tags, for: "tags")
    writer.write(none, for: "none")
  }

  init(long: String, tags: [String]) {
    small = .min
    large = .max
    huge = .max
    zero = 0
    yes = true
    no = false
    negativeZero = -0.0
    infinite = -.infinity
    id = Identifier(high: .max, low: 1)
    empty = ""
    self.long = long
    self.tags = tags
    none = []
  }

  init(fields reader: inout FieldReader) throws {
    // Only encoded here; decoding is FieldCodableTests' part.
    throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: [], debugDescription: "not decoded"))
  }
}

@Test func handWrittenFieldsAtTheirExtremesWriteTheCodableBytes() throws {
  let strings = ["", "a", String(repeating: "x", count: 127), String(repeating: "漢", count: 100)]
  for long in strings {
    let value = Extremes(long: long, tags: strings + ["🎉"])
    #expect(FieldEncoder().encodeFields(value) == (try FieldEncoder().encode(value)))
  }
}

private struct Probe: Event, Codable {
  static let name = "probe.écrit"
  static let version: UInt32 = 300
  var value: Int
}

@Test func recordHeaderIsWrittenFieldByField() throws {
  let origin = Origin(String(repeating: "origine ", count: 20))
  let command = Identifier(high: 0x0102_0304_0506_0708, low: .max)
  var reference = ReferenceWriter()
  reference.bytes.append(1)
  reference.string(Probe.name, lengthBias: 0)
  reference.varint(300)
  reference.string(origin.name, lengthBias: 0)
  reference.fixed64(command.high)
  reference.fixed64(command.low)
  reference.bytes += try FieldEncoder().encode(Probe(value: -5))
  let payload = try EventRecord.encode(Probe(value: -5), origin: origin, commandID: command)
  #expect(payload == reference.bytes)
  let header = try EventRecord.header(of: payload)
  #expect(header.name == Probe.name && header.version == 300 && header.origin == origin)
  #expect(header.commandID == command)
}
