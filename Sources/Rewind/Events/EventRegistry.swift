/// What a model knows about events: for each name, the current version's type and how to apply it,
/// and upcasters that turn each older version into the next, forever.
public struct EventRegistry<M: Model>: Sendable {
  // The entries' types are not nested here: nested, they would be generic over the model, and
  // unspecialized code (the manager's) would look their metadata up at run time on each use.
  private var current: [String: RegisteredEvent] = [:]
  private var upcasters: [EventVersionKey: RegisteredUpcaster] = [:]
  /// What replay needs per record, in tables that are not generic over the model.
  private(set) var tables = EventTables()

  init() {}

  /// Registers `E` as the current version of its name, applied by `apply`, coded through `Codable`.
  /// - Precondition: no other type is registered under `E.name`.
  ///
  /// `apply` takes the event `inout`: it may move the event's strings and arrays into the model
  /// (`swap(&note.body, &event.body)`) instead of copying them (a retain, and a release when the
  /// event is dropped). What it leaves in the event is never applied again nor seen by anyone
  /// (a manager's command, its observers and a replay's observers keep the event as recorded:
  /// `apply` gets a copy of it), and is destroyed after `apply` returns, maybe on another thread.
  /// In a replay whose reading thread keeps ahead and decodes the batches, that thread destroys
  /// a batch's events once the whole batch is applied, so the values an apply swaps out of the
  /// model (an edited note's old body) are freed off the thread that applies; the events the
  /// applying thread decodes itself, and the batches applied after the reading thread ended, are
  /// destroyed on the applying thread. (Before, `apply` took the event `consuming`: a closure
  /// literal written for that compiles unchanged.)
  ///
  /// Inlinable, as the other `register`, so that `runApplier`, `applier` and the encoder are made
  /// in the app's module, where `E` and `M` are known.
  @inlinable
  public mutating func register<E: Event>(
    _ eventType: E.Type, apply: @escaping @Sendable (inout M, inout E, inout ApplyContext) -> Void
  ) {
    addCodable(
      E.self, apply: apply, applyRun: Self.runApplier(apply), applyAt: Self.applier(apply),
      encodeAt: { event, origin, command in
        try EventRecord.encode(lent: &event.assumingMemoryBound(to: E.self).pointee, origin: origin, commandID: command)
      })
  }

  @usableFromInline
  mutating func addCodable<E: Event>(
    _ eventType: E.Type, apply: @escaping @Sendable (inout M, inout E, inout ApplyContext) -> Void,
    applyRun: @escaping ApplyRun, applyAt: @escaping ApplyAt, encodeAt: @escaping EncodeAt
  ) {
    add(
      E.self, apply: apply, applyRun: applyRun, applyAt: applyAt, encodeAt: encodeAt,
      decode: { bytes, offset in try FieldDecoder().decode(E.self, from: bytes, at: offset) })
  }

  /// Registers `E` as the current version of its name, applied by `apply`, coded through its
  /// hand-written `FieldCodable` conformance (the fast path).
  /// - Precondition: no other type is registered under `E.name`.
  @inlinable
  public mutating func register<E: Event & FieldCodable>(
    _ eventType: E.Type, apply: @escaping @Sendable (inout M, inout E, inout ApplyContext) -> Void
  ) {
    addFieldCodable(
      E.self, apply: apply, applyRun: Self.runApplier(apply), applyAt: Self.applier(apply),
      encodeAt: { event, origin, command in
        EventRecord.encodeFields(
          lent: &event.assumingMemoryBound(to: E.self).pointee, origin: origin, commandID: command)
      })
  }

  @usableFromInline
  mutating func addFieldCodable<E: Event & FieldCodable>(
    _ eventType: E.Type, apply: @escaping @Sendable (inout M, inout E, inout ApplyContext) -> Void,
    applyRun: @escaping ApplyRun, applyAt: @escaping ApplyAt, encodeAt: @escaping EncodeAt
  ) {
    add(
      E.self, apply: apply, applyRun: applyRun, applyAt: applyAt, encodeAt: encodeAt,
      decode: { bytes, offset in try FieldDecoder().decodeFields(E.self, from: bytes, at: offset) })
  }

