import Rewind
import Testing

@Suite struct SeededRandomTests {
  @Test func matchesTheSplitMix64Reference() {
    // The published first outputs of SplitMix64 seeded with 0.
    var random = SeededRandom(seed: 0)
    #expect(random.next() == 0xE220_A839_7B1D_CDAF)
    #expect(random.next() == 0x6E78_9E6A_A1B9_65F4)
  }

  @Test func seededIdentifiersRepeatPerSeed() {
    let a = IdentifierSource.seeded(7)
    let b = IdentifierSource.seeded(7)
    let c = IdentifierSource.seeded(8)
    let first = (0..<5).map { _ in a.next() }
    #expect(first == (0..<5).map { _ in b.next() })
    #expect(first != (0..<5).map { _ in c.next() })
    #expect(Set(first).count == 5)
  }
}
