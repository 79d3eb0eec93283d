import RewindTestSupport
import Testing

@testable import Rewind

/// `AddressSet`, the census's set of node addresses (written by hand, see there): the same
/// answers as `Set` for every insert, one at a time or by the batch, across its growth.
@Suite struct AddressSetTests {
  /// Addresses like an allocator's (16-byte aligned), from a small range so that many repeat
  /// and many share first slots.
  static func addresses(_ count: Int, seed: UInt64, range: Int) -> [UInt] {
    var random = SeededGenerator(seed: seed)
    return (0..<count).map { _ in 0x7F00_0000_0000 + UInt(Int.random(in: 1...range, using: &random)) * 16 }
  }

  @Test(arguments: [(200, 150), (5_000, 3_000), (60_000, 100_000)])
  func insertsOneAtATimeAnswerAsASetDoes(count: Int, range: Int) {
    var set = AddressSet()
    var reference = Set<UInt>()
    for (index, address) in Self.addresses(count, seed: UInt64(count), range: range).enumerated() {
      #expect(set.insert(address) == reference.insert(address).inserted, "insert \(index), \(address)")
    }
    #expect(set.count == reference.count)
    #expect(reference.count < count, "addresses repeat")
    #expect(count < 1_000 || reference.count > 512, "the set grows past its first 1,024 slots")
  }

  /// Batches of 1 to 64 addresses, with repeats inside a batch and of earlier batches, mixed with
  /// single inserts: bit i of the answer is whether the i-th was new, as `Set` says in order.
  @Test func insertsByTheBatchAnswerAsASetDoes() {
    var set = AddressSet()
    var reference = Set<UInt>()
    var random = SeededGenerator(seed: 7)
    let pool = Self.addresses(40_000, seed: 8, range: 30_000)
    var position = 0
    var batches = 0
    while position < pool.count {
      let size = min(Int.random(in: 1...64, using: &random), pool.count - position)
      var batch = Array(pool[position..<(position + size)])
      if size > 2 { batch[size - 1] = batch[0] }  // a repeat inside the batch
      position += size
      if batches % 5 == 4 {
        for address in batch { #expect(set.insert(address) == reference.insert(address).inserted) }
      } else {
        var expected: UInt64 = 0
        for (index, address) in batch.enumerated() where reference.insert(address).inserted {
          expected |= 1 << index
        }
        let answer = batch.withUnsafeBufferPointer { set.insert($0) }
        #expect(answer == expected, "batch \(batches) of \(size)")
      }
      batches += 1
    }
    #expect(set.count == reference.count)
  }
}
