/// Encodes `Encodable` values into the field encoding (see `FieldTag`) in one pass, with no
/// intermediate tree.
///
/// Containers are written as they are filled. Codable never says when a container is finished, so
/// the encoder keeps a stack of open containers: writing into a container first closes every
/// container nested deeper, and finishing a value closes what that value opened. Writing into a
/// container after one of its ancestors has moved on is a misuse of Codable and throws.
///
/// `codingPath` is always empty (keeping it costs time on every field). `superEncoder` (what a
/// class's `encode(to:)` calls for its superclass's fields) is not supported: the encoding throws
/// `EncodingError.invalidValue` once the value is written, as `FieldDecoder.superDecoder` throws.
/// So do the other misuses Codable gives no way to report where they happen: a value that writes
/// more than one value (two writes to a single-value container, or containers of two kinds from
/// one encoder), and a container nested where the decoder would not read it (a value inside more
/// than 63 arrays and objects, FORMAT.md).
public struct FieldEncoder {
  /// Sorts each object's entries as it is finished, for the canonical encoding; nil otherwise.
  private let sorter: FieldObjectSorter?
  private let capacity: Int

  public init() {
    sorter = nil
    capacity = 128
  }

  /// An encoder that writes the canonical encoding (`CanonicalEncoding`) in one pass: every
  /// object's entries sorted by key as the object is finished, `-0.0` as `0.0`.
  init(canonicalWithCapacity capacity: Int) {
    sorter = FieldObjectSorter()
    self.capacity = capacity
  }

  /// An encoder that sorts as `sorter` does, or does not if it is nil.
  init(sorter: FieldObjectSorter?, capacity: Int = 128) {
    self.sorter = sorter
    self.capacity = capacity
  }

  /// The encoded bytes of `value`.
  public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
    let state = FieldEncoderState(writer: FieldBytesWriter(capacity: capacity), sorter: sorter)
    try state.encodeValue(value, depth: 0)
    if let failure = state.failure { throw failure }
    if let sorter {
      // The canonical bytes are one well-formed value within the nesting limit, or an error, as
      // when they were canonicalized after encoding: a hand-written object (`FieldCodable`)
      // nested past the limit would otherwise pass unnoticed.
      if let failure = sorter.failure { throw failure }
      var reader = FieldBytesReader(state.writer.bytes)
      try reader.skipValue()
    }
    return state.writer.bytes
  }

  /// Appends the encoding of `value` to `bytes`; if it throws, `bytes` are as they were.
  func encode<T: Encodable>(_ value: T, appendingTo bytes: inout [UInt8]) throws {
    let state = FieldEncoderState(writer: FieldBytesWriter(capacity: 0), sorter: sorter)
    let start = bytes.count
    swap(&state.writer.bytes, &bytes)
    defer { swap(&state.writer.bytes, &bytes) }
    do {
      try state.encodeValue(value, depth: 0)
      if let failure = state.failure { throw failure }
    } catch {
      state.writer.bytes.removeSubrange(start...)
      throw error
    }
  }
}

/// The shared state of one encoding run.
///
/// Not `Sendable`: one run lives on one task, inside `FieldEncoder.encode`.
final class FieldEncoderState {
  struct OpenContainer {
    var isObject: Bool
    /// Which value opened it (a second `container(keyedBy:)` on the same value reuses it).
    var owner: Int
    var token: Int
    /// Where its first entry starts (after its tag).
    var start: Int
    /// For the canonical encoding: whether its keys came in order so far, and the last one's bytes.
    var inOrder = true
    var lastKey: Range<Int>? = nil
  }

  // Touched for every field; a run is one task's, and no access to them calls out to other code
  // while it lasts, so they go without dynamic exclusivity checks (about 700 instructions for an
  // event of two fields).
  @exclusivity(unchecked) var writer: FieldBytesWriter
  @exclusivity(unchecked) var open: [OpenContainer] = []
  @exclusivity(unchecked) private var nextID = 0
  /// Set for the canonical encoding: objects whose keys came out of order are sorted as they end.
  let sorter: FieldObjectSorter?
  /// Set when a value asked for what the encoding cannot write (`superEncoder`, a second value, a
  /// container nested too deep) where Codable gives no way to throw; the run throws the first such
  /// error at its end.
  var failure: (any Error)?

