import FuzzSupport
import Glibc
import Notebook
import RewindJournal

@testable import Rewind

// libFuzzer target: the event decoder. The input is one journal record's payload: its envelope
// (EventRecord.header), its decoding through the Notebook registry (FieldDecoder, upcasters),
// and its audit rendering without the app's types (FieldRenderer). Any outcome but a value or a
// thrown error is a finding. Build and run: `make fuzz` (see docs/RELIABILITY.md).
//
// It also drives replay's apply-only paths and checks them against the general ones, crashing on
// any disagreement (a finding too): `EventRecord.locate` against `EventRecord.header`, decoding
// straight into an apply (`EventTables.decodeApplying`) and into a list (`decode(_:…into:)`)
// against the boxed decoding applied through the registry, and `FieldReader`'s in-place reads of
// strings and identifiers against its general reads (`read(decoding:for:)`).

private let registry = Workspace.makeRegistry()
private let tables = registry.tables

// Also exported under libFuzzer's name, which its (unused) main in the same archive refers to.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzEvents(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let payload = Array(UnsafeBufferPointer(start: data, count: size))
  let record = JournalRecord(sequence: 1, timestamp: 0, payload: payload)
  let general = Result { try DecodedRecords<Workspace>.decode(record, registry: registry) }
  var applied = Workspace()
  if case .success(.event(let recorded)) = general {
    var context = ApplyContext()
    registry.apply(recorded.event, to: &applied, context: &context)
  }
  checkApplyOnlyPaths(record, general: general, applied: applied)
  checkInPlaceReads(payload)
  _ = try? EventRecord.json(sequence: 1, timestamp: 0, payload: payload)
  _ = try? FieldRenderer.json(payload)
  return 0
}

/// Stops the target with `message`: the paths that must agree did not.
private func finding(_ message: String) -> Never {
  fatalError("FuzzEvents finding: \(message)")
}

/// `locate` against `header`, then the apply-only decodings against the general one (`general`,
/// whose event applied to an empty model gave `applied`).
private func checkApplyOnlyPaths(_ record: JournalRecord, general: Result<DecodedRecord, any Error>, applied: Workspace)
{
  let payload = record.payload
  let header = Result { () throws(FieldFormatError) in try EventRecord.header(of: payload, names: tables.names) }
  let location = Result { () throws(FieldFormatError) in try EventRecord.locate(payload, names: tables.names) }
  let found: EventRecord.Location?
  switch (header, location) {
  case (.success(let header), .success(let location)):
    guard header.nameIndex == location.nameIndex, header.header.version == location.version,
      header.header.bodyOffset == location.bodyOffset
    else { finding("locate gave \(location), header gave \(header)") }
    found = location
  case (.failure(let headerError), .failure(let locateError)):
    guard headerError == locateError else { finding("locate threw \(locateError), header threw \(headerError)") }
    found = nil
  default: finding("locate gave \(location), header gave \(header)")
  }
  // Both read the envelope through one parser: it is checked against a reading by the bounds-checked
  // reads alone, as the envelope was read before it was read in place.
  switch (header, referenceHeader(payload)) {
  case (.success(let header), .success(let reference)):
    let header = header.header
    guard header.name == reference.name, header.version == reference.version, header.origin == reference.origin,
      header.commandID == reference.commandID, header.bodyOffset == reference.bodyOffset
    else { finding("header gave \(header), the bounds-checked reads \(reference)") }
  case (.failure(let error), .failure(let referenceError)):
    guard error == referenceError else { finding("header threw \(error), the bounds-checked reads \(referenceError)") }
  case (let header, let reference): finding("header gave \(header), the bounds-checked reads \(reference)")
  }
  guard let found, found.nameIndex != EventTables.checkpointNameIndex else { return }
  // What the general path decoded with the current decoder, if it used it: the boxed event, or
  // the error it threw (an upcast event or an unknown name is not the apply-only paths' to decode).
  let current = Result { () throws -> (any Event)? in
    guard case .success(let header) = header else { return nil }
    return try tables.decode(header.header, nameIndex: header.nameIndex, payload: payload, sequence: record.sequence)
  }

  // Straight into an apply.
  var model = Workspace()
  var context = ApplyContext()
  let applying = Result {
    try tables.decodeApplying(found, payload: payload, sequence: record.sequence, to: &model, context: &context)
  }
  compare("decodeApplying", applying, current, general: general)
  if case .success(true) = applying, model != applied { finding("decodeApplying applied another state") }
  if case .failure = applying, model != Workspace() { finding("decodeApplying changed the model and threw") }

  // Into a list, then applied from it.
  var lists: [DecodedEvents?] = []
  let listed = Result { try tables.decode(found, payload: payload, sequence: record.sequence, into: &lists) }
  compare("decode(into:)", listed, current, general: general)
  if case .success(true) = listed, let index = found.nameIndex {
    guard index < lists.count, let list = lists[index] else { finding("decode(into:) made no list") }
    var listModel = Workspace()
    var listContext = ApplyContext()
    withUnsafeMutablePointer(to: &listModel) { list.applyNext(to: UnsafeMutableRawPointer($0), context: &listContext) }
    if listModel != applied { finding("decode(into:) then applyNext applied another state") }
  }
}

