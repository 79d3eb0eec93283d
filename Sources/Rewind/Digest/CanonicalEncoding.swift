/// The canonical encoding of a model's state: the field encoding (see `FieldTag`) of the state's
/// `Codable` form, rewritten so that every object's fields are sorted by the bytes of their names
/// and `-0.0` is written as `0.0`.
///
/// Stores encode their records in id order (see `Store+Coding.swift`), so nothing that depends on
/// a hash seed, a dictionary's order or a property's declaration order reaches the bytes; sets and
/// dictionaries are written sorted (`HashOrderedEncodable`), and one of two or more elements or
/// keys that are not `Comparable` is refused. What a model must do in return: no values whose equality is looser than their bytes (two
/// strings that compare equal under Unicode canonical equivalence but are stored differently
/// digest differently).
enum CanonicalEncoding {
  /// The canonical bytes of `value`, written in one pass: the encoder sorts each object's entries
  /// as it finishes the object (`FieldObjectSorter`), so nothing is copied afterwards.
  /// `capacity` is room to reserve, when the caller knows the size (a snapshot's state).
  static func encode<T: Encodable>(_ value: T, capacity: Int = 128) throws -> [UInt8] {
    try FieldEncoder(canonicalWithCapacity: capacity).encode(value)
  }

  /// `encode`, for bytes that must decode to a value equal to `value` bit for bit (a snapshot's
  /// state, which later events apply to): the double -0.0, which the canonical encoding writes
  /// as 0.0, would come back as 0.0, equal to it but not alike (1 / x is -inf for one, +inf for
  /// the other), and a state restored from it would part from the one replay gives.
  /// - Throws: `EncodingError.invalidValue` if `value` holds -0.0; what `encode` throws.
  static func encodeExactly<T: Encodable>(_ value: T, capacity: Int = 128) throws -> [UInt8] {
    let sorter = FieldObjectSorter()
    let bytes = try FieldEncoder(sorter: sorter, capacity: capacity).encode(value)
    guard !sorter.wroteNegativeZero else {
      throw EncodingError.invalidValue(
        -0.0,
        EncodingError.Context(
          codingPath: [],
          debugDescription: "the value holds the double -0.0, which the canonical encoding writes as 0.0: read "
            + "back, it would be 0.0, equal to it but not alike (1 / x differs)"))
    }
    return bytes
  }

  /// Rewrites one field-encoded value canonically.
  /// - Throws: `FieldFormatError` if `bytes` is not one well-formed value.
  static func canonicalize(_ bytes: [UInt8]) throws(FieldFormatError) -> [UInt8] {
    var reader = FieldBytesReader(bytes)
    var writer = FieldBytesWriter(capacity: bytes.count)
    let sorter = FieldObjectSorter()
    try copy(&reader, into: &writer, sorter: sorter, depth: 0)
    guard reader.isAtEnd else { throw FieldFormatError("bytes after the value", at: reader.position) }
    return writer.bytes
  }

  private static func copy(
    _ reader: inout FieldBytesReader, into writer: inout FieldBytesWriter, sorter: FieldObjectSorter, depth: Int
  ) throws(FieldFormatError) {
    guard depth < FieldLimits.maximumDepth else {
      throw FieldFormatError("nesting deeper than \(FieldLimits.maximumDepth)", at: reader.position)
    }
    let tag = try reader.readTag()
    writer.append(tag)
    switch tag {
    case .null, .false, .true: return
    case .int, .uint: writer.appendVarint(try reader.readVarint())
    case .double:
      let bits = try reader.readFixed64()
      writer.appendFixed64(bits == (-0.0 as Double).bitPattern ? 0 : bits)
    case .string:
      let (start, count) = try reader.readStringBounds()
      writer.appendVarint(UInt64(count))
      writer.bytes.append(contentsOf: reader.bytes[start..<start + count])
    case .array:
      while try reader.peekByte() != FieldTag.end.rawValue {
        try copy(&reader, into: &writer, sorter: sorter, depth: depth + 1)
      }
      reader.position += 1
      writer.append(.end)
    case .object:
      // Entries are copied as they come; an object whose keys were not in order is sorted
      // afterwards, in place. Stores and most records need no sorting.
      let objectStart = writer.count
      var previous: Range<Int>? = nil
      var inOrder = true
      while try reader.peekByte() != 0 {
        let (start, count) = try reader.readStringBounds(lengthBias: 1)
        let key = start..<start + count
        if inOrder, let previous, !precedes(reader.bytes, previous, key) { inOrder = false }
        writer.appendVarint(UInt64(count) + 1)
        writer.bytes.append(contentsOf: reader.bytes[key])
        try copy(&reader, into: &writer, sorter: sorter, depth: depth + 1)
        previous = key
      }
      reader.position += 1
      if !inOrder { sorter.sortEntries(of: &writer.bytes, from: objectStart, depth: depth) }
      writer.append(0)
    case .identifier:
      // 16 fixed bytes: already canonical.
      let start = reader.position
      _ = try reader.readIdentifier()
      writer.bytes.append(contentsOf: reader.bytes[start..<reader.position])
    case .end: throw FieldFormatError("array end where a value was expected", at: reader.position - 1)
    }
  }

