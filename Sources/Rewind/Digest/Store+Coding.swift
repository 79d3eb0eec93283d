/// A store encodes as `{"name": …, "records": [...]}` with the records in id order, so equal
/// stores encode to equal bytes. Decoding rebuilds the grouping cache from the records. Records
/// that are also `FieldCodable` are written and read by their hand-written fields: the same bytes
/// as their `Codable` form, at a fraction of the cost (snapshots, digests).
extension Store: Codable where Record: Codable {
  private enum CodingKeys: String, CodingKey {
    case name, records
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(name, forKey: .name)
    if let fieldCodable = Record.self as? any (FieldCodable & Codable).Type {
      try encodeRecords(as: fieldCodable, into: &container)
    } else {
      try container.encode(all(), forKey: .records)
    }
  }

  /// The records by their hand-written fields, written where they lie in the tree
  /// (`FieldCodableTreeValues`): the same bytes, faster.
  private func encodeRecords<F: FieldCodable & Codable>(
    as _: F.Type, into container: inout KeyedEncodingContainer<CodingKeys>
  ) throws {
    // `F` is `Record` (the cast above found it conforms), so the tree is the same type.
    let tree = unsafeBitCast(records, to: RecordTree<Record.ID, F>.self)
    try container.encode(FieldCodableTreeValues(tree: tree), forKey: .records)
  }

  private static func decodeRecords<F: FieldCodable & Codable>(
    as _: F.Type, from container: KeyedDecodingContainer<CodingKeys>
  ) throws -> [Record] {
    unsafeBitCast(try container.decode(FieldCodableArray<F>.self, forKey: .records).elements, to: [Record].self)
  }

  /// - Throws: `DecodingError` if two records share an id.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    self.init(name: try container.decode(String.self, forKey: .name))
    let records =
      if let fieldCodable = Record.self as? any (FieldCodable & Codable).Type {
        try Self.decodeRecords(as: fieldCodable, from: container)
      } else {
        try container.decode([Record].self, forKey: .records)
      }
    // Built by code specialized for the record type (see `StoreRecord._store`).
    if let store = Record._store(named: name, sortedRecords: records) {
      self = store
      return
    }
    // Not in id order (the encoding always is, but any order of distinct ids is accepted).
    var context = ApplyContext(recording: false)
    for record in records where insert(record, context: &context) != nil {
      throw DecodingError.dataCorruptedError(
        forKey: .records, in: container, debugDescription: "two records of store \(name) share id \(record.id)")
    }
  }
}

/// A value store encodes as `{"name": …, "value": …}`.
extension ValueStore: Codable where Value: Codable {
  private enum CodingKeys: String, CodingKey {
    case name, value
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(name, forKey: .name)
    try container.encode(value, forKey: .value)
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    self.init(
      name: try container.decode(String.self, forKey: .name), initial: try container.decode(Value.self, forKey: .value))
  }
}
