/// xxHash32, the checksum of the LZ4 frame format (header, block and content checksums), for the
/// frames the journal builds around liblz4's block compressor (liblz4 does not export its own).
/// Check values: `hash("") == 0x02CC_5D05`, `hash("abc") == 0x32D1_53FF` (seed 0).
package enum XXH32 {
  private static let prime1: UInt32 = 2_654_435_761
  private static let prime2: UInt32 = 2_246_822_519
  private static let prime3: UInt32 = 3_266_489_917
  private static let prime4: UInt32 = 668_265_263
  private static let prime5: UInt32 = 374_761_393

  @inline(__always)
  private static func round(_ accumulator: UInt32, _ input: UInt32) -> UInt32 {
    (accumulator &+ input &* prime2).rotatedLeft(13) &* prime1
  }

  package static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
    let count = bytes.count
    var index = 0
    @inline(__always) func word(_ at: Int) -> UInt32 {
      UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self))
    }
    var hash: UInt32
    if count >= 16 {
      var v1 = seed &+ prime1 &+ prime2
      var v2 = seed &+ prime2
      var v3 = seed
      var v4 = seed &- prime1
      while count - index >= 16 {
        v1 = round(v1, word(index))
        v2 = round(v2, word(index + 4))
        v3 = round(v3, word(index + 8))
        v4 = round(v4, word(index + 12))
        index += 16
      }
      hash = v1.rotatedLeft(1) &+ v2.rotatedLeft(7) &+ v3.rotatedLeft(12) &+ v4.rotatedLeft(18)
    } else {
      hash = seed &+ prime5
    }
    hash = hash &+ UInt32(truncatingIfNeeded: count)
    while count - index >= 4 {
      hash = mix(hash, word: word(index))
      index += 4
    }
    while index < count {
      hash = mix(hash, byte: bytes[index])
      index += 1
    }
    return avalanche(hash)
  }

  /// `hash` (seed 0) of the 10 bytes at `bytes`: an LZ4 frame's descriptor (FLG, BD and the
  /// content size), whose checksum every frame's header holds. Straight-line code for that one
  /// length: the reader checks it once per frame, and the general function's loops cost about
  /// 100 instructions on 10 bytes.
  @inline(__always)
  package static func hashOfTen(_ bytes: UnsafeRawPointer) -> UInt32 {
    @inline(__always) func word(_ at: Int) -> UInt32 {
      UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self))
    }
    var hash = prime5 &+ 10
    hash = mix(hash, word: word(0))
    hash = mix(hash, word: word(4))
    hash = mix(hash, byte: bytes.load(fromByteOffset: 8, as: UInt8.self))
    hash = mix(hash, byte: bytes.load(fromByteOffset: 9, as: UInt8.self))
    return avalanche(hash)
  }

  /// The tail's steps (after the 16-byte stripes, if any): four bytes at a time, then one.
  @inline(__always)
  private static func mix(_ hash: UInt32, word: UInt32) -> UInt32 {
    (hash &+ word &* prime3).rotatedLeft(17) &* prime4
  }

  @inline(__always)
  private static func mix(_ hash: UInt32, byte: UInt8) -> UInt32 {
    (hash &+ UInt32(byte) &* prime5).rotatedLeft(11) &* prime1
  }

  /// The final mixing, so that every input bit reaches every output bit.
  @inline(__always)
  private static func avalanche(_ hash: UInt32) -> UInt32 {
    var hash = hash
    hash ^= hash >> 15
    hash = hash &* prime2
    hash ^= hash >> 13
    hash = hash &* prime3
    hash ^= hash >> 16
    return hash
  }

  package static func hash(_ bytes: [UInt8], seed: UInt32 = 0) -> UInt32 {
    bytes.withUnsafeBytes { hash($0, seed: seed) }
  }
}

extension UInt32 {
  @inline(__always)
  fileprivate func rotatedLeft(_ count: UInt32) -> UInt32 { (self << count) | (self >> (32 - count)) }
}