  init(writer: FieldBytesWriter, sorter: FieldObjectSorter?) {
    self.writer = writer
    self.sorter = sorter
  }

  /// What `superEncoder` returns: notes that the run must fail, and hands out an encoder whose
  /// writes go nowhere, so that the value's `encode(to:)` runs to its end.
  func unsupportedSuperEncoder() -> any Encoder {
    fail(
      EncodingError.invalidValue(
        "superEncoder",
        EncodingError.Context(
          codingPath: [],
          debugDescription:
            "FieldEncoder does not support superEncoder: encode a superclass's fields in the subclass's own container"))
    )
    let discarded = FieldEncoderState(writer: FieldBytesWriter(capacity: 0), sorter: nil)
    return FieldValueEncoder(state: discarded, depth: 0, owner: discarded.makeID(), start: 0)
  }

  /// Notes `error` for the run to throw at its end (the first one noted wins).
  func fail(_ error: any Error) {
    if failure == nil { failure = error }
  }

  /// The error for a value that writes a second value where it stands (at byte `start`).
  static func secondValue(at start: Int) -> EncodingError {
    EncodingError.invalidValue(
      start,
      EncodingError.Context(
        codingPath: [],
        debugDescription: "a value's encode(to:) wrote more than one value (at byte \(start)): use one container per "
          + "value, and a single-value container once"))
  }

  func makeID() -> Int {
    nextID += 1
    return nextID
  }

  /// Writes the terminators of every open container at index `depth` or deeper.
  func close(downTo depth: Int) {
    while open.count > depth {
      let container = open.removeLast()
      guard container.isObject else {
        writer.append(.end)
        continue
      }
      if let sorter, !container.inOrder {
        sorter.sortEntries(of: &writer.bytes, from: container.start, depth: open.count)
      }
      writer.append(0)
    }
  }

  /// Checks that the container `token` at `depth` is still open and may hold a value (it is not
  /// nested as deep as a value may be), and closes anything nested in it.
  func prepare(token: Int, depth: Int) throws {
    guard depth < open.count, open[depth].token == token, depth + 1 < FieldLimits.maximumDepth else {
      guard depth + 1 < FieldLimits.maximumDepth else {
        throw EncodingError.invalidValue(
          token,
          EncodingError.Context(codingPath: [], debugDescription: "nesting deeper than \(FieldLimits.maximumDepth)"))
      }
      throw EncodingError.invalidValue(
        token,
        EncodingError.Context(codingPath: [], debugDescription: "a container was written to after it was finished"))
    }
    close(downTo: depth + 1)
  }

  /// `prepare` for a nested container, which Codable gives no way to throw from: an error is
  /// noted for the run to throw at its end (the nested container may never be written to), and
  /// the result is false.
  @discardableResult
  func prepareNested(token: Int, depth: Int) -> Bool {
    do {
      try prepare(token: token, depth: depth)
      return true
    } catch {
      fail(error)
      return false
    }
  }

  func encodeValue<T: Encodable>(_ value: T, depth: Int) throws {
    guard depth < FieldLimits.maximumDepth else {
      throw EncodingError.invalidValue(
        value,
        EncodingError.Context(codingPath: [], debugDescription: "nesting deeper than \(FieldLimits.maximumDepth)"))
    }
    if T.self == Identifier.self {  // a metadata comparison, not a dynamic cast
      close(downTo: depth)
      write(unsafeBitCast(value, to: Identifier.self))
      return
    }
    let start = writer.count
    let encoder = FieldValueEncoder(state: self, depth: depth, owner: makeID(), start: start)
    if let collection = value as? any HashOrderedEncodable {
      try collection.encodeInSortedOrder(to: encoder)
    } else {
      try value.encode(to: encoder)
    }
    close(downTo: depth)
    if writer.count == start {  // the value wrote nothing: an empty object, as JSONEncoder does
      writer.append(.object)
      writer.append(0)
    }
  }