  /// Applies a run of `E` events, each where it lies, through `apply`.
  /// Inlinable and called from the inlinable `register`s, so that the closure is specialized for
  /// `E` and `M` in the app's module: applying a run of replayed events (`DecodedEventsOf.apply`)
  /// then looks up no generic metadata and moves no event through value witnesses.
  @inlinable
  static func runApplier<E: Event>(_ apply: @escaping @Sendable (inout M, inout E, inout ApplyContext) -> Void)
    -> ApplyRun
  {
    { events, count, model, context in
      let events = events.assumingMemoryBound(to: E.self)
      let model = model.assumingMemoryBound(to: M.self)
      for index in 0..<count { apply(&model.pointee, &events[index], &context) }
    }
  }

  /// Applies one event of type `E`, read in place where it lies, to the model `model` points at.
  /// Made in the app's module, as `runApplier`: the manager's commands and replay's boxed events
  /// reach `apply` without generic metadata or a reabstraction thunk. (`apply` may take parts of
  /// its event, so it gets a copy: the command keeps the event for its observers.)
  @inlinable
  static func applier<E: Event>(_ apply: @escaping @Sendable (inout M, inout E, inout ApplyContext) -> Void)
    -> ApplyAt
  {
    { model, event, context in
      var copy = event.assumingMemoryBound(to: E.self).pointee
      apply(&model.assumingMemoryBound(to: M.self).pointee, &copy, &context)
    }
  }

  private mutating func add<E: Event>(
    _ eventType: E.Type, apply: @escaping @Sendable (inout M, inout E, inout ApplyContext) -> Void,
    applyRun: @escaping ApplyRun, applyAt: @escaping ApplyAt, encodeAt: @escaping EncodeAt,
    decode: @escaping @Sendable ([UInt8], Int) throws -> E
  ) {
    // An empty name would journal records that every reader's listing shows without one, and
    // that `--type` cannot single out: a constant of the app, checked where it is registered.
    precondition(!E.name.isEmpty, "event type \(E.self) has an empty name: give it one, such as \"item.added\"")
    precondition(current[E.name] == nil, "event \(E.name) registered twice")
    let entry = RegisteredEvent(
      type: ObjectIdentifier(E.self), version: E.version,
      decode: { bytes, offset in try decode(bytes, offset) })
    current[E.name] = entry
    tables.setEncoder(for: ObjectIdentifier(E.self), encodeAt)
    let applyTyped: @Sendable (UnsafeMutableRawPointer, inout E, inout ApplyContext) -> Void = {
      model, event, context in
      apply(&model.assumingMemoryBound(to: M.self).pointee, &event, &context)
    }
    tables.add(
      name: E.name,
      decoder: EventTables.Decoder(
        version: E.version, decode: { try decode($0, $1) },
        decodeApplying: { bytes, offset, model, context in
          // Decoded as an `E` and applied at once: no `any Event` box to allocate and free. The
          // event is whole before the model changes, so a decoding error leaves the model as it was.
          var event = try decode(bytes, offset)
          apply(&model.assumingMemoryBound(to: M.self).pointee, &event, &context)
        },
        makeEvents: { DecodedEventsOf<E>(decode: decode, apply: applyTyped, applyRun: applyRun) }))
    tables.setApplier(for: ObjectIdentifier(E.self), applyAt)
  }

  /// Registers how version `Old.version` of an event becomes version `Old.version + 1` (`New`).
  /// Chains of upcasters take any old version to the current one.
  /// - Precondition: same name, consecutive versions; no other upcaster from `Old.version` of
  ///   that name (a second one would silently replace the first, and every old record would be
  ///   read by whichever came last).
  public mutating func registerUpcaster<Old: EventVersion, New: EventVersion>(
    from old: Old.Type, to new: New.Type, _ convert: @escaping @Sendable (Old) -> New
  ) {
    precondition(
      Old.name == New.name && New.version == Old.version + 1,
      "upcaster from \(Old.self) (\(Old.name) v\(Old.version)) to \(New.self) (\(New.name) v\(New.version)): an "
        + "upcaster must go from one version of an event to the next of the same name")
    let key = EventVersionKey(name: Old.name, version: Old.version)
    precondition(
      upcasters[key] == nil,
      "upcaster from \(Old.name) v\(Old.version) registered twice (the second from \(Old.self) to \(New.self)): "
        + "each version of an event has one upcaster to the next")
    upcasters[key] = RegisteredUpcaster(
      decode: { bytes, offset in try FieldDecoder().decode(Old.self, from: bytes, at: offset) },
      step: { value in
        // The step before this one may give another type of the same name and version (two
        // types declared for one version): a record of the older version then does not decode,
        // located as the end of a chain that gives the wrong type is (it is no trap).
        guard let value = value as? Old else {
          throw UpcasterMismatch(
            "the upcaster from \(Old.name) v\(Old.version) takes a \(Old.self), but the one before it gives a "
              + "\(type(of: value))")
        }
        return convert(value)
      })
  }

