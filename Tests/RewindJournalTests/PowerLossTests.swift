import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// A power cut at any step of a writer (before or after each sync, before each rename, removal and
/// cut), under the durability POSIX promises and no more (`PowerLossFileIO`): a file keeps the bytes
/// of its last sync, a directory the names of its last sync. The crash tests kill the process, which
/// loses nothing the kernel holds; these lose everything not yet synced, or, in a torn image, keep
/// part of it, and check what recovery makes of each image:
/// - under `always` and `batched`, every record acknowledged before the cut is there, as written;
/// - under every policy, the journal opens for writing (recovery moves a torn tail aside; under
///   `none`, after `repair` when pages written back out of order left damage before whole
///   frames), its records read without error from the first, and each record there is the one its
///   sequence number was acknowledged for.
/// Three producers append groups of one to three records, in segments of 4 KiB (so the writer
/// rolls, seals and indexes again and again), with the active segment mapped or written by
/// `pwrite`, and with sealed segments compacted behind the writer.
@Suite struct PowerLossTests {
  enum Setup: String, CaseIterable, CustomStringConvertible, Sendable {
    case always, alwaysWithoutMapping, batched, alwaysCompacting, none, noneInLargeSegments
    var description: String { rawValue }

    /// Segments of 4 KiB (a roll every few appends), or of 16 KiB, with records four times as
    /// large: segments of several pages, which a disk writing back dirty pages out of order can
    /// tear in their middle.
    var segmentBytes: Int { self == .noneInLargeSegments ? 16 << 10 : 4 << 10 }
    var recordScale: Int { self == .noneInLargeSegments ? 4 : 1 }

    var durability: Durability {
      switch self {
      case .always, .alwaysWithoutMapping, .alwaysCompacting: .always
      case .batched: .batched(maxDelay: .milliseconds(1))
      case .none, .noneInLargeSegments: .none
      }
    }

    /// Whether an acknowledgement promises the record survives a power cut.
    var promisesDurability: Bool { durability != .none }
  }

  // One setup at a time: each keeps two threads busy taking and checking images, and six at once
  // held the cores for minutes in the parallel suite, past other tests' bounded waits.
  @Test(.serialized, arguments: Setup.allCases)
  func everyAcknowledgedRecordSurvivesAPowerCutAtAnyStep(_ setup: Setup) async throws {
    let dir = TemporaryDirectory("power-\(setup)", inMemory: true)
    let acknowledged = Locked<[UInt64: [UInt8]]>([:])
    let io = PowerLossFileIO(root: dir.path) { acknowledged.withLock { $0 } }
    var options = JournalFixtures.options(
      setup.durability, segmentBytes: setup.segmentBytes, frameBytes: 1 << 10, indexBytes: 512)
    options.preallocationBytes = setup == .alwaysWithoutMapping ? 0 : 8 << 10
    options.compactsSealedSegments = setup == .alwaysCompacting
    options.io = io
    let path = dir.appending("journal")
    let journal = try Journal(directory: path, options: options)
    try await withThrowingTaskGroup(of: Void.self) { group in
      for producer in 0..<3 {
        group.addTask {
          var random = SeededGenerator(seed: 7_100 + UInt64(producer))
          for number in 0..<40 {
            let records = (0..<Int.random(in: 1...3, using: &random)).map { part in
              NewRecord(
                timestamp: Int64(number),
                payload: Array("\(producer).\(number).\(part) ".utf8)
                  + random.eventLikePayload(Int.random(in: 20...160, using: &random) * setup.recordScale))
            }
            let sequences = try await journal.append(records)
            acknowledged.withLock { known in
              for (offset, record) in records.enumerated() {
                known[sequences.lowerBound + UInt64(offset)] = record.payload
              }
            }
          }
        }
      }
      try await group.waitForAll()
    }
    journal.close()
    let cuts = io.taken
    try #require(cuts.count > 50, "\(cuts.count) cuts")
    try #require(JournalFixtures.segments(path).count > 3, "the writer rolled: \(JournalFixtures.segments(path))")
    var failures: [String] = []
    var imagesWithRecords = 0
    let recoveryImages = Locked(0)
    let repaired = Locked(0)
    for (number, cut) in cuts.enumerated() {
      for order in [nil, Tearing.Order.inOrder, .anyPages] {
        let image = TemporaryDirectory("power-\(setup)-image", inMemory: true)
        var tearing = order.map { Tearing(seed: UInt64(number), order: $0) }
        try cut.write(into: image.path, tearing: &tearing)
        let what = "cut \(number) (\(order.map { "torn, \($0)" } ?? "synced only")), \(cut.moment)"
        // An eighth of the cuts' in-order torn images are recovered under a power cut too, at each of recovery's
        // own steps: what it moves aside or cuts, and the index it writes again, must leave every
        // acknowledged record whichever step the cut stops it at.
        let recoveryCut = order == .inOrder && number % 8 == 0
        if let failure = Self.check(
          image.appending("journal"), after: cut, setup: setup, cuttingRecovery: recoveryCut ? recoveryImages : nil,
          repaired: repaired)
        {
          failures.append("\(what): \(failure)")
        } else if !cut.acknowledged.isEmpty {
          imagesWithRecords += 1
        }
      }
    }
    #expect(failures.isEmpty, "\(failures.count) of \(cuts.count * 3) images: \(failures.prefix(5))")
    #expect(imagesWithRecords > cuts.count, "\(imagesWithRecords) images held acknowledged records")
    // Recovery had work to make durable in some: a torn tail to move aside, an index to write.
    #expect(recoveryImages.withLock { $0 } > 20, "\(recoveryImages.withLock { $0 }) images of recoveries cut")
    // How many images under `none` needed `repair` depends on the producers' interleaving (none
    // may in a run): `outOfOrderPagesUnderNoneNeedRepair` makes that case on purpose.
    _ = repaired.withLock { $0 }
  }

