import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Seeded random appends, faults and closes against a model of what must be in the journal
/// (task hQ, Dec 5): what each durability policy promises at acknowledgement, and that a failed
/// append leaves nothing and an acknowledged one is never lost, under 1 to 64 producers mixing
/// one-record, many-record and blocking appends, small segments (rolls), small windows (the
/// mapping moving, the early sync under `none`) and faults at every kind of system call.
///
/// Every record's payload names its append, so whatever a reader finds can be traced to the
/// append that made it, and judged by that append's outcome: acknowledged (it must be there, at
/// the sequence numbers it was given), failed with `.durabilityLost` (unknown: all of it or
/// none), or failed otherwise (nothing of it may be there).
@Suite struct AppendDifferentialTests {
  enum Policy: String, CaseIterable, Sendable, CustomStringConvertible {
    case noneMapped, nonePwrite, batched, always
    var description: String { rawValue }

    var durability: Durability {
      switch self {
      case .noneMapped, .nonePwrite: .none
      case .batched: .batched(maxDelay: .microseconds(400))
      case .always: .always
      }
    }
  }

  /// One append and what came of it.
  struct Outcome: Sendable {
    var id: Int
    var producer: Int
    var records: [NewRecord]
    var result: Result<ClosedRange<UInt64>, JournalError>
    /// Segment data syncs seen before the append was made and after it returned.
    var syncsBefore: Int
    var syncsAfter: Int
  }

  /// What a producer does in one round: its appends, by kind.
  enum Kind: Sendable { case one, many, blocking }

  static let faults: [(FaultInjectingFileIO.Fault, String)] = [
    (.writeError(ENOSPC), ".lz4"), (.writeError(EIO), ".lz4"), (.shortWrite(bytes: 7, thenErrno: EIO), ".lz4"),
    (.shortWrite(bytes: 0, thenErrno: ENOSPC), ".lz4"), (.syncError(EIO), ".lz4"), (.truncateError(EIO), ".lz4"),
    (.allocateError(ENOSPC), ".lz4"), (.mapError(ENOMEM), ".lz4"), (.renameError(ENOSPC), ".lz4"),
    (.syncError(EIO), ""), (.writeError(EIO), "index"),
  ]

  static func payload(id: Int, index: Int, filler: Int, random: inout SeededGenerator) -> [UInt8] {
    // Part random (so that frames differ in how well they compress), part repeated (cheap to make).
    let noise = min(filler, 48)
    return Array("a\(id).\(index)|".utf8) + random.bytes(noise)
      + [UInt8](repeating: UInt8(truncatingIfNeeded: id), count: filler - noise)
  }

  /// The append id and record index a payload names.
  static func origin(of payload: [UInt8]) -> (id: Int, index: Int)? {
    guard let bar = payload.firstIndex(of: UInt8(ascii: "|")), payload.first == UInt8(ascii: "a") else { return nil }
    let parts = String(decoding: payload[1..<bar], as: UTF8.self).split(separator: ".")
    guard parts.count == 2, let id = Int(parts[0]), let index = Int(parts[1]) else { return nil }
    return (id, index)
  }

