/// The skippable frame that opens every segment file (see FORMAT.md, "Segment header").
package struct SegmentHeader: Equatable {
  package var journalID: JournalID
  package var firstSequence: UInt64
  package var version: UInt16 = Layout.formatVersion
  /// Bit flags (FORMAT.md, "Segment header frame"); readers ignore bits they do not know.
  package var flags: UInt16 = 0

  /// Flag bit 0: the segment was rewritten by compaction (large frames, LZ4HC), so compaction skips it.
  package static let compactedFlag: UInt16 = 1 << 0
  package var isCompacted: Bool { flags & Self.compactedFlag != 0 }

  package init(journalID: JournalID, firstSequence: UInt64) {
    self.journalID = journalID
    self.firstSequence = firstSequence
  }

  package func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: Layout.segmentHeaderSize)
    writer.write(Layout.segmentHeaderMagic)
    writer.write(UInt32(Layout.segmentHeaderPayloadSize))
    writer.write(Layout.segmentTag)
    writer.write(version)
    writer.write(flags)
    writer.write(journalID.bytes)
    writer.write(firstSequence)
    writer.write(CRC32C.checksum(writer.bytes[Layout.skippableHeaderSize...]))
    return writer.bytes
  }

  /// The header a segment named for `firstSequence` of journal `journalID` was written with,
  /// rebuilt over `damaged`, its first bytes as they now stand (`Journal.repair`). Every field
  /// but the flags follows from the format, the manifest and the file's name. The flags are the
  /// ones the stored checksum confirms when it does for one of the two a writer writes (the damage
  /// is then elsewhere in the header); otherwise the checksum is damaged too, and the stored
  /// flags are taken when they are one of those two, else 0 (a header overwritten whole: a
  /// compacted segment then reads as one never compacted, which compaction may rewrite again).
  package static func rebuilt(over damaged: [UInt8], journalID: JournalID, firstSequence: UInt64) -> SegmentHeader {
    var header = SegmentHeader(journalID: journalID, firstSequence: firstSequence)
    let crcOffset = Layout.segmentHeaderSize - 4
    let flagsOffset = Layout.skippableHeaderSize + 6
    guard damaged.count >= Layout.segmentHeaderSize else { return header }
    let storedChecksum = damaged.loadLE(UInt32.self, at: crcOffset)
    for flags in [0, compactedFlag] {
      header.flags = flags
      if header.encoded().loadLE(UInt32.self, at: crcOffset) == storedChecksum { return header }
    }
    let stored = damaged.loadLE(UInt16.self, at: flagsOffset)
    header.flags = stored == compactedFlag ? compactedFlag : 0
    return header
  }

  /// Why the first bytes of a file are not a valid segment header.
  package enum Problem: Error, Equatable {
    case truncated
    case notASegment
    case checksumMismatch
    case unsupportedVersion(UInt16)
  }

  package static func decode(_ bytes: [UInt8]) -> Result<SegmentHeader, Problem> {
    guard bytes.count >= Layout.segmentHeaderSize else { return .failure(.truncated) }
    var reader = ByteReader(bytes[0..<Layout.segmentHeaderSize])
    guard reader.read(UInt32.self) == Layout.segmentHeaderMagic,
      reader.read(UInt32.self) == UInt32(Layout.segmentHeaderPayloadSize),
      reader.read(UInt32.self) == Layout.segmentTag
    else { return .failure(.notASegment) }
    let crcEnd = Layout.segmentHeaderSize - 4
    guard CRC32C.checksum(bytes[Layout.skippableHeaderSize..<crcEnd]) == bytes.loadLE(UInt32.self, at: crcEnd) else {
      return .failure(.checksumMismatch)
    }
    let version = reader.read(UInt16.self)!
    guard version == Layout.formatVersion else { return .failure(.unsupportedVersion(version)) }
    let flags = reader.read(UInt16.self)!
    let id = JournalID(bytes: Array(reader.read(count: 16)!))
    var header = SegmentHeader(journalID: id, firstSequence: reader.read(UInt64.self)!)
    header.version = version
    header.flags = flags
    return .success(header)
  }
}
