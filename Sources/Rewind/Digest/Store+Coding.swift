/// A store encodes as `{"name": …, "records": [...]}` with the records in id order, so equal
/// stores encode to equal bytes. Decoding rebuilds the grouping cache from the records.
extension Store: Codable where Record: Codable {
  private enum CodingKeys: String, CodingKey {
    case name, records
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(name, forKey: .name)
    try container.encode(all(), forKey: .records)
  }

  /// - Throws: `DecodingError` if two records share an id.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    self.init(name: try container.decode(String.self, forKey: .name))
    let records = try container.decode([Record].self, forKey: .records)
    guard let tree = RecordTree(sortedKeys: records.map(\.id), values: records) else {
      // Not in id order (the encoding always is, but any order of distinct ids is accepted).
      var context = ApplyContext(recording: false)
      for record in records where insert(record, context: &context) != nil {
        throw DecodingError.dataCorruptedError(
          forKey: .records, in: container, debugDescription: "two records of store \(name) share id \(record.id)")
      }
      return
    }
    self.records = tree
    var grouped: [Record.GroupKey: [Record.ID]] = [:]
    for record in records {
      for key in record.groupKeys where grouped[key]?.last != record.id { grouped[key, default: []].append(record.id) }
    }
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
