/// Why a Notebook command was rejected. A rejected command wrote nothing and changed nothing.
public struct NotebookError: Error, Sendable, Equatable, CustomStringConvertible {
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }
    public var description: String { name }

    /// A title that is empty after trimming white space.
    public static let blankTitle = Code("blankTitle")
    /// No record has the given id (it may have been removed).
    public static let notFound = Code("notFound")
    /// Incoming data names one identifier twice; it was not accepted.
    public static let duplicateIdentifiers = Code("duplicateIdentifiers")
    /// The identifier source produced an id already in use.
    public static let identifierInUse = Code("identifierInUse")
  }

  public var code: Code
  public var message: String

  public init(_ code: Code, _ message: String) {
    self.code = code
    self.message = message
  }

  public var description: String { message }
}