  /// Whether the key at `a` sorts strictly before the key at `b` (both ranges of `bytes`): by
  /// their bytes, a key before any longer key it begins.
  static func precedes(_ bytes: [UInt8], _ a: Range<Int>, _ b: Range<Int>) -> Bool {
    bytes.withUnsafeBufferPointer { buffer in precedes(buffer, a, b) }
  }

  static func precedes(_ buffer: UnsafeBufferPointer<UInt8>, _ a: Range<Int>, _ b: Range<Int>) -> Bool {
    for offset in 0..<min(a.count, b.count) {
      let (x, y) = (buffer[a.lowerBound + offset], buffer[b.lowerBound + offset])
      if x != y { return x < y }
    }
    return a.count < b.count
  }
}

/// Sorts the entries of objects by key, in place, for the canonical encoding: the one place that
/// does, whether an object was just written by the canonical encoder or copied by
/// `CanonicalEncoding.canonicalize`. It keeps its working arrays between objects, so sorting the
/// fields of each of a store's records allocates nothing once they have grown.
///
/// Objects written by hand-written fields (`FieldWriter`) say where each entry starts as they
/// write it (`beginObject`, `noteEntry`, `endObject`), so nothing is read back; other objects are
/// scanned when they end (`sortEntries`).
///
/// Not `Sendable`: one encoding run's.
final class FieldObjectSorter {
  /// One entry of an object: where it starts and ends (its key and value), and its key's bytes.
  private struct Entry {
    var start: Int
    var end: Int
    var keyStart: Int
    var keyCount: Int
  }

  // Touched for every field of every record of a snapshot; one run's, never shared.
  /// The entries of the objects being sorted: those of objects open in a `FieldWriter`, innermost
  /// object's last, then, while one is scanned (`sortEntries`), that object's.
  @exclusivity(unchecked) private var entries: [Entry] = []
  /// A copy of an object's entries while they are written back in order.
  @exclusivity(unchecked) private var scratch: [UInt8] = []
  /// Why an object could not be read back to be sorted, if one could not.
  private(set) var failure: FieldFormatError?
  /// Whether a double -0.0 was written, as 0.0 (see `CanonicalEncoding.encodeExactly`).
  private(set) var wroteNegativeZero = false

  init() {}

  /// The bits the canonical encoding writes for `value`: those of 0.0 for -0.0 (they compare
  /// equal), noted in `wroteNegativeZero`; `value`'s own otherwise. One place for both writers,
  /// `FieldEncoder` and the hand-written fields of `FieldWriter`.
  @inline(__always)
  func canonicalBits(of value: Double) -> UInt64 {
    guard value == 0 else { return value.bitPattern }
    if value.sign == .minus { wroteNegativeZero = true }
    return 0
  }

  /// Forgets the entry noted at `start`, the last one, whose bytes its writer took back (a value
  /// that failed to encode, `FieldWriter.write(encoding:for:)`).
  func forgetEntry(at start: Int) {
    if let last = entries.last, last.start == start { entries.removeLast() }
  }

  /// Starts an object written by `FieldWriter`; returns what `endObject` needs.
  @inline(__always)
  func beginObject() -> Int { entries.count }

