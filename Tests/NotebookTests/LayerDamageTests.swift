import Foundation
import Notebook
import Rewind
import RewindJournal
import RewindTestSupport
import Testing

/// Damage at every layer of a journal directory, table-driven: each file the journal and the
/// model layer keep (segments, index, snapshots, lock file, manifest), truncated, zero-filled,
/// bit-flipped or deleted.
///
/// Derived data (index, snapshots, lock file) recovers by itself: the journal opens, replays to
/// the same digest, and takes new commands. Damage to committed data (segments, manifest) is
/// refused or moved aside with its location (file, byte offset, sequence numbers). In no case is
/// a committed record lost without a report, and nothing crashes.
@Suite struct LayerDamageTests {
  enum Layer: String, CaseIterable, CustomStringConvertible {
    case firstSegment, middleSegment, lastSegment, index, snapshot, lock, manifest
    var description: String { rawValue }
    var isDerived: Bool { [.index, .snapshot, .lock].contains(self) }
  }

  enum Damage: String, CaseIterable, CustomStringConvertible {
    case truncated, zeroFilled, bitFlipped, deleted
    var description: String { rawValue }
  }

  static func options() -> JournalOptions {
    var options = JournalOptions(durability: .none)
    options.segmentTargetBytes = 4 << 10
    options.indexIntervalBytes = 512
    return options
  }

  /// A Notebook journal with several segments, an index and two snapshots, written once.
  final class Fixture: Sendable {
    let directory = TemporaryDirectory("layers")
    let records: [JournalRecord]
    let digest: StateDigest
    let segments: [String]

    init() async throws {
      let manager = try await writeWorkload(directory.path, seed: 77, commands: 160, options: options())
      manager.close()
      try Snapshots.update(Workspace.self, directory: directory.path, every: 60)
      let cursor = try JournalReader(directory: directory.path).records()
      var records: [JournalRecord] = []
      while let record = try cursor.next() { records.append(record) }
      self.records = records
      digest = try StateDigest.of(Replay.rebuild(Workspace.self, directory: directory.path).state)
      segments = Files.list(directory.path).filter { $0.hasSuffix(".lz4") }
    }

    /// Whether `records` are the first records of the fixture (compared without printing them).
    func hasPrefix(_ records: [JournalRecord]) -> Bool {
      records.count <= self.records.count && zip(records, self.records).allSatisfy { $0 == $1 }
    }

    func file(_ layer: Layer) throws -> String {
      switch layer {
      case .firstSegment: return segments[0]
      case .middleSegment: return segments[segments.count / 2]
      case .lastSegment: return segments[segments.count - 1]
      case .index: return "index"
      case .lock: return "LOCK"
      case .manifest: return "manifest.json"
      case .snapshot:
        let snapshots = Files.list(directory.appending("snapshots")).filter { $0.hasSuffix(".snapshot") }
        return "snapshots/" + (try #require(snapshots.last))
      }
    }
  }

  static func damage(_ path: String, _ damage: Damage) throws {
    var bytes = try Files.read(path)
    switch damage {
    case .deleted:
      try FileManager.default.removeItem(atPath: path)
      return
    case .truncated:
      bytes.removeLast(bytes.count - bytes.count / 2)
    case .zeroFilled:
      // The lock file is empty: zeros written into it stand for junk left there.
      let start = bytes.count / 3
      let end = bytes.isEmpty ? 64 : min(bytes.count, start + 64)
      if bytes.count < end { bytes += [UInt8](repeating: 0, count: end - bytes.count) }
      for i in start..<end { bytes[i] = 0 }
    case .bitFlipped:
      if bytes.isEmpty { bytes = [0xFF] } else { bytes[bytes.count / 2] ^= 0x10 }
    }
    try Files.write(bytes, to: path)
  }

  /// Every record a reader returns, or the error that stopped it.
  static func readAll(_ directory: String) -> (records: [JournalRecord], error: (any Error)?) {
    var records: [JournalRecord] = []
    do {
      let cursor = try JournalReader(directory: directory).records()
      while let record = try cursor.next() { records.append(record) }
      return (records, nil)
    } catch {
      return (records, error)
    }
  }

  static func isLocated(_ error: JournalError) -> Bool {
    guard error.file != nil else { return false }
    if error.code == .corrupt || error.code == .sequenceBreak { return error.offset != nil && error.sequences != nil }
    return true
  }

  static let fixture = Task { try await Fixture() }

