package import RewindJournal

// Walking and damaging a segment file's batches, for tests that damage journals the ways a disk
// does (a flipped byte in a frame, a segment cut short) and check what readers make of it.

/// One batch of a segment file's bytes: where its batch header starts, and the header.
package struct SegmentFrame: Sendable {
  package var offset: Int
  package var header: BatchHeader

  /// Where the batch's data frame ends (the next batch's header starts).
  package var end: Int { offset + Int(header.totalLength) }

  /// A byte halfway through the batch's data frame, past its batch header: flipping it fails the
  /// frame's checksum and leaves its header whole (its records are known), cutting the file there
  /// leaves the frame torn.
  package var middleOfData: Int {
    offset + Layout.batchHeaderSize + (Int(header.totalLength) - Layout.batchHeaderSize) / 2
  }

  /// The sequence numbers of the batch's records.
  package var sequences: ClosedRange<UInt64> {
    header.firstSequence...(header.firstSequence + UInt64(header.recordCount) - 1)
  }
}

/// The batches of a segment file's bytes, in order, up to the first that does not decode (the end,
/// a cut, damage to a batch header, preallocated zeros).
package func segmentFrames(in bytes: [UInt8]) -> [SegmentFrame] {
  var frames: [SegmentFrame] = []
  var offset = Layout.segmentHeaderSize
  while offset < bytes.count, case .success(let header) = BatchHeader.decode(bytes[offset...], limits: JournalLimits())
  {
    frames.append(SegmentFrame(offset: offset, header: header))
    offset += Int(header.totalLength)
  }
  return frames
}

/// Reads the journal in `directory` from its first record until it ends or fails: the last
/// sequence number read intact (0 if none), and the error that stopped the read, if one did.
package func intactPrefix(of directory: String) throws -> (last: UInt64, stoppedBy: JournalError?) {
  let cursor = try JournalReader(directory: directory).records(from: 1)
  var last: UInt64 = 0
  do {
    while let record = try cursor.next() { last = record.sequence }
    return (last, nil)
  } catch let error as JournalError {
    return (last, error)
  }
}

/// Damages the last segment of the journal in `directory` so that the damage hides the journal's
/// end, as the replay-before-damage tests need: `cut` cuts the segment before its second batch
/// (committed records gone at the end, witnessed when the index names a later batch), otherwise
/// a byte in the data of its middle batch is flipped.
/// - Throws: when the last segment holds fewer than three batches, or cannot be read or written.
package func damageLastSegment(in directory: String, cut: Bool) throws {
  let last = Files.list(directory).filter { $0.hasSuffix(".lz4") }.sorted().last
  guard let last else { throw DamageError("no segment in \(directory)") }
  let path = directory + "/" + last
  var bytes = try Files.read(path)
  let frames = segmentFrames(in: bytes)
  guard frames.count > 2 else { throw DamageError("\(last) holds \(frames.count) batches, fewer than 3") }
  if cut {
    try Files.write(Array(bytes[..<frames[1].offset]), to: path)
  } else {
    bytes[frames[frames.count / 2].middleOfData] ^= 0x5A
    try Files.write(bytes, to: path)
  }
}

/// Why `damageLastSegment` could not damage a journal as asked.
package struct DamageError: Error, CustomStringConvertible {
  package var description: String
  init(_ description: String) { self.description = description }
}
