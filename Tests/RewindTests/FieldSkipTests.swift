import RewindTestSupport
import Testing

@testable import Rewind

/// `FieldBytesReader.skipValue` walks well-formed bytes in one loop and leaves anything else to
/// the checked reads: on every input it must end where the checked walk ends, or throw the same
/// error at the same byte.
@Suite struct FieldSkipTests {
  /// The outcome of skipping the value at `start` one way or the other.
  func outcome(_ bytes: [UInt8], at start: Int, depth: Int = 0, checked: Bool) -> Result<Int, FieldFormatError> {
    var reader = FieldBytesReader(bytes, position: start)
    do throws(FieldFormatError) {
      if checked { try reader.skipValueChecked(depth: depth) } else { try reader.skipValue(depth: depth) }
      return .success(reader.position)
    } catch {
      return .failure(error)
    }
  }

  func expectAgreement(
    _ bytes: [UInt8], at start: Int = 0, depth: Int = 0, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(
      outcome(bytes, at: start, depth: depth, checked: false)
        == outcome(bytes, at: start, depth: depth, checked: true),
      sourceLocation: sourceLocation)
  }

  /// Random values (objects, arrays, strings past 127 bytes, identifiers, every scalar tag), whole,
  /// cut at every byte, and with every byte damaged three ways.
  @Test func theOneLoopAndTheCheckedReadsAgree() {
    var random = SeededRandom(seed: 0x5C1F)
    for round in 0..<200 {
      var writer = FieldBytesWriter()
      write(&writer, &random, depth: 0)
      let bytes = writer.bytes
      #expect(outcome(bytes, at: 0, checked: false) == .success(bytes.count))
      for cut in 0..<bytes.count { expectAgreement(Array(bytes[..<cut])) }
      guard round < 40 else { continue }
      for index in bytes.indices {
        for flip: UInt8 in [0x01, 0x80, 0xFF] {
          var damaged = bytes
          damaged[index] ^= flip
          expectAgreement(damaged)
        }
      }
    }
  }

  /// Nesting up to the limit and past it, from every starting depth the decoders pass.
  @Test func nestingAtTheLimitIsTheCheckedReadsError() {
    for levels in [62, 63, 64, 65] {
      for opener in [FieldTag.array, .object] {
        var bytes: [UInt8] = []
        for _ in 0..<levels {
          if opener == .object && !bytes.isEmpty { bytes += [2, UInt8(ascii: "k")] }
          bytes.append(opener.rawValue)
        }
        if opener == .object { bytes += [2, UInt8(ascii: "k")] }
        bytes.append(FieldTag.null.rawValue)
        for _ in 0..<levels { bytes.append(opener == .object ? 0 : FieldTag.end.rawValue) }
        expectAgreement(bytes)
        expectAgreement(bytes, depth: 1)
        // The innermost value is at depth `levels` (plus the start's): 64 is one too deep.
        let skipped = outcome(bytes, at: 0, depth: 1, checked: false)
        #expect(
          levels + 1 < FieldLimits.maximumDepth ? skipped == .success(bytes.count) : skipped != .success(bytes.count))
      }
    }
  }

  /// A ten-byte varint, which the one loop leaves to the checked reads, and one that overflows.
  @Test func longVarintsAreLeftToTheCheckedReads() {
    let longest: [UInt8] = [FieldTag.uint.rawValue] + Array(repeating: 0xFF, count: 9) + [0x01]
    #expect(outcome(longest, at: 0, checked: false) == .success(longest.count))
    let overflowing: [UInt8] = [FieldTag.uint.rawValue] + Array(repeating: 0xFF, count: 9) + [0x02]
    expectAgreement(overflowing)
    #expect(outcome(overflowing, at: 0, checked: false) != .success(overflowing.count))
  }

  private func write(_ writer: inout FieldBytesWriter, _ random: inout SeededRandom, depth: Int) {
    switch random.next() % (depth > 3 ? 7 : 9) {
    case 0: writer.append(.null)
    case 1: writer.append(random.next() % 2 == 0 ? .true : .false)
    case 2:
      writer.append(.int)
      writer.appendZigZag(Int64(truncatingIfNeeded: random.next()) >> (random.next() % 64))
    case 3:
      writer.append(.uint)
      writer.appendVarint(random.next() >> (random.next() % 64))
    case 4:
      writer.append(.double)
      writer.appendFixed64(random.next())
    case 5:
      writer.append(.identifier)
      writer.appendFixed64(random.next())
      writer.appendFixed64(random.next())
    case 6:
      writer.append(.string)
      writer.appendString(String(repeating: "é", count: Int(random.next() % 90)))
    case 7:
      writer.append(.array)
      for _ in 0..<random.next() % 4 { write(&writer, &random, depth: depth + 1) }
      writer.append(.end)
    default:
      writer.append(.object)
      for index in 0..<random.next() % 4 {
        writer.appendString(String(repeating: "k", count: Int(index) * 50), lengthBias: 1)
        write(&writer, &random, depth: depth + 1)
      }
      writer.append(0)
    }
  }
}
