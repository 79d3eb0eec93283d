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

  /// The records by their hand-written fields (`FieldCodableArray`): the same bytes, faster.
  private func encodeRecords<F: FieldCodable & Codable>(
    as _: F.Type, into container: inout KeyedEncodingContainer<CodingKeys>
  ) throws {
    // `F` is `Record` (the cast above found it conforms), so the array is the same type.
    try container.encode(FieldCodableArray(unsafeBitCast(all(), to: [F].self)), forKey: .records)
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
    // The ids and the groups in one pass. This runs unspecialized (a model's stores are decoded
    // through `Decodable`'s witness), where each generic call looks up metadata: no key path, no
    // enumerated sequence or slice, one hash lookup per group key. A key a record names twice is
    // filed once: found among a few keys by comparing, among many through a set (linear time).
    var ids: [Record.ID] = []
    ids.reserveCapacity(records.count)
    var grouped: [Record.GroupKey: [Record.ID]] = [:]
    for record in records {
      let id = record.id
      ids.append(id)
      let keys = record.groupKeys
      if keys.count <= 8 {
        for index in 0..<keys.count {
          var repeated = false
          for earlier in 0..<index where keys[earlier] == keys[index] {
            repeated = true
            break
          }
          if !repeated { grouped[keys[index], default: []].append(id) }
        }
      } else {
        var seen = Set<Record.GroupKey>()
        for key in keys where seen.insert(key).inserted { grouped[key, default: []].append(id) }
      }
    }
    guard let tree = RecordTree(sortedKeys: ids, values: records) else {
      // Not in id order (the encoding always is, but any order of distinct ids is accepted).
      var context = ApplyContext(recording: false)
      for record in records where insert(record, context: &context) != nil {
        throw DecodingError.dataCorruptedError(
          forKey: .records, in: container, debugDescription: "two records of store \(name) share id \(record.id)")
      }
      return
    }
    self.records = tree
    groups = grouped.mapValues { ids in
      RecordTree(sortedKeys: ids, values: Array(repeating: (), count: ids.count)) ?? RecordTree()
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
