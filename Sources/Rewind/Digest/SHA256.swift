internal import CSHA256

/// SHA-256 (FIPS 180-4), written here because the toolchain on Linux ships no hash function and
/// the core takes no outside packages. Tested against the NIST example vectors.
///
/// Whole blocks go through the CPU's SHA extensions where it has them (`CSHA256`, about a tenth
/// of the time per block), through `compress` otherwise; the tests check one against the other.
///
/// Feed bytes with `update`, read the 32-byte hash with `finalize()`. A value type: copying a
/// hasher forks it.
struct SHA256 {
  /// Whether this CPU has the instructions `CSHA256` uses, asked once.
  static let hardwareAvailable = rewind_sha256_hardware_available()

  /// FIPS 180-4's round constants (the C target's table, which its block function uses too).
  nonisolated(unsafe) private static let roundConstants = rewind_sha256_round_constants()!

  private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
    0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
  )
  /// Bytes of an unfinished 64-byte block.
  private var pending: [UInt8] = []
  private var length: UInt64 = 0
  /// Whether whole blocks go through the CPU's SHA extensions.
  private let usesHardware: Bool

  /// - Parameter hardware: use the CPU's SHA extensions (only where it has them; tests turn
  ///   them off to check the portable code).
  init(hardware: Bool = SHA256.hardwareAvailable) {
    usesHardware = hardware && SHA256.hardwareAvailable
    pending.reserveCapacity(64)
  }

  mutating func update(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { update($0) }
  }

  mutating func update(_ bytes: UnsafeRawBufferPointer) {
    length &+= UInt64(bytes.count)
    var index = 0
    if !pending.isEmpty {
      let take = min(64 - pending.count, bytes.count)
      pending.append(contentsOf: bytes[0..<take])
      index = take
      if pending.count == 64 {
        pending.withUnsafeBytes { compressBlocks($0) }
        pending.removeAll(keepingCapacity: true)
      }
    }
    let whole = (bytes.count - index) / 64 * 64
    if whole > 0 {
      compressBlocks(UnsafeRawBufferPointer(rebasing: bytes[index..<index + whole]))
      index += whole
    }
    if index < bytes.count { pending.append(contentsOf: bytes[index...]) }
  }

  /// The hash of everything fed so far.
  consuming func finalize() -> [UInt8] {
    let bitLength = length &* 8
    var tail = pending
    tail.append(0x80)
    while tail.count % 64 != 56 { tail.append(0) }
    for shift in stride(from: 56, through: 0, by: -8) {
      tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
    }
    tail.withUnsafeBytes { compressBlocks($0) }
    var output: [UInt8] = []
    output.reserveCapacity(32)
    for word in [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7] {
      output.append(UInt8(truncatingIfNeeded: word >> 24))
      output.append(UInt8(truncatingIfNeeded: word >> 16))
      output.append(UInt8(truncatingIfNeeded: word >> 8))
      output.append(UInt8(truncatingIfNeeded: word))
    }
    return output
  }

  /// The hash of `bytes`.
  static func hash(_ bytes: [UInt8], hardware: Bool = SHA256.hardwareAvailable) -> [UInt8] {
    bytes.withUnsafeBytes { hash($0, hardware: hardware) }
  }

  /// The hash of `bytes`.
  static func hash(_ bytes: UnsafeRawBufferPointer, hardware: Bool = SHA256.hardwareAvailable) -> [UInt8] {
    var hasher = SHA256(hardware: hardware)
    hasher.update(bytes)
    return hasher.finalize()
  }

  /// Whole 64-byte blocks (`blocks.count` is a multiple of 64).
  private mutating func compressBlocks(_ blocks: UnsafeRawBufferPointer) {
    guard !blocks.isEmpty else { return }
    if usesHardware {
      withUnsafeMutableBytes(of: &state) { words in
        rewind_sha256_hardware_blocks(
          words.baseAddress!.assumingMemoryBound(to: UInt32.self),
          blocks.baseAddress!.assumingMemoryBound(to: UInt8.self),
          blocks.count / 64)
      }
    } else {
      for start in stride(from: 0, to: blocks.count, by: 64) {
        compress(UnsafeRawBufferPointer(rebasing: blocks[start..<start + 64]))
      }
    }
  }

  /// One 64-byte block. The message schedule lives on the stack; the constants are read through
  /// a pointer (no allocation or bounds check per block). The rounds go eight at a time, each
  /// with the working variables in its own places, so no round moves them along.
  private mutating func compress(_ block: UnsafeRawBufferPointer) {
    var (a, b, c, d, e, f, g, h) = state
    withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
      for t in 0..<16 { w[t] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: t * 4, as: UInt32.self)) }
      for t in 16..<64 {
        let s0 = rotate(w[t - 15], 7) ^ rotate(w[t - 15], 18) ^ (w[t - 15] &>> 3)
        let s1 = rotate(w[t - 2], 17) ^ rotate(w[t - 2], 19) ^ (w[t - 2] &>> 10)
        w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
      }
      let k = SHA256.roundConstants
      for t in stride(from: 0, to: 64, by: 8) {
        round(a, b, c, &d, e, f, g, &h, k[t] &+ w[t])
        round(h, a, b, &c, d, e, f, &g, k[t + 1] &+ w[t + 1])
        round(g, h, a, &b, c, d, e, &f, k[t + 2] &+ w[t + 2])
        round(f, g, h, &a, b, c, d, &e, k[t + 3] &+ w[t + 3])
        round(e, f, g, &h, a, b, c, &d, k[t + 4] &+ w[t + 4])
        round(d, e, f, &g, h, a, b, &c, k[t + 5] &+ w[t + 5])
        round(c, d, e, &f, g, h, a, &b, k[t + 6] &+ w[t + 6])
        round(b, c, d, &e, f, g, h, &a, k[t + 7] &+ w[t + 7])
      }
    }
    state = (
      state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h
    )
  }

  /// One round: `d` and `h` take their new values; the others move by renaming in the caller.
  @inline(__always)
  private func round(
    _ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: inout UInt32, _ e: UInt32, _ f: UInt32, _ g: UInt32,
    _ h: inout UInt32, _ constantAndWord: UInt32
  ) {
    let t1 = h &+ (rotate(e, 6) ^ rotate(e, 11) ^ rotate(e, 25)) &+ (g ^ (e & (f ^ g))) &+ constantAndWord
    let t2 = (rotate(a, 2) ^ rotate(a, 13) ^ rotate(a, 22)) &+ ((a & b) | (c & (a | b)))
    d = d &+ t1
    h = t1 &+ t2
  }

  @inline(__always)
  private func rotate(_ value: UInt32, _ count: UInt32) -> UInt32 { value &>> count | value &<< (32 &- count) }
}
