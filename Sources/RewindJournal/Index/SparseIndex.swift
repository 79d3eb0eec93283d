import Glibc

/// One entry of the sparse index: where the batch starting at `firstSequence` lies, and the
/// latest timestamp of any record before it.
package struct IndexEntry: Equatable {
  package var firstSequence: UInt64
  package var segment: UInt64
  package var offset: Int64
  /// The largest timestamp of all records before this batch (`Int64.min` if none).
  package var maxTimestampBefore: Int64

  package static let size = 40

  package func encode(into writer: inout ByteWriter) {
    let start = writer.bytes.count
    writer.write(firstSequence)
    writer.write(segment)
    writer.write(UInt64(bitPattern: offset))
    writer.write(maxTimestampBefore)
    writer.write(UInt32(0))
    writer.write(CRC32C.checksum(writer.bytes[start...]))
  }

  /// Whether this entry can come after `previous` in a well-formed index: a later batch, at a later
  /// place (judged on nothing else: not on the segments, which may have lost what they name).
  package func follows(_ previous: IndexEntry) -> Bool {
    firstSequence > previous.firstSequence
      && (segment > previous.segment || (segment == previous.segment && offset > previous.offset))
  }

  package static func decode(_ bytes: ArraySlice<UInt8>) -> IndexEntry? {
    guard bytes.count == size else { return nil }
    var reader = ByteReader(bytes)
    let entry = IndexEntry(
      firstSequence: reader.read()!, segment: reader.read()!, offset: Int64(bitPattern: reader.read()!),
      maxTimestampBefore: reader.read()!)
    _ = reader.read(UInt32.self)
    let crc: UInt32 = reader.read()!
    guard CRC32C.checksum(bytes.prefix(size - 4)) == crc else { return nil }
    return entry
  }
}