  @Test(arguments: Layer.allCases, Damage.allCases)
  func damageIsRecoveredOrLocated(layer: Layer, damage: Damage) async throws {
    let fixture = try await Self.fixture.value
    let copy = TemporaryDirectory("layer-damage")
    let path = copy.appending("j")
    try Files.copyDirectory(fixture.directory.path, to: path)
    let file = try fixture.file(layer)
    let sizeBefore = Files.size(path + "/" + file)
    try Self.damage(path + "/" + file, damage)
    let context = "\(damage) \(file) (\(layer), \(sizeBefore) bytes)"

    // Reading never crashes; what it returns is a prefix of what was committed, and when it
    // stops early it says where.
    let read = Self.readAll(path)
    #expect(fixture.hasPrefix(read.records), "\(context): not a prefix")
    if let error = read.error {
      let located = (error as? JournalError).map(Self.isLocated) ?? false
      #expect(located, "\(context): the reader's error does not locate the damage: \(error)")
    } else if read.records.count < fixture.records.count {
      // Reading fewer records without an error is only fine when opening reports it.
      #expect(layer == .lastSegment, "\(context): \(read.records.count) of \(fixture.records.count) records read")
    }

    // Opening for writing: recovers, moves a torn tail aside with its location, or refuses with
    // a located error.
    let opened: Journal?
    do {
      opened = try Journal(directory: path, options: Self.options())
    } catch let error as JournalError {
      #expect(!layer.isDerived, "\(context): derived data must not stop the journal opening: \(error)")
      #expect(Self.isLocated(error), "\(context): \(error)")
      if layer == .manifest {
        #expect(error.code == .badManifest || error.code == .notAJournal, "\(context): \(error)")
        #expect(error.file == "manifest.json", "\(context): \(error)")
      }
      opened = nil
    }
    if let journal = opened {
      let recovery = journal.recovery
      journal.close()
      for moved in recovery.movedAside {
        #expect(moved.segment == file, "\(context): \(moved)")
        #expect(Files.size(path + "/" + moved.movedTo) == Int(moved.length), "\(context): \(moved)")
      }
      let after = Self.readAll(path)
      #expect(fixture.hasPrefix(after.records), "\(context): not a prefix")
      if let error = after.error {
        // Opening checks sealed segments only at their ends; a reader still finds and locates
        // damage inside one.
        #expect([Layer.firstSegment, .middleSegment].contains(layer), "\(context): \(error)")
        let located = (error as? JournalError).map(Self.isLocated) ?? false
        #expect(located, "\(context): \(error)")
        #expect(try !JournalReader(directory: path).verify().isSound, "\(context)")
        return
      }
      if after.records.count < fixture.records.count {
        #expect(!recovery.movedAside.isEmpty, "\(context): records lost without a report")
      }
      if layer.isDerived || recovery.isClean {
        #expect(
          fixture.hasPrefix(after.records) && after.records.count == fixture.records.count,
          "\(context): \(after.records.count) of \(fixture.records.count) records")
        let replayed = try Replay.run(Workspace.self, directory: path)
        #expect(try StateDigest.of(replayed.state) == fixture.digest, "\(context)")
        #expect(replayed.report.lastSequence == UInt64(fixture.records.count), "\(context)")
        if layer == .snapshot && damage != .deleted {
          #expect(replayed.report.skippedSnapshots.map(\.file) == [String(file.dropFirst("snapshots/".count))])
        }
        if layer == .index {
          #expect(recovery.indexRepairReason != nil, "\(context): the index was not rebuilt")
        }
      }
      // The journal takes new commands once it opens.
      let manager = try NotebookManager(directory: path, options: Self.options(), ids: .sequential(prefix: 1 << 40))
      try await manager.createNotebook(title: "after damage")
      #expect(manager.lastSequence == UInt64(after.records.count + 1), "\(context)")
      manager.close()
      #expect(try JournalReader(directory: path).verify().isSound, "\(context)")
    } else {
      // Refused: nothing was changed, so restoring the file restores the journal.
      #expect(Files.size(path + "/quarantine") == -1 || Files.list(path + "/quarantine").isEmpty, "\(context)")
      try Files.copyDirectory(fixture.directory.path + "/" + file, to: path + "/" + file)
      #expect(Self.readAll(path).records.count == fixture.records.count, "\(context)")
      try Journal(directory: path, options: Self.options()).close()
    }

    // Verification of committed data locates every problem it finds.
    if layer != .manifest {
      let report = try JournalReader(directory: path).verify()
      for problem in report.problems { #expect(problem.file.hasSuffix(".lz4"), "\(context): \(problem)") }
    }
  }
}
