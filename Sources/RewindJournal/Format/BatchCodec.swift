/// Turns batches of records into frames (header + LZ4 frame) and back.
package enum BatchCodec {
  /// Writes the batch header and LZ4 frame for `records`, numbered from `firstSequence`, into
  /// `output` from `offset` on; returns the header and where the frame ends. `output` is made
  /// long enough; its bytes before `offset` are left as they are, those after the end may be
  /// overwritten up to the end of the room the frame was given (see
  /// `LZ4FrameEncoder.compress(_:into:at:)`).
  /// `scratch` holds the decoded content meanwhile, likewise only ever grown.
  package static func encode(
    _ records: some Collection<NewRecord>, firstSequence: UInt64, encoder: LZ4FrameEncoder, scratch: inout [UInt8],
    into output: inout [UInt8], at offset: Int
  ) throws -> (header: BatchHeader, end: Int) {
    var contentLength = 0
    for record in records { contentLength += contentSize(of: record) }
    scratch.ensureCount(contentLength)
    var minTimestamp = Int64.max
    var maxTimestamp = Int64.min
    scratch.withUnsafeMutableBytes { buffer in
      let content = buffer.baseAddress!
      var position = 0
      var sequence = firstSequence
      for record in records {
        content.storeBytes(of: sequence.littleEndian, toByteOffset: position, as: UInt64.self)
        content.storeBytes(of: record.timestamp.littleEndian, toByteOffset: position + 8, as: Int64.self)
        content.storeBytes(of: UInt32(record.payload.count).littleEndian, toByteOffset: position + 16, as: UInt32.self)
        position += Layout.recordHeaderSize
        record.payload.withUnsafeBytes { payload in
          if payload.count > 0 { (content + position).copyMemory(from: payload.baseAddress!, byteCount: payload.count) }
        }
        position += record.payload.count
        minTimestamp = min(minTimestamp, record.timestamp)
        maxTimestamp = max(maxTimestamp, record.timestamp)
        sequence += 1
      }
    }
    let frameStart = offset + Layout.batchHeaderSize
    output.ensureCount(frameStart)
    let frameLength = try scratch.withUnsafeBytes { (content) throws in
      try encoder.compress(UnsafeRawBufferPointer(rebasing: content[..<contentLength]), into: &output, at: frameStart)
    }
    let header = output.withUnsafeMutableBytes { buffer in
      let header = BatchHeader(
        firstSequence: firstSequence, recordCount: UInt32(records.count), contentLength: UInt32(contentLength),
        frameLength: UInt32(frameLength), minTimestamp: minTimestamp, maxTimestamp: maxTimestamp,
        frameChecksum: CRC32C.checksum(
          UnsafeRawBufferPointer(rebasing: buffer[frameStart..<(frameStart + frameLength)])))
      header.encode(to: buffer.baseAddress! + offset)
      return header
    }
    return (header, frameStart + frameLength)
  }

  /// The decoded size of `records` in a frame.
  package static func contentSize(of record: NewRecord) -> Int {
    Layout.recordHeaderSize + record.payload.count
  }

  /// Decodes and checks the records of one frame whose header has been checked.
  /// Throws a phrase saying what is wrong.
  package static func decode(
    _ frame: ArraySlice<UInt8>, header: BatchHeader, decoder: LZ4FrameDecoder, limits: JournalLimits
  ) throws -> [JournalRecord] {
    var records: [JournalRecord] = []
    try decode(frame, header: header, decoder: decoder, limits: limits, appendingTo: &records)
    return records
  }

  /// `decode`, appending the records to `records`: a reader that keeps one array for every batch
  /// (emptied, its capacity kept) allocates none per batch. On a throw, `records` may hold some
  /// of the batch's records after what it held before.
  package static func decode(
    _ frame: ArraySlice<UInt8>, header: BatchHeader, decoder: LZ4FrameDecoder, limits: JournalLimits,
    appendingTo records: inout [JournalRecord]
  ) throws {
    do {
      try frame.withUnsafeBytes { frame in
        try decoder.decompress(frame, expectedLength: Int(header.contentLength)) { content in
          records.reserveCapacity(records.count + Int(header.recordCount))
          try forEachRecord(in: content, header: header, limits: limits) { sequence, timestamp, payload in
            records.append(
              JournalRecord(
                sequence: sequence, timestamp: timestamp,
                payload: [UInt8](UnsafeRawBufferPointer(rebasing: content[payload]))))
          }
        }
      }
    } catch let failure as LZ4Failure {
      throw BatchDecodingFailure(reason: "LZ4 frame does not decode: \(failure)")
    }
  }

  /// Walks the records of a batch's decoded content, checking them against its header: numbering
  /// from the header's first sequence, lengths within the content and the limit, timestamps
  /// within the header's range, and the header's count. `body` gets each record's sequence,
  /// timestamp and the range of its payload in `content`. The one place the record framing is read.
  package static func forEachRecord(
    in content: UnsafeRawBufferPointer, header: BatchHeader, limits: JournalLimits,
    _ body: (_ sequence: UInt64, _ timestamp: Int64, _ payload: Range<Int>) throws -> Void
  ) throws {
    var position = 0
    var expected = header.firstSequence
    var count = 0
    while position < content.count {
      guard content.count - position >= Layout.recordHeaderSize else {
        throw BatchDecodingFailure(reason: "record header cut short at content offset \(position)")
      }
      let sequence = UInt64(littleEndian: content.loadUnaligned(fromByteOffset: position, as: UInt64.self))
      let timestamp = Int64(littleEndian: content.loadUnaligned(fromByteOffset: position + 8, as: Int64.self))
      let length = Int(UInt32(littleEndian: content.loadUnaligned(fromByteOffset: position + 16, as: UInt32.self)))
      position += Layout.recordHeaderSize
      guard sequence == expected else {
        throw BatchDecodingFailure(reason: "record \(count) has sequence \(sequence), expected \(expected)")
      }
      guard length <= content.count - position else {
        throw BatchDecodingFailure(reason: "record \(sequence) declares \(length) payload bytes, beyond the frame")
      }
      // Within a frame whose checksums hold: a whole record, written with larger limits (or
      // hostile), not damage.
      guard length <= limits.maxRecordBytes else {
        throw BatchDecodingFailure(
          reason: "record \(sequence) has \(length) payload bytes, which exceeds the limit of "
            + "\(limits.maxRecordBytes) (limits.maxRecordBytes): the journal was written with larger limits than "
            + "these; read it with a limits.maxRecordBytes large enough for this record (nothing was changed)",
          exceedsLimits: true)
      }
      guard timestamp >= header.minTimestamp, timestamp <= header.maxTimestamp else {
        throw BatchDecodingFailure(reason: "record \(sequence) timestamp outside the batch header's range")
      }
      try body(sequence, timestamp, position..<(position + length))
      position += length
      expected += 1
      count += 1
    }
    guard count == Int(header.recordCount) else {
      throw BatchDecodingFailure(reason: "frame holds \(count) records, header says \(header.recordCount)")
    }
  }
}

package struct BatchDecodingFailure: Error {
  package var reason: String
  /// A whole record larger than the reader's `limits.maxRecordBytes`: not damage.
  package var exceedsLimits = false

  package init(reason: String, exceedsLimits: Bool = false) {
    self.reason = reason
    self.exceedsLimits = exceedsLimits
  }

  /// The error reading a batch fails with: `.limitExceeded` for a record too large for the
  /// limits, `.corrupt` otherwise.
  package func error(directory: String, file: String, offset: Int64, sequences: ClosedRange<UInt64>) -> JournalError {
    JournalError(
      exceedsLimits ? .limitExceeded : .corrupt, reason, directory: directory, file: file, offset: offset,
      sequences: sequences)
  }
}