  /// Opens a container for the value `owner`, which starts at byte `start` (nil for a nested
  /// container, which is a new value), or returns the one it already opened of that kind.
  func openContainer(isObject: Bool, depth: Int, owner: Int, start: Int? = nil) -> Int {
    if depth < open.count, open[depth].owner == owner, open[depth].isObject == isObject {
      close(downTo: depth + 1)
      return open[depth].token
    }
    close(downTo: depth)
    if let start, writer.count != start {  // the value already wrote something: a second value
      fail(Self.secondValue(at: start))
    }
    writer.append(isObject ? .object : .array)
    let token = makeID()
    open.append(OpenContainer(isObject: isObject, owner: owner, token: token, start: writer.count))
    return token
  }

  /// Writes the key of an entry of the object open at `depth`; for the canonical encoding, notes
  /// whether it came after the object's previous key.
  @inline(__always) func writeKey(_ key: some CodingKey, depth: Int) {
    let name = key.stringValue
    writer.appendString(name, lengthBias: 1)
    guard sorter != nil else { return }
    let key = writer.count - name.utf8.count..<writer.count  // the bytes just written
    if open[depth].inOrder, let last = open[depth].lastKey, !CanonicalEncoding.precedes(writer.bytes, last, key) {
      open[depth].inOrder = false
    }
    open[depth].lastKey = key
  }

  @inline(__always) func write(_ value: Bool) { writer.append(value ? .true : .false) }
  @inline(__always) func write(_ value: String) {
    writer.append(.string)
    writer.appendString(value)
  }
  @inline(__always) func write(_ value: Double) {
    writer.append(.double)
    // The canonical encoding writes -0.0 as 0.0 (they compare equal).
    writer.appendFixed64(sorter?.canonicalBits(of: value) ?? value.bitPattern)
  }
  @inline(__always) func write(_ value: Identifier) {
    writer.append(.identifier)
    writer.appendFixed64(value.high)
    writer.appendFixed64(value.low)
  }
  @inline(__always) func writeSigned(_ value: Int64) {
    writer.append(.int)
    writer.appendZigZag(value)
  }
  @inline(__always) func writeUnsigned(_ value: UInt64) {
    writer.append(.uint)
    writer.appendVarint(value)
  }
}

struct FieldValueEncoder: Encoder {
  let state: FieldEncoderState
  /// `owner << 8 | depth` (a depth is at most `FieldLimits.maximumDepth`): three words in all,
  /// which an existential holds inline, so passing the encoder as `any Encoder` (every
  /// `encode(to:)`) allocates nothing.
  private let ownerAndDepth: Int
  /// Where the value starts: it may write one value there, and nothing after it.
  let start: Int

  init(state: FieldEncoderState, depth: Int, owner: Int, start: Int) {
    self.state = state
    ownerAndDepth = owner << 8 | depth
    self.start = start
  }

  var depth: Int { ownerAndDepth & 0xFF }
  /// Which value it encodes (`FieldEncoderState.makeID`).
  var owner: Int { ownerAndDepth >> 8 }

  var codingPath: [any CodingKey] { [] }
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    let token = state.openContainer(isObject: true, depth: depth, owner: owner, start: start)
    return KeyedEncodingContainer(FieldKeyedEncoder<Key>(state: state, depth: depth, token: token))
  }

  func unkeyedContainer() -> any UnkeyedEncodingContainer {
    let token = state.openContainer(isObject: false, depth: depth, owner: owner, start: start)
    return FieldUnkeyedEncoder(state: state, depth: depth, token: token)
  }

  func singleValueContainer() -> any SingleValueEncodingContainer {
    FieldSingleValueEncoder(state: state, depth: depth, start: start)
  }
}