/// The envelope read by `FieldBytesReader` alone, field after field (FORMAT.md): what
/// `EventRecord.header` must give, value or error.
private func referenceHeader(_ payload: [UInt8]) -> Result<EventRecord.Header, FieldFormatError> {
  Result { () throws(FieldFormatError) in
    var reader = FieldBytesReader(payload)
    let layout = try reader.readByte()
    guard layout == EventRecord.layoutVersion else { throw FieldFormatError("unknown record layout \(layout)", at: 0) }
    let name = try reader.readString()
    let versionAt = reader.position
    guard let version = UInt32(exactly: try reader.readVarint()) else {
      throw FieldFormatError("schema version out of range", at: versionAt)
    }
    let origin = Origin(try reader.readString())
    let commandID = try reader.readIdentifier()
    return EventRecord.Header(
      name: name, version: version, origin: origin, commandID: commandID, bodyOffset: reader.position)
  }
}

/// An apply-only decoding's outcome (`path`: true, false or an error) against the current decoder's
/// (`current`) and the general path's (`general`).
private func compare(
  _ path: String, _ outcome: Result<Bool, any Error>, _ current: Result<(any Event)?, any Error>,
  general: Result<DecodedRecord, any Error>
) {
  switch (outcome, current) {
  case (.success(true), .success(.some)):
    guard case .success(.event) = general else { finding("\(path) decoded an event, the general path \(general)") }
  case (.success(false), .success(.none)): break
  case (.failure(let error), .failure(let currentError)):
    guard String(describing: error) == String(describing: currentError) else {
      finding("\(path) threw \(error), the current decoder threw \(currentError)")
    }
    guard case .failure(let generalError) = general, String(describing: generalError) == String(describing: error)
    else { finding("\(path) threw \(error), the general path gave \(general)") }
  default: finding("\(path) gave \(outcome), the current decoder \(current)")
  }
}

/// The fields the probes read: names of the Notebook events' fields, so that the seeds hit them.
private let probeFields: [(name: StaticString, identifier: Bool)] = [
  ("id", true), ("notebook", true), ("title", false), ("body", false), ("tag", false), ("id", false),
  ("url", false), ("title", true),
]

/// Reads `probeFields` in order, each one's value or error written down: by the in-place reads
/// (`inPlace`) or by the general ones.
private struct Probe: FieldCodable {
  nonisolated(unsafe) static var inPlace = true
  var outcomes: [String] = []

  func encodeFields(into writer: inout FieldWriter) {}

  init(fields reader: inout FieldReader) throws {
    for field in probeFields {
      do {
        switch (field.identifier, Self.inPlace) {
        case (true, true): outcomes.append("\(try reader.read(Identifier.self, for: field.name))")
        case (true, false): outcomes.append("\(try reader.read(decoding: Identifier.self, for: field.name))")
        case (false, true): outcomes.append("s:" + (try reader.read(String.self, for: field.name)))
        case (false, false): outcomes.append("s:" + (try reader.read(decoding: String.self, for: field.name)))
        }
      } catch {
        outcomes.append("error")
      }
    }
    outcomes.append((try? reader.endOfObject()).map { "end \($0)" } ?? "end error")
  }
}