  /// Whether events named `name` are registered, at whatever version: a journal holding them is
  /// this model's, though a record of a version it cannot read stops its replay.
  package func knows(name: String) -> Bool { current[name] != nil && hasName(withBytesOf: name) }

  /// Whether events named `name` at `version` can be decoded (directly or by upcasting).
  /// Names are compared by their UTF-8 bytes, as replay, `stats` and `log --type` compare them:
  /// a name in another Unicode form than its registration is another event's.
  public func canDecode(name: String, version: UInt32) -> Bool {
    hasName(withBytesOf: name) && reaches(name: name, from: version)
  }

  /// Whether version `version` of the registered name `name` is current or upcasts to it (the
  /// name's bytes checked by the caller: replay's fallback has found them in the table already).
  private func reaches(name: String, from version: UInt32) -> Bool {
    guard let current = current[name] else { return false }
    if version == current.version { return true }
    var version = version
    while version < current.version {
      guard upcasters[EventVersionKey(name: name, version: version)] != nil else { return false }
      version += 1
    }
    return version == current.version
  }

  /// Whether a registered name has `name`'s UTF-8 bytes (a lookup in `current` compares by
  /// canonical equivalence, which would take a name in another Unicode form for it).
  private func hasName(withBytesOf name: String) -> Bool {
    var name = name
    return name.withUTF8 { tables.names.index(of: $0) } != nil
  }

  /// Decodes the event in a record payload, upcast to the current version.
  func decode(_ header: EventRecord.Header, payload: [UInt8], sequence: UInt64) throws -> any Event {
    let nameIndex = header.name.utf8.withContiguousStorageIfAvailable { tables.names.index(of: $0) } ?? nil
    if let event = try tables.decode(header, nameIndex: nameIndex, payload: payload, sequence: sequence) {
      return event
    }
    // A name the table does not know by its bytes is no registered event's, whatever `String`
    // equality says: in another Unicode form it is another name to `stats` and `log --type`,
    // which compare bytes, and replay must not apply it as the registered one.
    guard nameIndex != nil, let current = current[header.name],
      header.version == current.version || reaches(name: header.name, from: header.version)
    else {
      throw ReplayError(.unknownEvent, sequence: sequence, name: header.name, version: header.version)
    }
    do {
      if header.version == current.version { return try current.decode(payload, header.bodyOffset) }
      var version = header.version
      guard let first = upcasters[EventVersionKey(name: header.name, version: version)] else {
        throw ReplayError(.unknownEvent, sequence: sequence, name: header.name, version: header.version)
      }
      var value = try first.decode(payload, header.bodyOffset)
      while version < current.version, let upcaster = upcasters[EventVersionKey(name: header.name, version: version)] {
        value = try upcaster.step(value)
        version += 1
      }
      guard let event = value as? any Event, ObjectIdentifier(type(of: event)) == current.type else {
        throw ReplayError(
          .undecodableEvent, sequence: sequence, name: header.name, version: header.version,
          underlying: "its upcasters end in \(type(of: value)), not the registered current type")
      }
      return event
    } catch let error as ReplayError {
      throw error
    } catch {
      throw ReplayError.undecodable(
        error, sequence: sequence, name: header.name, version: header.version, fieldsAt: header.bodyOffset)
    }
  }

  /// Applies a decoded event (of a registered current type) to `model`.
  func apply(_ event: any Event, to model: inout M, context: inout ApplyContext) {
    tables.apply(event, to: &model, context: &context)
  }

  /// The record payload of `event`, or nil if its type is not registered as current.
  func encode(_ event: any Event, origin: Origin, commandID: Identifier) throws -> [UInt8]? {
    try tables.encode(event, origin: origin, commandID: commandID)
  }

