import FuzzSupport
import Glibc
import Notebook
import RewindJournal

@testable import Rewind

// libFuzzer target: the event decoder. The input is one journal record's payload: its envelope
// (EventRecord.header), its decoding through the Notebook registry (FieldDecoder, upcasters),
// and its audit rendering without the app's types (FieldRenderer). Any outcome but a value or a
// thrown error is a finding. Build and run: `make fuzz` (see docs/RELIABILITY.md).

private let registry = Workspace.makeRegistry()

// Also exported under libFuzzer's name, which its (unused) main in the same archive refers to.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzEvents(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let payload = Array(UnsafeBufferPointer(start: data, count: size))
  let record = JournalRecord(sequence: 1, timestamp: 0, payload: payload)
  if case .event(let recorded) = try? DecodedRecords<Workspace>.decode(record, registry: registry) {
    var state = Workspace()
    var context = ApplyContext()
    registry.apply(recorded.event, to: &state, context: &context)
  }
  _ = try? EventRecord.json(sequence: 1, timestamp: 0, payload: payload)
  _ = try? FieldRenderer.json(payload)
  return 0
}

/// Seeds: every record payload of the golden Notebook journal (every event type and version).
func writeSeeds(to directory: String) {
  guard let cursor = try? JournalReader(directory: goldenFolder + "/notebook-v1/journal").records() else { return }
  while let record = try? cursor.next() {
    writeSeed(record.payload, named: "record-\(record.sequence)", in: directory)
  }
}
