/// A store holding one value (settings, say). Changing it needs the apply path's `ApplyContext`.
public struct ValueStore<Value: Sendable & Equatable>: Sendable, Equatable {
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
