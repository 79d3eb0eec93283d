/// A usage error: exit code 2, with the message shown to the user.
public struct UsageError: Error, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}

/// The arguments of one command: positionals, `--name value` options and `--flag`s. Knows which
/// names each command accepts, so an unknown flag is a usage error rather than silently ignored.
public struct Arguments {
  public private(set) var positionals: [String] = []
  private var values: [String: String] = [:]
  private var flags: Set<String> = []

  /// - Parameters:
  ///   - options: names that take a value (`--events 100`, `--events=100`).
  ///   - flags: names that take none (`--json`).
  public init(_ arguments: some Sequence<String>, options: Set<String>, flags allowedFlags: Set<String>)
    throws(UsageError)
  {
    var iterator = arguments.makeIterator()
    var onlyPositionals = false
    while let argument = iterator.next() {
      if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
        positionals.append(argument)
        continue
      }
      if argument == "--" {
        onlyPositionals = true
        continue
      }
      var name = String(argument.drop(while: { $0 == "-" }))
      var inline: String?
      if let equals = name.firstIndex(of: "=") {
        inline = String(name[name.index(after: equals)...])
        name = String(name[..<equals])
      }
      if allowedFlags.contains(name) {
        guard inline == nil else { throw UsageError("\(Self.spelled(name)) takes no value") }
        flags.insert(name)
      } else if options.contains(name) {
        guard let value = inline ?? iterator.next() else { throw UsageError("\(Self.spelled(name)) needs a value") }
        values[name] = value
      } else {
        throw UsageError("unknown option \(argument)")
      }
    }
  }

  public func flag(_ name: String) -> Bool { flags.contains(name) }

  /// An option's name as users type it: `-n`, `--events`.
  static func spelled(_ name: String) -> String { (name.count == 1 ? "-" : "--") + name }

  public func value(_ name: String) -> String? { values[name] }

  public func integer(_ name: String, default fallback: Int, range: ClosedRange<Int> = 0...Int.max) throws(UsageError)
    -> Int
  {
    guard let text = values[name] else { return fallback }
    guard let value = Int(text), range.contains(value) else {
      throw UsageError(
        "\(Self.spelled(name)) needs a whole number in \(range.lowerBound)...\(range.upperBound), not '\(text)'")
    }
    return value
  }

  /// Exactly `count` positionals. Too few is a usage error saying what the command `needs` (for
  /// example "the journal directory and a sequence number: rewind show DIR SEQ"); too many names
  /// the first extra one.
  public func positionals(exactly count: Int, needs: String) throws(UsageError) -> [String] {
    guard positionals.count <= count else { throw UsageError("unexpected argument '\(positionals[count])'") }
    guard positionals.count == count else { throw UsageError("needs \(needs)") }
    return positionals
  }

  /// The single positional naming a journal directory.
  public func directory(default fallback: String? = nil) throws(UsageError) -> String {
    guard positionals.count <= 1 else { throw UsageError("unexpected argument '\(positionals[1])'") }
    guard let directory = positionals.first ?? fallback else { throw UsageError("missing the journal directory") }
    return directory
  }
}