  @Test(arguments: Policy.allCases, 0..<4)
  func randomAppendsFaultsAndClosesKeepExactlyWhatWasAcknowledged(policy: Policy, run: Int) async throws {
    let seed = UInt64(0x6851_0000 + run * 97 + Policy.allCases.firstIndex(of: policy)! * 13)
    var random = SeededGenerator(seed: seed)
    let dir = TemporaryDirectory("append-differential")
    var options = JournalFixtures.options(
      policy.durability, segmentBytes: [2 << 10, 6 << 10, 24 << 10].randomElement(using: &random)!,
      frameBytes: [300, 4 << 10].randomElement(using: &random)!, indexBytes: 512)
    options.preallocationBytes = [4096, 8192, 12_288].randomElement(using: &random)!
    options.mapsActiveSegment = policy != .nonePwrite
    options.compressionThreads = 1
    let context =
      "seed \(seed), policy \(policy), segment \(options.segmentTargetBytes), frame "
      + "\(options.frameTargetBytes), preallocation \(options.preallocationBytes)"

    /// Every append made so far, by id.
    var appends: [Int: Outcome] = [:]
    /// What must be in the journal: each sequence number's payload (acknowledged appends, and
    /// appends of unknown outcome that a reader found).
    var model: [UInt64: [UInt8]] = [:]
    var nextID = 0

    for session in 0..<3 {
      let faults = FaultInjectingFileIO()
      options.io = faults
      let journal = try Journal(directory: dir.path, options: options)
      #expect(journal.lastSequence == UInt64(model.count), "\(context), session \(session)")
      for round in 0..<6 {
        let producers = [1, 1, 2, 2, 8, 64].randomElement(using: &random)!
        let perProducer = producers == 64 ? 2 : Int.random(in: 1...6, using: &random)
        if Int.random(in: 0..<3, using: &random) == 0 {
          let (fault, path) = Self.faults.randomElement(using: &random)!
          faults.arm(fault, pathContains: path, skip: Int.random(in: 0...4, using: &random), mayNotStrike: true)
        }
        let closesMidway = session < 2 && round == 5 && Bool.random(using: &random)
        // Each producer's appends, made up front so that the run is the seed's whatever the schedule.
        var plans: [[(Int, Kind, [NewRecord])]] = []
        for _ in 0..<producers {
          var plan: [(Int, Kind, [NewRecord])] = []
          for _ in 0..<perProducer {
            let kind: Kind = [.one, .one, .many, .many, .blocking].randomElement(using: &random)!
            let count = kind == .one ? 1 : Int.random(in: 1...5, using: &random)
            let big = Int.random(in: 0..<12, using: &random) == 0
            let records = (0..<count).map { index in
              NewRecord(
                timestamp: Int64(nextID),
                payload: Self.payload(
                  id: nextID, index: index,
                  filler: big
                    ? Int.random(in: 5_000...14_000, using: &random) : Int.random(in: 0...700, using: &random),
                  random: &random))
            }
            plan.append((nextID, kind, records))
            nextID += 1
          }
          plans.append(plan)
        }
        let closeAfter = Int.random(in: 0...3, using: &random)
        // Segment syncs held for a while: under `none` the early sync then runs on while the
        // writer stores into the next windows (and a roll waits for it); under the durable
        // policies groups queue up behind the held sync.
        let holdsSyncs = Int.random(in: 0..<4, using: &random) == 0
        let holdFor = Int.random(in: 0...2_000, using: &random)
        if holdsSyncs {
          // Let go from a thread of its own: the cooperative pool's threads may all be blocked
          // behind the held sync (a roll on an appender's thread waits for the early sync).
          faults.holdSyncs()
          Thread.detachNewThread {
            usleep(UInt32(holdFor))
            faults.stopHoldingSyncs()
          }
        }
        let outcomes = await withTaskGroup(of: [Outcome].self) { group in
          for (producer, plan) in plans.enumerated() {
            group.addTask { await Self.produce(plan, producer: producer, journal: journal, faults: faults) }
          }
          if closesMidway {
            group.addTask {
              for _ in 0..<closeAfter { await Task.yield() }
              journal.close()
              return []
            }
          }
          var all: [Outcome] = []
          for await some in group { all += some }
          return all
        }
        faults.disarm()

        for outcome in outcomes {
          appends[outcome.id] = outcome
          let site = "\(context), session \(session), round \(round), append \(outcome.id)"
          switch outcome.result {
          case .success(let range):
            #expect(range.count == outcome.records.count, "\(site)")
            for (sequence, record) in zip(range, outcome.records) {
              #expect(model[sequence] == nil, "\(site): sequence \(sequence) acknowledged twice")
              model[sequence] = record.payload
            }
            if policy == .always || policy == .batched {
              #expect(
                outcome.syncsAfter > outcome.syncsBefore, "\(site): acknowledged before a sync of its segment")
            }
          case .failure(let error):
            #expect(
              [.io, .durabilityLost, .stopped, .closed].contains(error.code), "\(site): unexpected \(error)")
            #expect(error.directory == dir.path && !error.message.isEmpty, "\(site): \(error)")
            if error.code == .closed { #expect(closesMidway, "\(site): \(error)") }
            if error.code == .durabilityLost {
              #expect(journal.failure != nil, "\(site): \(error) did not stop the journal")
            }
          }
        }
        // One producer's appends are numbered in the order they were acknowledged to it.
        for producer in 0..<producers {
          let ranges = outcomes.filter { $0.producer == producer }.sorted { $0.id < $1.id }.compactMap {
            try? $0.result.get()
          }
          for (a, b) in zip(ranges, ranges.dropFirst()) {
            #expect(a.upperBound < b.lowerBound, "\(context): producer \(producer) got \(a) then \(b)")
          }
        }
        if closesMidway { break }
        if journal.failure != nil {
          // A stopped journal refuses every later append, saying nothing of it was written.
          do {
            try await journal.append(NewRecord(timestamp: 0, payload: Array("after the failure".utf8)))
            Issue.record("\(context): an append after the journal stopped was acknowledged")
          } catch let error as JournalError {
            #expect(error.code == .stopped, "\(context): \(error)")
          }
          break
        }
        // Whatever was acknowledged is readable now, by a reader of the directory.
        try Self.check(
          dir.path, model: &model, appends: appends, adopting: false, context: "\(context), round \(round)")
      }
      journal.close()
      try Self.check(
        dir.path, model: &model, appends: appends, adopting: true, context: "\(context), session \(session)")
    }
  }

  /// Makes a producer's appends one after another.
  static func produce(
    _ plan: [(Int, Kind, [NewRecord])], producer: Int, journal: Journal, faults: FaultInjectingFileIO
  ) async -> [Outcome] {
    var outcomes: [Outcome] = []
    for (id, kind, records) in plan {
      let before = faults.segmentDataSyncs
      let result: Result<ClosedRange<UInt64>, JournalError>
      do {
        switch kind {
        case .one:
          let sequence = try await journal.append(records[0])
          result = .success(sequence...sequence)
        case .many:
          result = .success(try await journal.append(records))
        case .blocking:
          result = .success(try journal.appendAndWait(records))
        }
      } catch let error as JournalError {
        result = .failure(error)
      } catch {
        Issue.record("an append threw \(error), not a JournalError")
        continue
      }
      outcomes.append(
        Outcome(
          id: id, producer: producer, records: records, result: result, syncsBefore: before,
          syncsAfter: faults.segmentDataSyncs))
    }
    return outcomes
  }

  /// Reads the journal and compares it with the model: every acknowledged record at its number;
  /// nothing of a failed append unless it failed with `.durabilityLost` (then all of it, in
  /// order); sequence numbers dense. With `adopting`, records of unknown outcome found join the
  /// model (the journal holds them from now on).
  static func check(
    _ directory: String, model: inout [UInt64: [UInt8]], appends: [Int: Outcome], adopting: Bool, context: String
  ) throws {
    let records = try JournalFixtures.readAll(directory)
    var expectedSequence: UInt64 = 1
    var index = 0
    while index < records.count {
      let record = records[index]
      #expect(
        record.sequence == expectedSequence, "\(context): sequence \(record.sequence) after \(expectedSequence - 1)")
      if let payload = model[record.sequence] {
        #expect(payload == record.payload, "\(context): sequence \(record.sequence) holds another record")
        expectedSequence = record.sequence + 1
        index += 1
        continue
      }
      // Not acknowledged: it must be the first record of an append of unknown outcome, whole.
      guard let (id, first) = origin(of: record.payload), let append = appends[id], first == 0 else {
        Issue.record("\(context): sequence \(record.sequence) holds a record no append made whole")
        return
      }
      guard case .failure(let error) = append.result, error.code == .durabilityLost else {
        Issue.record("\(context): sequence \(record.sequence) holds append \(id), which reported \(append.result)")
        return
      }
      let found = records[index..<min(records.count, index + append.records.count)].map(\.payload)
      #expect(found == append.records.map(\.payload), "\(context): append \(id) only partly in the journal")
      if adopting {
        for (offset, payload) in found.enumerated() { model[record.sequence + UInt64(offset)] = payload }
      }
      expectedSequence = record.sequence + UInt64(found.count)
      index += found.count
    }
    let missing = model.keys.filter { $0 >= expectedSequence }.sorted()
    #expect(missing.isEmpty, "\(context): acknowledged records missing from \(missing.first ?? 0): \(missing.count)")
  }
}