  /// What the registry reads, one sorted line per event: `name@version<-old,older` (the versions
  /// its upcasters read). Part of a `SnapshotModel`'s fingerprint. The checkpoint mark and digest
  /// are left out: every model reads them, and listing them would change every model's
  /// fingerprint, so that the checkpoints and snapshots written before them were no longer
  /// compared or used.
  var schema: [String] {
    current.filter { $0.key != CheckpointMark.name && $0.key != CheckpointDigest.name }.map { name, current in
      let old = upcasters.keys.filter { $0.name == name }.map(\.version).sorted()
      return "\(name)@\(current.version)<-" + old.map(String.init).joined(separator: ",")
    }.sorted()
  }

  /// Whether `eventType` is registered as the current version of its name.
  func isRegistered(_ eventType: any Event.Type) -> Bool {
    tables.isRegistered(eventType)
  }
}

/// Encodes the event `event` points at (of the type the encoder was registered for) as a record
/// payload, reading it in place (made by the inlinable `EventRegistry.register`s, in the app's
/// module). It does not change the event: the pointer is mutable only so that the event can be
/// lent on `inout` (see `EventRecord.encode(lent:origin:commandID:)`).
@usableFromInline typealias EncodeAt =
  @Sendable (_ event: UnsafeMutableRawPointer, _ origin: Origin, _ commandID: Identifier) throws -> [UInt8]

/// Applies the event `event` points at (of the type the applier was registered for) to the model
/// `model` points at, without moving it (made by `EventRegistry.applier`).
@usableFromInline typealias ApplyAt =
  @Sendable (_ model: UnsafeMutableRawPointer, _ event: UnsafeRawPointer, _ context: inout ApplyContext) -> Void

/// Applies `count` events of one type, lying from `events` on, to the model `model` points at,
/// each in place, left initialized with what its apply left in it (made by
/// `EventRegistry.runApplier`).
@usableFromInline typealias ApplyRun =
  @Sendable (
    _ events: UnsafeMutableRawPointer, _ count: Int, _ model: UnsafeMutableRawPointer, _ context: inout ApplyContext
  ) -> Void

/// The current version of a registered event: its type, version and decoding (its encoder is in
/// `EventTables`).
struct RegisteredEvent: Sendable {
  var type: ObjectIdentifier
  var version: UInt32
  var decode: @Sendable ([UInt8], Int) throws -> any Event
}

/// Turns an older version of an event into the next.
struct RegisteredUpcaster: Sendable {
  var decode: @Sendable ([UInt8], Int) throws -> any Sendable
  /// Turns the decoded old value into the value of the next version.
  /// - Throws: `UpcasterMismatch` when the value is not of the type this step takes.
  var step: @Sendable (any Sendable) throws -> any Sendable
}

/// Two upcasters of one chain that do not meet: one gives a type the next does not take.
struct UpcasterMismatch: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

extension ReplayError {
  /// A record whose event's fields do not decode. The decoders locate a fault by its byte in the
  /// whole payload, where `rewind show` and the audit commands' notes count from the fields'
  /// first byte: the error says which, and where the fields start.
  static func undecodable(
    _ error: any Error, sequence: UInt64, name: String, version: UInt32, fieldsAt bodyOffset: Int
  ) -> ReplayError {
    var underlying = String(describing: error)
    // Said where the error names a byte: an app's own error from its `init(from:)` names none.
    if !(error is UpcasterMismatch), underlying.contains(" byte ") {
      underlying += "; bytes are counted from the payload's first, and its fields start at byte \(bodyOffset)"
    }
    return ReplayError(.undecodableEvent, sequence: sequence, name: name, version: version, underlying: underlying)
  }
}

/// An event's name and one of its versions.
struct EventVersionKey: Hashable {
  var name: String
  var version: UInt32
}