  /// Notes an entry of the innermost object begun: it starts at `start`, with a key of `keyCount`
  /// bytes (stored after its length plus one, as a varint).
  @inline(__always)
  func noteEntry(at start: Int, keyCount: Int) {
    var lengthBytes = 1
    while UInt64(keyCount + 1) >> (7 * lengthBytes) != 0 { lengthBytes += 1 }
    entries.append(Entry(start: start, end: 0, keyStart: start + lengthBytes, keyCount: keyCount))
  }

  /// Ends the object begun when `beginObject` returned `first`: its entries run to the end of
  /// `bytes` (its terminator not yet written), and are sorted there if they are not in order.
  func endObject(of bytes: inout [UInt8], first: Int) {
    if entries.count - first > 1 { reorder(&bytes, first: first, end: bytes.count) }
    entries.removeSubrange(first...)
  }

  /// Sorts by key the entries of the object whose first entry starts at `start` and which runs to
  /// the end of `bytes` (its terminator not yet written), if they are not in order already. Each
  /// entry's value is left as it is (an object in it was sorted when it ended). Entries that do not
  /// read back (nested past the limit, or left malformed by a misused container) are left as
  /// they are, and the first such error is kept in `failure` for the encoding to throw.
  func sortEntries(of bytes: inout [UInt8], from start: Int, depth: Int) {
    let first = entries.count
    do throws(FieldFormatError) {
      // Only this scope holds a second reference to the array: writing it back must not copy it.
      let source = bytes
      var reader = FieldBytesReader(source, position: start)
      while !reader.isAtEnd {
        let entryStart = reader.position
        let (keyStart, keyCount) = try reader.readStringBounds(lengthBias: 1)
        try reader.skipValue(depth: depth + 1)
        entries.append(Entry(start: entryStart, end: reader.position, keyStart: keyStart, keyCount: keyCount))
      }
    } catch {
      // Nesting past the limit, or bytes a misused container left malformed: the encoding
      // throws it at its end (`FieldEncoder.encode`); the object stays as it is.
      if failure == nil { failure = error }
      entries.removeSubrange(first...)
      return
    }
    endObject(of: &bytes, first: first)
  }

  /// Puts `entries[first...]`, an object's entries in the order written, which run to `end`, in
  /// order of their keys' bytes, stably (repeated keys keep their order).
  private func reorder(_ bytes: inout [UInt8], first: Int, end: Int) {
    let last = entries.count - 1
    let inOrder = bytes.withUnsafeBufferPointer { buffer in
      (first..<last).allSatisfy { precedes(buffer, entries[$0], entries[$0 + 1]) }
    }
    guard !inOrder else { return }
    for index in first..<last { entries[index].end = entries[index + 1].start }
    entries[last].end = end
    let objectStart = entries[first].start
    bytes.withUnsafeBufferPointer { buffer in
      if last - first < 16 {
        // Insertion sort: a record's few fields, without a closure call per comparison.
        for index in first + 1...last {
          let entry = entries[index]
          var hole = index
          while hole > first, precedes(buffer, entry, entries[hole - 1]) {
            entries[hole] = entries[hole - 1]
            hole -= 1
          }
          entries[hole] = entry
        }
      } else {
        // Ties broken by position: stable whatever the sort's algorithm.
        entries[first...].sort { a, b in
          precedes(buffer, a, b) || (!precedes(buffer, b, a) && a.start < b.start)
        }
      }
    }
    scratch.removeAll(keepingCapacity: true)
    scratch.append(contentsOf: bytes[objectStart..<end])
    scratch.withUnsafeBufferPointer { copy in
      bytes.withUnsafeMutableBufferPointer { output in
        var at = objectStart
        for entry in entries[first...] {
          let count = entry.end - entry.start
          (output.baseAddress! + at).update(from: copy.baseAddress! + (entry.start - objectStart), count: count)
          at += count
        }
      }
    }
  }

  @inline(__always)
  private func precedes(_ buffer: UnsafeBufferPointer<UInt8>, _ a: Entry, _ b: Entry) -> Bool {
    CanonicalEncoding.precedes(buffer, a.keyStart..<a.keyStart + a.keyCount, b.keyStart..<b.keyStart + b.keyCount)
  }
}
