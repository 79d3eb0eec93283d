import Testing

@testable import RewindJournal

/// A reader decodes every batch into one array it keeps: appending a batch's records gives the
/// records decoding it alone gives, after what the array held, and a frame that does not decode
/// throws.
@Suite struct BatchCodecTests {
  static func frame(_ payloads: [[UInt8]], firstSequence: UInt64) throws -> (BatchHeader, ArraySlice<UInt8>) {
    let records = payloads.enumerated().map { NewRecord(timestamp: Int64(1_000 + $0.offset), payload: $0.element) }
    var scratch: [UInt8] = []
    var output: [UInt8] = []
    let (header, end) = try BatchCodec.encode(
      records, firstSequence: firstSequence, encoder: LZ4FrameEncoder(), scratch: &scratch, into: &output, at: 0)
    return (header, output[Layout.batchHeaderSize..<end])
  }

  @Test func appendingDecodesEachBatchAfterWhatTheArrayHolds() throws {
    let decoder = LZ4FrameDecoder(verifyChecksums: true)
    let limits = JournalLimits()
    let (firstHeader, first) = try Self.frame([[1, 2, 3], [], Array(repeating: 7, count: 300)], firstSequence: 5)
    let (secondHeader, second) = try Self.frame([[9]], firstSequence: 8)
    var records: [JournalRecord] = []
    try BatchCodec.decode(first, header: firstHeader, decoder: decoder, limits: limits, appendingTo: &records)
    try BatchCodec.decode(second, header: secondHeader, decoder: decoder, limits: limits, appendingTo: &records)
    let alone =
      try BatchCodec.decode(first, header: firstHeader, decoder: decoder, limits: limits)
      + BatchCodec.decode(second, header: secondHeader, decoder: decoder, limits: limits)
    #expect(records == alone)
    #expect(records.map(\.sequence) == [5, 6, 7, 8])
    #expect(records.map(\.payload) == [[1, 2, 3], [], Array(repeating: 7, count: 300), [9]])
    #expect(records.map(\.timestamp) == [1_000, 1_001, 1_002, 1_000])

    records.removeAll(keepingCapacity: true)
    var broken = Array(first)
    broken[broken.count / 2] ^= 0xFF
    #expect(throws: (any Error).self) {
      try BatchCodec.decode(broken[...], header: firstHeader, decoder: decoder, limits: limits, appendingTo: &records)
    }
  }
}