/// The registry's per-record work, decoding the current version of a name and applying or encoding
/// an event by its type, in tables that are not generic over the model: looking something up in
/// them costs no generic metadata, which replay and the manager would otherwise pay per record.
/// Take `registry.tables` once, outside a loop.
struct EventTables: Sendable {
  struct Decoder: Sendable {
    var version: UInt32
    var decode: @Sendable ([UInt8], Int) throws -> any Event
    /// Decodes the event at the offset and applies it to the model the pointer points at (of the
    /// registry's model type): replay's path when nothing looks at the decoded event.
    var decodeApplying:
      @Sendable (_ payload: [UInt8], _ offset: Int, _ model: UnsafeMutableRawPointer, _ context: inout ApplyContext)
        throws -> Void
    /// An empty list for events of this type, decoded on one thread and applied on another.
    var makeEvents: @Sendable () -> DecodedEvents
  }

  /// Applies an event of one type (see `ApplyAt`). The closure is kept in a struct, not in the
  /// tuples of `appliers` directly: a closure in a tuple in an array is stored at its most general
  /// abstraction, and taking it out made a reabstraction thunk, allocated, on every call.
  struct Applier: Sendable {
    var apply: ApplyAt
  }

  /// Encodes an event of one type (see `EncodeAt`); in a struct, as `Applier`.
  struct Encoder: Sendable {
    var encode: EncodeAt
  }

  /// The registered names (and the checkpoint's); `decoders` is parallel to it, nil for a name
  /// with no current decoder.
  private(set) var names = EventNameTable()
  private var decoders: [Decoder?] = []
  /// Appliers by event type: a short list searched in order (a dozen or two pointer comparisons
  /// cost less than hashing the type for a dictionary).
  private var appliers: [(type: ObjectIdentifier, applier: Applier)] = []
  /// Encoders by event type: a short list searched in order, as `appliers` (every command the
  /// manager stages looks its events' encoders up here).
  private var encoders: [(type: ObjectIdentifier, encoder: Encoder)] = []

  /// The index in `names` of the checkpoint's name (`Checkpoint`).
  static let checkpointNameIndex = 0
  /// The index in `names` of a checkpoint mark's name (`CheckpointMark`).
  static let checkpointMarkNameIndex = 1
  /// The index in `names` of a checkpoint digest's name (`CheckpointDigest`).
  static let checkpointDigestNameIndex = 2

  mutating func setApplier(for type: ObjectIdentifier, _ apply: @escaping ApplyAt) {
    if let index = appliers.firstIndex(where: { $0.type == type }) {
      appliers[index].applier = Applier(apply: apply)
    } else {
      appliers.append((type, Applier(apply: apply)))
    }
  }

  mutating func setEncoder(for type: ObjectIdentifier, _ encode: @escaping EncodeAt) {
    if let index = encoders.firstIndex(where: { $0.type == type }) {
      encoders[index].encoder = Encoder(encode: encode)
    } else {
      encoders.append((type, Encoder(encode: encode)))
    }
  }

  init() {
    // The checkpoint records' names are known too (first, at `checkpointNameIndex` and the two
    // after it, in the order of `Checkpoint.recordNames`), so that reading one builds no string
    // either.
    for name in Checkpoint.recordNames { add(name: name, decoder: nil) }
  }

  mutating func add(name: String, decoder: Decoder?) {
    let index = names.add(name)
    if index == decoders.count { decoders.append(decoder) } else { decoders[index] = decoder }
  }

  /// The event of a record whose name and version are current; nil for any other (the registry
  /// then upcasts or says it is unknown). `nameIndex` is the header's name's index in `names`, if
  /// it has one.
  /// - Throws: `ReplayError(.undecodableEvent)`.
  func decode(_ header: EventRecord.Header, nameIndex: Int?, payload: [UInt8], sequence: UInt64) throws
    -> (any Event)?
  {
    guard let nameIndex, let decoder = decoders[nameIndex], decoder.version == header.version else { return nil }
    do {
      return try decoder.decode(payload, header.bodyOffset)
    } catch {
      throw ReplayError.undecodable(
        error, sequence: sequence, name: header.name, version: header.version, fieldsAt: header.bodyOffset)
    }
  }

