/// Where a command came from, recorded in every event's envelope. An open set: apps add their own
/// with `extension Origin { static let webhook = Origin("webhook") }`.
public struct Origin: Hashable, Sendable, Codable, CustomStringConvertible {
  public let name: String

  public init(_ name: String) { self.name = name }

  /// A person, through the app's interface.
  public static let user = Origin("user")
  /// A background sync with a server.
  public static let sync = Origin("sync")
  /// An automated process inside the app (a rule, a scheduler).
  public static let automation = Origin("automation")
  /// A bulk import that replaces a collection.
  public static let `import` = Origin("import")

  public var description: String { name }

  public init(from decoder: any Decoder) throws { name = try decoder.singleValueContainer().decode(String.self) }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(name)
  }
}
