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

  /// Sets the value. Setting the value it holds (an equal one) touches nothing, as replacing a
  /// `Store`'s record with an equal one: the change keys, blame and an event's effect name only
  /// a value that changed.
  public mutating func set(_ value: Value, context: inout ApplyContext) {
    // Compared only when the touched keys are kept (replay keeps none): the value is stored
    // either way, as `Store.insert` stores an equal record.
    let touches = context.isRecording && self.value != value
    self.value = value
    if touches { context.touch(.value(name)) }
  }
}