  /// Under `none`, a segment of several pages whose middle page did not reach the disk while a
  /// later one did (write-back in any order, before any sync): a torn frame before whole ones,
  /// which opening refuses as damage to committed records (nothing records how far the journal
  /// was synced). `repair` moves it aside with what follows it; every record before it is kept,
  /// and the journal opens (FORMAT.md, opening's step 6; Known limits).
  @Test func outOfOrderPagesUnderNoneNeedRepair() async throws {
    let dir = TemporaryDirectory("power-pages", inMemory: true)
    var options = JournalFixtures.options(.none, segmentBytes: 64 << 10, frameBytes: 1 << 10, indexBytes: 1 << 20)
    options.preallocationBytes = 0
    let journal = try Journal(directory: dir.path, options: options)
    var random = SeededGenerator(seed: 7_311)
    for number in 0..<90 {
      let payload = Array("\(number) ".utf8) + random.eventLikePayload(Int.random(in: 120...240, using: &random))
      _ = try await journal.append(NewRecord(timestamp: Int64(number), payload: payload))
    }
    journal.close()
    let segment = dir.appending(try #require(JournalFixtures.segments(dir.path).last))
    var bytes = try Files.read(segment)
    let frames = segmentFrames(in: bytes)
    try #require(bytes.count > 3 * 4096 && frames.count == 90, "\(bytes.count) bytes, \(frames.count) frames")
    // The second page never written back; the first and third were.
    bytes.replaceSubrange(4096..<8192, with: [UInt8](repeating: 0, count: 4096))
    try Files.write(bytes, to: segment)
    let refused = #expect(throws: JournalError.self) { try Journal(directory: dir.path, options: options).close() }
    #expect(refused?.isDamage == true, "\(String(describing: refused))")
    _ = try Journal.repair(directory: dir.path)
    try Journal(directory: dir.path, options: options).close()
    let kept = frames.filter { $0.end <= 4096 }.count
    let cursor = try JournalReader(directory: dir.path).records(from: 1)
    var read: [UInt64] = []
    while let record = try cursor.next() { read.append(record.sequence) }
    #expect(read == Array(1...UInt64(kept)), "\(read.count) records read, \(kept) before the lost page")
  }

  /// What is wrong with the journal at `path` in a power cut's image, or nil. With
  /// `cuttingRecovery`, the recovering opening runs under a `PowerLossFileIO` too, and each image
  /// of a cut during it is checked as well (without cutting further), counted there.
  static func check(
    _ path: String, after cut: PowerCut, setup: Setup, cuttingRecovery: Locked<Int>? = nil,
    repaired: Locked<Int>? = nil
  ) -> String? {
    guard FileManager.default.fileExists(atPath: path) else {
      return setup.promisesDurability && !cut.acknowledged.isEmpty ? "the journal's directory is gone" : nil
    }
    let parent = String(path[..<path.lastIndex(of: "/")!])
    let io = cuttingRecovery.map { _ in PowerLossFileIO(root: parent, durable: true) { cut.acknowledged } }
    // Opening for writing recovers what the cut left (a torn tail moved aside).
    var options = JournalOptions(durability: .none)
    options.preallocationBytes = 0
    if let io { options.io = io }
    do {
      try Journal(directory: path, options: options).close()
    } catch let damage as JournalError where damage.isDamage && !setup.promisesDurability {
      // Under `none` nothing was synced since the last seal, and a disk that wrote back the
      // active segment's pages out of order can leave a torn frame before whole ones: damage
      // followed by valid frames, which opening refuses as it would damage to committed data.
      // `repair` moves it aside (with everything after it), and the journal opens.
      repaired?.withLock { $0 += 1 }
      do {
        _ = try Journal.repair(directory: path)
        try Journal(directory: path, options: options).close()
      } catch {
        return "the journal refused to open (\(damage)), and does not open after `repair`: \(error)"
      }
    } catch {
      return "the journal does not open: \(error)"
    }
    for (number, recovering) in (io?.taken ?? []).enumerated() {
      for order in [nil, Tearing.Order.inOrder] {
        let image = TemporaryDirectory("power-recovery-image", inMemory: true)
        cuttingRecovery?.withLock { $0 += 1 }
        var tearing = order.map { Tearing(seed: UInt64(number), order: $0) }
        do {
          try recovering.write(into: image.path, tearing: &tearing)
        } catch {
          return "its recovery's cut \(number) cannot be written: \(error)"
        }
        if let failure = check(image.appending("journal"), after: recovering, setup: setup, repaired: repaired) {
          return
            "cut \(number) of its recovery (\(order == nil ? "synced only" : "torn")), \(recovering.moment): \(failure)"
        }
      }
    }
    var found: [UInt64: [UInt8]] = [:]
    do {
      let cursor = try JournalReader(directory: path).records(from: 1)
      while let record = try cursor.next() { found[record.sequence] = record.payload }
    } catch {
      return "its records do not read: \(error)"
    }
    for (sequence, payload) in found where cut.acknowledged[sequence].map({ $0 != payload }) == true {
      return "sequence \(sequence) holds another record than the one acknowledged"
    }
    guard setup.promisesDurability else { return nil }
    let lost = cut.acknowledged.keys.filter { found[$0] == nil }.sorted()
    return lost.isEmpty
      ? nil : "\(lost.count) acknowledged records gone (sequences \(lost.first!)...\(lost.last!)), \(found.count) read"
  }
}
