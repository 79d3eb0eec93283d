/// A coding key that is any string and never an integer: for the tests' values that encode or
/// decode by keys they choose at run time (the keys a container lists, an open set of fields).
struct NamedKey: CodingKey {
  var stringValue: String
  var intValue: Int? { nil }
  init(stringValue: String) { self.stringValue = stringValue }
  init?(intValue: Int) { nil }
}