struct FieldKeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
  let state: FieldEncoderState
  let depth: Int
  let token: Int
  var codingPath: [any CodingKey] { [] }

  private func begin(_ key: Key) throws {
    try state.prepare(token: token, depth: depth)
    state.writeKey(key, depth: depth)
  }

  mutating func encodeNil(forKey key: Key) throws {
    try begin(key)
    state.writer.append(.null)
  }
  mutating func encode(_ value: Bool, forKey key: Key) throws {
    try begin(key)
    state.write(value)
  }
  mutating func encode(_ value: String, forKey key: Key) throws {
    try begin(key)
    state.write(value)
  }
  mutating func encode(_ value: Double, forKey key: Key) throws {
    try begin(key)
    state.write(value)
  }
  mutating func encode(_ value: Float, forKey key: Key) throws {
    try begin(key)
    state.write(Double(value))
  }
  mutating func encode(_ value: Int, forKey key: Key) throws {
    try begin(key)
    state.writeSigned(Int64(value))
  }
  mutating func encode(_ value: Int8, forKey key: Key) throws {
    try begin(key)
    state.writeSigned(Int64(value))
  }
  mutating func encode(_ value: Int16, forKey key: Key) throws {
    try begin(key)
    state.writeSigned(Int64(value))
  }
  mutating func encode(_ value: Int32, forKey key: Key) throws {
    try begin(key)
    state.writeSigned(Int64(value))
  }
  mutating func encode(_ value: Int64, forKey key: Key) throws {
    try begin(key)
    state.writeSigned(value)
  }
  mutating func encode(_ value: UInt, forKey key: Key) throws {
    try begin(key)
    state.writeUnsigned(UInt64(value))
  }
  mutating func encode(_ value: UInt8, forKey key: Key) throws {
    try begin(key)
    state.writeUnsigned(UInt64(value))
  }
  mutating func encode(_ value: UInt16, forKey key: Key) throws {
    try begin(key)
    state.writeUnsigned(UInt64(value))
  }
  mutating func encode(_ value: UInt32, forKey key: Key) throws {
    try begin(key)
    state.writeUnsigned(UInt64(value))
  }
  mutating func encode(_ value: UInt64, forKey key: Key) throws {
    try begin(key)
    state.writeUnsigned(value)
  }
  mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
    try begin(key)
    try state.encodeValue(value, depth: depth + 1)
  }

  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
    -> KeyedEncodingContainer<NestedKey>
  {
    // Codable gives no way to throw here: a misuse is noted for the run to throw at its end.
    if state.prepareNested(token: token, depth: depth) { state.writeKey(key, depth: depth) }
    let token = state.openContainer(isObject: true, depth: depth + 1, owner: state.makeID())
    return KeyedEncodingContainer(FieldKeyedEncoder<NestedKey>(state: state, depth: depth + 1, token: token))
  }

  mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
    if state.prepareNested(token: token, depth: depth) { state.writeKey(key, depth: depth) }
    let token = state.openContainer(isObject: false, depth: depth + 1, owner: state.makeID())
    return FieldUnkeyedEncoder(state: state, depth: depth + 1, token: token)
  }

  mutating func superEncoder() -> any Encoder { state.unsupportedSuperEncoder() }
  mutating func superEncoder(forKey key: Key) -> any Encoder { state.unsupportedSuperEncoder() }
}

struct FieldUnkeyedEncoder: UnkeyedEncodingContainer {
  let state: FieldEncoderState
  let depth: Int
  let token: Int
  private(set) var count = 0
  var codingPath: [any CodingKey] { [] }

  init(state: FieldEncoderState, depth: Int, token: Int) {
    self.state = state
    self.depth = depth
    self.token = token
  }

  private mutating func begin() throws {
    try state.prepare(token: token, depth: depth)
    count += 1
  }

  mutating func encodeNil() throws {
    try begin()
    state.writer.append(.null)
  }
  mutating func encode(_ value: Bool) throws {
    try begin()
    state.write(value)
  }
  mutating func encode(_ value: String) throws {
    try begin()
    state.write(value)
  }
  mutating func encode(_ value: Double) throws {
    try begin()
    state.write(value)
  }
  mutating func encode(_ value: Float) throws {
    try begin()
    state.write(Double(value))
  }
  mutating func encode(_ value: Int) throws {
    try begin()
    state.writeSigned(Int64(value))
  }
  mutating func encode(_ value: Int8) throws {
    try begin()
    state.writeSigned(Int64(value))
  }
  mutating func encode(_ value: Int16) throws {
    try begin()
    state.writeSigned(Int64(value))
  }
  mutating func encode(_ value: Int32) throws {
    try begin()
    state.writeSigned(Int64(value))
  }
  mutating func encode(_ value: Int64) throws {
    try begin()
    state.writeSigned(value)
  }
  mutating func encode(_ value: UInt) throws {
    try begin()
    state.writeUnsigned(UInt64(value))
  }
  mutating func encode(_ value: UInt8) throws {
    try begin()
    state.writeUnsigned(UInt64(value))
  }
  mutating func encode(_ value: UInt16) throws {
    try begin()
    state.writeUnsigned(UInt64(value))
  }
  mutating func encode(_ value: UInt32) throws {
    try begin()
    state.writeUnsigned(UInt64(value))
  }
  mutating func encode(_ value: UInt64) throws {
    try begin()
    state.writeUnsigned(value)
  }
  mutating func encode<T: Encodable>(_ value: T) throws {
    try begin()
    try state.encodeValue(value, depth: depth + 1)
  }

