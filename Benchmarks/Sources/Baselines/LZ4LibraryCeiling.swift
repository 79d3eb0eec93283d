internal import CLZ4
internal import Foundation

/// The decompression ceiling measured in process: liblz4's frame decoder (`LZ4F_decompress`) over a
/// journal's segments, read into memory first, so that neither the disk nor a tool's own I/O is
/// timed. Raw decompression, the ceiling replay is judged against, skips the frames' checksums
/// (`skipChecksums`); with its default checks of the block and content checksums (as `lz4 -dc`
/// makes them) it is about three times slower on the corpus, and shown beside it, unjudged. The
/// `lz4` tool reads the same segments several times slower still: it skips each record's batch
/// header, a skippable frame, with a system call of its own.
enum LZ4LibraryCeiling {
  /// The bytes of each of `segments` (file paths).
  static func load(_ segments: [String]) throws -> [[UInt8]] {
    try segments.map { path in
      guard let data = FileManager.default.contents(atPath: path) else { throw BenchError("cannot read \(path)") }
      return [UInt8](data)
    }
  }

  /// Decodes every frame of every segment in `segments`, skipping the skippable ones as a frame
  /// reader must, and checking the frames' checksums only when `checkingChecksums`; returns how
  /// many bytes they decoded to.
  static func decode(_ segments: [[UInt8]], checkingChecksums: Bool) throws -> Int {
    var context: OpaquePointer?
    guard LZ4F_isError(LZ4F_createDecompressionContext(&context, UInt32(LZ4F_VERSION))) == 0, let context else {
      throw BenchError("liblz4 could not allocate a decompression context")
    }
    defer { LZ4F_freeDecompressionContext(context) }
    var output = [UInt8](repeating: 0, count: 1 << 20)
    var decoded = 0
    // Set at each call: liblz4 takes `skipChecksums` for the rest of the frame it is in.
    var options = LZ4F_decompressOptions_t()
    options.skipChecksums = checkingChecksums ? 0 : 1
    for segment in segments {
      try segment.withUnsafeBytes { source in
        try output.withUnsafeMutableBytes { destination in
          var position = 0
          while position < source.count {
            var sourceSize = source.count - position
            var destinationSize = destination.count
            let code = LZ4F_decompress(
              context, destination.baseAddress, &destinationSize, source.baseAddress! + position, &sourceSize, &options)
            guard LZ4F_isError(code) == 0 else {
              throw BenchError("liblz4 failed at byte \(position): \(String(cString: LZ4F_getErrorName(code)))")
            }
            position += sourceSize
            decoded += destinationSize
            if sourceSize == 0 && destinationSize == 0 {
              throw BenchError("liblz4 made no progress at byte \(position)")
            }
            // A segment ends with a frame: liblz4 then expects nothing more (0).
            if position == source.count && code != 0 { throw BenchError("a segment ends inside a frame") }
          }
        }
      }
    }
    return decoded
  }
}
