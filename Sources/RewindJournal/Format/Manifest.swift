import Foundation

/// The journal's manifest: `manifest.json`, written once when the journal is created.
package struct Manifest: Codable, Equatable {
  package var format: Int
  package var journalID: String

  package init(journalID: JournalID) {
    self.format = Int(Layout.formatVersion)
    self.journalID = journalID.description
  }

  package func encoded() -> [UInt8] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
    // Encoding two plain fields cannot fail.
    return Array((try? encoder.encode(self)) ?? Data()) + [0x0A]
  }

  /// The manifest `bytes` hold and its journal id, whatever format it names; nil unless they
  /// are JSON with a format and a well-formed journalID.
  package static func decode(_ bytes: [UInt8]) -> (Manifest, JournalID)? {
    guard let manifest = try? JSONDecoder().decode(Manifest.self, from: Data(bytes)),
      let id = JournalID(hex: manifest.journalID)
    else { return nil }
    return (manifest, id)
  }

  /// The bytes of `directory`'s manifest file (its first 64 KiB: a manifest is a few dozen).
  /// - Throws: what the file layer throws (`SystemCallError`; ENOENT when there is none).
  package static func readBytes(directory: String, io: any FileIO) throws -> [UInt8] {
    let path = directory + "/" + Layout.manifestName
    let fd = try io.open(path, flags: O_RDONLY, mode: 0)
    defer { io.close(fd) }
    return try io.read(fd, count: 64 << 10, at: 0, path: path)
  }

  /// Reads and checks the manifest of `directory`.
  package static func load(directory: String, io: any FileIO) throws -> (Manifest, JournalID) {
    let bytes: [UInt8]
    do {
      bytes = try readBytes(directory: directory, io: io)
    } catch {
      if let error = error as? SystemCallError, error.errno == ENOENT {
        // No directory at all is a wrong path, not a journal that lost its manifest.
        guard io.fileExists(directory) else {
          throw JournalError(.notAJournal, JournalError.noSuchDirectory, directory: directory)
        }
        throw JournalError(
          .notAJournal, "not a Rewind journal: it holds no \(Layout.manifestName)", directory: directory,
          file: Layout.manifestName)
      }
      throw JournalError(error, directory: directory, file: Layout.manifestName)
    }
    guard let (manifest, id) = decode(bytes) else {
      throw JournalError(
        .badManifest, "the manifest is not valid JSON with a format and a journalID", directory: directory,
        file: Layout.manifestName)
    }
    guard manifest.format == Int(Layout.formatVersion) else {
      throw JournalError(
        .badManifest,
        "journal format \(manifest.format) is not supported (this code reads format \(Layout.formatVersion))",
        directory: directory, file: Layout.manifestName)
    }
    return (manifest, id)
  }
}
