import Testing

@testable import Rewind

/// The table replay finds event names in by their bytes: every name added is found at its index,
/// through the table's growth, and nothing else is.
@Suite struct EventNameTableTests {
  func index(_ table: EventNameTable, _ name: String) -> Int? {
    Array(name.utf8).withUnsafeBufferPointer { table.index(of: $0) }
  }

  @Test func findsEveryNameAddedAndNothingElse() {
    var table = EventNameTable()
    var names: [String] = []
    for number in 0..<100 {
      let name = "event.\(number)"
      #expect(table.add(name) == number)
      names.append(name)
      // Every name so far is still found after each growth of the table.
      for (expected, earlier) in names.enumerated() { #expect(index(table, earlier) == expected) }
    }
    #expect(table.names == names)
    for absent in ["", "event", "event.100", "event.1 ", "Event.1", "event.10x"] {
      #expect(index(table, absent) == nil, "\(absent)")
    }
  }

  @Test func addingANameTwiceKeepsItsIndex() {
    var table = EventNameTable()
    #expect(table.add("note.created") == 0)
    #expect(table.add("note.retitled") == 1)
    #expect(table.add("note.created") == 0)
    #expect(table.names == ["note.created", "note.retitled"])
  }

  @Test func theRegistryMatchesHeadersByTheirBytes() throws {
    var registry = EventRegistry<Ledger>()
    Ledger.registerEvents(in: &registry)
    let tables = registry.tables
    #expect(tables.names.names.first == Checkpoint.name)
    for name in tables.names.names {
      let payload = try #require(
        try? EventRecord.encode(Probe(), origin: Origin(name), commandID: Identifier(high: 1, low: 2)))
      // A header naming a registered event reads back that name from the table.
      var bytes = payload
      bytes.replaceSubrange(1..<(2 + Probe.name.utf8.count), with: [UInt8(name.utf8.count)] + Array(name.utf8))
      let (header, nameIndex) = try EventRecord.header(of: bytes, names: tables.names)
      #expect(header.name == name)
      #expect(nameIndex.map { tables.names.names[$0] } == name)
      #expect(try EventRecord.header(of: bytes) == header)
    }
  }

  /// Origins are matched by their bytes too (`Origin.wellKnown`): each well-known one reads back as
  /// the constant whose name it is, and any other name, near misses included, as itself.
  @Test func originsReadBackAsTheyWereWritten() throws {
    let wellKnown: [Origin] = [.user, .sync, .automation, .import]
    for origin in wellKnown {
      let matched = Array(origin.name.utf8).withUnsafeBufferPointer { Origin.wellKnown($0) }
      #expect(matched == origin, "\(origin)")
    }
    let others = ["", "use", "users", "User", "syns", "automatio", "import ", "webhook", "ünïcode", "user\u{0}"]
    for origin in wellKnown + others.map(Origin.init) {
      let payload = try EventRecord.encode(Probe(), origin: origin, commandID: Identifier(high: 3, low: 4))
      let (header, _) = try EventRecord.header(of: payload, names: EventNameTable())
      #expect(header.origin == origin, "\(origin)")
      #expect(header.origin.name == origin.name, "\(origin)")
    }
    for other in others {
      #expect(Array(other.utf8).withUnsafeBufferPointer { Origin.wellKnown($0) } == nil, "\(other)")
    }
  }

  /// Replay's `EventRecord.locate` reads what `header(of:names:)` reads, and throws the same error
  /// for the same bytes: for the usual envelope (read in place), for a name, a version and an
  /// origin whose varints take two bytes (read by the general reader), and for every cut of each.
  @Test func locateReadsWhatHeaderReads() throws {
    let long = String(repeating: "n", count: 130)
    var table = EventNameTable()
    _ = table.add(Probe.name)
    _ = table.add(long)
    let usual = try EventRecord.encode(Probe(), origin: .sync, commandID: Identifier(high: 5, low: 6))
    let nameStart = 2
    let versionAt = nameStart + Probe.name.utf8.count
    var longName = usual
    longName.replaceSubrange(1..<versionAt, with: [0x82, 0x01] + Array(long.utf8))
    var bigVersion = usual
    bigVersion.replaceSubrange(versionAt..<versionAt + 1, with: [0xC8, 0x01])  // 200
    var longOrigin = usual
    let originAt = versionAt + 1
    longOrigin.replaceSubrange(
      originAt..<originAt + 1 + Origin.sync.name.utf8.count, with: [0x82, 0x01] + Array(long.utf8))
    let usualEnd = versionAt + 1 + 1 + Origin.sync.name.utf8.count + 16
    #expect(try EventRecord.locate(usual, names: table).bodyOffset == usualEnd)
    for payload in [usual, longName, bigVersion, longOrigin] {
      // The envelope ends where the event's fields start: every cut before that is an error.
      let end = try EventRecord.header(of: payload, names: table).header.bodyOffset
      for cut in 0...payload.count {
        let bytes = Array(payload[..<cut])
        let header = Result { () throws(FieldFormatError) in try EventRecord.header(of: bytes, names: table) }
        let location = Result { () throws(FieldFormatError) in try EventRecord.locate(bytes, names: table) }
        switch (header, location) {
        case (.success(let (header, nameIndex)), .success(let location)) where cut >= end:
          #expect(location.nameIndex == nameIndex)
          #expect(location.version == header.version)
          #expect(location.bodyOffset == end)
          #expect(header.bodyOffset == end)
        case (.failure(let expected), .failure(let thrown)) where cut < end:
          #expect(thrown == expected, "cut at \(cut)")
        default:
          Issue.record("\(cut) of \(payload.count) bytes, envelope \(end): header \(header), locate \(location)")
        }
      }
    }
    var unknownLayout = usual
    unknownLayout[0] = 2
    #expect(throws: FieldFormatError("unknown record layout 2", at: 0)) {
      try EventRecord.locate(unknownLayout, names: table)
    }
    let whole = try EventRecord.locate(longName, names: table)
    #expect(whole.nameIndex == 1)
    #expect(try EventRecord.locate(bigVersion, names: table).version == 200)
    #expect(try EventRecord.header(of: longOrigin, names: table).header.origin.name == long)
  }

  struct Probe: Event {
    static let name = "probe"
  }
}