/// `FieldReader`'s in-place reads against its general ones, on the object at the payload's start
/// and, for a payload with an envelope, on the event's fields.
private func checkInPlaceReads(_ payload: [UInt8]) {
  var offsets = [0]
  if let location = try? EventRecord.locate(payload, names: tables.names) { offsets.append(location.bodyOffset) }
  for offset in offsets {
    Probe.inPlace = true
    let fast = Result { try FieldDecoder().decodeFields(Probe.self, from: payload, at: offset) }
    Probe.inPlace = false
    let slow = Result { try FieldDecoder().decodeFields(Probe.self, from: payload, at: offset) }
    switch (fast, slow) {
    case (.success(let fast), .success(let slow)):
      guard fast.outcomes == slow.outcomes else { finding("in-place reads \(fast.outcomes), general \(slow.outcomes)") }
    case (.failure, .failure): break
    default: finding("in-place reads gave \(fast), general reads \(slow)")
    }
  }
}

/// Seeds: every record payload of the golden Notebook journal (every event type and version), and
/// variants of them at the in-place reads' limits: envelopes with an origin of 127, 128 and 200
/// bytes, a version of 128 and a name of 128 bytes; note titles and bodies of 127, 128, 16,383 and
/// 16,384 bytes (lengths of one, two and three varint bytes).
func writeSeeds(to directory: String) {
  guard let cursor = try? JournalReader(directory: goldenFolder + "/notebook-v1/journal").records() else { return }
  while let record = try? cursor.next() {
    let payload = record.payload
    writeSeed(payload, named: "record-\(record.sequence)", in: directory)
    guard let (header, _) = try? EventRecord.header(of: payload, names: nil) else { continue }
    let command = Array(payload[header.bodyOffset - 16..<header.bodyOffset])
    let body = Array(payload[header.bodyOffset...])
    let variants: [(String, UInt64, Int)] = [
      (header.name, UInt64(header.version), 127), (header.name, UInt64(header.version), 128),
      (header.name, UInt64(header.version), 200), (header.name, 128, 3),
      (String(repeating: "n", count: 128), UInt64(header.version), 3),
    ]
    for (index, (name, version, originCount)) in variants.enumerated() {
      var bytes: [UInt8] = [EventRecord.layoutVersion]
      appendVarint(UInt64(name.utf8.count), to: &bytes)
      bytes += Array(name.utf8)
      appendVarint(version, to: &bytes)
      appendVarint(UInt64(originCount), to: &bytes)
      bytes += repeatElement(UInt8(ascii: "o"), count: originCount)
      writeSeed(bytes + command + body, named: "record-\(record.sequence)-envelope-\(index)", in: directory)
    }
    guard case .event(let recorded)? = try? DecodedRecords<Workspace>.decode(record, registry: registry) else {
      continue
    }
    for count in [127, 128, 16_383, 16_384] {
      let text = String(repeating: "t", count: count)
      let command = Identifier(high: 1, low: 2)
      var event: [UInt8]?
      if var retitled = recorded.event as? NoteRetitled {
        retitled.title = text
        event = EventRecord.encodeFields(retitled, origin: .user, commandID: command)
      } else if var edited = recorded.event as? NoteBodyEdited {
        edited.body = text
        event = EventRecord.encodeFields(edited, origin: .user, commandID: command)
      } else if var created = recorded.event as? NoteCreated {
        created.title = text
        event = EventRecord.encodeFields(created, origin: .user, commandID: command)
      }
      if let event { writeSeed(event, named: "record-\(record.sequence)-string-\(count)", in: directory) }
    }
  }
}

private func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
  var value = value
  while value >= 0x80 {
    bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
    value >>= 7
  }
  bytes.append(UInt8(value))
}
