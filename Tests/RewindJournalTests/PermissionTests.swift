import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// Files of a journal are readable and writable by their owner only (it creates them with explicit modes).
@Suite struct PermissionTests {
  @Test func everyFileIsOwnerOnly() async throws {
    let parent = TemporaryDirectory("modes")
    let path = parent.appending("journal")
    // The umask is process-wide (tests run in parallel), so it is left alone: under the usual
    // 022 a mode of 0644 or 0666 would show up here as 0644, and fail.
    let options = JournalFixtures.options(.always, segmentBytes: 1 << 10)
    let journal = try Journal(directory: path, options: options)
    _ = try await JournalFixtures.write(journal, batches: 30, seed: 91)
    journal.close()
    // A torn tail makes the quarantine folder and a file in it.
    let last = try #require(JournalFixtures.segments(path).last)
    try Files.write(try Files.read(path + "/" + last) + [1, 2, 3], to: path + "/" + last)
    let reopened = try Journal(directory: path, options: options)
    #expect(!reopened.recovery.isClean)
    reopened.close()

    #expect(JournalFixtures.mode(path) == 0o700, "journal directory: \(String(JournalFixtures.mode(path), radix: 8))")
    var checked = 0
    for name in Files.list(path) {
      let full = path + "/" + name
      let mode = JournalFixtures.mode(full)
      if name == "quarantine" {
        #expect(mode == 0o700, "quarantine: \(String(mode, radix: 8))")
        for inner in Files.list(full) {
          let innerMode = JournalFixtures.mode(full + "/" + inner)
          #expect(innerMode == 0o600, "quarantine/\(inner): \(String(innerMode, radix: 8))")
          checked += 1
        }
      } else {
        #expect(mode == 0o600, "\(name): \(String(mode, radix: 8))")
        checked += 1
      }
    }
    #expect(Set(Files.list(path)).isSuperset(of: ["LOCK", "index", "manifest.json", "quarantine"]))
    #expect(checked >= 6, "segments, manifest, lock, index and a quarantined tail")
  }
}