  /// Decodes the event of a record whose name and version are current and applies it to `model`,
  /// without boxing it; false (doing nothing) for any other record, which the caller decodes
  /// through the registry. `nameIndex` is as for `decode`.
  /// - Throws: `ReplayError(.undecodableEvent)`, with `model` unchanged.
  func decodeApplying<M: Model>(
    _ location: EventRecord.Location, payload: [UInt8], sequence: UInt64, to model: inout M,
    context: inout ApplyContext
  ) throws -> Bool {
    guard let nameIndex = location.nameIndex, let decoder = decoders[nameIndex], decoder.version == location.version
    else { return false }
    do {
      try withUnsafeMutablePointer(to: &model) {
        try decoder.decodeApplying(payload, location.bodyOffset, UnsafeMutableRawPointer($0), &context)
      }
    } catch {
      throw ReplayError.undecodable(
        error, sequence: sequence, name: names.names[nameIndex], version: location.version,
        fieldsAt: location.bodyOffset)
    }
    return true
  }

  /// Decodes the event of a record whose name and version are current and appends it to the list
  /// of its type in `lists` (indexed by name; made on first use): replay's reading thread, when
  /// nothing observes the records, hands events to the applying thread this way instead of in
  /// `any Event` boxes. False (doing nothing) for any other record, as for `decodeApplying`.
  /// `nameIndex` is as for `decode`.
  /// - Throws: `ReplayError(.undecodableEvent)`, as `decode`.
  func decode(
    _ location: EventRecord.Location, payload: [UInt8], sequence: UInt64, into lists: inout [DecodedEvents?]
  ) throws -> Bool {
    guard let nameIndex = location.nameIndex, let decoder = decoders[nameIndex], decoder.version == location.version
    else { return false }
    if lists.count < decoders.count { lists += repeatElement(nil, count: decoders.count - lists.count) }
    let events: DecodedEvents
    if let existing = lists[nameIndex] {
      events = existing
    } else {
      events = decoder.makeEvents()
      lists[nameIndex] = events
    }
    do {
      try events.append(decoding: payload, at: location.bodyOffset)
    } catch {
      throw ReplayError.undecodable(
        error, sequence: sequence, name: names.names[nameIndex], version: location.version,
        fieldsAt: location.bodyOffset)
    }
    return true
  }

  /// The record payload of `event`, or nil if its type is not registered as current.
  ///
  /// The event is opened, not asked for its dynamic type (a run-time call), and lent to the
  /// encoder in place, as `apply` does.
  func encode(_ event: any Event, origin: Origin, commandID: Identifier) throws -> [UInt8]? {
    try encode(opened: event, origin: origin, commandID: commandID)
  }

  private func encode<E: Event>(opened event: E, origin: Origin, commandID: Identifier) throws -> [UInt8]? {
    let eventType = ObjectIdentifier(E.self)
    guard let encode = encoders.first(where: { $0.type == eventType })?.encoder.encode else { return nil }
    // Lent, not copied: the encoder only reads it (see `EncodeAt`).
    return try withUnsafePointer(to: event) { try encode(UnsafeMutableRawPointer(mutating: $0), origin, commandID) }
  }

  /// Whether `eventType` is registered as the current version of its name.
  func isRegistered(_ eventType: any Event.Type) -> Bool {
    encoders.contains { $0.type == ObjectIdentifier(eventType) }
  }

  /// Applies `event` (of a type registered as current for `M`) to `model`.
  func apply<M: Model>(_ event: any Event, to model: inout M, context: inout ApplyContext) {
    withUnsafeMutablePointer(to: &model) { apply(event, toModelAt: UnsafeMutableRawPointer($0), context: &context) }
  }

  /// Applies `events` (of types registered as current for `M`) to `model`, in order.
  ///
  /// By index: a `for … in` loop copies each event out of the array (retaining its box) and
  /// destroys the copy, where `events[index]` is lent in place.
  func apply<M: Model>(_ events: [any Event], to model: inout M, context: inout ApplyContext) {
    withUnsafeMutablePointer(to: &model) { model in
      for index in events.indices { apply(events[index], toModelAt: UnsafeMutableRawPointer(model), context: &context) }
    }
  }

  /// Applies `event` (of a type registered as current for the registry's model) to the model
  /// `model` points at.
  ///
  /// The event is opened, and its type read from the existential, not asked for (a run-time call
  /// that also looks through a class instance); it is lent to the applier where it lies, not
  /// copied.
  func apply(_ event: any Event, toModelAt model: UnsafeMutableRawPointer, context: inout ApplyContext) {
    apply(opened: event, toModelAt: model, context: &context)
  }