  /// The elements one by one, as the default does, but a set's (or a dictionary's keys') in the
  /// order the encoder writes a set in, not their hash order (`HashOrderedSequence`).
  mutating func encode<T: Sequence>(contentsOf sequence: T) throws where T.Element: Encodable {
    guard let hashOrdered = sequence as? any HashOrderedSequence else {
      for element in sequence { try encode(element) }
      return
    }
    for element in try hashOrdered.elementsInEncodingOrder(at: codingPath) { try encode(element) }
  }

  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<
    NestedKey
  > {
    state.prepareNested(token: token, depth: depth)
    count += 1
    let token = state.openContainer(isObject: true, depth: depth + 1, owner: state.makeID())
    return KeyedEncodingContainer(FieldKeyedEncoder<NestedKey>(state: state, depth: depth + 1, token: token))
  }

  mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
    state.prepareNested(token: token, depth: depth)
    count += 1
    let token = state.openContainer(isObject: false, depth: depth + 1, owner: state.makeID())
    return FieldUnkeyedEncoder(state: state, depth: depth + 1, token: token)
  }

  mutating func superEncoder() -> any Encoder { state.unsupportedSuperEncoder() }
}

struct FieldSingleValueEncoder: SingleValueEncodingContainer {
  let state: FieldEncoderState
  let depth: Int
  /// Where the value starts (see `FieldValueEncoder.start`).
  let start: Int
  var codingPath: [any CodingKey] { [] }

  /// Closes what the value opened; throws if it already wrote something (Codable allows one
  /// write to a single-value container, and none besides the value's containers).
  private func begin() throws {
    state.close(downTo: depth)
    guard state.writer.count == start else { throw FieldEncoderState.secondValue(at: start) }
  }

  mutating func encodeNil() throws {
    try begin()
    state.writer.append(.null)
  }
  mutating func encode(_ value: Bool) throws {
    try begin()
    state.write(value)
  }
  mutating func encode(_ value: String) throws {
    try begin()
    state.write(value)
  }
  mutating func encode(_ value: Double) throws {
    try begin()
    state.write(value)
  }
  mutating func encode(_ value: Float) throws {
    try begin()
    state.write(Double(value))
  }
  mutating func encode(_ value: Int) throws {
    try begin()
    state.writeSigned(Int64(value))
  }
  mutating func encode(_ value: Int8) throws {
    try begin()
    state.writeSigned(Int64(value))
  }
  mutating func encode(_ value: Int16) throws {
    try begin()
    state.writeSigned(Int64(value))
  }
  mutating func encode(_ value: Int32) throws {
    try begin()
    state.writeSigned(Int64(value))
  }
  mutating func encode(_ value: Int64) throws {
    try begin()
    state.writeSigned(value)
  }
  mutating func encode(_ value: UInt) throws {
    try begin()
    state.writeUnsigned(UInt64(value))
  }
  mutating func encode(_ value: UInt8) throws {
    try begin()
    state.writeUnsigned(UInt64(value))
  }
  mutating func encode(_ value: UInt16) throws {
    try begin()
    state.writeUnsigned(UInt64(value))
  }
  mutating func encode(_ value: UInt32) throws {
    try begin()
    state.writeUnsigned(UInt64(value))
  }
  mutating func encode(_ value: UInt64) throws {
    try begin()
    state.writeUnsigned(value)
  }
  mutating func encode<T: Encodable>(_ value: T) throws {
    try begin()
    try state.encodeValue(value, depth: depth)
  }
}
