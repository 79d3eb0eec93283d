import Foundation
import RewindTestSupport
import Synchronization
import Testing

@testable import RewindJournal

/// Options that cannot work are refused by `Journal.init` with an error naming the field and its
/// value, before anything is created on disk; options that can work produce frames that readers
/// with the same limits accept.
@Suite struct JournalOptionsTests {
  /// One bad value per case, with the words the error must contain.
  static let badOptions: [(String, @Sendable (inout JournalOptions) -> Void)] = [
    ("segmentTargetBytes is 0", { $0.segmentTargetBytes = 0 }),
    ("segmentTargetBytes is 1023", { $0.segmentTargetBytes = 1023 }),
    ("frameTargetBytes is 0", { $0.frameTargetBytes = 0 }),
    ("indexIntervalBytes is -1", { $0.indexIntervalBytes = -1 }),
    ("preallocationBytes is -4096", { $0.preallocationBytes = -4096 }),
    ("preallocationBytes is 9223372036854775807", { $0.preallocationBytes = Int.max }),
    ("preallocationBytes is 1073741825", { $0.preallocationBytes = (1 << 30) + 1 }),
    ("limits.maxRecordBytes is -1", { $0.limits.maxRecordBytes = -1 }),
    ("limits.maxRecordBytes is \(Int.max)", { $0.limits.maxRecordBytes = .max }),
    ("limits.maxBatchBytes is 1000", { $0.limits = JournalLimits(maxRecordBytes: 1000, maxBatchBytes: 1000) }),
    ("limits.maxBatchBytes is 2147483647", { $0.limits.maxBatchBytes = Int(Int32.max) }),
    ("compressionThreads is 0", { $0.compressionThreads = 0 }),
    ("compressionThreads is 257", { $0.compressionThreads = 257 }),
    ("the delay must not be negative", { $0.durability = .batched(maxDelay: .milliseconds(-1)) }),
  ]

  @Test(arguments: 0..<badOptions.count)
  func badOptionsAreRefusedBeforeTouchingTheDisk(index: Int) throws {
    let (words, change) = Self.badOptions[index]
    var options = JournalOptions(durability: .none)
    change(&options)
    let dir = TemporaryDirectory()
    let path = dir.appending("journal")
    let error = try #require(throws: JournalError.self) { try Journal(directory: path, options: options) }
    #expect(error.code == .invalidArgument)
    #expect(error.description.contains("JournalOptions." + words) || error.description.contains(words), "\(error)")
    #expect(!FileManager.default.fileExists(atPath: path), "nothing is created")
  }

  @Test func theDefaultsAndTheSmallestAcceptedValuesAreAccepted() throws {
    #expect(JournalOptions().problem == nil)
    var options = JournalOptions(durability: .batched(maxDelay: .zero))
    options.segmentTargetBytes = JournalOptions.minimumSegmentTargetBytes
    options.frameTargetBytes = 1
    options.indexIntervalBytes = 1
    options.preallocationBytes = 0
    options.limits = JournalLimits(maxRecordBytes: 0, maxBatchBytes: Layout.recordHeaderSize)
    #expect(options.problem == nil)
    let dir = TemporaryDirectory()
    let journal = try Journal(directory: dir.appending("journal"), options: options)
    #expect(try journal.appendAndWait([NewRecord(timestamp: 1, payload: [])]) == 1...1)
    journal.close()
  }

  /// A frame target above `limits.maxBatchBytes` does not make frames that readers with the same
  /// limits refuse: a group of appends is cut into frames of at most `maxBatchBytes`.
  @Test func framesStayWithinTheBatchLimitWhateverTheFrameTarget() throws {
    let limits = JournalLimits(maxRecordBytes: 1_000, maxBatchBytes: 4_096)
    var options = JournalOptions(durability: .none)
    options.limits = limits
    options.frameTargetBytes = 1 << 20
    let dir = TemporaryDirectory()
    let journal = try Journal(directory: dir.path, options: options)
    let outcomes = Mutex<[Result<ClosedRange<UInt64>, JournalError>]>([])
    let payloads = (0..<20).map { [UInt8](repeating: UInt8($0), count: 1_000) }
    // Queued without writing, then written together: one group of 20 appends (20,400 bytes).
    for payload in payloads {
      journal.enqueue([NewRecord(timestamp: 1, payload: payload)], expectedFirst: nil) { outcome in
        outcomes.withLock { $0.append(outcome) }
      }
    }
    journal.lead()
    journal.close()
    #expect(outcomes.withLock { $0.count } == 20)
    #expect(outcomes.withLock { $0.allSatisfy { (try? $0.get()) != nil } })
    let reader = try JournalReader(directory: dir.path, limits: limits)
    let read = try JournalFixtures.readAll(reader.records())
    #expect(read.count == payloads.count)
    #expect(zip(read, payloads).allSatisfy { $0.payload == $1 }, "the records read back as appended")
    let report = try reader.verify()
    #expect(report.isSound, "\(report)")
    #expect(report.batches > 1, "the group was cut into several frames")
  }
}
