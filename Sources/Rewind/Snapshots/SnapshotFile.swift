internal import RewindJournal

/// The bytes of one snapshot file (see Journal/SNAPSHOTS.md):
///
/// ```
/// 8 B   magic "RWSNAP\r\n"
/// u32   format version (1)
/// u64   sequence number of the last record applied
/// 16 B  journal id
/// 32 B  fingerprint of the model code (SnapshotModel.fingerprint)
/// 32 B  digest of the state (StateDigest)
/// u64   byte count of the state
/// …     the state, canonically encoded (CanonicalEncoding)
/// u32   CRC-32C of every byte before it
/// ```
struct SnapshotFile: Equatable {
  static let magic: [UInt8] = Array("RWSNAP\r\n".utf8)
  static let formatVersion: UInt32 = 1
  static let headerSize = 8 + 4 + 8 + 16 + 32 + 32 + 8

  var sequence: UInt64
  var journalID: [UInt8]
  var fingerprint: StateDigest
  var digest: StateDigest
  var state: [UInt8]

  func encoded() -> [UInt8] {
    var bytes = SnapshotFile.magic
    bytes.reserveCapacity(SnapshotFile.headerSize + state.count + 4)
    append(SnapshotFile.formatVersion, to: &bytes)
    append(sequence, to: &bytes)
    bytes += journalID
    bytes += fingerprint.bytes
    bytes += digest.bytes
    append(UInt64(state.count), to: &bytes)
    bytes += state
    append(CRC32C.checksum(bytes), to: &bytes)
    return bytes
  }

  /// Parses a snapshot file.
  /// - Throws: `SnapshotProblem.Reason` `.corrupt` or `.unknownFormat`.
  static func decode(_ bytes: [UInt8]) throws(SnapshotProblem.Reason) -> SnapshotFile {
    let parsed = try parse(bytes)
    return SnapshotFile(
      sequence: parsed.sequence, journalID: parsed.journalID, fingerprint: parsed.fingerprint, digest: parsed.digest,
      state: Array(bytes[parsed.state]))
  }

  /// A snapshot file's fields and where its state lies in its bytes, checked as `decode` checks
  /// them, without copying the state (tens of megabytes for a large model).
  struct Parsed {
    var sequence: UInt64
    var journalID: [UInt8]
    var fingerprint: StateDigest
    var digest: StateDigest
    /// The state's bytes in the file's.
    var state: Range<Int>
  }

  /// The fields of a snapshot file's header (its first `headerSize` bytes), if its magic and
  /// format version are right; nothing in it is checked against the file's checksum.
  static func header(_ bytes: [UInt8]) -> Identity? {
    guard bytes.count >= headerSize, Array(bytes[0..<8]) == magic,
      UInt32(truncatingIfNeeded: integer(bytes, at: 8, size: 4)) == formatVersion
    else { return nil }
    return identity(bytes)
  }

  /// What a file is a snapshot of: the fields after the magic and format version.
  typealias Identity = (sequence: UInt64, journalID: [UInt8], fingerprint: StateDigest)

  /// The identity fields of `bytes`, which hold at least a header.
  private static func identity(_ bytes: [UInt8]) -> Identity {
    (integer(bytes, at: 12, size: 8), Array(bytes[20..<36]), StateDigest(bytes: Array(bytes[36..<68])))
  }

  /// Parses a snapshot file's bytes in place.
  /// - Throws: `SnapshotProblem.Reason` `.corrupt` or `.unknownFormat`.
  static func parse(_ bytes: [UInt8]) throws(SnapshotProblem.Reason) -> Parsed {
    guard bytes.count >= headerSize + 4, Array(bytes[0..<8]) == magic else {
      throw .corrupt("not a snapshot file, or cut short before its header ends")
    }
    let version = UInt32(truncatingIfNeeded: integer(bytes, at: 8, size: 4))
    guard version == formatVersion else { throw .unknownFormat(version) }
    let length = integer(bytes, at: headerSize - 8, size: 8)
    guard length == UInt64(bytes.count - headerSize - 4) else {
      throw .corrupt("the state should be \(length) bytes but the file holds \(bytes.count - headerSize - 4)")
    }
    let stored = UInt32(truncatingIfNeeded: integer(bytes, at: bytes.count - 4, size: 4))
    guard CRC32C.checksum(bytes[0..<bytes.count - 4]) == stored else { throw .corrupt("checksum mismatch") }
    let (sequence, journalID, fingerprint) = identity(bytes)
    return Parsed(
      sequence: sequence, journalID: journalID, fingerprint: fingerprint,
      digest: StateDigest(bytes: Array(bytes[68..<100])), state: headerSize..<bytes.count - 4)
  }

  private func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
    for shift in stride(from: 0, to: T.bitWidth, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
  }

  private static func integer(_ bytes: [UInt8], at offset: Int, size: Int) -> UInt64 {
    var value: UInt64 = 0
    for index in 0..<size { value |= UInt64(bytes[offset + index]) << UInt64(index * 8) }
    return value
  }
}
