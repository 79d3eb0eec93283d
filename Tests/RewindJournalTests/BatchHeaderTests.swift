import Testing

@testable import RewindJournal

// BatchHeader.decode, byte by byte: what it accepts and the reason it gives for what it refuses.

private let header = BatchHeader(
  firstSequence: 0x0102_0304_0506_0708, recordCount: 3, contentLength: 300, frameLength: 200,
  minTimestamp: -5, maxTimestamp: 0x7000_0000_0000_0001, frameChecksum: 0xDEAD_BEEF)

private func encoded(_ header: BatchHeader) -> [UInt8] {
  var writer = ByteWriter()
  header.encode(into: &writer)
  return writer.bytes
}

/// A header decodes to itself, from the start of longer bytes too (a slice not at index 0).
@Test func batchHeaderDecodesWhatItEncodes() throws {
  let bytes = encoded(header)
  #expect(bytes.count == Layout.batchHeaderSize)
  #expect(try BatchHeader.decode(bytes[...], limits: JournalLimits()).get() == header)
  let inside = [7, 7, 7] + bytes + [9]
  #expect(try BatchHeader.decode(inside[3...], limits: JournalLimits()).get() == header)
}

/// Every way of being wrong gets its own reason: cut short anywhere, another magic, another
/// payload size, any covered byte changed (checksum), a plausible-looking header that is not.
@Test func batchHeaderNamesWhatIsWrong() {
  let bytes = encoded(header)
  let limits = JournalLimits()
  func problem(_ bytes: [UInt8]) -> BatchHeader.Problem? {
    if case .failure(let problem) = BatchHeader.decode(bytes[...], limits: limits) { problem } else { nil }
  }
  for length in 0..<bytes.count {
    #expect(problem(Array(bytes[..<length])) == .truncated, "cut to \(length) bytes")
  }
  var magic = bytes
  magic[0] ^= 0x01
  #expect(problem(magic) == .badMagic(Layout.batchHeaderMagic ^ 0x01))
  #expect(problem(Array(magic[..<4])) == .badMagic(Layout.batchHeaderMagic ^ 0x01))
  var size = bytes
  size[4] &+= 1
  #expect(problem(size) == .badSize(UInt32(Layout.batchHeaderPayloadSize) + 1))
  for offset in Layout.skippableHeaderSize..<bytes.count {
    var flipped = bytes
    flipped[offset] ^= 0x10
    #expect(problem(flipped) == .checksumMismatch, "byte \(offset) changed")
  }
  var empty = header
  empty.recordCount = 0
  #expect(problem(encoded(empty)) == .implausible("no records"))
  var reversed = header
  reversed.minTimestamp = reversed.maxTimestamp &+ 1
  #expect(problem(encoded(reversed)) == .implausible("timestamps out of order"))
  // A decoded size LZ4 cannot reach from the frame's bytes: refused before anything is allocated
  // for it, even where the limits would allow it.
  var inflated = header
  inflated.contentLength = UInt32(200 * BatchHeader.maximumExpansion + 4097)
  #expect(
    BatchHeader.decode(encoded(inflated)[...], limits: .largest).failure
      == .implausible("decoded size 55097 is more than an LZ4 frame of 200 bytes can hold"))
  inflated.contentLength -= 1
  #expect((try? BatchHeader.decode(encoded(inflated)[...], limits: .largest).get()) == inflated)
}

extension Result {
  fileprivate var failure: Failure? {
    if case .failure(let failure) = self { failure } else { nil }
  }
}
