internal import RewindJournal

/// The bytes of one snapshot file (see Journal/SNAPSHOTS.md):
///
/// ```
/// 8 B   magic "RWSNAP\r\n"
/// u32   format version (2; 1 is still read)
/// u64   sequence number of the last record applied
/// 16 B  journal id
/// 32 B  fingerprint of the model code (SnapshotModel.fingerprint)
/// 32 B  digest of the state (StateDigest)
/// 32 B  digest of the last record applied (`recordDigest`; all zeros at sequence 0); not in format 1
/// u64   byte count of the state
/// …     the state, canonically encoded (CanonicalEncoding)
/// u32   CRC-32C of every byte before it
/// ```
struct SnapshotFile: Equatable {
  static let magic: [UInt8] = Array("RWSNAP\r\n".utf8)
  /// The format written. Format 1, written before files named their last record, is read too.
  static let formatVersion: UInt32 = 2
  /// The header of a file of format 2: every field before the state.
  static let headerSize = 8 + 4 + 8 + 16 + 32 + 32 + 32 + 8
  /// The header of a file of format 1, which has no record digest; also the bytes a header read
  /// needs for the fields both formats share (`header(_:)`).
  static let formatOneHeaderSize = headerSize - 32

  var sequence: UInt64
  var journalID: [UInt8]
  var fingerprint: StateDigest
  var digest: StateDigest
  /// The digest of the last record the state includes (`recordDigest(of:)`), which ties the
  /// snapshot to the history it was rebuilt from; nil for a file of format 1.
  var lastRecord: [UInt8]?
  var state: [UInt8]

  /// `lastRecord` has no default: a file of the current format names its last record.
  init(
    sequence: UInt64, journalID: [UInt8], fingerprint: StateDigest, digest: StateDigest, lastRecord: [UInt8]?,
    state: [UInt8]
  ) {
    self.sequence = sequence
    self.journalID = journalID
    self.fingerprint = fingerprint
    self.digest = digest
    self.lastRecord = lastRecord
    self.state = state
  }

  /// The record digest of a snapshot at sequence 0, which includes no record.
  static let noRecord = [UInt8](repeating: 0, count: 32)

  /// What a snapshot records of its last record, for readers to check against the record the
  /// journal holds at that number: the SHA-256 of its sequence number and timestamp (8 bytes each,
  /// little-endian) followed by its payload. A journal cut and written again holds another record
  /// there (another payload or timestamp), so a snapshot of the history that was cut is told from
  /// one of the history the journal holds.
  static func recordDigest(of record: JournalRecord) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(16 + record.payload.count)
    for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: record.sequence >> shift)) }
    for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: record.timestamp >> shift)) }
    bytes += record.payload
    return SHA256.hash(bytes)
  }

  /// Encodes the file in the current format (`formatVersion`); `lastRecord` must be set.
  func encoded() -> [UInt8] {
    precondition(lastRecord?.count == 32, "a snapshot is written with its last record's digest")
    var bytes = SnapshotFile.magic
    bytes.reserveCapacity(SnapshotFile.headerSize + state.count + 4)
    append(SnapshotFile.formatVersion, to: &bytes)
    append(sequence, to: &bytes)
    bytes += journalID
    bytes += fingerprint.bytes
    bytes += digest.bytes
    bytes += lastRecord ?? SnapshotFile.noRecord
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
      lastRecord: parsed.lastRecord, state: Array(bytes[parsed.state]))
  }

  /// A snapshot file's fields and where its state lies in its bytes, checked as `decode` checks
  /// them, without copying the state (tens of megabytes for a large model).
  struct Parsed {
    var sequence: UInt64
    var journalID: [UInt8]
    var fingerprint: StateDigest
    var digest: StateDigest
    /// The last record's digest (format 2), nil in a file of format 1.
    var lastRecord: [UInt8]?
    /// The state's bytes in the file's.
    var state: Range<Int>
  }

  /// The fields of a snapshot file's header (its first bytes: all of its format's header, or
  /// `headerSize` of a longer file), if its magic and format version are right and its format's
  /// header is there; nothing in it is checked against the file's checksum.
  static func header(_ bytes: [UInt8]) -> (identity: Identity, lastRecord: [UInt8]?)? {
    guard bytes.count >= formatOneHeaderSize, Array(bytes[0..<8]) == magic else { return nil }
    let version = UInt32(truncatingIfNeeded: integer(bytes, at: 8, size: 4))
    guard readable(version), version == 1 || bytes.count >= headerSize else { return nil }
    return (identity(bytes), version == 1 ? nil : Array(bytes[100..<132]))
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
    // The magic, in a file that can hold at least the shorter header (format 1's) and the
    // checksum; then the version, which says how long the header is.
    guard bytes.count >= formatOneHeaderSize + 4, Array(bytes[0..<8]) == magic else {
      throw .corrupt("not a snapshot file, or cut short before its header ends")
    }
    let version = UInt32(truncatingIfNeeded: integer(bytes, at: 8, size: 4))
    guard readable(version) else { throw .unknownFormat(version) }
    let headerSize = version == 1 ? formatOneHeaderSize : headerSize
    guard bytes.count >= headerSize + 4 else { throw .corrupt("cut short before its header ends") }
    let length = integer(bytes, at: headerSize - 8, size: 8)
    guard length == UInt64(bytes.count - headerSize - 4) else {
      throw .corrupt("the state should be \(length) bytes but the file holds \(bytes.count - headerSize - 4)")
    }
    let stored = UInt32(truncatingIfNeeded: integer(bytes, at: bytes.count - 4, size: 4))
    guard CRC32C.checksum(bytes[0..<bytes.count - 4]) == stored else { throw .corrupt("checksum mismatch") }
    let (sequence, journalID, fingerprint) = identity(bytes)
    return Parsed(
      sequence: sequence, journalID: journalID, fingerprint: fingerprint,
      digest: StateDigest(bytes: Array(bytes[68..<100])), lastRecord: version == 1 ? nil : Array(bytes[100..<132]),
      state: headerSize..<bytes.count - 4)
  }

  /// Whether this code reads files of format `version`: the current one and format 1.
  private static func readable(_ version: UInt32) -> Bool { version == formatVersion || version == 1 }

  private func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
    for shift in stride(from: 0, to: T.bitWidth, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
  }

  private static func integer(_ bytes: [UInt8], at offset: Int, size: Int) -> UInt64 {
    var value: UInt64 = 0
    for index in 0..<size { value |= UInt64(bytes[offset + index]) << UInt64(index * 8) }
    return value
  }
}
