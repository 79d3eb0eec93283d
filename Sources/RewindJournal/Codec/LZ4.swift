// The one Swift file that imports liblz4. Nothing from CLZ4 escapes it: callers see byte arrays
// and `LZ4Failure`, never a C type.
internal import CLZ4
import Dispatch
import Foundation
import Synchronization

/// Why liblz4 refused a frame, in its own words.
package struct LZ4Failure: Error, CustomStringConvertible {
  package let description: String
}

/// Compresses whole batches into standard LZ4 frames: 64 KiB blocks, block checksums, content
/// checksum and content size all on, so `lz4 -dc` and any conforming decoder can check and decode
/// them. Content under `freshStateBytes` (one block) is framed with FLG 0x5C (linked blocks, as
/// every frame was until larger frames changed; for one block it makes no difference), larger
/// content with FLG 0x7C (independent blocks: each compressed from a fresh state, so the blocks
/// of a frame are compressed on several threads at once and the frame's bytes still depend on its
/// content alone). LZ4HC (compaction) writes linked blocks, whose history makes them smaller.
/// Readers take both, as every LZ4 frame decoder does. Owns reusable compression state; not
/// thread-safe (the single writer owns it).
///
/// The fast encoder (appends) frames the blocks itself around liblz4's block compressor; the
/// frames are the ones liblz4's frame API makes with the same settings (`LZ4FrameEncoderTests`):
/// a small frame's block is compressed with a stream reset fast, as the frame API does for
/// linked blocks, every block of a larger frame from a fresh state, as it does for independent
/// ones. The frame API costs more than the compression of small frames and cleared
/// buffers of its own for every frame: `LZ4F_compressBegin` a 16 KiB table, and liblz4 1.9.4
/// also about 190 KiB of working buffer for frames of several linked blocks (64 KiB of input
/// plus 128 KiB of history; measured while appends wrote linked blocks: about 190 instructions
/// per record of a 1,000-record append); it also copies content under a block into a buffer of
/// its own first. LZ4HC (compaction) goes through the frame API.
///
/// Small content (one command appended alone) is often stored as a raw block without trying to
/// compress it, while LZ4 is seen to save next to nothing on it (`SmallContentSampler`).
package final class LZ4FrameEncoder {
  private var context: OpaquePointer?
  private let stream: UnsafeMutablePointer<LZ4_stream_t>
  /// liblz4's `compressionLevel`: 0 is the fast compressor appends use; 3...12 select LZ4HC
  /// (high compression: slower to write, as fast to read, same frame format).
  private let level: Int32

  /// The fast encoder the writer uses for appends.
  package convenience init() { self.init(compressionLevel: 0) }

  /// Frames go through liblz4's frame API even at level 0 (tests compare the two).
  private let usesFrameAPI: Bool

  /// The most threads that compress the blocks of one frame (the calling thread among them).
  private let participantLimit: Int
  /// One block compressor's state (`LZ4_sizeofState()` bytes) per participant, made on first use.
  private var states: [UnsafeMutableRawPointer] = []
  /// Hands out the jobs of a frame of several blocks to its participants.
  private let jobCounter = JobCounter()

  /// An encoder at `compressionLevel` (0: fast; 3...12: LZ4HC, as `lz4 -3` ... `lz4 -12`).
  /// Above 0 every frame goes through liblz4's frame API; at 0 too with `usingFrameAPI`.
  /// `participants` caps the threads compressing the blocks of one frame (default: one per
  /// active processor); tests vary it, the frames do not depend on it.
  package init(compressionLevel: Int32, usingFrameAPI: Bool = false, participants: Int? = nil) {
    self.level = compressionLevel
    self.usesFrameAPI = usingFrameAPI
    self.participantLimit = max(1, participants ?? Self.processors)
    var context: OpaquePointer?
    let code = LZ4F_createCompressionContext(&context, UInt32(LZ4F_VERSION))
    // Failure here is an out-of-memory condition, not bad input.
    precondition(LZ4F_isError(code) == 0 && context != nil, "liblz4 could not allocate a compression context")
    self.context = context
    guard let stream = LZ4_createStream() else { preconditionFailure("liblz4 could not allocate a stream") }
    self.stream = stream
  }

  deinit {
    LZ4F_freeCompressionContext(context)
    LZ4_freeStream(stream)
    for state in states { state.deallocate() }
  }

  /// The processors this process may run on, read once.
  private static let processors = ProcessInfo.processInfo.activeProcessorCount

  /// The block size (BD 0x40: 64 KiB).
  static let blockBytes = 64 << 10

  /// Whether small content is worth compressing, from what compressing it saved lately.
  private var sampler = SmallContentSampler()

  /// Appends one complete LZ4 frame holding `content` to `output`; returns the frame's length.
  package func compress(_ content: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) throws -> Int {
    let start = output.count
    let length = try compress(content, into: &output, at: start)
    output.removeLast(output.count - start - length)
    return length
  }

  /// Writes one complete LZ4 frame holding `content` into `output` from `offset` on and returns
  /// the frame's length. `output` is made long enough first (it may grow, never shrinks): the
  /// caller keeps the length it uses. Its bytes before `offset` are left as they are, and so are
  /// those after the room the frame is given (`frameBound(content.count)` bytes from `offset`
  /// at level 0, liblz4's `LZ4F_compressFrameBound` through its frame API); the bytes between
  /// the frame's end and the end of that room may be overwritten (a frame of several blocks is
  /// compressed into worst-case slots of the room first, see `compressIndependentBlocks`).
  package func compress(_ content: UnsafeRawBufferPointer, into output: inout [UInt8], at offset: Int) throws -> Int {
    guard level == 0 && content.count > 0 && !usesFrameAPI else {
      return try compressFrame(content, into: &output, at: offset)
    }
    output.ensureCount(offset + Self.frameBound(content.count))
    return output.withUnsafeMutableBytes { buffer in
      content.count <= Self.blockBytes
        ? compressOneBlock(content, into: buffer.baseAddress! + offset)
        : compressIndependentBlocks(content, into: buffer.baseAddress! + offset)
    }
  }

  /// The most bytes a block of `length` bytes takes in a frame: its size (4), LZ4's bound of its
  /// compressed bytes, its checksum (4).
  private static func blockBound(_ length: Int) -> Int { 8 + Int(LZ4_compressBound(Int32(length))) }

  /// The room of one full block (`blockBound(blockBytes)`).
  fileprivate static let slotBytes = blockBound(blockBytes)

  /// The most bytes `compressOneBlock` or `compressIndependentBlocks` writes for `count` bytes of
  /// content: frame header (15), each block's bound, the end mark (4) and the content checksum (4).
  static func frameBound(_ count: Int) -> Int {
    let whole = count / blockBytes
    let last = count % blockBytes
    return 15 + 4 + 4 + whole * slotBytes + (last > 0 ? blockBound(last) : 0)
  }

  /// Writes the frame header: magic, FLG `flags`, BD 0x40 (64 KiB blocks), the content size and
  /// the header checksum.
  private static func storeHeader(flags: UInt8, contentSize: Int, into frame: UnsafeMutableRawPointer) {
    frame.storeBytes(of: Layout.lz4FrameMagic.littleEndian, as: UInt32.self)
    frame.storeBytes(of: flags, toByteOffset: 4, as: UInt8.self)
    frame.storeBytes(of: 0x40, toByteOffset: 5, as: UInt8.self)
    frame.storeBytes(of: UInt64(contentSize).littleEndian, toByteOffset: 6, as: UInt64.self)
    let headerChecksum = XXH32.hashOfTen(frame + 4)
    frame.storeBytes(of: UInt8(truncatingIfNeeded: headerChecksum >> 8), toByteOffset: 14, as: UInt8.self)
  }

  /// Content from which a one-block frame's block is compressed from a fresh state (FLG 0x7C),
  /// as the blocks of larger frames are; smaller content is compressed by a stream reset fast
  /// (FLG 0x5C). A fresh state (`LZ4_compress_fast_extState`) clears its 16 KiB table for each
  /// block, but then hashes into 8,192 two-byte entries, where a stream reset fast keeps its
  /// 4,096 four-byte ones, stale, and checks every match it finds there against the block's
  /// bounds. Measured on this machine (liblz4 1.9.4, the benchmark corpus's decoded content cut
  /// into pieces, 160 MB compressed each way, best of 5 runs): at 256 bytes a stream takes 0.20 s
  /// against 0.29 s (the clearing), at 512 0.28 against 0.31, at 1 KiB 0.49 against 0.36, at
  /// 4 KiB and 12 KiB 0.58–0.59 against 0.33–0.35 s; a fresh state also stores 0.1–1.2% fewer
  /// bytes at every size. The frames of 64 producers' groups (about 8–12 KiB) are these.
  static let freshStateBytes = 1 << 10

  /// The frame of `content` (1...64 KiB: one block): header (FLG 0x5C: version 1, linked blocks,
  /// block checksum, content size, content checksum; BD 0x40: 64 KiB blocks; FLG 0x7C,
  /// independent blocks, from `freshStateBytes` on), then the block, compressed (by a stream
  /// reset fast, or from a fresh state from `freshStateBytes` on; stored raw if it would not
  /// shrink, or, for small content, if `sampler` says small content does not shrink lately), with
  /// its XXH32, then the end mark and the content's XXH32 (the block's, when the block is raw:
  /// both checksums are XXH32 with seed 0 of the same bytes). Linked or independent makes no
  /// difference to one block; the flag says which compressor made it, as liblz4's frame API
  /// would with the same setting. Written at `frame`, which has room for
  /// `frameBound(content.count)` bytes; returns the frame's length.
  private func compressOneBlock(_ content: UnsafeRawBufferPointer, into frame: UnsafeMutableRawPointer) -> Int {
    let length = content.count
    let fresh = length >= Self.freshStateBytes
    Self.storeHeader(flags: fresh ? 0x7C : 0x5C, contentSize: length, into: frame)
    let source = content.baseAddress!
    let block = frame + 19
    let tried = sampler.shouldTry(length)
    var compressed: Int32 = 0
    if tried && fresh {
      // The stream's memory is a state of the same size; the next small frame resets it again.
      compressed = LZ4_compress_fast_extState(
        UnsafeMutableRawPointer(stream), source.assumingMemoryBound(to: CChar.self),
        block.assumingMemoryBound(to: CChar.self), Int32(length), LZ4_compressBound(Int32(length)), 1)
    } else if tried {
      LZ4_resetStream_fast(stream)
      compressed = LZ4_compress_fast_continue(
        stream, source.assumingMemoryBound(to: CChar.self), block.assumingMemoryBound(to: CChar.self),
        Int32(length), LZ4_compressBound(Int32(length)), 1)
    }
    let raw = !(compressed > 0 && Int(compressed) < length)
    let stored = raw ? length : Int(compressed)
    if raw { block.copyMemory(from: source, byteCount: length) }
    frame.storeBytes(of: (UInt32(stored) | (raw ? 0x8000_0000 : 0)).littleEndian, toByteOffset: 15, as: UInt32.self)
    let blockChecksum = XXH32.hash(UnsafeRawBufferPointer(start: block, count: stored))
    frame.storeBytes(of: blockChecksum.littleEndian, toByteOffset: 19 + stored, as: UInt32.self)
    if tried { sampler.record(content: length, stored: stored) }
    let end = 19 + stored + 4
    frame.storeBytes(of: UInt32(0), toByteOffset: end, as: UInt32.self)
    let checksum = raw ? blockChecksum : XXH32.hash(content)
    frame.storeBytes(of: checksum.littleEndian, toByteOffset: end + 4, as: UInt32.self)
    return end + 8
  }

  /// Content from which the blocks of a frame are compressed by more than one thread (a second
  /// block of at least 8 KiB). Measured on 2 cores with the benchmark's Notebook records, one
  /// thread against two: 142 against 148 µs a frame at 66,000 bytes, even at 68,000–70,000,
  /// 161 against 146 µs at 74,000, 216–227 against 147–181 µs at 100,000; below it, waking a
  /// second thread costs what it saves.
  static let parallelContentBytes = blockBytes + (8 << 10)

  /// The frame of `content` (over 64 KiB: several blocks): header (FLG 0x7C: version 1,
  /// independent blocks, block checksum, content size, content checksum; BD 0x40: 64 KiB
  /// blocks), then each 64 KiB piece as a block compressed from a fresh state (stored raw if it
  /// would not shrink) with its XXH32, then the end mark and the content's XXH32.
  ///
  /// Independent blocks: each block's bytes depend on its piece alone, so the blocks can be
  /// compressed at the same time, on up to `participantLimit` threads (the calling thread
  /// among them, `DispatchQueue.concurrentPerform`), and the frame is the same bytes however
  /// many took part and whichever compressed what. Each participant has its own state and takes
  /// the next job not taken yet (a block, or the content checksum) until none are left, writing
  /// each block with its size and checksum into the block's own slot of `frame` (at its worst-
  /// case position); the calling thread then moves the blocks down to follow each other.
  /// Written at `frame`, which has room for `frameBound(content.count)` bytes; returns the
  /// frame's length.
  ///
  /// A fresh state is `LZ4_compress_fast_extState`'s, as in liblz4's frame API: for a block of
  /// 64 KiB it hashes positions into 8,192 two-byte entries where a stream (linked blocks, the
  /// one-block path) has 4,096 four-byte ones. Measured with `rewind-bench --child append-bulk`
  /// (1,000 records per append, callgrind, all threads): 2,674 instructions per record against
  /// 3,159 with linked blocks (liblz4's compressor 1,976 against 2,583), 101.5 against 100.3
  /// bytes per record on disk, and reading those frames back (`--child read`, 300,000 records)
  /// 566 M instructions against 529 M: its blocks hold 20% more matches, shorter ones (580,320
  /// against 483,255 in the first 30 frames, 1.22 against 1.47 MB of literals). Each block from
  /// a stream reset fast instead would read back in 525 M, but cost 3,338 instructions per record
  /// and take 102.8 bytes.
  private func compressIndependentBlocks(_ content: UnsafeRawBufferPointer, into frame: UnsafeMutableRawPointer)
    -> Int
  {
    Self.storeHeader(flags: 0x7C, contentSize: content.count, into: frame)
    let blocks = (content.count + Self.blockBytes - 1) / Self.blockBytes
    let participants = content.count >= Self.parallelContentBytes ? min(participantLimit, blocks) : 1
    while states.count < participants {
      states.append(UnsafeMutableRawPointer.allocate(byteCount: Int(LZ4_sizeofState()), alignment: 16))
    }
    let slots = frame + 15
    var contentChecksum: UInt32 = 0
    withUnsafeMutablePointer(to: &contentChecksum) { checksum in
      states.withUnsafeBufferPointer { states in
        jobCounter.reset()
        let jobs = BlockJobs(
          content: content, slots: slots, blocks: blocks, states: states, checksum: checksum, taken: jobCounter)
        if participants == 1 {
          jobs.run(participant: 0)
        } else {
          DispatchQueue.concurrentPerform(iterations: participants) { jobs.run(participant: $0) }
        }
      }
    }
    var position = 15
    for index in 0..<blocks {
      let slot = slots + index * Self.slotBytes
      let stored = Int(UInt32(littleEndian: slot.loadUnaligned(as: UInt32.self)) & 0x7FFF_FFFF)
      if frame + position != slot { (frame + position).copyMemory(from: slot, byteCount: 8 + stored) }
      position += 8 + stored
    }
    frame.storeBytes(of: UInt32(0), toByteOffset: position, as: UInt32.self)
    frame.storeBytes(of: contentChecksum.littleEndian, toByteOffset: position + 4, as: UInt32.self)
    return position + 8
  }

  /// Compresses block `index` of `content` from a fresh `state` into `slot`: its size (high bit
  /// set when stored raw, as it is when compressing would not shrink it), its bytes, its XXH32.
  fileprivate static func compressBlock(
    _ index: Int, of content: UnsafeRawBufferPointer, into slot: UnsafeMutableRawPointer,
    state: UnsafeMutableRawPointer
  ) {
    let start = index * blockBytes
    let length = min(blockBytes, content.count - start)
    let source = content.baseAddress! + start
    let block = slot + 4
    let compressed = LZ4_compress_fast_extState(
      state, source.assumingMemoryBound(to: CChar.self), block.assumingMemoryBound(to: CChar.self),
      Int32(length), LZ4_compressBound(Int32(length)), 1)
    let raw = !(compressed > 0 && Int(compressed) < length)
    let stored = raw ? length : Int(compressed)
    if raw { block.copyMemory(from: source, byteCount: length) }
    slot.storeBytes(of: (UInt32(stored) | (raw ? 0x8000_0000 : 0)).littleEndian, as: UInt32.self)
    let checksum = XXH32.hash(UnsafeRawBufferPointer(start: block, count: stored))
    slot.storeBytes(of: checksum.littleEndian, toByteOffset: 4 + stored, as: UInt32.self)
  }

  private static func preferences(contentSize: Int, level: Int32) -> LZ4F_preferences_t {
    var preferences = LZ4F_preferences_t()
    preferences.frameInfo.blockSizeID = LZ4F_max64KB
    // As the fast encoder writes (see `freshStateBytes`): independent blocks from that size on;
    // LZ4HC (compaction) keeps linked blocks, whose history makes its frames smaller.
    preferences.frameInfo.blockMode =
      level == 0 && contentSize >= freshStateBytes ? LZ4F_blockIndependent : LZ4F_blockLinked
    preferences.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled
    preferences.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled
    preferences.frameInfo.frameType = LZ4F_frame
    preferences.frameInfo.contentSize = UInt64(contentSize)
    preferences.compressionLevel = level
    return preferences
  }

  /// A frame made by liblz4's frame API (LZ4HC, or empty content), written into `output` from
  /// `offset` on (as `compress(_:into:at:)`: `output` only grows).
  private func compressFrame(_ content: UnsafeRawBufferPointer, into output: inout [UInt8], at offset: Int) throws
    -> Int
  {
    var preferences = Self.preferences(contentSize: content.count, level: level)
    let bound = LZ4F_compressFrameBound(content.count, &preferences)
    output.ensureCount(offset + bound)
    var failure: LZ4Failure?
    var written = 0
    output.withUnsafeMutableBytes { buffer in
      let destination = buffer.baseAddress! + offset
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
    if let failure { throw failure }
    return written
  }
}

/// The jobs of one frame of independent blocks, shared by the threads compressing it: jobs
/// 0..<`blocks` compress a block each, job `blocks` computes the content checksum; `taken` hands
/// out each job once (`LZ4FrameEncoder.compressIndependentBlocks`). Raw pointers into memory the
/// encoder keeps for the duration of the frame: each job writes only its own slot (or
/// `checksum`), each participant uses only its own state, and `concurrentPerform` returns only
/// once every participant has.
private struct BlockJobs: @unchecked Sendable {
  let content: UnsafeRawBufferPointer
  let slots: UnsafeMutableRawPointer
  let blocks: Int
  let states: UnsafeBufferPointer<UnsafeMutableRawPointer>
  let checksum: UnsafeMutablePointer<UInt32>
  let taken: JobCounter

  func run(participant: Int) {
    while case let job = taken.take(), job <= blocks {
      if job == blocks {
        checksum.pointee = XXH32.hash(content)
      } else {
        LZ4FrameEncoder.compressBlock(
          job, of: content, into: slots + job * LZ4FrameEncoder.slotBytes, state: states[participant])
      }
    }
  }
}

/// The next job of a frame (see `BlockJobs`), reused from frame to frame.
private final class JobCounter: Sendable {
  private let next = Atomic<Int>(0)
  /// Starts a frame: the next job is job 0.
  func reset() { next.store(0, ordering: .relaxed) }
  /// The next job not taken yet (numbers past the last mean none is left). Relaxed: what the
  /// jobs write is published to the caller by `concurrentPerform`'s return.
  func take() -> Int { next.add(1, ordering: .relaxed).oldValue }
}

/// Whether the fast encoder tries LZ4 on small content or stores it raw straight away.
///
/// On a few hundred bytes, what LZ4 saves depends on the payloads: measured one record per frame,
/// the benchmark's Notebook records (binary fields, random ids, prose from a word list) shrank by
/// 0–2% under 384 bytes, at 0.2–0.3 µs each, about a sixth of such an append; English prose cut
/// into 128–384-byte pieces shrinks by 3–8%, JSON lines by 25–45%. So the encoder watches what
/// compressing small content saved: while it saves at least 2%, every small frame is compressed;
/// below that, only one in `sampleEvery` is, to notice when the payloads change, and the rest are
/// stored raw. Content of `limit` bytes or more (groups of commands) is always compressed. The
/// decisions depend only on the contents framed before, so the same appends make the same bytes.
struct SmallContentSampler {
  /// Content under this many bytes is small.
  static let limit = 512
  /// At least one small frame in this many is compressed. A try on a one-record frame costs about
  /// 2,800 instructions, most of a one-record append's 3,300: one in 16 added about 175 to every
  /// such append, one in 64 adds about 44 (callgrind, `rewind-bench --child append`), and content
  /// that starts to compress is still noticed within 64 frames, since one try that saves more
  /// than 16% lifts the average over `worthwhile`.
  static let sampleEvery = 64
  /// 2% of 65,536: the share below which compressing small content is not worth its time.
  static let worthwhile = 1_311

  /// Moving average of the share LZ4 saved of the small content it was tried on, in 65,536ths;
  /// each try weighs an eighth. Starts at all of it, so the first small frames are compressed.
  private(set) var savedShare = 65_536
  /// Small frames stored raw without trying since the last try.
  private var skipped = 0

  /// Whether to try compressing content of `count` bytes.
  mutating func shouldTry(_ count: Int) -> Bool {
    guard count < Self.limit else { return true }
    if savedShare >= Self.worthwhile || skipped + 1 >= Self.sampleEvery {
      skipped = 0
      return true
    }
    skipped += 1
    return false
  }

  /// Learns what a try saved: `content` bytes stored in `stored` (`content` when it did not shrink).
  mutating func record(content: Int, stored: Int) {
    guard content < Self.limit, content > 0 else { return }
    let share = (content - stored) * 65_536 / content
    savedShare += (share - savedShare) / 8
  }
}

/// Decodes one LZ4 frame whose decoded size is known in advance (the batch header records it),
/// so memory is bounded by that size and a frame that would decode to more is refused: no
/// decompression bomb can make a reader allocate more than the limit it checked beforehand.
package final class LZ4FrameDecoder {
  private var context: OpaquePointer?
  /// Where `decompress(_:expectedLength:_:)` decodes, reused from frame to frame; used by one
  /// thread at a time (no dynamic exclusivity checks).
  @exclusivity(unchecked) private var scratch: [UInt8] = []

  /// Whether the frame's own xxHash32 checksums (block and content) are computed and compared.
  private let verifiesChecksums: Bool

  /// - Parameter verifyChecksums: false only where the frame's bytes were checked already (the
  ///   journal cursor checks each frame's CRC-32C from its batch header before decoding it). Even
  ///   then a compressed block's checksum is compared, as liblz4 1.9.4 compares it.
  package init(verifyChecksums: Bool = true) {
    self.verifiesChecksums = verifyChecksums
    var context: OpaquePointer?
    let code = LZ4F_createDecompressionContext(&context, UInt32(LZ4F_VERSION))
    precondition(LZ4F_isError(code) == 0 && context != nil, "liblz4 could not allocate a decompression context")
    self.context = context
  }

  deinit { LZ4F_freeDecompressionContext(context) }

  /// Decodes exactly one frame from `frame` (which must hold that frame and nothing else) into
  /// `expectedLength` bytes. Checks the frame's own header, block and content checksums.
  package func decompress(_ frame: UnsafeRawBufferPointer, expectedLength: Int) throws -> [UInt8] {
    var output = [UInt8](repeating: 0, count: expectedLength)
    let failure = output.withUnsafeMutableBytes { decode(frame, into: $0) }
    if let failure { throw failure }
    return output
  }

  /// Decodes one frame as `decompress(_:expectedLength:)` does, into a buffer this decoder keeps
  /// for the next frame, and calls `body` with the decoded bytes (valid only during the call).
  /// Saves an allocation per frame; the buffer is dropped after frames over 4 MiB.
  package func decompress<R>(
    _ frame: UnsafeRawBufferPointer, expectedLength: Int, _ body: (UnsafeRawBufferPointer) throws -> R
  ) throws -> R {
    if scratch.count < expectedLength { scratch = [UInt8](repeating: 0, count: max(expectedLength, 4096)) }
    defer { if scratch.count > 1 << 22 { scratch = [] } }
    return try scratch.withUnsafeMutableBytes { buffer in
      let out = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<expectedLength])
      if let failure = decode(frame, into: out) { throw failure }
      return try body(UnsafeRawBufferPointer(out))
    }
  }

  /// Decodes `frame` into exactly `out.count` bytes; the failure, or nil. Without checksums, the
  /// frame a writer makes (one block) is decoded by `decodeOneBlock`; any other frame, and any
  /// frame that one declines, by liblz4's frame decoder, whose failure says what is wrong.
  private func decode(_ frame: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> LZ4Failure? {
    if !verifiesChecksums && Self.decodeOneBlock(frame, into: out) { return nil }
    return decodeFrame(frame, into: out)
  }

  /// The frame of one block, decoded without liblz4's frame decoder, whose state machine (and
  /// the copy out of its own buffer when the output is under the block size) cost more than
  /// decoding a one-record block. Takes only a frame liblz4's frame decoder would accept with
  /// checksums skipped, decoding to the same bytes: magic 0x184D2204; FLG version 01, content
  /// size present, reserved bit and dictionary ID clear, block independence, block checksum and
  /// content checksum either way; BD with reserved bits clear and a block size ID of 4...7;
  /// a correct header checksum; a content size of `out.count` (not 0, not over the block size);
  /// one block, raw (high bit of its size set) holding exactly `out.count` bytes or compressed
  /// and decoding to exactly `out.count`; its 4-byte checksum if FLG has one, then the end mark
  /// (a zero word), then the 4-byte content checksum if FLG has one, then nothing. The content
  /// checksum and a raw block's checksum are not read (the caller checked the frame's bytes
  /// another way); a compressed block's checksum is compared, as liblz4 1.9.4 does even when
  /// told to skip checksums (frames without block checksums save that).
  /// Returns false, with `out` in any state, for every other frame: the caller then decodes it
  /// with liblz4's frame decoder, which decodes it or says what is wrong with it.
  static func decodeOneBlock(_ frame: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
    let length = out.count
    // Header 15, block size 4, a block of at least one byte, end mark 4.
    guard length > 0, frame.count >= 24, let base = frame.baseAddress, let destination = out.baseAddress else {
      return false
    }
    @inline(__always) func word(_ offset: Int) -> UInt32 {
      UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
    let flags = base.load(fromByteOffset: 4, as: UInt8.self)
    let descriptor = base.load(fromByteOffset: 5, as: UInt8.self)
    guard word(0) == Layout.lz4FrameMagic, flags & 0b1100_1011 == 0b0100_1000,
      descriptor & 0b1000_1111 == 0, descriptor >= 0x40
    else { return false }
    let maximumBlock = 1 << (8 + 2 * Int(descriptor >> 4))  // 4: 64 KiB, 5: 256 KiB, 6: 1 MiB, 7: 4 MiB
    let contentSize = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 6, as: UInt64.self))
    guard length <= maximumBlock, contentSize == UInt64(length),
      base.load(fromByteOffset: 14, as: UInt8.self)
        == UInt8(truncatingIfNeeded: XXH32.hashOfTen(base + 4) >> 8)
    else { return false }
    let blockSize = word(15)
    let stored = Int(blockSize & 0x7FFF_FFFF)
    let endMark = 19 + stored + (flags & 0x10 != 0 ? 4 : 0)
    guard stored > 0, stored <= maximumBlock, endMark + 4 + (flags & 0x04 != 0 ? 4 : 0) == frame.count,
      word(endMark) == 0
    else { return false }
    if blockSize & 0x8000_0000 != 0 {
      guard stored == length else { return false }
      destination.copyMemory(from: base + 19, byteCount: length)
      return true
    }
    // liblz4 1.9.4 compares a compressed block's checksum even when told to skip checksums.
    if flags & 0x10 != 0 && word(19 + stored) != XXH32.hash(UnsafeRawBufferPointer(start: base + 19, count: stored)) {
      return false
    }
    let decoded = LZ4_decompress_safe(
      (base + 19).assumingMemoryBound(to: CChar.self), destination.assumingMemoryBound(to: CChar.self),
      Int32(stored), Int32(length))
    return decoded == Int32(length)
  }

  /// Decodes `frame` into exactly `out.count` bytes with liblz4's frame decoder; the failure, or nil.
  func decodeFrame(_ frame: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> LZ4Failure? {
    LZ4F_resetDecompressionContext(context)
    let expectedLength = out.count
    var options = LZ4F_decompressOptions_t()
    options.skipChecksums = verifiesChecksums ? 0 : 1
    var consumed = 0
    var produced = 0
    while true {
      var sourceSize = frame.count - consumed
      var destinationSize = expectedLength - produced
      let hint = LZ4F_decompress(
        context,
        destinationSize == 0 ? nil : out.baseAddress! + produced, &destinationSize,
        sourceSize == 0 ? nil : frame.baseAddress! + consumed, &sourceSize,
        &options)
      if LZ4F_isError(hint) != 0 { return LZ4Failure(description: String(cString: LZ4F_getErrorName(hint))) }
      consumed += sourceSize
      produced += destinationSize
      if hint == 0 {
        if consumed != frame.count { return LZ4Failure(description: "bytes follow the end of the frame") }
        if produced != expectedLength {
          return LZ4Failure(description: "frame decoded to \(produced) bytes, header says \(expectedLength)")
        }
        return nil
      }
      if sourceSize == 0 && destinationSize == 0 {
        // No progress: either the input ran out or the output is full.
        return consumed == frame.count
          ? LZ4Failure(description: "frame ends early")
          : LZ4Failure(description: "frame decodes to more than the \(expectedLength) bytes its header declares")
      }
    }
  }
}
