import Foundation
import RewindTestSupport
import Testing

@testable import RewindJournal

/// A directory that is not a journal is named as such, by the path given, with what is missing:
/// not "in journal DIR", which said the opposite of the message before it.
@Suite struct NotAJournalTests {
  @Test func aReaderNamesTheDirectoryAndTheMissingManifest() throws {
    let dir = TemporaryDirectory("not-a-journal")
    try Files.write(Array("notes".utf8), to: dir.appending("notes.txt"))
    let error = try #require(throws: JournalError.self) { try JournalReader(directory: dir.path) }
    #expect(error.code == .notAJournal)
    #expect(
      error.description.hasPrefix("\(dir.path): not a Rewind journal: it holds no manifest.json. Check the path"),
      "\(error)")
    #expect(!error.description.contains("in journal"), "\(error)")
  }

  @Test func aWriterThatMayNotCreateNamesTheDirectoryAndWhatItHolds() throws {
    let dir = TemporaryDirectory("not-a-journal-writer")
    var options = JournalOptions(durability: .none)
    options.createIfMissing = false
    let empty = try #require(throws: JournalError.self) { try Journal(directory: dir.path, options: options) }
    #expect(empty.code == .notAJournal)
    #expect(
      empty.description.hasPrefix("\(dir.path): not a Rewind journal: it holds no manifest.json and no segment."),
      "\(empty)")

    let missing = try #require(throws: JournalError.self) {
      try Journal(directory: dir.appending("missing"), options: options)
    }
    #expect(missing.code == .notAJournal)
    #expect(missing.description.hasPrefix("\(dir.appending("missing")): "), "\(missing)")
    #expect(!missing.description.contains("in journal"), "\(missing)")
  }
}
