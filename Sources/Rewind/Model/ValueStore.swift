/// A store holding one value (settings, say). Changing it needs the apply path's `ApplyContext`.
public struct ValueStore<Value: Sendable & Equatable>: Sendable, Equatable {
  /// Names this value in `ChangeKey`s, diffs, blame and the `rewind` tool: unique among the
  /// model's stores and value stores, as a `Store`'s name.
  public let name: String
  public private(set) var value: Value

  public init(name: String, initial: Value) {
    self.name = name
    self.value = initial
  }

  public mutating func set(_ value: Value, context: inout ApplyContext) {
    self.value = value
    context.touch(.value(name))
  }
}