/// The sparse index (`index` in the journal directory): derived data mapping sequence numbers and
/// times to (segment, offset). It holds an entry for the first batch of every segment and then one
/// whenever at least `indexIntervalBytes` of the segment have passed since the last entry.
///
/// Nothing depends on it being present or right: every entry is checked before use, and the
/// writer rebuilds whatever part is missing, stale or damaged when it opens the journal.
package struct SparseIndex {
  package var entries: [IndexEntry] = []
  /// The last well-formed entry of the file as loaded (right checksum, each one after the one
  /// before it), whether or not it fits the segments: the furthest batch the index says was
  /// committed. Entries are written only for committed batches in segments already on disk, so
  /// a reader that ends before it (in the same segment, or in an earlier one) has lost records,
  /// unless it is a stale entry of a segment compaction rewrote, which is never the last one.
  package var lastNamed: IndexEntry?
  /// The segments that well-formed entries of the file as loaded name and that were not among
  /// the loaded segments, ascending, each with the first sequence of the last batch named in it.
  package var missingSegments: [(segment: UInt64, lastNamed: UInt64)] = []

  package static let headerSize = 32
  private static let tag: UInt32 = 0x5849_5752  // "RWIX"

  package init(entries: [IndexEntry] = []) { self.entries = entries }

  package static func header(journalID: JournalID) -> [UInt8] {
    var writer = ByteWriter(capacity: headerSize)
    writer.write(tag)
    writer.write(Layout.formatVersion)
    writer.write(UInt16(0))
    writer.write(journalID.bytes)
    writer.write(UInt32(0))
    writer.write(CRC32C.checksum(writer.bytes))
    return writer.bytes
  }

  /// Loads the longest prefix of entries that is well-formed and consistent with `segments`
  /// (first sequence → file size). Returns how many bytes of the file that prefix spans, so the
  /// writer can cut the rest. Reads on through the well-formed entries after that prefix too (none,
  /// unless the index is stale or names what is gone) for `lastNamed` and `missingSegments`.
  package static func load(
    directory: String, journalID: JournalID, segments: [UInt64: Int64], io: any FileIO
  ) -> (SparseIndex, validBytes: Int64) {
    let (index, validBytes, _) = loadReportingFailures(
      directory: directory, journalID: journalID, segments: segments, io: io)
    return (index, validBytes)
  }

  /// `load`, and whether it read the whole file: false when opening it (for any reason but its
  /// absence) or a read failed, which leaves the index empty or short for this load only. A reader
  /// keeps only a whole load for its later cursors: a short one would hide what the rest names.
  package static func loadReportingFailures(
    directory: String, journalID: JournalID, segments: [UInt64: Int64], io: any FileIO
  ) -> (SparseIndex, validBytes: Int64, readWhole: Bool) {
    let path = directory + "/" + Layout.indexName
    let fd: Int32
    do {
      fd = try io.open(path, flags: O_RDONLY, mode: 0)
    } catch {
      return (SparseIndex(), 0, (error as? SystemCallError)?.errno == ENOENT)
    }
    defer { io.close(fd) }
    guard let head = try? io.read(fd, count: headerSize, at: 0, path: path) else { return (SparseIndex(), 0, false) }
    guard head == header(journalID: journalID) else { return (SparseIndex(), 0, true) }
    var index = SparseIndex()
    var offset = Int64(headerSize)
    // Where the prefix of entries consistent with `segments` ends, once it has.
    var validBytes: Int64?
    // The segment of the entry before, and its size (nil: not among `segments`).
    var segment: (first: UInt64, size: Int64?)?
    let chunkEntries = 4096
    var readWhole = true
    scan: while true {
      let chunk: [UInt8]
      do {
        chunk = try io.read(fd, count: chunkEntries * IndexEntry.size, at: offset, path: path)
      } catch {
        readWhole = false
        break
      }
      if chunk.isEmpty { break }
      var position = 0
      while position + IndexEntry.size <= chunk.count {
        guard let entry = IndexEntry.decode(chunk[position..<(position + IndexEntry.size)]),
          index.lastNamed.map({ entry.follows($0) }) ?? true
        else {
          validBytes = validBytes ?? offset + Int64(position)
          break scan
        }
        index.lastNamed = entry
        // Entries come in runs of one segment: its size is looked up once per run, not per entry
        // (a reader without a cached index loads the whole file at each cursor: each seek).
        if segment?.first != entry.segment { segment = (entry.segment, segments[entry.segment]) }
        let segmentSize = segment?.size
        if segmentSize == nil {
          if let last = index.missingSegments.last, last.segment == entry.segment {
            index.missingSegments[index.missingSegments.count - 1].lastNamed = entry.firstSequence
          } else {
            index.missingSegments.append((entry.segment, entry.firstSequence))
          }
        }
        if validBytes == nil {
          if index.accepts(entry, segmentSize: segmentSize) {
            index.entries.append(entry)
          } else {
            validBytes = offset + Int64(position)
          }
        }
        position += IndexEntry.size
      }
      offset += Int64(position)
      if chunk.count < chunkEntries * IndexEntry.size { break }
    }
    return (index, validBytes ?? offset, readWhole)
  }

  /// The first well-formed entry (right header, right checksum) that names a segment missing from
  /// `segments` and later than all of them. Segments are created durably before any entry names
  /// them, so such an entry means committed records were removed from the end of the journal,
  /// which no reopening must take for an empty tail (it would number new records over them).
  package static func entryBeyondSegments(
    directory: String, journalID: JournalID, segments: [UInt64], io: any FileIO
  ) -> IndexEntry? {
    let last = segments.last ?? 0
    return wellFormedEntries(directory: directory, journalID: journalID, io: io).first { $0.segment > last }
  }

  /// The last well-formed entry that names a batch of segment `segment` at or after `offset`,
  /// whether or not the segment still reaches that far. Entries are written only for committed
  /// batches, so where the last segment now ends before such an entry (zeros, an unfinished frame,
  /// or the end of a file cut short), committed records are gone.
  package static func lastEntry(
    directory: String, journalID: JournalID, segment: UInt64, atOrAfter offset: Int64, io: any FileIO
  ) -> IndexEntry? {
    wellFormedEntries(directory: directory, journalID: journalID, io: io).last {
      $0.segment == segment && $0.offset >= offset
    }
  }

  /// The entries of the index file up to the first that is not well-formed (right header, right
  /// checksum) or does not follow the one before it (sequence numbers and places ascending), judged
  /// on nothing else: not on the segments, which may have lost what they name.
  package static func wellFormedEntries(directory: String, journalID: JournalID, io: any FileIO) -> [IndexEntry] {
    scanWellFormed(directory: directory, journalID: journalID, io: io).entries
  }

  /// What `verify` checks of the index file, in one read of it:
  /// - its well-formed entries, up to `damage`;
  /// - `damage`: where it stops being well-formed (its header, or the first whole entry whose
  ///   checksum fails or that does not follow the one before it: byte offset and why); nil when
  ///   there is no index file or every whole entry is well-formed;
  /// - the byte offset of each well-formed entry whose pad bytes (32-35, which are 0) are not;
  /// - how many bytes of a part of an entry end an undamaged file (an append in progress, or one a
  ///   crash cut: the next writer cuts them);
  /// - the segments named by the entries whose checksum holds anywhere in the file, after the
  ///   damage too: `verify` notes a damaged entry once rather than also each segment that only
  ///   entries after it name.
  package static func scanForVerify(directory: String, journalID: JournalID, io: any FileIO) -> Scan {
    var scan = scanWellFormed(directory: directory, journalID: journalID, io: io)
    if scan.damage != nil { scan.partialBytes = 0 }
    return scan
  }

  /// An index file as `scanWellFormed` reads it (see `scanForVerify`).
  package struct Scan {
    package var entries: [IndexEntry] = []
    package var damage: (offset: Int64, reason: String)?
    package var nonZeroPads: [Int64] = []
    package var partialBytes = 0
    package var namedSegments = Set<UInt64>()
  }

  /// Reads the whole index file: the entries up to the first that fails its checksum or does not
  /// follow the one before it, and what `Scan` notes besides.
  package static func scanWellFormed(directory: String, journalID: JournalID, io: any FileIO) -> Scan {
    let path = directory + "/" + Layout.indexName
    var scan = Scan()
    guard let fd = try? io.open(path, flags: O_RDONLY, mode: 0) else { return scan }
    defer { io.close(fd) }
    guard let head = try? io.read(fd, count: headerSize, at: 0, path: path), head == header(journalID: journalID) else {
      scan.damage = (0, "its header is damaged, cut short or names another journal")
      return scan
    }
    var offset = Int64(headerSize)
    let chunkEntries = 4096
    while let chunk = try? io.read(fd, count: chunkEntries * IndexEntry.size, at: offset, path: path), !chunk.isEmpty {
      var position = 0
      while position + IndexEntry.size <= chunk.count {
        let at = offset + Int64(position)
        let bytes = chunk[position..<(position + IndexEntry.size)]
        position += IndexEntry.size
        let entry = IndexEntry.decode(bytes)
        if let entry { scan.namedSegments.insert(entry.segment) }
        guard scan.damage == nil else { continue }
        guard let entry else {
          scan.damage = (at, "entry \(scan.entries.count + 1) fails its checksum")
          continue
        }
        if let last = scan.entries.last, !entry.follows(last) {
          scan.damage = (at, "entry \(scan.entries.count + 1) does not follow the one before it")
          continue
        }
        if bytes.dropFirst(32).prefix(4).contains(where: { $0 != 0 }) { scan.nonZeroPads.append(at) }
        scan.entries.append(entry)
      }
      scan.partialBytes = chunk.count - position
      if chunk.count < chunkEntries * IndexEntry.size { break }
      offset += Int64(position)
    }
    return scan
  }

  /// Whether `entry` can follow the current entries, given the size of the segment it names (nil:
  /// no such segment).
  func accepts(_ entry: IndexEntry, segmentSize: Int64?) -> Bool {
    guard let segmentSize, entry.offset >= Int64(Layout.segmentHeaderSize),
      // Not `offset + batchHeaderSize`: the offset comes from the file and may be near Int64.max.
      entry.offset <= segmentSize - Int64(Layout.batchHeaderSize), entry.firstSequence >= entry.segment
    else { return false }
    guard let last = entries.last else { return true }
    return entry.firstSequence > last.firstSequence && entry.maxTimestampBefore >= last.maxTimestampBefore
      && (entry.segment > last.segment || (entry.segment == last.segment && entry.offset > last.offset))
  }

  /// The last entry at or before `sequence`.
  package func entry(atOrBefore sequence: UInt64) -> IndexEntry? {
    var low = 0
    var high = entries.count
    while low < high {
      let mid = (low + high) / 2
      if entries[mid].firstSequence <= sequence { low = mid + 1 } else { high = mid }
    }
    return low == 0 ? nil : entries[low - 1]
  }

  /// The last entry before which every record is stamped earlier than `timestamp`.
  package func entry(before timestamp: Int64) -> IndexEntry? {
    var low = 0
    var high = entries.count
    while low < high {
      let mid = (low + high) / 2
      if entries[mid].maxTimestampBefore < timestamp { low = mid + 1 } else { high = mid }
    }
    return low == 0 ? nil : entries[low - 1]
  }

  /// Drops every entry from the first one that points at or past `segment`/`offset`.
  package mutating func removeEntries(from segment: UInt64, offset: Int64) {
    entries.removeAll { $0.segment > segment || ($0.segment == segment && $0.offset >= offset) }
  }
}
