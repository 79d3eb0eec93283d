internal import CCRC32C

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of batch headers, frames,
/// segment headers and index entries.
///
/// Computed by the CPU's own instruction where it has one (SSE4.2 `crc32` on x86-64, the ARMv8
/// CRC32C instructions on AArch64: the `CCRC32C` target, asked once per process), else by
/// slicing-by-16 over a table built once (16 table lookups per 16 bytes, independent of each other,
/// so the CPU overlaps them). Both give the same bits; liblz4 does not export its xxHash, so the
/// journal's own checksums are computed here. Check value: `CRC32C.checksum("123456789") == 0xE306_9283`.
package enum CRC32C {
  private static let table: [UInt32] = {
    var table = [UInt32](repeating: 0, count: 16 * 256)
    for byte in 0..<256 {
      var crc = UInt32(byte)
      for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
      table[byte] = crc
    }
    for byte in 0..<256 {
      var crc = table[byte]
      for slice in 1..<16 {
        crc = table[Int(crc & 0xFF)] ^ (crc >> 8)
        table[slice * 256 + byte] = crc
      }
    }
    return table
  }()

  /// Whether `checksum` runs on the CPU's CRC-32C instruction (asked of the CPU once).
  package static let usesHardware = rewind_crc32c_hardware_available()

  /// The CRC-32C of `bytes`, continuing from `previous` (the checksum of the bytes before them).
  @inline(__always)
  package static func checksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
    usesHardware ? hardwareChecksum(bytes, continuing: previous) : tableChecksum(bytes, continuing: previous)
  }

  /// `checksum` by the CPU's instruction.
  /// - Precondition: `usesHardware` (otherwise the CPU traps on an illegal instruction).
  package static func hardwareChecksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
    guard let base = bytes.baseAddress else { return previous }
    return ~rewind_crc32c_hardware_update(~previous, base.assumingMemoryBound(to: UInt8.self), bytes.count)
  }

  /// `checksum` by the table, on any CPU.
  package static func tableChecksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
    var crc = ~previous
    table.withUnsafeBufferPointer { t in
      var index = 0
      let count = bytes.count
      while count - index >= 16 {
        let first = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
        let second = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index + 8, as: UInt64.self))
        let a = UInt32(truncatingIfNeeded: first) ^ crc
        let b = UInt32(truncatingIfNeeded: first >> 32)
        let c = UInt32(truncatingIfNeeded: second)
        let d = UInt32(truncatingIfNeeded: second >> 32)
        crc =
          t[15 * 256 + Int(a & 0xFF)] ^ t[14 * 256 + Int((a >> 8) & 0xFF)]
          ^ t[13 * 256 + Int((a >> 16) & 0xFF)] ^ t[12 * 256 + Int(a >> 24)]
          ^ t[11 * 256 + Int(b & 0xFF)] ^ t[10 * 256 + Int((b >> 8) & 0xFF)]
          ^ t[9 * 256 + Int((b >> 16) & 0xFF)] ^ t[8 * 256 + Int(b >> 24)]
          ^ t[7 * 256 + Int(c & 0xFF)] ^ t[6 * 256 + Int((c >> 8) & 0xFF)]
          ^ t[5 * 256 + Int((c >> 16) & 0xFF)] ^ t[4 * 256 + Int(c >> 24)]
          ^ t[3 * 256 + Int(d & 0xFF)] ^ t[2 * 256 + Int((d >> 8) & 0xFF)]
          ^ t[1 * 256 + Int((d >> 16) & 0xFF)] ^ t[Int(d >> 24)]
        index += 16
      }
      if count - index >= 8 {
        let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
        let low = UInt32(truncatingIfNeeded: word) ^ crc
        let high = UInt32(truncatingIfNeeded: word >> 32)
        crc =
          t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
          ^ t[5 * 256 + Int((low >> 16) & 0xFF)] ^ t[4 * 256 + Int(low >> 24)]
          ^ t[3 * 256 + Int(high & 0xFF)] ^ t[2 * 256 + Int((high >> 8) & 0xFF)]
          ^ t[1 * 256 + Int((high >> 16) & 0xFF)] ^ t[Int(high >> 24)]
        index += 8
      }
      while index < count {
        crc = t[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
        index += 1
      }
    }
    return ~crc
  }

  package static func checksum(_ bytes: [UInt8]) -> UInt32 {
    bytes.withUnsafeBytes { checksum($0) }
  }

  package static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
    bytes.withUnsafeBytes { checksum($0) }
  }

  package static func checksum(_ string: String) -> UInt32 {
    checksum(Array(string.utf8))
  }
}
