/// How the editor looks: one value, changed as a whole.
public struct EditorSettings: Sendable, Equatable, Codable {
  public var fontSize: Int
  public var theme: String
  public var spellCheck: Bool

  public init(fontSize: Int = 13, theme: String = "light", spellCheck: Bool = true) {
    self.fontSize = fontSize
    self.theme = theme
    self.spellCheck = spellCheck
  }
}