  private func apply<E: Event>(opened event: E, toModelAt model: UnsafeMutableRawPointer, context: inout ApplyContext) {
    let eventType = ObjectIdentifier(E.self)
    guard let apply = appliers.first(where: { $0.type == eventType })?.applier.apply else {
      preconditionFailure("event \(E.name) is not registered with this registry's model")
    }
    withUnsafePointer(to: event) { apply(model, UnsafeRawPointer($0), &context) }
  }
}

/// Events of one type that replay's reading thread decoded for the applying thread, kept in order
/// and applied in order. A batch keeps one list per event type instead of an `any Event` box per
/// record, which cost an allocation on the reading thread and, on the applying thread, a dynamic
/// type lookup, a search for the applier and the box's release.
///
/// `@unchecked Sendable`: a list is filled by one thread, then handed whole to another that
/// applies it, and maybe back to the first to be destroyed (`RecordQueue.retire`); never used by
/// two threads at once.
class DecodedEvents: @unchecked Sendable {
  /// Decodes the event at `offset` of `payload` and keeps it after the others.
  func append(decoding payload: [UInt8], at offset: Int) throws {
    preconditionFailure("DecodedEvents.append is implemented by DecodedEventsOf")
  }

  /// Applies the first event not yet applied to the model `model` points at, in place.
  func applyNext(to model: UnsafeMutableRawPointer, context: inout ApplyContext) {
    preconditionFailure("DecodedEvents.applyNext is implemented by DecodedEventsOf")
  }

  /// Applies the first `count` events not yet applied, in order, to the model `model` points at,
  /// in one call into code specialized for the event type and the model, each in place.
  func apply(count: Int, to model: UnsafeMutableRawPointer, context: inout ApplyContext) {
    preconditionFailure("DecodedEvents.apply(count:) is implemented by DecodedEventsOf")
  }
}

/// The events of type `E` of a batch, in a buffer of their own: each is applied where it lies
/// (lent `inout`, so applying one copies nothing), and the buffer keeps what each apply left in
/// its event until it is destroyed: in a replay, by the reading thread (`RecordQueue.retire`).
final class DecodedEventsOf<E: Event>: DecodedEvents, @unchecked Sendable {
  private let decode: @Sendable ([UInt8], Int) throws -> E
  private let apply: @Sendable (UnsafeMutableRawPointer, inout E, inout ApplyContext) -> Void
  private let applyRun: ApplyRun
  // Only this object's methods touch these, on one thread at a time (no dynamic exclusivity checks).
  @exclusivity(unchecked) private var events: UnsafeMutablePointer<E>
  @exclusivity(unchecked) private var capacity = 16
  /// Events `0..<count` are initialized; `applied..<count` are not applied yet.
  @exclusivity(unchecked) private var count = 0
  @exclusivity(unchecked) private var applied = 0

  init(
    decode: @escaping @Sendable ([UInt8], Int) throws -> E,
    apply: @escaping @Sendable (UnsafeMutableRawPointer, inout E, inout ApplyContext) -> Void,
    applyRun: @escaping ApplyRun
  ) {
    self.decode = decode
    self.apply = apply
    self.applyRun = applyRun
    events = .allocate(capacity: capacity)
  }

  deinit {
    events.deinitialize(count: count)
    events.deallocate()
  }

  override func append(decoding payload: [UInt8], at offset: Int) throws {
    let event = try decode(payload, offset)
    if count == capacity {
      let grown = UnsafeMutablePointer<E>.allocate(capacity: capacity * 2)
      grown.moveInitialize(from: events, count: count)
      events.deallocate()
      events = grown
      capacity *= 2
    }
    (events + count).initialize(to: event)
    count += 1
  }

  override func applyNext(to model: UnsafeMutableRawPointer, context: inout ApplyContext) {
    precondition(applied < count, "no decoded \(E.name) event left to apply")
    let event = events + applied
    applied += 1
    apply(model, &event.pointee, &context)
  }

  override func apply(count: Int, to model: UnsafeMutableRawPointer, context: inout ApplyContext) {
    precondition(count >= 0 && applied + count <= self.count, "fewer decoded \(E.name) events left than asked to apply")
    let first = events + applied
    applied += count
    applyRun(UnsafeMutableRawPointer(first), count, model, &context)
  }
}
