import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// A repair whose move into `quarantine/` fails part way: the error says which call failed on
/// which file, the damaged segment keeps every byte it had (its preallocated zeros aside), nothing
/// half-copied is left in quarantine to pass for what was moved, and the next repair finishes.
@Suite struct QuarantineFaultTests {
  /// What makes a fault strike, and the call the error names.
  struct Case: CustomStringConvertible, Sendable {
    var fault: FaultInjectingFileIO.Fault
    var pathContains: String
    var skip = 0
    var call: String
    var description: String { "\(call) on \(pathContains)" }
  }

  /// The error of a failed repair: an I/O error naming the segment, the call and its errno.
  static func checkError(_ error: JournalError?, segment: String, _ failing: Case) {
    #expect(error?.code == .io, "\(failing): \(String(describing: error))")
    #expect(error?.file == segment, "\(failing): \(String(describing: error))")
    #expect(error?.errno == EIO, "\(failing): \(String(describing: error))")
    #expect(error?.description.contains(failing.call + " ") == true, "\(failing): \(String(describing: error))")
  }

  /// The files in `quarantine/` (none when it does not exist).
  static func quarantined(_ journal: String) -> [String] { Files.list(journal + "/" + Layout.quarantineName) }

  /// Runs a repair of `path` in which `failing` strikes once; returns its error.
  static func failedRepair(_ path: String, _ failing: Case) -> JournalError? {
    let faults = FaultInjectingFileIO()
    faults.arm(failing.fault, pathContains: failing.pathContains, skip: failing.skip)
    var options = JournalOptions()
    options.io = faults
    let error = journalError { _ = try Journal.repair(directory: path, options: options) }
    #expect(faults.struck == 1, "\(failing)")
    return error
  }

  /// A copy (in `path`) of a one-segment journal with a damaged frame at `from`, and its bytes.
  static func damagedTail(seed: UInt64) async throws -> (
    original: TornTailTests.Original, copy: TemporaryDirectory, path: String, from: Int, damaged: [UInt8]
  ) {
    let original = try await TornTailTests.makeOriginal(seed: seed)
    let copy = TemporaryDirectory("quarantine-fault-tail")
    let path = copy.appending("j")
    try Files.copyDirectory(original.dir.path, to: path)
    let from = original.frames[8].offset
    try JournalFixtures.flip(path + "/" + original.segment, at: from + Layout.batchHeaderSize + 3)
    return (original, copy, path, from, try Files.read(path + "/" + original.segment))
  }

  @Test(arguments: [
    Case(fault: .truncateError(EIO), pathContains: ".lz4", call: "ftruncate"),
    Case(fault: .syncError(EIO), pathContains: ".lz4", call: "fsync"),
  ])
  func aFailedCutBeforeAWholeSegmentMovesLeavesItInPlace(_ failing: Case) async throws {
    // Damage at the last segment's first frame moves it whole, its preallocated zeros cut first.
    let original = try await TornTailTests.makeOriginal(batches: 4, seed: 81)
    let copy = TemporaryDirectory("quarantine-fault-whole")
    let path = copy.appending("j")
    try Files.copyDirectory(original.dir.path, to: path)
    var damaged = original.bytes
    damaged[original.frames[0].offset + Layout.batchHeaderSize + 5] ^= 0x5A
    let segmentPath = path + "/" + original.segment
    try Files.write(damaged + [UInt8](repeating: 0, count: 8192), to: segmentPath)

    Self.checkError(Self.failedRepair(path, failing), segment: original.segment, failing)
    try #require(Files.list(path).contains(original.segment), "the segment is still in the journal")
    let left = try Files.read(segmentPath)
    #expect(Array(left.prefix(damaged.count)) == damaged, "every byte is still in the segment")
    #expect(left.dropFirst(damaged.count).allSatisfy { $0 == 0 }, "and zeros after them, if any")
    #expect(Self.quarantined(path).isEmpty, "\(Self.quarantined(path))")

    let report = try Journal.repair(directory: path)
    let moved = try #require(report.moved.first, "\(report)")
    #expect(report.moved.count == 1 && moved.offset == 0, "\(report)")
    #expect(moved.movedTo == Layout.quarantineName + "/" + original.segment, "\(report)")
    #expect(try Files.read(path + "/" + moved.movedTo) == damaged)
    #expect(!Files.list(path).contains(original.segment))
  }

  @Test(arguments: [
    Case(fault: .writeError(EIO), pathContains: ".tail", call: "write"),
    Case(fault: .syncError(EIO), pathContains: ".tail", call: "fsync"),
    // The quarantine folder's sync comes after its new file's, the journal's after both.
    Case(fault: .syncError(EIO), pathContains: "/" + Layout.quarantineName, skip: 1, call: "fsync"),
    Case(fault: .syncError(EIO), pathContains: "/j", skip: 2, call: "fsync"),
    Case(fault: .truncateError(EIO), pathContains: ".lz4", call: "ftruncate"),
  ])
  func aFailedCopyOfATailLeavesTheSegmentWholeAndNoCopy(_ failing: Case) async throws {
    let (original, copy, path, from, damaged) = try await Self.damagedTail(seed: 82)
    defer { withExtendedLifetime(copy) {} }
    let segmentPath = path + "/" + original.segment

    Self.checkError(Self.failedRepair(path, failing), segment: original.segment, failing)
    #expect(try Files.read(segmentPath) == damaged, "the segment is not cut")
    #expect(Self.quarantined(path).isEmpty, "no partial or redundant copy: \(Self.quarantined(path))")

    let report = try Journal.repair(directory: path)
    let moved = try #require(report.moved.first, "\(report)")
    #expect(report.moved.count == 1 && moved.offset == Int64(from), "\(report)")
    #expect(moved.movedTo == Layout.quarantineName + "/\(original.segment).from-\(from).tail", "\(report)")
    #expect(try Files.read(path + "/" + moved.movedTo) == Array(damaged[from...]))
    #expect(try JournalFixtures.readAll(path) == original.records(before: from))
  }

  @Test func aFailedSyncOfATailsCutKeepsTheCopy() async throws {
    // The cut reached the page cache, maybe the disk: the copy is now where the bytes are.
    let (original, copy, path, from, damaged) = try await Self.damagedTail(seed: 83)
    defer { withExtendedLifetime(copy) {} }
    // Not the copy's sync: its name starts with the segment's, in quarantine/.
    let failing = Case(fault: .syncError(EIO), pathContains: "/j/" + original.segment, call: "fsync")
    Self.checkError(Self.failedRepair(path, failing), segment: original.segment, failing)
    let tail = "\(original.segment).from-\(from).tail"
    #expect(Self.quarantined(path) == [tail])
    #expect(try Files.read(path + "/" + Layout.quarantineName + "/" + tail) == Array(damaged[from...]))

    _ = try Journal.repair(directory: path)
    #expect(try JournalFixtures.readAll(path) == original.records(before: from))
    #expect(try Files.read(path + "/" + Layout.quarantineName + "/" + tail) == Array(damaged[from...]))
  }
}
