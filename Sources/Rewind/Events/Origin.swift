#if canImport(Glibc)
  internal import Glibc
#elseif canImport(Darwin)
  internal import Darwin
#endif

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

  /// The well-known origin whose name's UTF-8 bytes are `bytes`, or nil. Every record's header
  /// names its origin, nearly always one of these: matched by its bytes, it is not decoded into a
  /// new `String` (which validates the bytes and builds the string, about 140 instructions).
  static func wellKnown(_ bytes: UnsafeBufferPointer<UInt8>) -> Origin? {
    @inline(__always) func equals(_ name: StaticString) -> Bool {
      name.utf8CodeUnitCount == bytes.count && memcmp(name.utf8Start, bytes.baseAddress!, bytes.count) == 0
    }
    switch bytes.count {
    case 4: return equals("user") ? .user : equals("sync") ? .sync : nil
    case 6: return equals("import") ? .import : nil
    case 10: return equals("automation") ? .automation : nil
    default: return nil
    }
  }

  public init(from decoder: any Decoder) throws { name = try decoder.singleValueContainer().decode(String.self) }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(name)
  }
}
