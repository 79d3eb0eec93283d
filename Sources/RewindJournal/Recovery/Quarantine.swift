import Glibc

/// Moves bytes out of the way into `quarantine/`, durably, before anything else changes: first the
/// copy is made and synced, then the source is cut. A crash in between leaves the bytes in both
/// places, never in neither.
package struct Quarantine {
  let directory: String
  let io: any FileIO

  package init(directory: String, io: any FileIO) {
    self.directory = directory
    self.io = io
  }

  var folder: String { directory + "/" + Layout.quarantineName }

  /// What a message about the missing segment `name` adds when the journal's quarantine holds
  /// files of that name (`name`, or `name.2`... when the name was taken: a repair moves later
  /// segments there first, so one stopped part way leaves them there): which files, and that
  /// running the repair again finishes it. An earlier repair may have moved a segment of that
  /// name too (numbering starts again at the cut), so they are named as candidates. Empty when
  /// there is none.
  package static func whereMissing(segment name: String, directory: String, io: any FileIO) -> String {
    let folder = directory + "/" + Layout.quarantineName
    guard io.isRealDirectory(folder), let files = try? io.contentsOfDirectory(folder) else { return "" }
    let candidates = files.filter { file in
      let suffix = file.utf8.dropFirst(name.utf8.count + 1)
      return file == name
        || (file.hasPrefix(name + ".") && !suffix.isEmpty && suffix.allSatisfy { (48...57).contains($0) })
    }
    guard !candidates.isEmpty else { return "" }
    let named = candidates.map { Layout.quarantineName + "/" + $0 }.joined(separator: ", ")
    return " (\(named) may hold it: a repair moves segments to quarantine/, and one stopped part way "
      + "finishes when run again)"
  }

  private func uniqueName(_ stem: String) -> String {
    var name = stem
    var counter = 1
    while io.fileExists(folder + "/" + name) {
      counter += 1
      name = "\(stem).\(counter)"
    }
    return name
  }

  /// Makes a new file in the quarantine folder, named `stem` (with a suffix if that is taken),
  /// holding what `write` writes to the descriptor and path it is handed, durably. The bytes are
  /// written to `<name>.partial`, synced, and renamed once whole, then the folder and the journal
  /// directory are synced: a process killed meanwhile leaves only a `.partial` file, not part of
  /// the bytes under the name of what was kept. A failure leaves neither. Returns the name.
  private func keep(as stem: String, _ write: (_ fd: Int32, _ path: String) throws -> Void) throws -> String {
    try io.makeJournalFolder(folder)
    let name = uniqueName(stem)
    let target = folder + "/" + name
    let partial = folder + "/" + uniqueName(name + ".partial")
    let out = try io.open(partial, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
    do {
      do {
        defer { io.close(out) }
        try write(out, partial)
        try io.sync(out, metadata: true, path: partial)
      }
      try io.rename(partial, to: target)
      try io.syncDirectory(folder)
      try io.syncDirectory(directory)
    } catch {
      try? io.removeFile(partial)
      try? io.removeFile(target)
      throw error
    }
    return name
  }

  /// Moves the bytes of `segment` from `offset` to its end (or to `end`, when only zeros follow
  /// it: preallocated space, not worth keeping) into a new quarantine file, then truncates the
  /// segment at `offset`. Returns the quarantine file's path relative to the journal and the
  /// number of bytes moved; when there is nothing to move (the file ends at `offset`, or only
  /// zeros follow it), no quarantine file is made, the zeros are cut, and the path is nil.
  /// A failure before the cut leaves no quarantine file; a failed sync of the cut leaves the copy.
  /// The copy is made as `<name>.partial` and renamed once whole and synced: a process killed
  /// while copying leaves only that file, whose bytes the segment still holds.
  package func moveTail(of segment: String, from offset: Int64, upTo end: Int64? = nil) throws -> (String?, Int64) {
    let source = directory + "/" + segment
    let fd = try io.open(source, flags: O_RDWR, mode: 0)
    defer { io.close(fd) }
    let fileSize = try io.size(fd, path: source)
    let size = min(fileSize, max(offset, end ?? fileSize))
    guard size > offset else {
      if fileSize > offset {
        try io.truncate(fd, to: offset, path: source)
        try io.sync(fd, metadata: true, path: source)
      }
      return (nil, 0)
    }
    let name = try keep(as: "\(segment).from-\(offset).tail") { out, partial in
      var position = offset
      while position < size {
        let chunk = try io.read(fd, count: Int(min(Int64(1 << 20), size - position)), at: position, path: source)
        if chunk.isEmpty { break }
        try chunk.withUnsafeBytes { (bytes) throws in
          try io.writeAll(out, bytes, at: position - offset, path: partial)
        }
        position += Int64(chunk.count)
      }
    }
    do {
      try io.truncate(fd, to: offset, path: source)
    } catch {
      // Until the cut, the segment holds every byte: the copy is not needed, and left behind it
      // would pass for what was moved (the next try copies to `<name>.2`) and hold on to its
      // space on a full disk.
      try? io.removeFile(folder + "/" + name)
      throw error
    }
    try io.sync(fd, metadata: true, path: source)
    return (Layout.quarantineName + "/" + name, size - offset)
  }

  /// Writes the segment header of `segment` again (`SegmentHeader.rebuilt`, for the journal
  /// `journalID` and the first sequence its name says) over its damaged one, after keeping the
  /// damaged bytes in a new quarantine file (`<name>.header`), durably: a crash before the write
  /// leaves the segment as it was and the copy beside it, one during it a header the next repair
  /// writes again. Returns the copy's path relative to the journal.
  package func rewriteHeader(of segment: String, journalID: JournalID, firstSequence: UInt64) throws -> String {
    let source = directory + "/" + segment
    let fd = try io.open(source, flags: O_RDWR, mode: 0)
    defer { io.close(fd) }
    let damaged = try io.read(fd, count: Layout.segmentHeaderSize, at: 0, path: source)
    let header = SegmentHeader.rebuilt(over: damaged, journalID: journalID, firstSequence: firstSequence).encoded()
    let name = try keep(as: "\(segment).header") { out, partial in
      try damaged.withUnsafeBytes { try io.writeAll(out, $0, at: 0, path: partial) }
    }
    try header.withUnsafeBytes { try io.writeAll(fd, $0, at: 0, path: source) }
    try io.sync(fd, metadata: false, path: source)
    return Layout.quarantineName + "/" + name
  }

  /// Moves a whole file of the journal (`file`, relative to the journal directory) into
  /// quarantine, under the name `name` (its own by default; with a suffix if that is taken),
  /// first cutting it at `end` when that is given and shorter (only zeros follow: preallocated
  /// space, not worth keeping). Cut before the move, so that a failure leaves the file where it
  /// was, with nothing but those zeros gone. Returns its new relative path.
  package func moveFile(_ file: String, as name: String? = nil, upTo end: Int64? = nil) throws -> String {
    let source = directory + "/" + file
    if let end {
      let fd = try io.open(source, flags: O_RDWR, mode: 0)
      defer { io.close(fd) }
      if try io.size(fd, path: source) > end {
        try io.truncate(fd, to: end, path: source)
        try io.sync(fd, metadata: true, path: source)
      }
    }
    try io.makeJournalFolder(folder)
    let name = uniqueName(name ?? file)
    try io.rename(source, to: folder + "/" + name)
    try io.syncDirectory(folder)
    try io.syncDirectory(String(source[..<source.lastIndex(of: "/")!]))
    return Layout.quarantineName + "/" + name
  }
}
