/// Constants of the on-disk format, version 1. `Journal/FORMAT.md` is their prose counterpart;
/// keep the two in step.
package enum Layout {
  /// The format version written into the manifest and every segment header.
  package static let formatVersion: UInt16 = 1

  /// LZ4 frame magic number (a data frame).
  package static let lz4FrameMagic: UInt32 = 0x184D_2204
  /// Skippable frame holding a segment header.
  package static let segmentHeaderMagic: UInt32 = 0x184D_2A50
  /// Skippable frame holding a batch header; an LZ4 data frame follows it.
  package static let batchHeaderMagic: UInt32 = 0x184D_2A51

  /// "RWND", the first bytes of a segment header's payload.
  package static let segmentTag: UInt32 = 0x444E_5752

  /// Bytes of a skippable frame's own header: magic and payload size.
  package static let skippableHeaderSize = 8
  /// Payload size of a segment header: tag, version, flags, journal id, first sequence, CRC.
  package static let segmentHeaderPayloadSize = 4 + 2 + 2 + 16 + 8 + 4
  package static let segmentHeaderSize = skippableHeaderSize + segmentHeaderPayloadSize
  /// Payload size of a batch header.
  package static let batchHeaderPayloadSize = 8 + 4 + 4 + 4 + 8 + 8 + 4 + 4
  package static let batchHeaderSize = skippableHeaderSize + batchHeaderPayloadSize

  /// Bytes in front of each record inside a decoded batch: sequence, timestamp, payload length.
  package static let recordHeaderSize = 8 + 8 + 4

  /// Suffix of segment files; their stem is the first sequence number, 20 digits.
  package static let segmentSuffix = ".lz4"
  package static let manifestName = "manifest.json"
  package static let lockName = "LOCK"
  package static let indexName = "index"
  package static let quarantineName = "quarantine"

  /// The file name of the segment whose first record is `firstSequence`.
  package static func segmentName(firstSequence: UInt64) -> String {
    let digits = String(firstSequence)
    return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + segmentSuffix
  }

  /// The first sequence number a segment file name stands for, or nil if it is no segment's name.
  package static func firstSequence(ofSegmentNamed name: String) -> UInt64? {
    guard name.hasSuffix(segmentSuffix) else { return nil }
    let stem = name.dropLast(segmentSuffix.count)
    guard stem.count == 20, stem.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
    return UInt64(stem)
  }
}

/// The identity of one journal, written into its manifest and every segment header, so that a
/// segment copied in from another journal is recognised as foreign.
public struct JournalID: Hashable, Sendable, CustomStringConvertible {
  public let bytes: [UInt8]

  /// - Precondition: `bytes.count == 16`.
  public init(bytes: [UInt8]) {
    precondition(bytes.count == 16, "a journal id has 16 bytes")
    self.bytes = bytes
  }

  /// A random id (from the system's random source).
  public static func random() -> JournalID {
    var generator = SystemRandomNumberGenerator()
    return JournalID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
  }

  /// 32 lowercase hexadecimal digits.
  public var description: String { bytes.map { hexByte($0) }.joined() }

  /// Parses 32 hexadecimal digits.
  public init?(hex: String) {
    let digits = Array(hex.utf8)
    guard digits.count == 32 else { return nil }
    var bytes: [UInt8] = []
    for i in stride(from: 0, to: 32, by: 2) {
      guard let high = hexValue(digits[i]), let low = hexValue(digits[i + 1]) else { return nil }
      bytes.append(high << 4 | low)
    }
    self.bytes = bytes
  }
}

private func hexByte(_ byte: UInt8) -> String {
  let digits = Array("0123456789abcdef")
  return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
}

private func hexValue(_ c: UInt8) -> UInt8? {
  switch c {
  case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
  case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
  case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
  default: nil
  }
}
