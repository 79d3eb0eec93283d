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
    #expect(missing.description == "\(dir.appending("missing")): the directory does not exist. Check the path")
  }

  /// A reader of a path that does not exist said the directory "holds no manifest.json", with
  /// advice about restoring a lost manifest, where the writer said it does not exist (a library
  /// user's walkthrough, Dec 7). Both say so now.
  @Test func aReaderOfAMissingDirectorySaysItDoesNotExist() throws {
    let dir = TemporaryDirectory("not-a-journal-missing")
    let path = dir.appending("missing")
    let error = try #require(throws: JournalError.self) { try JournalReader(directory: path) }
    #expect(error.code == .notAJournal)
    #expect(error.description == "\(path): the directory does not exist. Check the path")
  }

  /// A writer whose directory's parent does not exist failed with a bare "mkdir …: No such file
  /// or directory" (a library user's walkthrough, Dec 7): it names the missing parent now.
  @Test func aWriterWhoseParentIsMissingNamesIt() throws {
    let dir = TemporaryDirectory("not-a-journal-parent")
    let parent = dir.appending("missing")
    let error = try #require(throws: JournalError.self) {
      try Journal(directory: parent + "/journal", options: JournalOptions(durability: .none))
    }
    #expect(error.code == .io && error.errno == ENOENT)
    #expect(
      error.message
        == "cannot create the journal's directory: its parent directory \(parent) does not exist (a journal is "
        + "created in an existing directory, not with its parents)")
    #expect(!FileManager.default.fileExists(atPath: parent))
  }
}
