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

  struct Probe: Event {
    static let name = "probe"
  }
}
