// The one Swift file that imports liblz4. Nothing from CLZ4 escapes it: callers see byte arrays
// and `LZ4Failure`, never a C type.
internal import CLZ4

/// Why liblz4 refused a frame, in its own words.
package struct LZ4Failure: Error, CustomStringConvertible {
  package let description: String
}

/// Compresses whole batches into standard LZ4 frames: linked 64 KiB blocks, block checksums,
/// content checksum and content size all on, so `lz4 -dc` and any conforming decoder can check
/// and decode them. Owns a reusable compression context; not thread-safe (the single writer owns it).
package final class LZ4FrameEncoder {
  private var context: OpaquePointer?

  package init() {
    var context: OpaquePointer?
    let code = LZ4F_createCompressionContext(&context, UInt32(LZ4F_VERSION))
    // Failure here is an out-of-memory condition, not bad input.
    precondition(LZ4F_isError(code) == 0 && context != nil, "liblz4 could not allocate a compression context")
    self.context = context
  }

  deinit { LZ4F_freeCompressionContext(context) }

  private static func preferences(contentSize: Int) -> LZ4F_preferences_t {
    var preferences = LZ4F_preferences_t()
    preferences.frameInfo.blockSizeID = LZ4F_max64KB
    preferences.frameInfo.blockMode = LZ4F_blockLinked
    preferences.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled
    preferences.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled
    preferences.frameInfo.frameType = LZ4F_frame
    preferences.frameInfo.contentSize = UInt64(contentSize)
    preferences.compressionLevel = 0
    return preferences
  }

  /// Appends one complete LZ4 frame holding `content` to `output`; returns the frame's length.
  package func compress(_ content: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) throws -> Int {
    var preferences = Self.preferences(contentSize: content.count)
    let bound = LZ4F_compressFrameBound(content.count, &preferences)
    let start = output.count
    output.reserveCapacity(start + bound)
    var failure: LZ4Failure?
    var written = 0
    output.append(contentsOf: repeatElement(0, count: bound))
    output.withUnsafeMutableBytes { buffer in
      let destination = buffer.baseAddress! + start
      var position = 0
      func check(_ code: Int) -> Bool {
        if LZ4F_isError(code) != 0 {
          failure = LZ4Failure(description: String(cString: LZ4F_getErrorName(code)))
          return false
        }
        position += code
        return true
      }
      guard check(LZ4F_compressBegin(context, destination, bound, &preferences)) else { return }
      if content.count > 0 {
        guard
          check(
            LZ4F_compressUpdate(
              context, destination + position, bound - position, content.baseAddress, content.count, nil)
          )
        else { return }
      }
      guard check(LZ4F_compressEnd(context, destination + position, bound - position, nil)) else { return }
      written = position
    }
    output.removeLast(bound - written)
    if let failure { throw failure }
    return written
  }
}

/// Decodes one LZ4 frame whose decoded size is known in advance (the batch header records it),
/// so memory is bounded by that size and a frame that would decode to more is refused: no
/// decompression bomb can make a reader allocate more than the limit it checked beforehand.
package final class LZ4FrameDecoder {
  private var context: OpaquePointer?

  package init() {
    var context: OpaquePointer?
    let code = LZ4F_createDecompressionContext(&context, UInt32(LZ4F_VERSION))
    precondition(LZ4F_isError(code) == 0 && context != nil, "liblz4 could not allocate a decompression context")
    self.context = context
  }

  deinit { LZ4F_freeDecompressionContext(context) }

  /// Decodes exactly one frame from `frame` (which must hold that frame and nothing else) into
  /// `expectedLength` bytes. Checks the frame's own header, block and content checksums.
  package func decompress(_ frame: UnsafeRawBufferPointer, expectedLength: Int) throws -> [UInt8] {
    LZ4F_resetDecompressionContext(context)
    var output = [UInt8](repeating: 0, count: expectedLength)
    var failure: LZ4Failure?
    output.withUnsafeMutableBytes { out in
      var consumed = 0
      var produced = 0
      while true {
        var sourceSize = frame.count - consumed
        var destinationSize = expectedLength - produced
        let hint = LZ4F_decompress(
          context,
          destinationSize == 0 ? nil : out.baseAddress! + produced, &destinationSize,
          sourceSize == 0 ? nil : frame.baseAddress! + consumed, &sourceSize,
          nil)
        if LZ4F_isError(hint) != 0 {
          failure = LZ4Failure(description: String(cString: LZ4F_getErrorName(hint)))
          return
        }
        consumed += sourceSize
        produced += destinationSize
        if hint == 0 {
          if consumed != frame.count {
            failure = LZ4Failure(description: "bytes follow the end of the frame")
          } else if produced != expectedLength {
            failure = LZ4Failure(description: "frame decoded to \(produced) bytes, header says \(expectedLength)")
          }
          return
        }
        if sourceSize == 0 && destinationSize == 0 {
          // No progress: either the input ran out or the output is full.
          failure =
            consumed == frame.count
            ? LZ4Failure(description: "frame ends early")
            : LZ4Failure(description: "frame decodes to more than the \(expectedLength) bytes its header declares")
          return
        }
      }
    }
    if let failure { throw failure }
    return output
  }
}
